//! The fleet's NATS subjects and the names that go into them.
//!
//! ```text
//! loupe.v1.<verb>.all                every host
//! loupe.v1.<verb>.dc.<dc>            the hosts of one datacenter
//! loupe.v1.<verb>.rack.<rack>        the hosts of one rack
//! loupe.v1.<verb>.host.<host>        one host
//! ```
//!
//! Verbs: `invoke` (run an analysis next to the data, answer a partial result), `run` (a
//! synchronized run) and `read` (one host's stored run or profile, for the fleet view's
//! "open this host's window"). The verb comes before the scope so NATS permissions can grant a team
//! `loupe.v1.invoke.>` without `loupe.v1.run.>`. An agent subscribes to four subjects, one per
//! scope it belongs to (`loupe.v1.*.rack.<its rack>`, …): publishing to a scope reaches exactly
//! its members, and the server does the fan-out. Rack names are taken to be unique in the
//! fleet; a request also carries its [`Selector`], and an agent answers only if it matches, so
//! two datacenters' racks of one name are told apart by `--dc`.

use serde::{Deserialize, Serialize};

/// Prefix of every subject; the version changes when the wire format does.
pub const PREFIX: &str = "loupe.v1";

/// Longest host, rack or dc name.
pub const MAX_NAME: usize = 64;

/// What a query travels to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    Invoke,
    Run,
    Read,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Invoke => "invoke",
            Verb::Run => "run",
            Verb::Read => "read",
        }
    }

    pub fn parse(token: &str) -> Option<Verb> {
        match token {
            "invoke" => Some(Verb::Invoke),
            "run" => Some(Verb::Run),
            "read" => Some(Verb::Read),
            _ => None,
        }
    }
}

/// Which hosts a query selects. Empty fields select everything at that level.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selector {
    pub dc: Option<String>,
    pub rack: Option<String>,
    pub host: Option<String>,
}

impl Selector {
    /// Checks every given name (they become subject tokens).
    pub fn check(&self) -> Result<(), String> {
        for (what, name) in [("dc", &self.dc), ("rack", &self.rack), ("host", &self.host)] {
            if let Some(n) = name {
                check_name(what, n)?;
            }
        }
        Ok(())
    }

    /// The narrowest subject that reaches every selected host.
    pub fn subject(&self, verb: Verb) -> String {
        let v = verb.as_str();
        match (&self.host, &self.rack, &self.dc) {
            (Some(h), _, _) => format!("{PREFIX}.{v}.host.{h}"),
            (None, Some(r), _) => format!("{PREFIX}.{v}.rack.{r}"),
            (None, None, Some(d)) => format!("{PREFIX}.{v}.dc.{d}"),
            (None, None, None) => format!("{PREFIX}.{v}.all"),
        }
    }

    /// Whether a host at `place` is selected.
    pub fn matches(&self, host: &str, rack: &str, dc: &str) -> bool {
        self.host.as_deref().is_none_or(|h| h == host)
            && self.rack.as_deref().is_none_or(|r| r == rack)
            && self.dc.as_deref().is_none_or(|d| d == dc)
    }

    /// Words for messages: `rack r1 in dc d1`, `the whole fleet`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(h) = &self.host {
            parts.push(format!("host {h}"));
        }
        if let Some(r) = &self.rack {
            parts.push(format!("rack {r}"));
        }
        if let Some(d) = &self.dc {
            parts.push(format!("dc {d}"));
        }
        if parts.is_empty() { "the whole fleet".into() } else { parts.join(" in ") }
    }
}

/// The subjects an agent at this place listens on (every verb: `*`).
pub fn agent_subjects(host: &str, rack: &str, dc: &str) -> [String; 4] {
    [
        format!("{PREFIX}.*.all"),
        format!("{PREFIX}.*.dc.{dc}"),
        format!("{PREFIX}.*.rack.{rack}"),
        format!("{PREFIX}.*.host.{host}"),
    ]
}

/// The verb of a subject this agent received a request on.
pub fn verb_of(subject: &str) -> Option<Verb> {
    subject.strip_prefix(PREFIX)?.strip_prefix('.')?.split('.').next().and_then(Verb::parse)
}

/// Host, rack and dc names become subject tokens and key-value keys: letters, digits, `-` and
/// `_`, at most [`MAX_NAME`] bytes. (A dot would split a token; `*` and `>` are wildcards.)
pub fn check_name(what: &str, name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{what} name {name:?} cannot name a fleet subject: use 1 to {MAX_NAME} letters, digits, '-' or '_'"
        ))
    }
}

/// A default host name from the kernel's: its first label, with anything a subject cannot
/// hold replaced by `-` (`web-1.example.com` → `web-1`).
pub fn default_host_name(kernel: &str) -> String {
    let first = kernel.split('.').next().unwrap_or_default();
    let cleaned: String = first
        .chars()
        .take(MAX_NAME)
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' })
        .collect();
    if cleaned.is_empty() { "localhost".into() } else { cleaned }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selector_takes_the_narrowest_subject_and_matches_by_every_level() {
        let rack = Selector { dc: Some("d1".into()), rack: Some("r7".into()), host: None };
        assert_eq!(rack.subject(Verb::Invoke), "loupe.v1.invoke.rack.r7");
        assert!(rack.matches("h1", "r7", "d1"));
        assert!(!rack.matches("h1", "r7", "d2"), "a rack of the same name in another dc");
        assert_eq!(Selector::default().subject(Verb::Run), "loupe.v1.run.all");
        assert_eq!(Selector { dc: Some("d1".into()), ..Default::default() }.subject(Verb::Run), "loupe.v1.run.dc.d1");
        assert_eq!(verb_of("loupe.v1.run.rack.r7"), Some(Verb::Run));
        assert_eq!(verb_of("loupe.v2.run.rack.r7"), None);
        assert_eq!(verb_of("loupe.v1.read.host.h1"), Some(Verb::Read));
    }

    #[test]
    fn names_that_would_break_a_subject_are_refused() {
        for bad in ["", "a.b", "r*", ">", "with space", &"x".repeat(65)] {
            assert!(check_name("rack", bad).is_err(), "{bad:?}");
        }
        check_name("rack", "pod3-rack_17").unwrap();
        assert_eq!(default_host_name("web-1.example.com"), "web-1");
        assert_eq!(default_host_name("a+b"), "a-b");
    }
}
