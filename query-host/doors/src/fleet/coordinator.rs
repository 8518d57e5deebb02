//! The asking side of the fleet: who is there, a synchronized run on a rack, an analysis on
//! every selected host with the partial results merged. Used by `loupe fleet … --nats URL` and
//! by the HTTP API of any agent in the fleet.
//!
//! Every query first reads the registry: the hosts it selects that are `up` are the ones it
//! waits for, so it can stop as soon as the last of them answered and name the ones that did
//! not at its deadline; `silent` hosts are listed as missing without being waited for.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
    time::{Duration, Instant},
};

use async_nats::jetstream;
use loupe_store::TimeRange;

use super::{
    Connection, FleetError,
    gather::{Gathered, gather},
    modules::{self, CatalogEntry},
    registry,
    subjects::{Selector, Verb},
    wire::{Envelope, InvokeBody, InvokeReply, ReadBody, ReadReply, RunBody, RunReply, WIRE_VERSION},
};
use loupe_api::{
    clock::now_unix_ns,
    model::{
        FleetAnswered, FleetHost, FleetHostsView, FleetInvokeView, FleetMiss, FleetPlace, FleetRunHost, FleetRunView,
        InvokeResponse,
    },
};
use loupe_core::{Host, analyses::FleetModule};

/// How far ahead of now a synchronized run starts when no instant is given: the registry read,
/// the publish and every agent's configuration (cutting a periodic run takes ≤ 20 ms) fit in it
/// with a wide margin on a loaded host.
pub const DEFAULT_LEAD: Duration = Duration::from_secs(2);
/// The least lead accepted for an explicit `--at`.
pub const MIN_LEAD: Duration = Duration::from_millis(300);
/// Time after a run's end for every host to store it and answer.
const RUN_ANSWER_MARGIN: Duration = Duration::from_secs(15);
/// How long a `read` of one host's stored data is waited for.
pub const READ_DEADLINE: Duration = Duration::from_secs(5);
/// Longest deadline of an invocation.
pub const MAX_DEADLINE: Duration = Duration::from_secs(300);

/// A synchronized run on the selected hosts.
#[derive(Clone, Debug)]
pub struct RunOrderFleet {
    pub selector: Selector,
    pub iface: Option<String>,
    pub interval: Duration,
    pub samples: u32,
    /// The common start (Unix ns); `now + DEFAULT_LEAD` when absent.
    pub at_unix_ns: Option<u64>,
}

/// An analysis on the selected hosts.
#[derive(Clone, Debug)]
pub struct InvokeOrder {
    pub selector: Selector,
    pub from_unix_ns: u64,
    pub to_unix_ns: u64,
    pub params: serde_json::Map<String, serde_json::Value>,
    /// How long to wait for the hosts' answers (merging comes after).
    pub deadline: Duration,
}

/// The partials gathered for a merge: each answering host and its encoded partial result.
pub type Partials = Vec<(FleetPlace, Vec<u8>)>;

/// What merging made of the partials: the result, and the hosts whose partial was refused
/// (undecodable or beyond a bound), with why.
pub struct Merged {
    pub response: InvokeResponse,
    pub refused: Vec<(FleetPlace, String)>,
    pub merge_ns: u64,
}

pub struct Coordinator {
    client: async_nats::Client,
    js: jetstream::Context,
    /// Who ships modules (for the catalog): a host name or `cli`.
    by: String,
}

/// The registry's view of a selection: who to wait for, and who is known but silent.
struct Expected {
    up: BTreeMap<String, FleetPlace>,
    silent: Vec<FleetMiss>,
}

impl Coordinator {
    /// Connects (failing after a few seconds if NATS is unreachable).
    pub async fn connect(conn: &Connection, by: &str) -> Result<Coordinator, FleetError> {
        let client = super::connect(conn, false).await?;
        Ok(Coordinator::with_client(client, by))
    }

    /// On an existing connection. Must be called inside a tokio runtime (the JetStream context
    /// spawns a task).
    pub fn with_client(client: async_nats::Client, by: &str) -> Coordinator {
        let js = jetstream::new(client.clone());
        Coordinator { client, js, by: by.into() }
    }

    /// Registered hosts the selector matches, with their status.
    pub async fn hosts(&self, selector: &Selector) -> Result<FleetHostsView, FleetError> {
        selector.check().map_err(FleetError::BadRequest)?;
        let hosts = registry::list(&registry::bucket(&self.js).await?, selector).await?;
        let up = hosts.iter().filter(|h| h.status == "up").count() as u64;
        Ok(FleetHostsView { hosts, up })
    }

