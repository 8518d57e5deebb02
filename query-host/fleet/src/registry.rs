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
use futures_util::StreamExt;
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
/// Most hosts one listing reads (a leaf, or a single server's whole fleet).
pub(super) const MAX_LISTED: usize = 200_000;
/// How long a listing waits for the next entry.
const LIST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a listing waits for the stream's last message once the server counts none left.
const LAST_GRACE: Duration = Duration::from_millis(500);

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
    super::key_value(
        js,
        kv::Config {
            bucket: BUCKET.into(),
            description: "Loupe agents: one entry per host, rewritten every 5 s".into(),
            history: 1,
            max_age: FORGET_AFTER,
            max_value_size: MAX_ENTRY as i32,
            ..Default::default()
        },
    )
    .await
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
///
/// The whole bucket is read in one pass (an ordered consumer delivering each key's latest
/// value), not a key listing and then one request per key: a leaf of a thousand hosts is read
/// in one stream on every tree query.
pub async fn list(store: &kv::Store, selector: &Selector) -> Result<Vec<FleetHost>, FleetError> {
    let regs: Vec<Registration> = match &selector.host {
        // Keys are host names: one host needs one read.
        Some(host) => match store.get(host).await {
            Ok(Some(bytes)) => decode(host, &bytes).into_iter().collect(),
            Ok(None) => Vec::new(),
            Err(e) => return Err(FleetError::Bus(format!("reading {BUCKET}: {e}"))),
        },
        None => read_all(store).await?,
    };
    Ok(view_of(regs, selector))
}

/// The registrations the selector matches, as listed now: sorted by dc, rack, host.
pub(super) fn view_of(regs: impl IntoIterator<Item = Registration>, selector: &Selector) -> Vec<FleetHost> {
    let now = now_unix_ns();
    let mut hosts: Vec<FleetHost> = regs
        .into_iter()
        .filter(|r| selector.matches(&r.place.host, &r.place.rack, &r.place.dc))
        .map(|r| r.view(now))
        .collect();
    hosts.sort_by(|a, b| (&a.place.dc, &a.place.rack, &a.place.host).cmp(&(&b.place.dc, &b.place.rack, &b.place.host)));
    hosts
}

/// Every entry's latest value, at most [`MAX_LISTED`].
async fn read_all(store: &kv::Store) -> Result<Vec<Registration>, FleetError> {
    let entries = latest(store, MAX_LISTED).await?;
    if entries.len() >= MAX_LISTED {
        warn!("{BUCKET} holds more than {MAX_LISTED} hosts; listing the first");
    }
    Ok(entries.iter().filter_map(|e| decode(&e.key, &e.value)).collect())
}

/// The latest value of every key of a bucket (deleted ones left out), at most `limit` keys, in
/// the order they were written: in one pass of an ordered consumer, not a key listing and then
/// one request per key. `store` must be a handle fetched for this read ([`bucket`]): whether
/// the bucket is empty is asked of the stream state the handle was fetched with.
///
/// One entry per key whatever the watch delivers. It should deliver only each key's latest,
/// but it can deliver a key's older revisions too: async-nats' ordered consumer, when it
/// recreates itself before its first message (a heartbeat missed while a restarted
/// nats-server recovers), starts again from the stream's first message, not from each key's
/// last; and nats-server 2.9 can recover a stream killed with SIGKILL holding revisions its
/// per-key limit had removed. A rack test once listed each of eight hosts 17 times after a
/// restart, every heartbeat since before it. So the highest revision of each key is kept.
pub async fn latest(store: &kv::Store, limit: usize) -> Result<Vec<kv::Entry>, FleetError> {
    // Nothing to read: no watch opened (the status is the handle's, asked of nobody).
    let status = store.status().await.map_err(|e| FleetError::Bus(format!("listing {}: {e}", store.name)))?;
    if status.values() == 0 {
        return Ok(Vec::new());
    }
    let mut by_key = Latest::default();
    current(store, "listing", |entry| {
        by_key.add(entry.key.clone(), entry.revision, entry.operation == kv::Operation::Put, entry, limit);
        by_key.keys() < limit
    })
    .await?;
    Ok(by_key.puts())
}

/// Each key's highest revision among entries read, deletes included (a delete newer than a
/// put hides it), for at most a bounded number of keys.
pub(super) struct Latest<T> {
    /// Key → (revision, a put, the entry).
    entries: std::collections::HashMap<String, (u64, bool, T)>,
}

impl<T> Default for Latest<T> {
    fn default() -> Self {
        Latest { entries: Default::default() }
    }
}

