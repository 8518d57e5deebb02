//! A fleet of NATS leaf nodes: a leaf `nats-server` per rack or pod, each with JetStream in a
//! domain of its own, joined to a hub. The domain names the leaf: its registry and module
//! store live there, its agents' heartbeats never leave it, and a request for one of its racks
//! reaches it alone (NATS forwards a message over a leaf connection only to interest behind
//! it). Across leaves, what a question needs crosses as one message per leaf:
//!
//! - **Who is there.** `fleet hosts` asks `loupe.v1.hosts.leaf.all`; one agent of each leaf (the
//!   leaf's queue group picks it) answers with its leaf's registry.
//! - **Merges in a tree.** `fleet invoke --all`/`--dc` asks `loupe.v1.invoke.leaf.all`; one agent
//!   of each leaf invokes the leaf's hosts, merges their partials in its sandbox and answers
//!   with one partial and the names of its missing and failed hosts
//!   (the coordinator's `invoke`).
//!
//! The asker remembers each leaf that answered, with its hosts, in a key-value bucket of its
//! own domain ([`DIRECTORY`]): a later query waits for exactly those leaves, and when a whole
//! leaf goes quiet (its server down, its link to the hub cut, no agent of it up) it can name
//! that leaf's hosts missing instead of forgetting them. Entries expire after an hour without
//! an answer, as host registrations do.

use std::{
    collections::{BTreeMap, BTreeSet},
    time::{Duration, Instant},
};

use async_nats::jetstream::{self, kv};
use serde::{Deserialize, Serialize};
use tracing::{debug, warn};

use super::{
    FleetError,
    gather::{Ask, Gathered, KeyBy, gather_by},
    live_registry::LiveRegistry,
    registry::FORGET_AFTER,
    signer::Signer,
    subjects::{self, Selector, Verb},
    wire::LeafHostsReply,
};
use loupe_api::{
    clock::now_unix_ns,
    model::{FleetHost, FleetPlace},
};

/// The asker's bucket of leaves it heard from: leaf → [`LeafEntry`].
pub const DIRECTORY: &str = "loupe-leaves";
/// How long a roll call listens when the asker knows of no leaf yet.
pub const DISCOVERY: Duration = Duration::from_secs(1);
/// How long `fleet hosts` listens at least, for leaves the asker has not heard from before.
pub const HOSTS_WINDOW: Duration = Duration::from_millis(250);
/// How long a roll call waits for the leaves it knows.
pub const ROLL_CALL_DEADLINE: Duration = Duration::from_secs(3);
/// Largest directory entry read back.
const MAX_ENTRY: usize = 1 << 20;
/// Most leaves the directory is read for.
const MAX_LEAVES: usize = 10_000;

/// What the asker remembers of a leaf.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeafEntry {
    pub leaf: String,
    /// Its hosts as its registry last listed them (those that had not left).
    pub hosts: Vec<FleetPlace>,
    pub seen_unix_ns: u64,
}

