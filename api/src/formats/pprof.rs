//! pprof export: a profile as the gzipped `profile.proto` that `go tool pprof` reads.
//!
//! Every frame is a location with its function's name; locations also name their *mapping*:
//! one per module (binary, library, `[kernel]`, `[jit]`, `[python]`) and build ID, carrying the file name
//! and build ID, and frames that were stored with their place in a file
//! ([`loupe_store::ObjectAddress`]) carry that address — so pprof's tools can tell which build
//! of which library a frame came from, and frames named later by `loupe symbolize` show their
//! names here like any other.

use std::{collections::HashMap, io::Write};

use loupe_store::{Frame, FrameKind, Profile};

/// The mapping Python frames are located in (their `.py` file is their function's `filename`).
pub const PYTHON_MAPPING: &str = "[python]";

/// pprof's `profile.proto` (github.com/google/pprof/proto/profile.proto), the fields Loupe fills.
mod proto {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Profile {
        #[prost(message, repeated, tag = "1")]
        pub sample_type: Vec<ValueType>,
        #[prost(message, repeated, tag = "2")]
        pub sample: Vec<Sample>,
        #[prost(message, repeated, tag = "3")]
        pub mapping: Vec<Mapping>,
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
    pub struct Mapping {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(uint64, tag = "2")]
        pub memory_start: u64,
        #[prost(uint64, tag = "3")]
        pub memory_limit: u64,
        #[prost(uint64, tag = "4")]
        pub file_offset: u64,
        #[prost(int64, tag = "5")]
        pub filename: i64,
        #[prost(int64, tag = "6")]
        pub build_id: i64,
        #[prost(bool, tag = "7")]
        pub has_functions: bool,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Location {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(uint64, tag = "2")]
        pub mapping_id: u64,
        #[prost(uint64, tag = "3")]
        pub address: u64,
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
    let values = Values::Cpu { period_ns };
    encode(profile, values, start_unix_ns, duration_ns)
}

/// An off-CPU profile (each stack's value: nanoseconds waited) as a gzipped `profile.proto`:
/// one value per stack, `off_cpu` in nanoseconds.
pub fn pprof_off_cpu(profile: &Profile, start_unix_ns: u64, duration_ns: u64) -> Vec<u8> {
    encode(profile, Values::OffCpu, start_unix_ns, duration_ns)
}

/// What a profile's values are.
#[derive(Clone, Copy)]
enum Values {
    /// Sample counts, each a period of CPU time.
    Cpu { period_ns: i64 },
    /// Nanoseconds waited.
    OffCpu,
}

fn encode(profile: &Profile, values: Values, start_unix_ns: u64, duration_ns: u64) -> Vec<u8> {
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
    let (sample_type, period_type, period) = match values {
        Values::Cpu { period_ns } => {
            let samples_t = proto::ValueType { r#type: intern("samples"), unit: intern("count") };
            let cpu_t = proto::ValueType { r#type: intern("cpu"), unit: intern("nanoseconds") };
            (vec![samples_t, cpu_t.clone()], Some(cpu_t), period_ns)
        }
        Values::OffCpu => {
            let off_t = proto::ValueType { r#type: intern("off_cpu"), unit: intern("nanoseconds") };
            (vec![off_t], None, 0)
        }
    };
    let mut locations: HashMap<&Frame, u64> = HashMap::new();
    // Mappings by (module, build ID); addresses are in the file's own address space, so each
    // mapping spans all of it from 0.
    let mut mapping_ids: HashMap<(&str, &[u8]), u64> = HashMap::new();
    let mut mapping: Vec<proto::Mapping> = Vec::new();
    let mut location = Vec::new();
    let mut function = Vec::new();
    let mut sample = Vec::new();
    for (frames, count) in &profile.stacks {
        let mut ids = Vec::with_capacity(frames.len());
        for f in frames {
            let id = *locations.entry(f).or_insert_with(|| {
                let id = location.len() as u64 + 1;
                let name = if f.kernel { format!("{} [k]", f.function) } else { f.function.to_string() };
                // Python functions share one mapping, as JIT code and the kernel do; each
                // function's file is its `filename`.
                let module =
                    if f.kind == FrameKind::Python { PYTHON_MAPPING } else { crate::model::profile::module_of(f) };
                let build_id = f.location.as_ref().map(|l| &l.build_id[..]).unwrap_or(&[]);
                let mapping_id = *mapping_ids.entry((module, build_id)).or_insert_with(|| {
                    let id = mapping.len() as u64 + 1;
                    mapping.push(proto::Mapping {
                        id,
                        memory_start: 0,
                        memory_limit: u64::MAX,
                        file_offset: 0,
                        filename: intern(module),
                        build_id: intern(&super::hex::encode(build_id)),
                        has_functions: true,
                    });
                    id
                });
                if f.is_unnamed() {
                    mapping[mapping_id as usize - 1].has_functions = false;
                }
                function.push(proto::Function {
                    id,
                    name: intern(&name),
                    system_name: intern(&f.function),
                    filename: intern(&f.module),
                });
                location.push(proto::Location {
                    id,
                    mapping_id,
                    address: f.location.as_ref().map_or(0, |l| l.address),
                    line: vec![proto::Line { function_id: id }],
                });
                id
            });
            ids.push(id);
        }
        let value = match values {
            Values::Cpu { period_ns } => vec![*count as i64, (*count as i64).saturating_mul(period_ns)],
            Values::OffCpu => vec![i64::try_from(*count).unwrap_or(i64::MAX)],
        };
        sample.push(proto::Sample { location_id: ids, value });
    }
    let message = proto::Profile {
        sample_type,
        sample,
        mapping,
        location,
        function,
        string_table: strings,
        time_nanos: start_unix_ns as i64,
        duration_nanos: duration_ns as i64,
        period_type,
        period,
    };
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&prost::Message::encode_to_vec(&message)).expect("writing to memory");
    gz.finish().expect("writing to memory")
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use loupe_store::ObjectAddress;

    use super::*;

    fn decode(gz: &[u8]) -> proto::Profile {
        let mut bytes = Vec::new();
        flate2::read::GzDecoder::new(gz).read_to_end(&mut bytes).unwrap();
        prost::Message::decode(&bytes[..]).unwrap()
    }

    #[test]
    fn locations_name_their_module_build_and_address() {
        let located = ObjectAddress { build_id: vec![0x93, 0xac, 0x61], address: 0x1750ce };
        let unnamed = Frame::unnamed("libc.so.6", located.clone());
        let renamed = Frame::unnamed("libc.so.6", ObjectAddress { address: 0x175010, ..located.clone() }).named("f");
        let stacks = vec![
            (vec![unnamed.clone(), Frame::user("main", "prog")], 3),
            (vec![renamed, Frame::kernel("do_sys_open"), Frame::user("main", "prog")], 2),
        ];
        let p = decode(&pprof(&Profile { samples: 5, lost: 0, stacks, span: None }, 1, 0, 1));
        let s = |i: i64| p.string_table[i as usize].as_str();
        let maps: Vec<(&str, &str, bool)> =
            p.mapping.iter().map(|m| (s(m.filename), s(m.build_id), m.has_functions)).collect();
        // libc with its build ID (one unnamed frame: not all functions named), prog, kernel.
        assert_eq!(maps, vec![("libc.so.6", "93ac61", false), ("prog", "", true), ("[kernel]", "", true)]);
        let loc = |name: &str| {
            let f = p.function.iter().find(|f| s(f.name) == name).unwrap();
            p.location.iter().find(|l| l.line[0].function_id == f.id).unwrap().clone()
        };
        assert_eq!((loc("libc.so.6+0x1750ce").address, loc("libc.so.6+0x1750ce").mapping_id), (0x1750ce, 1));
        assert_eq!((loc("f").address, loc("f").mapping_id), (0x175010, 1));
        assert_eq!((loc("main").address, loc("main").mapping_id), (0, 2));
        assert_eq!(loc("do_sys_open [k]").mapping_id, 3);
    }

    #[test]
    fn python_functions_share_a_mapping_and_name_their_file() {
        let stacks = vec![(
            vec![
                Frame::python("Handler.get", "/srv/app/handler.py"),
                Frame::python("<module>", "/srv/app/main.py"),
                Frame::user("main", "python3.11"),
            ],
            4,
        )];
        let p = decode(&pprof(&Profile { samples: 4, lost: 0, stacks, span: None }, 1, 0, 1));
        let s = |i: i64| p.string_table[i as usize].as_str();
        let maps: Vec<&str> = p.mapping.iter().map(|m| s(m.filename)).collect();
        assert_eq!(maps, vec![PYTHON_MAPPING, "python3.11"]);
        let files: Vec<(&str, &str)> = p.function.iter().map(|f| (s(f.name), s(f.filename))).collect();
        assert_eq!(
            files,
            vec![("Handler.get", "/srv/app/handler.py"), ("<module>", "/srv/app/main.py"), ("main", "python3.11")]
        );
    }
}
