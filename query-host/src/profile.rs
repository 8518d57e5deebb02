//! A profile as users see it: the hot-function table, the flame graph, and the pprof export —
//! all computed from the store's deduplicated stacks and their sample counts.

use std::{collections::HashMap, io::Write};

use loupe_store::{Frame, Profile};
use serde::{Deserialize, Serialize};

/// `loupe profile --json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileView {
    pub samples: u64,
    pub lost: u64,
    /// Sorted by `self` (samples where the function is the leaf), then `total` (samples where it
    /// is anywhere on the stack, once per sample), descending.
    pub functions: Vec<FunctionCount>,
    pub flamegraph: FlameNode,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionCount {
    pub name: String,
    #[serde(rename = "self")]
    pub self_samples: u64,
    pub total: u64,
}

/// One node of the flame graph: `value` samples passed through it; children are callees.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlameNode {
    pub name: String,
    pub value: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<FlameNode>,
}

impl ProfileView {
    pub fn new(profile: &Profile) -> Self {
        let mut functions: HashMap<&str, (u64, u64)> = HashMap::new();
        let mut root = FlameNode { name: "all".into(), value: 0, children: Vec::new() };
        for (frames, count) in &profile.stacks {
            let count = *count;
            root.value += count;
            if let Some(leaf) = frames.first() {
                functions.entry(&leaf.function).or_default().0 += count;
            }
            let mut seen: Vec<&str> = Vec::with_capacity(frames.len());
            for f in frames {
                if !seen.contains(&f.function.as_str()) {
                    seen.push(&f.function);
                    functions.entry(&f.function).or_default().1 += count;
                }
            }
            // Root first: the outermost caller is the last frame.
            let mut node = &mut root;
            for f in frames.iter().rev() {
                let at = match node.children.iter().position(|c| c.name == f.function) {
                    Some(i) => i,
                    None => {
                        node.children.push(FlameNode { name: f.function.clone(), value: 0, children: Vec::new() });
                        node.children.len() - 1
                    }
                };
                node = &mut node.children[at];
                node.value += count;
            }
        }
        sort_tree(&mut root);
        let mut functions: Vec<FunctionCount> = functions
            .into_iter()
            .map(|(name, (s, t))| FunctionCount { name: name.to_string(), self_samples: s, total: t })
            .collect();
        functions.sort_by(|a, b| (b.self_samples, b.total, &a.name).cmp(&(a.self_samples, a.total, &b.name)));
        Self { samples: profile.samples, lost: profile.lost, functions, flamegraph: root }
    }

    /// The top of the table, for terminals.
    pub fn summary(&self, rows: usize) -> String {
        let mut out = format!(
            "{} samples, {} lost\n{:>8} {:>7} {:>8} {:>7}  function\n",
            self.samples, self.lost, "self", "self%", "total", "total%"
        );
        let pct = |n: u64| if self.samples == 0 { 0.0 } else { n as f64 * 100.0 / self.samples as f64 };
        for f in self.functions.iter().take(rows) {
            out += &format!(
                "{:>8} {:>6.1}% {:>8} {:>6.1}%  {}\n",
                f.self_samples,
                pct(f.self_samples),
                f.total,
                pct(f.total),
                f.name
            );
        }
        out
    }
}

/// Widest first, so the flame graph's big towers come first.
fn sort_tree(node: &mut FlameNode) {
    node.children.sort_by(|a, b| b.value.cmp(&a.value).then_with(|| a.name.cmp(&b.name)));
    for c in &mut node.children {
        sort_tree(c);
    }
}

