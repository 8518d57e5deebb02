//! A leaf's registry kept current by a watch ([`LiveRegistry`]), for the agent that leads its
//! leaf: a tree query needs the leaf's hosts to know whom to wait for, and reading the bucket
//! per query was the largest part of the query. Measured (`benches/fleet_leaves.rs`, ten
//! leaves of 1,000 agents on 2 cores): one read of a leaf's 1,000 entries took p50 270 ms,
//! p90 513 ms. The watch sees every write to the bucket (each host's heartbeat every 5 s, a
//! join, a clean stop), so a listing from it is as current as a read, and costs a copy.
//!
//! The watch is started on first use and again after it failed. It is JetStream's ordered
//! consumer, with idle heartbeats from the server: a watch that lost its server fails (or
//! recreates itself) rather than falling silent.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, Weak},
};

use async_nats::jetstream::{self, kv};
use futures_util::StreamExt;
use tracing::warn;

use super::{
    FleetError,
    registry::{self, Registration},
    subjects::Selector,
};
use loupe_api::model::FleetHost;

/// A registry bucket's latest registrations, kept by a background watch. Clones share it.
#[derive(Clone, Default)]
pub struct LiveRegistry {
    watched: Arc<tokio::sync::Mutex<Option<Arc<Watched>>>>,
}

/// What one watch has seen.
struct Watched {
    state: Mutex<Seen>,
    task: tokio::task::AbortHandle,
}

struct Seen {
    /// Host → (revision, its registration; `None` once deleted).
    entries: HashMap<String, (u64, Option<Registration>)>,
    ended: bool,
}

impl Drop for Watched {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl LiveRegistry {
    pub fn new() -> LiveRegistry {
        LiveRegistry::default()
    }

    /// Every registered host the selector matches, as [`registry::list`] lists them, from
    /// the watch (started now if there is none, or it failed).
    pub async fn list(&self, js: &jetstream::Context, selector: &Selector) -> Result<Vec<FleetHost>, FleetError> {
        let mut watched = self.watched.lock().await;
        let alive = watched.as_ref().is_some_and(|w| !w.state.lock().expect("registry watch poisoned").ended);
        if !alive {
            *watched = Some(watch(&registry::bucket(js).await?).await?);
        }
        let w = watched.as_ref().expect("a watch was just started");
        let seen = w.state.lock().expect("registry watch poisoned");
        Ok(registry::view_of(seen.entries.values().filter_map(|(_, reg)| reg.clone()), selector))
    }
}

/// Starts a watch of `store`: its current entries read before this returns, later ones applied
/// by a task that ends with the watch (or when nobody holds it any more).
async fn watch(store: &kv::Store) -> Result<Arc<Watched>, FleetError> {
    let mut entries = HashMap::new();
    let (mut watch, caught_up) = registry::current(store, "watching", |entry| {
        apply(&mut entries, entry);
        true
    })
    .await?;
    if !caught_up {
        return Err(FleetError::Bus(format!("watching {}: the watch ended", store.name)));
    }
    let (ready, go) = tokio::sync::oneshot::channel::<Weak<Watched>>();
    let task = tokio::spawn(async move {
        let Ok(me) = go.await else { return };
        while let Some(next) = watch.next().await {
            let Some(me) = me.upgrade() else { return };
            let mut seen = me.state.lock().expect("registry watch poisoned");
            match next {
                Ok(entry) => apply(&mut seen.entries, entry),
                Err(e) => {
                    warn!("the registry watch failed, it restarts on the next query: {e}");
                    break;
                }
            }
        }
        if let Some(me) = me.upgrade() {
            me.state.lock().expect("registry watch poisoned").ended = true;
        }
    });
    let watched = Arc::new(Watched { state: Mutex::new(Seen { entries, ended: false }), task: task.abort_handle() });
    let _ = ready.send(Arc::downgrade(&watched));
    Ok(watched)
}

/// One watched entry into `entries`: a put's registration (if it decodes, and within
/// [`registry::MAX_LISTED`] hosts), a delete or purge marking its host gone; an entry older
/// than what its host holds is ignored (a recreated watch replays from the stream's start:
/// [`registry::latest`] says when).
fn apply(entries: &mut HashMap<String, (u64, Option<Registration>)>, entry: kv::Entry) {
    if entries.get(&entry.key).is_some_and(|(held, _)| *held >= entry.revision) {
        return;
    }
    match entry.operation {
        kv::Operation::Put => {
            if entries.len() >= registry::MAX_LISTED && !entries.contains_key(&entry.key) {
                return;
            }
            if let Some(reg) = registry::decode(&entry.key, &entry.value) {
                entries.insert(entry.key, (entry.revision, Some(reg)));
            }
        }
        kv::Operation::Delete | kv::Operation::Purge => {
            if let Some(held) = entries.get_mut(&entry.key) {
                *held = (entry.revision, None);
            }
        }
    }
}
