//! The fleet for a terminal: `loupe fleet hosts`, `fleet run`, `fleet invoke` — each ends with
//! who did not answer and why, the line an SRE reads first.

use std::fmt::Write as _;

use loupe_api::{
    clock::{format_interval, format_unix_ns},
    model::{FleetHostsView, FleetInvokeView, FleetMiss, FleetRunView},
};

pub fn hosts(view: &FleetHostsView) -> String {
    // The leaf column only in a fleet of leaf nodes.
    let leaves = view.hosts.iter().any(|h| h.leaf.is_some());
    let leaf_of = |h: &loupe_api::model::FleetHost| match (leaves, &h.leaf) {
        (false, _) => String::new(),
        (true, leaf) => format!("{:<10} ", leaf.as_deref().unwrap_or("-")),
    };
    let mut out = format!(
        "{:<20} {:<14} {:<10} {}{:<11} {:>8}  {:<16} retained from\n",
        "host",
        "rack",
        "dc",
        if leaves { format!("{:<10} ", "leaf") } else { String::new() },
        "status",
        "silent",
        "ifaces"
    );
    for h in &view.hosts {
        let retained = if h.retained_to_unix_ns == 0 { "-".into() } else { format_unix_ns(h.retained_from_unix_ns) };
        let _ = writeln!(
            out,
            "{:<20} {:<14} {:<10} {}{:<11} {:>7}s  {:<16} {retained}",
            h.place.host,
            h.place.rack,
            h.place.dc,
            leaf_of(h),
            h.status,
            h.silent_s,
            h.ifaces.join(",")
        );
    }
    let _ = writeln!(out, "{} of {} up", view.up, view.hosts.len());
    out
}

pub fn run(view: &FleetRunView) -> String {
    let mut out = format!(
        "synchronized run: {} × {} from {} on {} hosts; clock error ≤ {} µs\n",
        view.samples,
        format_interval(view.interval_ns),
        format_unix_ns(view.start_unix_ns),
        view.hosts.len(),
        view.max_clock_error_ns / 1_000
    );
    let _ = writeln!(
        out,
        "{:<20} {:>8} {:<10} {:>14} {:>14} {:>14} {:>12}",
        "host", "run", "iface", "in bytes", "out bytes", "peak in/slot", "set ahead"
    );
    for h in &view.hosts {
        let _ = writeln!(
            out,
            "{:<20} {:>8} {:<10} {:>14} {:>14} {:>14} {:>10}ms",
            h.place.host,
            h.run_id,
            h.iface,
            h.in_bytes.iter().sum::<u64>(),
            h.out_bytes.iter().sum::<u64>(),
            h.in_bytes.iter().max().copied().unwrap_or(0),
            -h.configured_before_start_ns / 1_000_000
        );
    }
    misses(&mut out, "missed", &view.missed);
    out
}

pub fn invoke(view: &FleetInvokeView) -> String {
    let mut out = super::analysis::output(&view.output);
    for line in &view.log {
        let _ = writeln!(out, "log {}: {}", line.level, line.message);
    }
    let _ = writeln!(
        out,
        "{}: {} hosts answered in {} ms (merge {} ms)",
        view.name,
        view.answered.len(),
        view.elapsed_ns / 1_000_000,
        view.merge_ns / 1_000_000
    );
    for leaf in &view.leaves {
        let _ = writeln!(
            out,
            "leaf {}: {} hosts merged by {} in {} ms (its merge {} ms)",
            leaf.leaf,
            leaf.hosts,
            leaf.coordinator.host,
            leaf.elapsed_ns / 1_000_000,
            leaf.merge_ns / 1_000_000
        );
    }
    misses(&mut out, "missing", &view.missing);
    misses(&mut out, "failed", &view.failed);
    out
}

fn misses(out: &mut String, what: &str, misses: &[FleetMiss]) {
    for m in misses {
        let _ = writeln!(out, "{what}: {} (rack {}, dc {}): {}", m.place.host, m.place.rack, m.place.dc, m.why);
    }
}
