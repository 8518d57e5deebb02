//! Application timelines for a terminal: per-event lag statistics, and events one per line.

use std::fmt::Write as _;

use loupe_api::{
    clock::format_unix_ns,
    model::{TimelineEventsPage, TimelineSummary},
};

/// A duration in ns as µs with three decimals (lags are from tens of ns to seconds).
fn us(ns: Option<u64>) -> String {
    ns.map_or_else(|| "-".into(), |n| format!("{:.3}", n as f64 / 1e3))
}

/// `loupe timeline list`: the programs, then each event's count and lags.
pub fn summary(s: &TimelineSummary) -> String {
    if s.sources.is_empty() {
        return "no timeline events in that range\n".into();
    }
    let mut out = String::new();
    let _ = writeln!(out, "{:>8}  {:<16} {:>10} {:>8}  first … last", "pid", "comm", "events", "lost");
    for p in &s.sources {
        let _ = writeln!(
            out,
            "{:>8}  {:<16} {:>10} {:>8}  {} … {}",
            p.pid,
            p.comm,
            p.events,
            p.lost,
            format_unix_ns(p.first_unix_ns),
            format_unix_ns(p.last_unix_ns)
        );
    }
    let _ = writeln!(
        out,
        "\n{:>8}  {:<24} {:>5} {:>10} {:>12} {:>12} {:>12}",
        "pid", "event", "level", "count", "lag p50 µs", "lag p99 µs", "lag max µs"
    );
    for e in &s.events {
        let _ = writeln!(
            out,
            "{:>8}  {:<24} {:>5} {:>10} {:>12} {:>12} {:>12}",
            e.pid,
            e.name,
            e.level,
            e.count,
            us(e.lag_p50_ns),
            us(e.lag_p99_ns),
            us(e.lag_max_ns)
        );
    }
    out
}

/// An event's arguments as `name=value`: the named ones, then any other that is not zero
/// (as `arg<i>`).
fn args(names: &[String], values: &[u64; 4]) -> String {
    let named = values.iter().zip(names).map(|(v, n)| format!("{n}={v}"));
    let rest =
        values.iter().enumerate().skip(names.len()).filter(|(_, v)| **v != 0).map(|(i, v)| format!("arg{i}={v}"));
    named.chain(rest).collect::<Vec<_>>().join(" ")
}

/// `loupe timeline show`: one event per line, indented by level.
pub fn events(page: &TimelineEventsPage) -> String {
    let mut out = String::new();
    for e in &page.events {
        let indent = "  ".repeat(usize::from(e.level.min(9)));
        let _ = writeln!(
            out,
            "{}  {:>7}/{:<7} cpu{:<3} {indent}{:<24} lag {:>12} µs  {}",
            format_unix_ns(e.time_unix_ns),
            e.pid,
            e.tid,
            e.cpu,
            e.name,
            us(e.lag_ns),
            args(&e.arg_names, &e.args)
        );
    }
    if page.next.is_some() {
        out.push_str("… more events follow (raise --limit, or narrow --from/--to)\n");
    }
    out
}
