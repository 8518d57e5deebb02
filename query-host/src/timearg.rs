//! Instants on the command line: RFC 3339 (`2026-11-23T05:00:00Z`), Unix nanoseconds, `now`,
//! or an offset from now (`-1h`, `-90s`, `+10s`).

use std::{
    str::FromStr,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeArg {
    UnixNs(u64),
    /// Signed offset from the moment the command runs.
    FromNow {
        ahead: bool,
        by: Duration,
    },
}

impl TimeArg {
    pub fn unix_ns(self) -> u64 {
        match self {
            Self::UnixNs(ns) => ns,
            Self::FromNow { ahead, by } => {
                let now = now_unix_ns();
                let by = by.as_nanos() as u64;
                if ahead { now.saturating_add(by) } else { now.saturating_sub(by) }
            }
        }
    }
}

pub fn now_unix_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

impl FromStr for TimeArg {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let t = text.trim();
        if t == "now" {
            return Ok(Self::FromNow { ahead: true, by: Duration::ZERO });
        }
        if let Some(rest) = t.strip_prefix('-').or_else(|| t.strip_prefix('+')) {
            let by = humantime::parse_duration(rest).map_err(|e| format!("bad offset '{text}': {e}"))?;
            return Ok(Self::FromNow { ahead: t.starts_with('+'), by });
        }
        if t.bytes().all(|b| b.is_ascii_digit()) {
            return t.parse().map(Self::UnixNs).map_err(|_| format!("'{text}' is too large for Unix ns"));
        }
        let at = humantime::parse_rfc3339_weak(t)
            .map_err(|_| format!("bad time '{text}': use RFC 3339 (2026-11-23T05:00:00Z), Unix ns, now, or -1h"))?;
        Ok(Self::UnixNs(
            at.duration_since(UNIX_EPOCH).map_err(|_| format!("'{text}' is before 1970"))?.as_nanos() as u64
        ))
    }
}

/// RFC 3339 with microseconds, UTC, for display.
pub fn format_unix_ns(ns: u64) -> String {
    humantime::format_rfc3339_micros(UNIX_EPOCH + Duration::from_nanos(ns)).to_string()
}

/// `100µs`, `1ms`, `10ms`: a slot width as people write it.
pub fn format_interval(ns: u64) -> String {
    humantime::format_duration(Duration::from_nanos(ns)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form() {
        assert_eq!("1700000000000000000".parse::<TimeArg>().unwrap(), TimeArg::UnixNs(1_700_000_000_000_000_000));
        assert_eq!("2023-11-14T22:13:20Z".parse::<TimeArg>().unwrap(), TimeArg::UnixNs(1_700_000_000_000_000_000));
        assert_eq!("-1h".parse::<TimeArg>().unwrap(), TimeArg::FromNow { ahead: false, by: Duration::from_secs(3600) });
        let now = now_unix_ns();
        let back = "-1h".parse::<TimeArg>().unwrap().unix_ns();
        assert!(now - back >= 3_599_000_000_000 && now - back <= 3_601_000_000_000);
        assert!("yesterday-ish".parse::<TimeArg>().unwrap_err().contains("RFC 3339"));
    }
}