/// The domain of an agent's server ([`ask_domain`]). An agent may start before NATS or
/// JetStream is ready, so this waits for the connection, then asks up to five times a second
/// apart before taking "no domain".
pub async fn discover_domain(client: &async_nats::Client, js: &jetstream::Context) -> Option<String> {
    for attempt in 1..=5 {
        while client.connection_state() != async_nats::connection::State::Connected {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        match ask_domain(js).await {
            Ok(domain) => return domain,
            Err(e) if attempt == 5 => warn!("{e}; taking this server as no leaf (no JetStream domain)"),
            Err(e) => debug!("{e}; asking again"),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    None
}

/// The server's JetStream domain (`None`: it has none, or one that cannot name a leaf), or why
/// it did not say.
pub async fn ask_domain(js: &jetstream::Context) -> Result<Option<String>, String> {
    let account = match tokio::time::timeout(Duration::from_secs(3), js.query_account()).await {
        Ok(Ok(account)) => account,
        Ok(Err(e)) => return Err(format!("no JetStream account information ({e})")),
        Err(_) => return Err("JetStream account information did not come within 3 s".into()),
    };
    let Some(domain) = account.domain.filter(|d| !d.is_empty()) else { return Ok(None) };
    match subjects::check_name("JetStream domain", &domain) {
        Ok(()) => Ok(Some(domain)),
        Err(e) => {
            warn!("{e}; this server's agents are not treated as a leaf");
            Ok(None)
        }
    }
}

async fn directory(js: &jetstream::Context) -> Result<kv::Store, FleetError> {
    super::key_value(
        js,
        kv::Config {
            bucket: DIRECTORY.into(),
            description: "Loupe: the leaf nodes this domain's askers heard from, with their hosts".into(),
            history: 1,
            max_age: FORGET_AFTER,
            max_value_size: MAX_ENTRY as i32,
            ..Default::default()
        },
    )
    .await
}

/// Every leaf the directory holds (none if it cannot be read: the roll call then discovers).
pub async fn known(js: &jetstream::Context) -> BTreeMap<String, LeafEntry> {
    let Ok(store) = directory(js).await else { return BTreeMap::new() };
    let Ok(entries) = super::registry::latest(&store, MAX_LEAVES).await else { return BTreeMap::new() };
    entries
        .into_iter()
        .filter(|e| e.value.len() <= MAX_ENTRY)
        .filter_map(|e| serde_json::from_slice::<LeafEntry>(&e.value).ok().filter(|leaf| leaf.leaf == e.key))
        .map(|leaf| (leaf.leaf.clone(), leaf))
        .collect()
}

/// Remembers what a leaf answered (best effort: a directory that cannot be written only means
/// the next query discovers again).
pub async fn record(js: &jetstream::Context, leaf: &str, hosts: Vec<FleetPlace>) {
    if subjects::check_name("leaf", leaf).is_err() {
        return;
    }
    let entry = LeafEntry { leaf: leaf.into(), hosts, seen_unix_ns: now_unix_ns() };
    let value = serde_json::to_vec(&entry).expect("a leaf entry encodes");
    match directory(js).await {
        Ok(store) => {
            if let Err(e) = store.put(leaf, value.into()).await {
                debug!("recording leaf {leaf}: {e}");
            }
        }
        Err(e) => debug!("{e}"),
    }
}

/// Each leaf's registry, one agent of each answering: until every leaf in `known` answered and
/// at least `window` passed, or [`ROLL_CALL_DEADLINE`]. With none known, listens for
/// [`DISCOVERY`]. Leaves that answered are recorded; those known but silent are returned
/// beside.
pub async fn roll_call(
    client: &async_nats::Client,
    js: &jetstream::Context,
    window: Duration,
    signer: &Signer,
) -> Result<RollCall, FleetError> {
    let known = known(js).await;
    let started = Instant::now();
    let query = client.new_inbox();
    let deadline_unix = now_unix_ns() + ROLL_CALL_DEADLINE.as_nanos() as u64;
    let request = || signer.seal(&query, &Selector::default(), deadline_unix, ());
    let (expected, deadline, at_least) = if known.is_empty() {
        (BTreeSet::new(), started + DISCOVERY, None)
    } else {
        (known.keys().cloned().collect(), started + ROLL_CALL_DEADLINE, Some(started + window))
    };
    let gathered: Gathered<LeafHostsReply> = gather_by(
        client,
        &request(),
        Ask {
            subject: subjects::leaf_subject(Verb::Hosts, None),
            expected,
            deadline,
            key: KeyBy::Leaf,
            resend: Some(super::gather::Resend {
                at: started + ROLL_CALL_DEADLINE / 2,
                subject: |leaf| subjects::leaf_subject(Verb::Hosts, Some(leaf)),
                request: request(),
            }),
            at_least,
        },
    )
    .await?;
    let mut leaves = BTreeMap::new();
    for answer in gathered.answers {
        let (Some(leaf), Ok(reply)) = (answer.leaf, answer.result) else { continue };
        let places = reply.hosts.iter().filter(|h| h.status != "left").map(|h| h.place.clone()).collect();
        record(js, &leaf, places).await;
        leaves.insert(leaf, reply.hosts);
    }
    let silent = known.into_iter().filter(|(leaf, _)| !leaves.contains_key(leaf)).map(|(_, e)| e).collect();
    Ok(RollCall { leaves, silent })
}

/// What a roll call heard.
pub struct RollCall {
    /// Each answering leaf's registry.
    pub leaves: BTreeMap<String, Vec<FleetHost>>,
    /// Leaves known from earlier answers that did not answer now.
    pub silent: Vec<LeafEntry>,
}

/// The hosts of a leaf that did not answer, as `fleet hosts` lists them: `unreachable`, with
/// the seconds since the leaf last answered.
pub fn unreachable_hosts(entry: &LeafEntry, now_unix_ns: u64) -> impl Iterator<Item = FleetHost> + '_ {
    let silent_s = now_unix_ns.saturating_sub(entry.seen_unix_ns) / 1_000_000_000;
    entry.hosts.iter().map(move |place| FleetHost {
        place: place.clone(),
        version: String::new(),
        ifaces: Vec::new(),
        retained_from_unix_ns: 0,
        retained_to_unix_ns: 0,
        joined_unix_ns: 0,
        heartbeat_unix_ns: 0,
        status: "unreachable".into(),
        silent_s,
        leaf: Some(entry.leaf.clone()),
    })
}

/// Lists a leaf's registry for a roll call (on the leaf's agent).
pub async fn list_leaf(js: &jetstream::Context, live: &LiveRegistry) -> Result<LeafHostsReply, FleetError> {
    Ok(LeafHostsReply { hosts: live.list(js, &Selector::default()).await? })
}

/// How long a leaf may wait for its hosts, for an asker waiting until `deadline`: a fifth of
/// the time left (between 50 ms and 2 s) is kept for the leaf's merge and its answer's trip,
/// so the asker hears every leaf before its own deadline.
pub fn leaf_deadline(now: Instant, deadline: Instant) -> Instant {
    let left = deadline.saturating_duration_since(now);
    let margin = (left / 5).clamp(Duration::from_millis(50), Duration::from_secs(2)).min(left / 2);
    deadline - margin
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leaf_waits_less_than_its_asker_by_a_share_of_the_time_left() {
        let now = Instant::now();
        let two_s = leaf_deadline(now, now + Duration::from_secs(2));
        assert_eq!(two_s - now, Duration::from_millis(1_600));
        let long = leaf_deadline(now, now + Duration::from_secs(60));
        assert_eq!(long - now, Duration::from_secs(58), "at most 2 s kept back");
        let short = leaf_deadline(now, now + Duration::from_millis(80));
        assert_eq!(short - now, Duration::from_millis(40), "never more than half");
        let past = leaf_deadline(now, now);
        assert_eq!(past, now);
    }
}