    async fn expected(&self, selector: &Selector) -> Result<Expected, FleetError> {
        let hosts = self.hosts(selector).await?.hosts;
        let mut up = BTreeMap::new();
        let mut silent = Vec::new();
        for FleetHost { place, status, silent_s, .. } in hosts {
            match status.as_str() {
                "up" => {
                    up.insert(place.host.clone(), place);
                }
                "silent" => silent.push(FleetMiss {
                    place,
                    why: format!("no heartbeat for {silent_s} s before the query; not asked"),
                    code: "silent".into(),
                }),
                _ => {} // left cleanly: not part of the selection any more
            }
        }
        if up.is_empty() {
            return Err(FleetError::NotFound(format!(
                "no host of {} is up in the fleet (`loupe fleet hosts` lists who registered)",
                selector.describe()
            )));
        }
        Ok(Expected { up, silent })
    }

    /// A synchronized run: one start instant for every selected host, slots counted in each
    /// host's kernel from it.
    pub async fn run(&self, order: &RunOrderFleet) -> Result<FleetRunView, FleetError> {
        order.selector.check().map_err(FleetError::BadRequest)?;
        let now = now_unix_ns();
        let start = match order.at_unix_ns {
            Some(at) if at < now + MIN_LEAD.as_nanos() as u64 => {
                return Err(FleetError::BadRequest(format!(
                    "the start instant is less than {} ms ahead: the hosts could not all be told in time",
                    MIN_LEAD.as_millis()
                )));
            }
            Some(at) => at,
            None => now + DEFAULT_LEAD.as_nanos() as u64,
        };
        let expected = self.expected(&order.selector).await?;
        let length = order.interval.saturating_mul(order.samples);
        let deadline_unix = start + (length + RUN_ANSWER_MARGIN).as_nanos() as u64;
        let envelope = Envelope {
            v: WIRE_VERSION,
            query: self.client.new_inbox(),
            deadline_unix_ns: deadline_unix,
            selector: order.selector.clone(),
            body: RunBody {
                iface: order.iface.clone(),
                interval_ns: order.interval.as_nanos() as u64,
                samples: order.samples,
                start_unix_ns: start,
            },
        };
        let deadline = Instant::now() + Duration::from_nanos(deadline_unix.saturating_sub(now_unix_ns()));
        let gathered: Gathered<RunReply> = gather(
            &self.client,
            order.selector.subject(Verb::Run),
            &envelope,
            expected.up.keys().cloned().collect(),
            deadline,
        )
        .await?;
        let mut hosts = Vec::new();
        let mut missed = expected.silent;
        for answer in gathered.answers {
            match answer.result {
                Ok(r) => hosts.push(FleetRunHost {
                    place: answer.place,
                    run_id: r.run_id,
                    iface: r.iface,
                    start_unix_ns: r.start_unix_ns,
                    interval_ns: r.interval_ns,
                    samples: r.samples,
                    in_bytes: r.in_bytes,
                    out_bytes: r.out_bytes,
                    clock: r.clock,
                    configured_before_start_ns: r.configured_before_start_ns,
                }),
                Err(e) => missed.push(FleetMiss { place: answer.place, why: e.message, code: e.code }),
            }
        }
        missed.extend(missing(&gathered.missing, &expected.up, gathered.elapsed));
        hosts.sort_by(|a, b| a.place.host.cmp(&b.place.host));
        let max_clock_error_ns = hosts.iter().filter_map(|h| h.clock.map(|c| c.max_error_ns)).max().unwrap_or(0);
        Ok(FleetRunView {
            start_unix_ns: start,
            interval_ns: order.interval.as_nanos() as u64,
            samples: order.samples,
            hosts,
            missed,
            max_clock_error_ns,
        })
    }

    /// What one host has stored (a run, a range's stacks): the fleet view opens a host's
    /// window with it. The host must be `up`; its own errors come back with its code.
    pub async fn read(&self, host: &str, body: ReadBody) -> Result<ReadReply, FleetError> {
        let selector = Selector { host: Some(host.into()), ..Default::default() };
        selector.check().map_err(FleetError::BadRequest)?;
        let expected = self.expected(&selector).await?;
        let envelope = Envelope {
            v: WIRE_VERSION,
            query: self.client.new_inbox(),
            deadline_unix_ns: now_unix_ns() + READ_DEADLINE.as_nanos() as u64,
            selector: selector.clone(),
            body,
        };
        let mut gathered: Gathered<ReadReply> = gather(
            &self.client,
            selector.subject(Verb::Read),
            &envelope,
            expected.up.keys().cloned().collect(),
            Instant::now() + READ_DEADLINE,
        )
        .await?;
        match gathered.answers.pop() {
            Some(answer) => {
                answer.result.map_err(|e| FleetError::Remote { host: host.into(), code: e.code, message: e.message })
            }
            None => Err(FleetError::Bus(format!(
                "host {host} did not answer within {} s (down, partitioned or overloaded)",
                READ_DEADLINE.as_secs()
            ))),
        }
    }

    /// Puts a module into the fleet's object store (once per content) under `name`.
    pub async fn ship(&self, name: &str, bytes: &[u8]) -> Result<String, FleetError> {
        modules::ship(&self.js, name, bytes, &self.by).await
    }

