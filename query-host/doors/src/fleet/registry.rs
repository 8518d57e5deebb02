//! Who is in the fleet: each agent keeps its [`Registration`] alive in a JetStream key-value
//! bucket, and anyone with the fleet's URL can list it.
//!
//! The agent rewrites its entry every [`HEARTBEAT`]; a host whose last heartbeat is older than
//! [`SILENT_AFTER`] (three beats) is listed as `silent`, one that stopped cleanly as `left`, and
//! entries disappear after the bucket's [`FORGET_AFTER`], so a rack's dead hosts stay visible
//! for an hour and then stop cluttering the list. NATS 2.9 has no per-key TTL, hence the
//! heartbeat timestamp rather than expiry alone. Values are JSON so `nats kv get loupe-hosts
//! <host>` is readable by a person at 3 a.m.

use std::time::Duration;

use async_nats::jetstream::{self, kv};
use futures_util::{StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};
use tracing::warn;

use super::{FleetError, subjects::Selector};
use loupe_api::{
    clock::now_unix_ns,
    model::{FleetHost, FleetPlace},
};

/// The bucket holding one entry per host.
pub const BUCKET: &str = "loupe-hosts";
/// How often an agent rewrites its entry.
pub const HEARTBEAT: Duration = Duration::from_secs(5);
/// A host not heard from for this long is `silent`.
pub const SILENT_AFTER: Duration = Duration::from_secs(15);
/// Entries not rewritten for this long are removed by the server.
pub const FORGET_AFTER: Duration = Duration::from_secs(3600);
/// Largest entry read back (a registration is a few hundred bytes).
const MAX_ENTRY: usize = 64 << 10;
/// Entries fetched at once when listing.
const LIST_CONCURRENCY: usize = 64;

/// What an agent says about itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registration {
    #[serde(flatten)]
    pub place: FleetPlace,
    pub version: String,
    pub ifaces: Vec<String>,
    pub retained_from_unix_ns: u64,
    pub retained_to_unix_ns: u64,
    pub joined_unix_ns: u64,
    pub heartbeat_unix_ns: u64,
    /// Set by a clean stop.
    #[serde(default)]
    pub left: bool,
    /// The JetStream domain of the agent's server: its leaf.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
}

impl Registration {
    /// As listed by a host whose clock reads `now_unix_ns`.
    pub fn view(&self, now_unix_ns: u64) -> FleetHost {
        let silent_ns = now_unix_ns.saturating_sub(self.heartbeat_unix_ns);
        let status = if self.left {
            "left"
        } else if silent_ns > SILENT_AFTER.as_nanos() as u64 {
            "silent"
        } else {
            "up"
        };
        FleetHost {
            place: self.place.clone(),
            version: self.version.clone(),
            ifaces: self.ifaces.clone(),
            retained_from_unix_ns: self.retained_from_unix_ns,
            retained_to_unix_ns: self.retained_to_unix_ns,
            joined_unix_ns: self.joined_unix_ns,
            heartbeat_unix_ns: self.heartbeat_unix_ns,
            status: status.into(),
            silent_s: silent_ns / 1_000_000_000,
            leaf: self.domain.clone(),
        }
    }
}

/// The bucket, created on first use (by whichever agent or client comes first).
pub async fn bucket(js: &jetstream::Context) -> Result<kv::Store, FleetError> {
    if let Ok(store) = js.get_key_value(BUCKET).await {
        return Ok(store);
    }
    js.create_key_value(kv::Config {
        bucket: BUCKET.into(),
        description: "Loupe agents: one entry per host, rewritten every 5 s".into(),
        history: 1,
        max_age: FORGET_AFTER,
        max_value_size: MAX_ENTRY as i32,
        ..Default::default()
    })
    .await
    .map_err(|e| {
        FleetError::Bus(format!(
            "creating the key-value bucket {BUCKET} (is JetStream enabled, `nats-server -js`?): {e}"
        ))
    })
}

/// Writes (or rewrites) an agent's entry.
pub async fn put(store: &kv::Store, reg: &Registration) -> Result<(), FleetError> {
    let value = serde_json::to_vec(reg).expect("a registration always encodes");
    store
        .put(&reg.place.host, value.into())
        .await
        .map(|_| ())
        .map_err(|e| FleetError::Bus(format!("registering {}: {e}", reg.place.host)))
}

/// Every registered host the selector matches, sorted by dc, rack, host. Entries that do not
/// decode (written by something else) are skipped with a log line.
pub async fn list(store: &kv::Store, selector: &Selector) -> Result<Vec<FleetHost>, FleetError> {
    // Keys are host names: one host needs one read, not the whole bucket.
    let keys: Vec<String> = match &selector.host {
        Some(host) => vec![host.clone()],
        None => store
            .keys()
            .await
            .map_err(|e| FleetError::Bus(format!("listing {BUCKET}: {e}")))?
            .try_collect()
            .await
            .map_err(|e| FleetError::Bus(format!("listing {BUCKET}: {e}")))?,
    };
    let now = now_unix_ns();
    let entries: Vec<Option<Registration>> = futures_util::stream::iter(keys)
        .map(|key| async move {
            match store.get(&key).await {
                Ok(Some(bytes)) if bytes.len() <= MAX_ENTRY => match serde_json::from_slice::<Registration>(&bytes) {
                    Ok(reg) => Some(reg),
                    Err(e) => {
                        warn!(key, "fleet registration not understood, skipped: {e}");
                        None
                    }
                },
                Ok(Some(bytes)) => {
                    warn!(key, bytes = bytes.len(), "fleet registration too large, skipped");
                    None
                }
                // Deleted or expired between listing and reading.
                Ok(None) => None,
                Err(e) => {
                    warn!(key, "fleet registration unreadable: {e}");
                    None
                }
            }
        })
        .buffer_unordered(LIST_CONCURRENCY)
        .collect()
        .await;
    let mut hosts: Vec<FleetHost> = entries
        .into_iter()
        .flatten()
        .filter(|r| selector.matches(&r.place.host, &r.place.rack, &r.place.dc))
        .map(|r| r.view(now))
        .collect();
    hosts.sort_by(|a, b| (&a.place.dc, &a.place.rack, &a.place.host).cmp(&(&b.place.dc, &b.place.rack, &b.place.host)));
    Ok(hosts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_follows_the_heartbeat_and_a_clean_stop() {
        let mut reg = Registration {
            place: FleetPlace { host: "h".into(), rack: "r".into(), dc: "d".into() },
            version: "0".into(),
            ifaces: vec![],
            retained_from_unix_ns: 0,
            retained_to_unix_ns: 0,
            joined_unix_ns: 0,
            heartbeat_unix_ns: 100_000_000_000,
            left: false,
            domain: None,
        };
        assert_eq!(reg.view(105_000_000_000).status, "up");
        let silent = reg.view(130_000_000_000);
        assert_eq!((silent.status.as_str(), silent.silent_s), ("silent", 30));
        reg.left = true;
        assert_eq!(reg.view(101_000_000_000).status, "left");
    }
}
