//! A window for a terminal: per lane, what is in it (the items themselves are for `--json`, the
//! web UI's window view and `loupe export trace`).

use std::fmt::Write as _;

use loupe_api::{clock::format_unix_ns, model::WindowView};

/// How a lane was sent: its items, or per-column summaries.
fn how(summarized: bool, columns: u32) -> String {
    if summarized { format!("summarized in {columns} columns") } else { "every item".into() }
}

/// `loupe window`: the lanes, top to bottom as the web UI draws them.
pub fn summary(w: &WindowView) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "window {} … {}", format_unix_ns(w.from_unix_ns), format_unix_ns(w.to_unix_ns));
    let _ = writeln!(out, "\ntraffic: {} runs", w.traffic.len());
    for l in &w.traffic {
        let slots = l.series.first().map_or(0, |s| s.values.len());
        let bytes: Vec<String> =
            l.series.iter().map(|s| format!("{} {}", s.name, s.values.iter().sum::<u64>())).collect();
        let _ = writeln!(
            out,
            "  run {} {} ({}): {slots} slots of {} µs from slot {}, {}",
            l.run,
            l.iface,
            l.host,
            l.interval_ns / 1000,
            l.first_slot,
            bytes.join(", ")
        );
    }
    if w.runs_left_out > 0 {
        let _ = writeln!(out, "  … {} more runs left out", w.runs_left_out);
    }
    let _ = writeln!(out, "\ncpus: {} with samples", w.cpus.len());
    for c in &w.cpus {
        let _ = writeln!(
            out,
            "  cpu {:<3} {:>8} samples ({}), {} waits off the CPU",
            c.cpu,
            c.samples,
            how(c.ticks.summarized, w.columns),
            c.waits
        );
    }
    let _ = writeln!(out, "\nprobe calls: {} threads", w.probes.len());
    for t in &w.probes {
        let slow = t.slow.iter().filter(|&&s| s).count();
        let _ = writeln!(
            out,
            "  {:>7}/{:<7} {:>8} calls ({}), {slow} slow",
            t.pid,
            t.tid,
            t.calls,
            how(t.summarized, w.columns)
        );
    }
    let _ = writeln!(out, "\ntimeline: {} programs", w.programs.len());
    for p in &w.programs {
        let _ = writeln!(
            out,
            "  {:>7} {:<16} {:>8} events ({}) of {} kinds",
            p.pid,
            p.comm,
            p.events,
            how(p.summarized, w.columns),
            p.definitions.len()
        );
    }
    for n in &w.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}
