//! Instants and ranges as people give them, parsed once for every door: `--from/--to/--at` on
//! the command line, `from`/`to`/`start` in the API's queries and bodies, and the control
//! socket's requests. An instant is RFC 3339 (`2026-11-23T05:00:00Z`), Unix nanoseconds,
//! `now`, or an offset from now (`-1h`, `-90s`, `+10s`). A range is `[from, to)`: `from`
//! defaults to the beginning of time, `to` to its end — the same wherever it is given.

use std::{
    str::FromStr,
    time::{Duration, UNIX_EPOCH},
};

use loupe_store::TimeRange;

use crate::{clock::now_unix_ns, error::CoreError};

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
                let by = by.as_nanos().min(u64::MAX as u128) as u64;
                if ahead { now.saturating_add(by) } else { now.saturating_sub(by) }
            }
        }
    }

    /// Parses `text`, naming `what` (`from`, `--at`, …) in the error.
    pub fn parse(what: &str, text: &str) -> Result<TimeArg, CoreError> {
        text.parse().map_err(|reason| CoreError::BadTime { what: what.to_string(), reason })
    }
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
        if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
            return t.parse().map(Self::UnixNs).map_err(|_| format!("'{text}' is too large for Unix ns"));
        }
        let at = humantime::parse_rfc3339_weak(t)
            .map_err(|_| format!("bad time '{text}': use RFC 3339 (2026-11-23T05:00:00Z), Unix ns, now, or -1h"))?;
        let ns = at.duration_since(UNIX_EPOCH).map_err(|_| format!("'{text}' is before 1970"))?.as_nanos();
        u64::try_from(ns).map(Self::UnixNs).map_err(|_| format!("'{text}' is too far in the future"))
    }
}

/// `[from, to)` from parsed instants; open-ended where not given.
pub fn range(from: Option<TimeArg>, to: Option<TimeArg>) -> Result<TimeRange, CoreError> {
    let from = from.map_or(0, TimeArg::unix_ns);
    let to = to.map_or(u64::MAX, TimeArg::unix_ns);
    TimeRange::new(from, to).map_err(|_| CoreError::BadRange { from, to })
}

/// `[from, to)` from text (an API query or body); open-ended where not given.
pub fn parse_range(from: Option<&str>, to: Option<&str>) -> Result<TimeRange, CoreError> {
    range(from.map(|t| TimeArg::parse("from", t)).transpose()?, to.map(|t| TimeArg::parse("to", t)).transpose()?)
}

/// A duration as people write it (`30s`, `7d`, `100us`): how the CLI's options and the API's
/// intervals are read.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text.trim()).map_err(|e| e.to_string())
}

/// A slot width as people write it: `100us`, `1ms`, `10ms`.
pub fn parse_interval(text: &str) -> Result<Duration, CoreError> {
    parse_duration(text).map_err(|reason| CoreError::BadInterval { text: text.to_string(), reason })
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
        assert!("".parse::<TimeArg>().is_err());
        assert!("99999999999999999999999".parse::<TimeArg>().unwrap_err().contains("too large"));
    }

    #[test]
    fn one_set_of_defaults_and_one_range_error() {
        let all = parse_range(None, None).unwrap();
        assert_eq!((all.from_unix_ns(), all.to_unix_ns()), (0, u64::MAX));
        let r = parse_range(Some("100"), None).unwrap();
        assert_eq!((r.from_unix_ns(), r.to_unix_ns()), (100, u64::MAX));
        let e = parse_range(Some("200"), Some("100")).unwrap_err();
        assert!(matches!(e, CoreError::BadRange { from: 200, to: 100 }), "{e:?}");
        assert_eq!(e.code(), "bad_range");
        let e = parse_range(Some("soon"), None).unwrap_err();
        assert_eq!(e.code(), "bad_time");
        assert!(e.to_string().starts_with("from: bad time 'soon'"), "{e}");
        assert_eq!(range(None, Some(TimeArg::UnixNs(5))).unwrap().to_unix_ns(), 5);
    }
}