impl<T> Latest<T> {
    /// `entry` (a put, or a delete), unless `key` already holds a newer revision, or it is a
    /// new key and `limit` keys are held.
    pub(super) fn add(&mut self, key: String, revision: u64, put: bool, entry: T, limit: usize) {
        match self.entries.get(&key) {
            Some((held, ..)) if *held >= revision => {}
            None if self.entries.len() >= limit => {}
            _ => {
                self.entries.insert(key, (revision, put, entry));
            }
        }
    }

    pub(super) fn keys(&self) -> usize {
        self.entries.len()
    }

    /// The keys whose latest entry is a put, oldest revision first.
    pub(super) fn puts(self) -> Vec<T> {
        let mut puts: Vec<(u64, T)> =
            self.entries.into_values().filter(|(_, put, _)| *put).map(|(rev, _, e)| (rev, e)).collect();
        puts.sort_unstable_by_key(|(rev, _)| *rev);
        puts.into_iter().map(|(_, e)| e).collect()
    }
}

/// A watch of every key of `store` whose history so far — each key's latest entry, deletes
/// too — is handed to `each` first, until the last one or until `each` says stop; later
/// writes follow on the returned watch. With `false` beside it when the watch ended before
/// the last entry. `doing` names the work in errors. As for [`latest`], `store` must be a
/// handle fetched for this.
pub(super) async fn current(
    store: &kv::Store,
    doing: &str,
    mut each: impl FnMut(kv::Entry) -> bool,
) -> Result<(kv::Watch, bool), FleetError> {
    let failed = |e: &dyn std::fmt::Display| FleetError::Bus(format!("{doing} {}: {e}", store.name));
    // The stream's last message now, asked of the server (the handle's info is as old as the
    // handle): the history ends with it, or with a newer write of its key.
    let mut stream = store.stream.clone();
    let state = stream.info().await.map_err(|e| failed(&e))?.state.clone();
    let mut watch = store.watch_with_history(">").await.map_err(|e| failed(&e))?;
    // An empty bucket has no history to wait for: its first put comes later, on the watch.
    if state.messages == 0 {
        return Ok((watch, true));
    }
    // The server's count of what is left (`delta`) is not trusted to end the history. A listing
    // that stopped at `delta == 0` once left one host of eight out for 30 s after a SIGKILL
    // restart, and nats-server 2.9 can recover such a stream holding two messages of one key
    // (see `latest`), where its count for a last-per-subject consumer is known to go wrong. So
    // the history ends with the stream's last message; once the count says nothing is left but
    // that message has not come, the watch is given `LAST_GRACE` more (it may have expired).
    let mut wait = LIST_TIMEOUT;
    loop {
        let entry = match tokio::time::timeout(wait, watch.next()).await {
            Ok(Some(Ok(entry))) => entry,
            Ok(Some(Err(e))) => return Err(failed(&e)),
            Ok(None) => return Ok((watch, false)),
            Err(_) if wait == LAST_GRACE => return Ok((watch, true)),
            Err(_) => return Err(failed(&format!("no entry for {} s", LIST_TIMEOUT.as_secs()))),
        };
        let last = entry.revision >= state.last_sequence;
        if entry.delta == 0 {
            wait = LAST_GRACE;
        }
        if !each(entry) || last {
            return Ok((watch, true));
        }
    }
}

/// An entry's registration, or `None` with a log line (too large, or not understood).
pub(super) fn decode(key: &str, bytes: &[u8]) -> Option<Registration> {
    if bytes.len() > MAX_ENTRY {
        warn!(key, bytes = bytes.len(), "fleet registration too large, skipped");
        return None;
    }
    serde_json::from_slice(bytes).map_err(|e| warn!(key, "fleet registration not understood, skipped: {e}")).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_keys_older_revisions_are_listed_once_as_its_latest() {
        let mut latest = Latest::default();
        // A stream replayed whole after a restart: every heartbeat of h1 and h2, a delete of h3
        // after its put, and the same history again out of order (a recreated watch).
        let history =
            [("h1", 1, true), ("h2", 2, true), ("h3", 3, true), ("h1", 4, true), ("h2", 5, true), ("h3", 6, false)];
        for (key, rev, put) in history.iter().chain(history.iter().rev()) {
            latest.add(key.to_string(), *rev, *put, (*key, *rev), 10);
        }
        assert_eq!(latest.puts(), [("h1", 4), ("h2", 5)]);
        // At most `limit` keys; newer revisions of held keys still count.
        let mut bounded = Latest::default();
        for (key, rev) in [("a", 1), ("b", 2), ("c", 3), ("a", 4)] {
            bounded.add(key.to_string(), rev, true, (key, rev), 2);
        }
        assert_eq!(bounded.puts(), [("b", 2), ("a", 4)]);
    }

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