    /// The module last shipped under `name`.
    pub async fn lookup(&self, name: &str) -> Result<CatalogEntry, FleetError> {
        modules::lookup(&self.js, name).await
    }

    /// A module by hash, checked.
    pub async fn fetch(&self, sha256: &str) -> Result<Vec<u8>, FleetError> {
        modules::fetch(&self.js, sha256).await
    }

    /// Runs the module `sha256` (shipped under `name`) on every selected host, then hands the
    /// partials to `merge` (on the blocking pool: it runs wasm) and assembles the answer.
    pub async fn invoke<M>(
        &self,
        order: &InvokeOrder,
        name: &str,
        sha256: &str,
        merge: M,
    ) -> Result<FleetInvokeView, FleetError>
    where
        M: FnOnce(Partials) -> Result<Merged, FleetError> + Send + 'static,
    {
        order.selector.check().map_err(FleetError::BadRequest)?;
        if order.deadline.is_zero() || order.deadline > MAX_DEADLINE {
            return Err(FleetError::BadRequest(format!(
                "deadline {:?}: give one between 1 ms and {} s",
                order.deadline,
                MAX_DEADLINE.as_secs()
            )));
        }
        let started = Instant::now();
        let expected = self.expected(&order.selector).await?;
        let envelope = Envelope {
            v: WIRE_VERSION,
            query: self.client.new_inbox(),
            deadline_unix_ns: now_unix_ns() + order.deadline.as_nanos() as u64,
            selector: order.selector.clone(),
            body: InvokeBody {
                name: name.into(),
                sha256: sha256.into(),
                from_unix_ns: order.from_unix_ns,
                to_unix_ns: order.to_unix_ns,
                params: order.params.clone(),
            },
        };
        let gathered: Gathered<InvokeReply> = gather(
            &self.client,
            order.selector.subject(Verb::Invoke),
            &envelope,
            expected.up.keys().cloned().collect(),
            started + order.deadline,
        )
        .await?;
        let mut answered = Vec::new();
        let mut failed = Vec::new();
        let mut partials = Vec::new();
        for answer in gathered.answers {
            match answer.result {
                Ok(reply) => {
                    answered.push(FleetAnswered {
                        place: answer.place.clone(),
                        elapsed_ns: answer.elapsed.as_nanos() as u64,
                    });
                    partials.push((answer.place, reply.partial));
                }
                Err(e) => failed.push(FleetMiss { place: answer.place, why: e.message, code: e.code }),
            }
        }
        let mut missing_hosts = expected.silent;
        missing_hosts.extend(missing(&gathered.missing, &expected.up, gathered.elapsed));
        if partials.is_empty() {
            return Err(FleetError::NotFound(format!(
                "no host of {} answered with a result ({} failed, {} missing)",
                order.selector.describe(),
                failed.len(),
                missing_hosts.len()
            )));
        }
        let merged = tokio::task::spawn_blocking(move || merge(partials))
            .await
            .map_err(|e| FleetError::Bus(format!("the merge task failed: {e}")))??;
        for (place, why) in merged.refused {
            answered.retain(|a| a.place != place);
            failed.push(FleetMiss { place, why, code: "bad_partial".into() });
        }
        Ok(FleetInvokeView {
            name: name.into(),
            sha256: sha256.into(),
            output: merged.response.output,
            answered,
            missing: missing_hosts,
            failed,
            log: merged.response.log,
            elapsed_ns: started.elapsed().as_nanos() as u64,
            merge_ns: merged.merge_ns,
        })
    }
}

/// The merge step of an invocation, on `host`'s analysis runtime (an agent's, or the CLI's
/// own): decodes each partial (a refused one is attributed to its host), then merges the rest
/// with the module's `merge` in the sandbox.
pub fn merge_with(
    host: Arc<Host>,
    module: FleetModule,
    team: String,
    range: TimeRange,
    params: serde_json::Map<String, serde_json::Value>,
) -> impl FnOnce(Partials) -> Result<Merged, FleetError> + Send + 'static {
    move |partials| {
        let started = Instant::now();
        let (places, bytes): (Vec<FleetPlace>, Vec<Vec<u8>>) = partials.into_iter().unzip();
        let merged = host.analyses()?.merge_partials(host.store(), &module, &team, range, &params, bytes)?;
        Ok(Merged {
            response: merged.response,
            refused: merged.refused.into_iter().map(|(i, why)| (places[i].clone(), why)).collect(),
            merge_ns: started.elapsed().as_nanos() as u64,
        })
    }
}

/// The expected hosts that did not answer, as misses.
fn missing(hosts: &BTreeSet<String>, up: &BTreeMap<String, FleetPlace>, waited: Duration) -> Vec<FleetMiss> {
    hosts
        .iter()
        .filter_map(|h| up.get(h))
        .map(|place| FleetMiss {
            place: place.clone(),
            why: format!("no answer within {} ms (down, partitioned or overloaded)", waited.as_millis()),
            code: "deadline".into(),
        })
        .collect()
}
