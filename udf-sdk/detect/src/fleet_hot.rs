//! Fleet hot functions (ByteDance's "datacenter tax"): stack samples counted per host, per
//! function (the leaf frame) and per shared library (the leaf frame's module), plus each host's
//! total, and the same over all hosts (host `*`). Every figure is a count, so per-host results
//! merge by summing in any order and grouping; percentages are recomputed from the counts.
//!
//! Each host keeps its `top` functions (and libraries); the rest of its samples are counted
//! under `[other]`. A function's fleet count is therefore exact when no host had more than
//! `top` distinct functions — and a lower bound otherwise.

use std::collections::BTreeMap;

/// The host name of the rows summed over all hosts.
pub const ALL_HOSTS: &str = "*";
/// The function or library that the rows beyond a host's `top` are counted under.
pub const OTHER: &str = "[other]";

/// What a row counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A host's (or all hosts') samples.
    Host,
    /// Samples whose leaf frame is in one shared library (module).
    Library,
    /// Samples whose leaf frame is one function (of one module).
    Function,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Host => "host",
            Kind::Library => "library",
            Kind::Function => "function",
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        match s {
            "host" => Some(Kind::Host),
            "library" => Some(Kind::Library),
            "function" => Some(Kind::Function),
            _ => None,
        }
    }
}

/// (kind, function, module, host): `function` is empty for library and host rows, `module`
/// for host rows.
pub type Key = (Kind, String, String, String);

/// Sample counts by key.
pub type Counts = BTreeMap<Key, u64>;

/// One host's counts from `(function, module, samples)` of its leaf frames, each host keeping
/// its `top` functions and libraries (the rest as [`OTHER`]), plus the all-hosts rows. Without
/// `per_host_functions` functions are counted over all hosts only (a datacenter's thousand
/// hosts × their functions would not fit one result); libraries and totals stay per host.
pub fn host_counts<'a>(
    host: &str,
    leaves: impl IntoIterator<Item = (&'a str, &'a str, u64)>,
    top: usize,
    per_host_functions: bool,
) -> Counts {
    let mut functions: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    let mut libraries: BTreeMap<&str, u64> = BTreeMap::new();
    let mut total = 0;
    for (function, module, n) in leaves {
        *functions.entry((function, module)).or_default() += n;
        *libraries.entry(module).or_default() += n;
        total += n;
    }
    let mut counts = Counts::new();
    let mut add = |kind: Kind, function: &str, module: &str, n: u64| {
        let hosts: &[&str] =
            if kind == Kind::Function && !per_host_functions { &[ALL_HOSTS] } else { &[host, ALL_HOSTS] };
        for h in hosts {
            *counts.entry((kind, function.to_string(), module.to_string(), h.to_string())).or_default() += n;
        }
    };
    add(Kind::Host, "", "", total);
    for ((function, module), n) in keep_top(functions, top) {
        add(Kind::Function, function, module, n);
    }
    for (module, n) in keep_top(libraries.into_iter().map(|(m, n)| (("", m), n)).collect(), top) {
        add(Kind::Library, "", module.1, n);
    }
    counts
}

/// The `top` largest entries (ties by name), the rest summed as `([other], [other])`.
fn keep_top<'a>(all: BTreeMap<(&'a str, &'a str), u64>, top: usize) -> Vec<((&'a str, &'a str), u64)> {
    let mut sorted: Vec<_> = all.into_iter().collect();
    sorted.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    if sorted.len() > top {
        let rest: u64 = sorted[top..].iter().map(|e| e.1).sum();
        sorted.truncate(top);
        sorted.push(((OTHER, OTHER), rest));
    }
    sorted
}

/// Sums count maps.
pub fn merge(parts: impl IntoIterator<Item = Counts>) -> Counts {
    let mut all = Counts::new();
    for part in parts {
        for (k, n) in part {
            *all.entry(k).or_default() += n;
        }
    }
    all
}

/// Rows in display order: host rows, then libraries, then functions, each by samples
/// (descending) then names; with each row's percent of its host's (or all hosts') samples.
pub fn rows(counts: &Counts) -> Vec<(&Key, u64, f64)> {
    let total = |host: &str| counts.get(&(Kind::Host, String::new(), String::new(), host.to_string())).copied();
    let mut rows: Vec<(&Key, u64, f64)> = counts
        .iter()
        .map(|(k, &n)| {
            let of = total(&k.3).unwrap_or(0);
            (k, n, if of == 0 { 0.0 } else { n as f64 * 100.0 / of as f64 })
        })
        .collect();
    rows.sort_by(|a, b| a.0.0.cmp(&b.0.0).then(b.1.cmp(&a.1)).then(a.0.cmp(b.0)));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_host_counts_merge_into_fleet_shares() {
        let a = host_counts("a", [("deflate", "libz.so", 6), ("memcpy", "libc.so", 3), ("main", "app", 1)], 10, true);
        let b = host_counts("b", [("memcpy", "libc.so", 5), ("memcpy", "libc.so", 5)], 10, true);
        let all = merge([a.clone(), b.clone()]);
        assert_eq!(all, merge([b, a]));
        let get = |k: Kind, f: &str, m: &str, h: &str| all[&(k, f.into(), m.into(), h.into())];
        assert_eq!(get(Kind::Host, "", "", "*"), 20);
        assert_eq!(get(Kind::Function, "memcpy", "libc.so", "*"), 13);
        assert_eq!(get(Kind::Library, "", "libc.so", "b"), 10);
        let r = rows(&all);
        assert_eq!(r[0].0.3, "*", "the all-hosts total first");
        let libc = r.iter().find(|(k, _, _)| k.0 == Kind::Library && k.2 == "libc.so" && k.3 == "*").unwrap();
        assert_eq!(libc.2, 65.0);
    }

    #[test]
    fn beyond_top_is_counted_as_other() {
        let c = host_counts("a", [("f1", "m", 5), ("f2", "m", 4), ("f3", "m", 1)], 2, true);
        assert_eq!(c[&(Kind::Function, OTHER.into(), OTHER.into(), "a".into())], 1);
        assert_eq!(c[&(Kind::Host, String::new(), String::new(), "a".into())], 10);
        let fleet_only = host_counts("a", [("f1", "m", 5)], 2, false);
        assert!(!fleet_only.contains_key(&(Kind::Function, "f1".into(), "m".into(), "a".into())));
        assert_eq!(fleet_only[&(Kind::Function, "f1".into(), "m".into(), ALL_HOSTS.into())], 5);
        assert_eq!(fleet_only[&(Kind::Library, String::new(), "m".into(), "a".into())], 5);
    }
}
