//! Probe sessions for a terminal: per-function calls and latency percentiles, the slowest
//! calls as indented trees, the list of sessions.

use std::fmt::Write as _;

use loupe_api::{
    clock::format_unix_ns,
    model::{CallTreeView, ProbeList, ProbeView},
};

fn us(ns: Option<u64>) -> String {
    ns.map_or_else(|| "-".into(), |n| format!("{:.3}", n as f64 / 1e3))
}

/// `loupe probe`, `loupe probes show`.
pub fn session(v: &ProbeView) -> String {
    let mut out = String::new();
    let target = if v.pids.is_empty() {
        v.binary.clone().unwrap_or_default()
    } else {
        format!("PID {}", v.pids.iter().map(u32::to_string).collect::<Vec<_>>().join(", "))
    };
    let _ = writeln!(
        out,
        "probe session {} on {target}: {} … {} ({}), 1 in {} timed",
        v.id,
        format_unix_ns(v.start_unix_ns),
        format_unix_ns(v.end_unix_ns),
        v.ended,
        v.sample_every
    );
    let _ = writeln!(
        out,
        "\n{:<28} {:>10} {:>10} {:>9} {:>10} {:>10} {:>10} {:>10}",
        "function", "calls", "calls/s", "timed", "p50 µs", "p90 µs", "p99 µs", "max µs"
    );
    for f in &v.functions {
        let _ = writeln!(
            out,
            "{:<28} {:>10} {:>10.0} {:>9} {:>10} {:>10} {:>10} {:>10}",
            f.name,
            f.calls,
            f.calls_per_s,
            f.timed,
            us(f.p50_ns),
            us(f.p90_ns),
            us(f.p99_ns),
            us(Some(f.max_ns))
        );
    }
    if v.bias_ns > 0 {
        let _ = writeln!(
            out,
            "(percentiles less the probes' own {:.3} µs per call, calibrated here)",
            v.bias_ns as f64 / 1e3
        );
    }
    if !v.slowest.is_empty() {
        let _ = writeln!(out, "\nslowest calls (µs total / self):");
        for tree in &v.slowest {
            let mut stack: Vec<(&CallTreeView, usize)> = vec![(tree, 0)];
            while let Some((node, depth)) = stack.pop() {
                let _ = writeln!(
                    out,
                    "{:indent$}{} {:.3} / {:.3}{}",
                    "",
                    node.function,
                    node.duration_ns as f64 / 1e3,
                    node.self_ns as f64 / 1e3,
                    if depth == 0 {
                        format!("  (tid {}, {})", node.tid, format_unix_ns(node.entry_unix_ns))
                    } else {
                        String::new()
                    },
                    indent = 2 + depth * 2
                );
                stack.extend(node.children.iter().rev().map(|c| (c, depth + 1)));
            }
        }
    }
    if v.calls_lost > 0 {
        let _ = writeln!(out, "\n{} calls recorded, {} lost", v.calls_recorded, v.calls_lost);
    }
    for note in &v.notes {
        let _ = writeln!(out, "note: {note}");
    }
    out
}

/// `loupe probes list`.
pub fn list(l: &ProbeList) -> String {
    let mut out = String::new();
    for a in &l.active {
        let _ = writeln!(
            out,
            "active {:>4}  since {}  {}  {}",
            a.handle,
            format_unix_ns(a.started_unix_ns),
            if a.pids.is_empty() { a.binary.clone().unwrap_or_default() } else { format!("PID {:?}", a.pids) },
            a.functions.join(",")
        );
    }
    if l.sessions.is_empty() {
        let _ = writeln!(out, "no stored probe sessions in that range");
        return out;
    }
    let _ = writeln!(out, "{:>6}  {:<29} {:>12} {:>10}  {:<9} functions", "id", "start", "calls", "recorded", "ended");
    for s in &l.sessions {
        let _ = writeln!(
            out,
            "{:>6}  {:<29} {:>12} {:>10}  {:<9} {}",
            s.id,
            format_unix_ns(s.start_unix_ns),
            s.calls,
            s.recorded_calls,
            s.ended,
            s.functions.join(",")
        );
    }
    out
}
