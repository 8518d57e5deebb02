//! What the fleet's operations (`ops::fleet_operations!`) take: the hosts an order selects
//! ([`Selector`]) and each order, as every door receives them — the CLI over NATS or through an
//! agent (`--server`), the agent's HTTP fleet routes, `POST /api/v1/call`. Like the host's
//! orders (`orders`), these are values; the fleet's coordinator checks them against its bounds,
//! and each target host checks the signed request that carries them.

use std::time::Duration;

use loupe_store::{SampleKind, TimeRange};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// Longest host, rack or dc name.
pub const MAX_NAME: usize = 64;

/// Which hosts of the fleet an order goes to: a datacenter, a rack, one host; none of them
/// selects the whole fleet. Each given name becomes a NATS subject token ([`Selector::check`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Selector {
    /// A datacenter.
    pub dc: Option<String>,
    /// A rack (rack names are taken to be unique in the fleet; give `dc` too where not).
    pub rack: Option<String>,
    /// One host, by its fleet name.
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

    /// Whether a host at this place is selected.
    pub fn matches(&self, host: &str, rack: &str, dc: &str) -> bool {
        self.host.as_deref().is_none_or(|h| h == host)
            && self.rack.as_deref().is_none_or(|r| r == rack)
            && self.dc.as_deref().is_none_or(|d| d == dc)
    }

    /// Words for messages and the audit trail: `rack r1 in dc d1`, `the whole fleet`.
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

/// A synchronized run: one run on every selected host from one start instant.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FleetRunOrder {
    pub hosts: Selector,
    /// The interface; each host's only one when absent.
    pub iface: Option<String>,
    pub interval: Duration,
    pub samples: u32,
    /// The common start (Unix ns); a little ahead of now when absent.
    pub at_unix_ns: Option<u64>,
}

impl FleetRunOrder {
    /// The audit trail's target: `rack r1: 2000 × 1ms`.
    pub fn target_text(&self) -> String {
        format!("{}: {} × {:?}", self.hosts.describe(), self.samples, self.interval)
    }
}

/// An analysis on every selected host next to its data, their partial results merged.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FleetInvokeOrder {
    /// The analysis: through an agent, one uploaded to that agent (it ships it to the fleet);
    /// over NATS, its name in the fleet's catalog.
    pub name: String,
    pub hosts: Selector,
    pub range: TimeRange,
    pub params: serde_json::Map<String, serde_json::Value>,
    /// How long to wait for the hosts' answers (merging comes after).
    pub deadline: Duration,
}

impl FleetInvokeOrder {
    /// The audit trail's target: `hot over rack r1`.
    pub fn target_text(&self) -> String {
        format!("{} over {}", self.name, self.hosts.describe())
    }
}

/// One host's stored stacks of a range, read over the fleet (the fleet view's "open this
/// host"): its aggregated stacks travel, the flame graph is built by whoever asked.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HostProfileOrder {
    /// The host's fleet name.
    pub host: String,
    pub range: TimeRange,
    /// Where its threads ran (samples), or where they waited off the CPU (ns).
    pub kind: SampleKind,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selector_matches_by_every_level_and_says_what_it_selects() {
        let rack = Selector { dc: Some("d1".into()), rack: Some("r7".into()), host: None };
        assert!(rack.matches("h1", "r7", "d1"));
        assert!(!rack.matches("h1", "r7", "d2"), "a rack of the same name in another dc");
        assert!(!rack.matches("h1", "r8", "d1"));
        assert_eq!(rack.describe(), "rack r7 in dc d1");
        assert_eq!(Selector::default().describe(), "the whole fleet");
        assert!(Selector { host: Some("a.b".into()), ..Default::default() }.check().is_err());
    }

    #[test]
    fn names_that_would_break_a_subject_are_refused() {
        for bad in ["", "a.b", "r*", ">", "with space", &"x".repeat(65)] {
            assert!(check_name("rack", bad).is_err(), "{bad:?}");
        }
        check_name("rack", "pod3-rack_17").unwrap();
    }
}
