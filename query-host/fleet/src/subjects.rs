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

pub use loupe_api::fleet::{MAX_NAME, Selector, check_name};
use serde::{Deserialize, Serialize};

/// Prefix of every subject; the version changes when the wire format does.
pub const PREFIX: &str = "loupe.v1";

/// What a query travels to; also signed inside each request (`wire::Envelope::verb`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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

/// The narrowest subject that reaches every host `selector` selects.
pub fn subject(verb: Verb, selector: &Selector) -> String {
    let v = verb.as_str();
    match (&selector.host, &selector.rack, &selector.dc) {
        (Some(h), _, _) => format!("{PREFIX}.{v}.host.{h}"),
        (None, Some(r), _) => format!("{PREFIX}.{v}.rack.{r}"),
        (None, None, Some(d)) => format!("{PREFIX}.{v}.dc.{d}"),
        (None, None, None) => format!("{PREFIX}.{v}.all"),
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

/// Whether `subject` is a leaf's hosts' subject (a leaf's coordinator scatters there).
pub fn is_domain_subject(subject: &str) -> bool {
    subject.strip_prefix(PREFIX).and_then(|s| s.strip_prefix('.')).and_then(|s| s.split('.').nth(1)) == Some("domain")
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
    fn a_selector_takes_the_narrowest_subject() {
        let rack = Selector { dc: Some("d1".into()), rack: Some("r7".into()), host: None };
        assert_eq!(subject(Verb::Invoke, &rack), "loupe.v1.invoke.rack.r7");
        assert_eq!(subject(Verb::Run, &Selector::default()), "loupe.v1.run.all");
        assert_eq!(subject(Verb::Run, &Selector { dc: Some("d1".into()), ..Default::default() }), "loupe.v1.run.dc.d1");
        assert_eq!(route_of("loupe.v1.run.rack.r7"), Some((Verb::Run, false)));
        assert_eq!(route_of("loupe.v2.run.rack.r7"), None);
        assert_eq!(route_of("loupe.v1.read.host.h1"), Some((Verb::Read, false)));
        // A rack named `leaf` is still a rack.
        assert_eq!(route_of("loupe.v1.invoke.rack.leaf"), Some((Verb::Invoke, false)));
        assert_eq!(route_of(&leaf_subject(Verb::Invoke, None)), Some((Verb::Invoke, true)));
        assert_eq!(route_of(&leaf_subject(Verb::Hosts, Some("r2"))), Some((Verb::Hosts, true)));
        assert_eq!(domain_subject(Verb::Invoke, "r2"), "loupe.v1.invoke.domain.r2");
        assert!(is_domain_subject(&domain_subject(Verb::Invoke, "r2")));
        assert!(!is_domain_subject("loupe.v1.invoke.rack.domain") && !is_domain_subject("loupe.v1.run.all"));
        assert_eq!(agent_subjects("h1", "r7", "d1", Some("r2"))[4], "loupe.v1.*.domain.r2");
        assert_eq!(agent_subjects("h1", "r7", "d1", None).len(), 4);
    }

    #[test]
    fn a_default_host_name_can_name_a_subject() {
        assert_eq!(default_host_name("web-1.example.com"), "web-1");
        assert_eq!(default_host_name("a+b"), "a-b");
    }
}
