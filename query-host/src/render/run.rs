//! A run for a terminal: the summary of `loupe run` and `loupe runs show`, the table of
//! `loupe runs list`.

use std::fmt::Write as _;

use loupe_api::{
    clock::{format_interval, format_unix_ns},
    model::{RunListEntry, RunView},
};

/// A few lines an engineer can read at 3 a.m.: totals, peaks and when they happened.
pub fn summary(run: &RunView) -> String {
    let mut out = String::new();
    let interval_s = run.interval_ns as f64 / 1e9;
    let _ = writeln!(
        out,
        "run {} on {} ({}): {} × {} from {}, {} CPUs",
        run.id,
        run.iface,
        run.host,
        run.samples,
        format_interval(run.interval_ns),
        format_unix_ns(run.start_unix_ns),
        run.cpus.len()
    );
    let _ = writeln!(out, "{:<24}{:>16}{:>16}{:>18}{:>12}", "metric", "total", "peak/slot", "peak rate", "peak at");
    for (name, series) in run.metrics.named() {
        let (at, peak) =
            series.iter().copied().enumerate().max_by_key(|&(i, v)| (v, std::cmp::Reverse(i))).unwrap_or((0, 0));
        let is_conns = name.ends_with("conns");
        let total = if is_conns { "-".to_string() } else { series.iter().sum::<u64>().to_string() };
        let rate = if is_conns {
            format!("{peak} flows")
        } else if name.ends_with("bytes") {
            format!("{:.3} Gbit/s", peak as f64 * 8.0 / interval_s / 1e9)
        } else {
            format!("{:.0} pkt/s", peak as f64 / interval_s)
        };
        let when = format!("+{}", format_interval(at as u64 * run.interval_ns));
        let _ = writeln!(out, "{name:<24}{total:>16}{peak:>16}{rate:>18}{when:>12}");
    }
    out
}

/// `loupe runs list`.
pub fn table(runs: &[RunListEntry]) -> String {
    let mut out = format!(
        "{:>20}  {:<27}  {:<12} {:>9} {:>8} {:>5} {:>10}\n",
        "id", "start (UTC)", "iface", "interval", "samples", "cpus", "bytes"
    );
    for m in runs {
        let _ = writeln!(
            out,
            "{:>20}  {:<27}  {:<12} {:>9} {:>8} {:>5} {:>10}",
            m.id,
            format_unix_ns(m.start_unix_ns),
            m.iface,
            format_interval(m.interval_ns),
            m.samples,
            m.cpus.len(),
            m.stored_bytes
        );
    }
    out
}
