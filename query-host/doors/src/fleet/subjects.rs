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
//!
//! In a fleet of NATS leaf nodes (a leaf server per rack or pod, each with JetStream in a domain
//! of its own, joined to a hub), the domain names the leaf, and two more kinds of subject exist:
//!
//! ```text
//! loupe.v1.<verb>.domain.<domain>    the hosts of one leaf (a leaf's coordinator scatters here)
//! loupe.v1.<verb>.leaf.all           one agent of every leaf (queue group loupe-leaf-<domain>)
//! loupe.v1.<verb>.leaf.<domain>      one agent of one leaf (the same queue group)
//! ```
//!
//! Every agent of a leaf joins its leaf's queue group, so the servers deliver a `leaf` request
//! to exactly one living agent per leaf — the leaf's coordinator for that request — and to
//! another one when that agent is gone.

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
    /// A leaf's registry, listed by one of its agents (leaf subjects only).
    Hosts,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Invoke => "invoke",
            Verb::Run => "run",
            Verb::Read => "read",
            Verb::Hosts => "hosts",
        }
    }

    pub fn parse(token: &str) -> Option<Verb> {
        match token {
            "invoke" => Some(Verb::Invoke),
            "run" => Some(Verb::Run),
            "read" => Some(Verb::Read),
            "hosts" => Some(Verb::Hosts),
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

/// The subjects an agent at this place listens on (every verb: `*`), with its leaf's
/// `domain` subject when its server has a JetStream domain.
pub fn agent_subjects(host: &str, rack: &str, dc: &str, domain: Option<&str>) -> Vec<String> {
    let mut subjects = vec![
        format!("{PREFIX}.*.all"),
        format!("{PREFIX}.*.dc.{dc}"),
        format!("{PREFIX}.*.rack.{rack}"),
        format!("{PREFIX}.*.host.{host}"),
    ];
    if let Some(d) = domain {
        subjects.push(format!("{PREFIX}.*.domain.{d}"));
    }
    subjects
}

/// The hosts of one leaf, by its domain: where a leaf's coordinator scatters.
pub fn domain_subject(verb: Verb, domain: &str) -> String {
    format!("{PREFIX}.{}.domain.{domain}", verb.as_str())
}

/// One agent of every leaf (`None`) or of one leaf: the leaf-level requests of a tree.
pub fn leaf_subject(verb: Verb, domain: Option<&str>) -> String {
    format!("{PREFIX}.{}.leaf.{}", verb.as_str(), domain.unwrap_or("all"))
}

/// What a leaf's agents subscribe to for leaf-level requests, all in [`leaf_queue`].
pub fn leaf_subjects(domain: &str) -> [String; 2] {
    [format!("{PREFIX}.*.leaf.all"), format!("{PREFIX}.*.leaf.{domain}")]
}

/// The queue group of a leaf's agents: each leaf-level request goes to one of them.
pub fn leaf_queue(domain: &str) -> String {
    format!("loupe-leaf-{domain}")
}

/// A request's verb, and whether it was addressed to a leaf (one agent answers for the leaf)
/// rather than to hosts.
pub fn route_of(subject: &str) -> Option<(Verb, bool)> {
    let mut tokens = subject.strip_prefix(PREFIX)?.strip_prefix('.')?.split('.');
    let verb = tokens.next().and_then(Verb::parse)?;
    Some((verb, tokens.next() == Some("leaf")))
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
        assert_eq!(route_of("loupe.v1.run.rack.r7"), Some((Verb::Run, false)));
        assert_eq!(route_of("loupe.v2.run.rack.r7"), None);
        assert_eq!(route_of("loupe.v1.read.host.h1"), Some((Verb::Read, false)));
        // A rack named `leaf` is still a rack.
        assert_eq!(route_of("loupe.v1.invoke.rack.leaf"), Some((Verb::Invoke, false)));
        assert_eq!(route_of(&leaf_subject(Verb::Invoke, None)), Some((Verb::Invoke, true)));
        assert_eq!(route_of(&leaf_subject(Verb::Hosts, Some("r2"))), Some((Verb::Hosts, true)));
        assert_eq!(domain_subject(Verb::Invoke, "r2"), "loupe.v1.invoke.domain.r2");
        assert_eq!(agent_subjects("h1", "r7", "d1", Some("r2"))[4], "loupe.v1.*.domain.r2");
        assert_eq!(agent_subjects("h1", "r7", "d1", None).len(), 4);
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
