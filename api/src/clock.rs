//! Wall-clock instants and how they are shown: the few helpers every layer needs (the agent's
//! logs, the core's day boundaries, the terminal renderers), so they sit below all of them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Now, in Unix nanoseconds (0 if the clock is before 1970).
pub fn now_unix_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

/// RFC 3339 with microseconds, UTC, for display.
pub fn format_unix_ns(ns: u64) -> String {
    humantime::format_rfc3339_micros(UNIX_EPOCH + Duration::from_nanos(ns)).to_string()
}

/// `100µs`, `1ms`, `10ms`: a slot width as people write it.
pub fn format_interval(ns: u64) -> String {
    humantime::format_duration(Duration::from_nanos(ns)).to_string()
}

/// This host's name, as runs record it.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}