/// pprof's `profile.proto` (github.com/google/pprof/proto/profile.proto), the fields Loupe fills.
mod proto {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Profile {
        #[prost(message, repeated, tag = "1")]
        pub sample_type: Vec<ValueType>,
        #[prost(message, repeated, tag = "2")]
        pub sample: Vec<Sample>,
        #[prost(message, repeated, tag = "4")]
        pub location: Vec<Location>,
        #[prost(message, repeated, tag = "5")]
        pub function: Vec<Function>,
        #[prost(string, repeated, tag = "6")]
        pub string_table: Vec<String>,
        #[prost(int64, tag = "9")]
        pub time_nanos: i64,
        #[prost(int64, tag = "10")]
        pub duration_nanos: i64,
        #[prost(message, optional, tag = "11")]
        pub period_type: Option<ValueType>,
        #[prost(int64, tag = "12")]
        pub period: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ValueType {
        #[prost(int64, tag = "1")]
        pub r#type: i64,
        #[prost(int64, tag = "2")]
        pub unit: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        #[prost(uint64, repeated, tag = "1")]
        pub location_id: Vec<u64>,
        #[prost(int64, repeated, tag = "2")]
        pub value: Vec<i64>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Location {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(message, repeated, tag = "4")]
        pub line: Vec<Line>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Line {
        #[prost(uint64, tag = "1")]
        pub function_id: u64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Function {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(int64, tag = "2")]
        pub name: i64,
        #[prost(int64, tag = "3")]
        pub system_name: i64,
        #[prost(int64, tag = "4")]
        pub filename: i64,
    }
}

/// The profile as a gzipped `profile.proto`, as `go tool pprof` reads it. Values per stack:
/// samples, and CPU time (samples × the sampling period).
pub fn pprof(profile: &Profile, period_ns: i64, start_unix_ns: u64, duration_ns: u64) -> Vec<u8> {
    let mut strings: Vec<String> = vec![String::new()];
    let mut string_ids: HashMap<String, i64> = HashMap::new();
    let mut intern = |s: &str| -> i64 {
        if let Some(&id) = string_ids.get(s) {
            return id;
        }
        strings.push(s.to_string());
        string_ids.insert(s.to_string(), strings.len() as i64 - 1);
        strings.len() as i64 - 1
    };
    let samples_t = proto::ValueType { r#type: intern("samples"), unit: intern("count") };
    let cpu_t = proto::ValueType { r#type: intern("cpu"), unit: intern("nanoseconds") };
    let mut locations: HashMap<&Frame, u64> = HashMap::new();
    let mut location = Vec::new();
    let mut function = Vec::new();
    let mut sample = Vec::new();
    for (frames, count) in &profile.stacks {
        let mut ids = Vec::with_capacity(frames.len());
        for f in frames {
            let id = *locations.entry(f).or_insert_with(|| {
                let id = location.len() as u64 + 1;
                let name = if f.kernel { format!("{} [k]", f.function) } else { f.function.clone() };
                function.push(proto::Function {
                    id,
                    name: intern(&name),
                    system_name: intern(&f.function),
                    filename: intern(&f.module),
                });
                location.push(proto::Location { id, line: vec![proto::Line { function_id: id }] });
                id
            });
            ids.push(id);
        }
        sample.push(proto::Sample { location_id: ids, value: vec![*count as i64, *count as i64 * period_ns] });
    }
    let message = proto::Profile {
        sample_type: vec![samples_t, cpu_t.clone()],
        sample,
        location,
        function,
        string_table: strings,
        time_nanos: start_unix_ns as i64,
        duration_nanos: duration_ns as i64,
        period_type: Some(cpu_t),
        period: period_ns,
    };
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&prost::Message::encode_to_vec(&message)).expect("writing to memory");
    gz.finish().expect("writing to memory")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(name: &str) -> Frame {
        Frame { function: name.into(), module: "m".into(), kernel: false }
    }

    #[test]
    fn self_total_and_tree() {
        let profile = Profile {
            samples: 6,
            lost: 1,
            stacks: vec![
                (vec![f("hot"), f("work"), f("main")], 3),
                (vec![f("work"), f("main")], 2),
                (vec![f("rec"), f("rec"), f("main")], 1),
            ],
        };
        let v = ProfileView::new(&profile);
        let get = |n: &str| v.functions.iter().find(|x| x.name == n).unwrap();
        assert_eq!((get("hot").self_samples, get("hot").total), (3, 3));
        assert_eq!((get("work").self_samples, get("work").total), (2, 5));
        assert_eq!((get("main").self_samples, get("main").total), (0, 6));
        assert_eq!((get("rec").self_samples, get("rec").total), (1, 1), "recursion counts once");
        assert_eq!(v.functions[0].name, "hot");
        assert_eq!(v.flamegraph.value, 6);
        let main = &v.flamegraph.children[0];
        assert_eq!((main.name.as_str(), main.value), ("main", 6));
        assert_eq!((main.children[0].name.as_str(), main.children[0].value), ("work", 5));
        assert_eq!(main.children[0].children[0].name, "hot");
    }
}
