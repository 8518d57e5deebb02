//! The asking side of the fleet: who is there, a synchronized run on a rack, an analysis on
//! every selected host with the partial results merged. Used by `loupe fleet … --nats URL` and
//! by the HTTP API of any agent in the fleet.
//!
//! Every query first reads the registry: the hosts it selects that are `up` are the ones it
//! waits for, so it can stop as soon as the last of them answered and name the ones that did
//! not at its deadline; `silent` hosts are listed as missing without being waited for.
//!
//! In a fleet of leaf nodes ([`super::leaves`]) the registry of the asker's own leaf suffices
//! for a rack or a host in it; anything wider lists every leaf's registry through one agent of
//! each, and an invocation of a datacenter or the whole fleet runs as a tree: one coordinator
//! per leaf gathers and merges its hosts, the asker merges the leaves' partials.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
    time::{Duration, Instant},
};

use async_nats::jetstream;
use loupe_store::TimeRange;

use super::{
    Connection, FleetError, gate,
    gather::{Ask, Gathered, KeyBy, Resend, gather, gather_by},
    leaves::{self, LeafEntry},
    live_registry::LiveRegistry,
    modules::{self, Shipped},
    registry, seal,
    signer::{Sealed, Signer},
    subjects::{self, Selector, Verb},
    wire::{
        Envelope, InvokeBody, InvokeReply, LeafInvokeBody, LeafInvokeReply, ReadBody, ReadReply, RunBody, RunReply,
        WireError,
    },
};
use loupe_api::{
    clock::now_unix_ns,
    fleet::{FleetInvokeOrder, FleetRunOrder},
    model::{
        ErrorKind, FleetAnswered, FleetHost, FleetHostsView, FleetInvokeView, FleetLeafAnswer, FleetMiss, FleetPlace,
        FleetRunHost, FleetRunView, InvokeResponse,
    },
    signed::trust::TrustFile,
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
    /// The JetStream domain (leaf) of the server it talks to, kept once the server said.
    domain: tokio::sync::OnceCell<Option<String>>,
    /// Its leaf's registry as a watch keeps it, when it leads its leaf (an agent's); read
    /// from the bucket per query otherwise.
    leaf_registry: Option<LiveRegistry>,
    /// The keys whose seals on leaves' partials it takes (`with_trust`).
    trust: Option<Arc<TrustFile>>,
}

/// The registry's view of a selection: who to wait for, and who is known but silent.
struct Expected {
    up: BTreeMap<String, FleetPlace>,
    silent: Vec<FleetMiss>,
}

/// What an invocation gathered, before merging.
#[derive(Default)]
struct Collected {
    answered: Vec<FleetAnswered>,
    missing: Vec<FleetMiss>,
    failed: Vec<FleetMiss>,
    partials: Partials,
    /// In a tree: each leaf that answered with a partial, and the hosts that partial covers
    /// (by its coordinator's host name).
    leaves: Vec<FleetLeafAnswer>,
    covers: BTreeMap<String, Vec<FleetPlace>>,
}

/// A leaf's gather, for its coordinator to merge: what its hosts answered, and every host of
/// the leaf's registry.
pub struct LeafGathered {
    answered: Vec<FleetAnswered>,
    missing: Vec<FleetMiss>,
    failed: Vec<FleetMiss>,
    pub partials: Partials,
    leaf_hosts: Vec<FleetPlace>,
}

impl LeafGathered {
    /// The leaf's answer, with its hosts' partials merged into `partial` (absent when none
    /// answered) and `refused` (indices into [`LeafGathered::partials`], with why) listed as
    /// failed.
    pub fn reply(self, partial: Option<Vec<u8>>, refused: Vec<(usize, String)>, merge_ns: u64) -> LeafInvokeReply {
        let LeafGathered { mut answered, missing, mut failed, partials, leaf_hosts } = self;
        for (i, why) in refused {
            if let Some((place, _)) = partials.get(i) {
                answered.retain(|a| &a.place != place);
                failed.push(FleetMiss { place: place.clone(), why, code: "bad_partial".into() });
            }
        }
        LeafInvokeReply { partial, answered, missing, failed, merge_ns, leaf_hosts, seal: None }
    }
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
        Coordinator {
            client,
            js,
            by: by.into(),
            domain: tokio::sync::OnceCell::new(),
            leaf_registry: None,
            trust: None,
        }
    }

    /// Merges a leaf's partial only if a host key of `trust` sealed it (`seal`); without a
    /// trust file, every leaf's partial is taken as it comes.
    pub fn with_trust(self, trust: Arc<TrustFile>) -> Coordinator {
        Coordinator { trust: Some(trust), ..self }
    }

    /// Lists its leaf's hosts from `live` when it leads the leaf ([`Coordinator::lead_leaf`]).
    pub fn with_leaf_registry(self, live: LiveRegistry) -> Coordinator {
        Coordinator { leaf_registry: Some(live), ..self }
    }

    /// Told its server's JetStream domain (an agent asked it already).
    pub fn with_domain(self, domain: Option<String>) -> Coordinator {
        Coordinator { domain: tokio::sync::OnceCell::new_with(Some(domain)), ..self }
    }

    /// The JetStream domain of the server this coordinator talks to: its leaf, if any. Kept
    /// once the server said; asked again next time if it did not answer (busy, or JetStream
    /// not up yet), so one slow moment does not make a leaf look like a single server.
    pub async fn domain(&self) -> Option<String> {
        match self.domain.get_or_try_init(|| leaves::ask_domain(&self.js)).await {
            Ok(domain) => domain.clone(),
            Err(e) => {
                tracing::debug!("{e}: taken as no domain for now");
                None
            }
        }
    }

    /// Registered hosts the selector matches, with their status. In a fleet of leaf nodes,
    /// this leaf's registry answers for a rack or host it holds; anything wider is listed by
    /// one agent of every leaf, and the hosts of a leaf that did not answer are listed
    /// `unreachable` from what it answered last.
    pub async fn hosts(&self, selector: &Selector, signer: &Signer) -> Result<FleetHostsView, FleetError> {
        selector.check().map_err(FleetError::BadRequest)?;
        let mut hosts = registry::list(&registry::bucket(&self.js).await?, selector).await?;
        let narrow = selector.host.is_some() || selector.rack.is_some();
        if let Some(own) = self.domain().await
            && !(narrow && !hosts.is_empty())
        {
            let call = leaves::roll_call(&self.client, &self.js, leaves::HOSTS_WINDOW, signer).await?;
            let mut seen: std::collections::HashSet<String> = hosts.iter().map(|h| h.place.host.clone()).collect();
            let now = now_unix_ns();
            let others = call.leaves.into_iter().filter(|(leaf, _)| *leaf != own).flat_map(|(_, hosts)| hosts);
            let unreachable =
                call.silent.iter().filter(|e| e.leaf != own).flat_map(|e| leaves::unreachable_hosts(e, now));
            for h in others.chain(unreachable) {
                if selector.matches(&h.place.host, &h.place.rack, &h.place.dc) && seen.insert(h.place.host.clone()) {
                    hosts.push(h);
                }
            }
            hosts.sort_by(|a, b| {
                (&a.place.dc, &a.place.rack, &a.place.host).cmp(&(&b.place.dc, &b.place.rack, &b.place.host))
            });
        }
        let up = hosts.iter().filter(|h| h.status == "up").count() as u64;
        Ok(FleetHostsView { hosts, up })
    }

    async fn expected(&self, selector: &Selector, signer: &Signer) -> Result<Expected, FleetError> {
        let expected = expected_of(self.hosts(selector, signer).await?.hosts);
        if expected.up.is_empty() {
            return Err(FleetError::NotFound(format!(
                "no host of {} is up in the fleet (`loupe fleet hosts` lists who registered)",
                selector.describe()
            )));
        }
        Ok(expected)
    }

    /// A synchronized run: one start instant for every selected host, slots counted in each
    /// host's kernel from it.
    pub async fn run(&self, order: &FleetRunOrder, signer: &Signer) -> Result<FleetRunView, FleetError> {
        order.hosts.check().map_err(FleetError::BadRequest)?;
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
        let expected = self.expected(&order.hosts, signer).await?;
        let length = order.interval.saturating_mul(order.samples);
        let deadline_unix = start + (length + RUN_ANSWER_MARGIN).as_nanos() as u64;
        let body = RunBody {
            iface: order.iface.clone(),
            interval_ns: order.interval.as_nanos() as u64,
            samples: order.samples,
            start_unix_ns: start,
        };
        let request = signer.seal(&self.client.new_inbox(), &order.hosts, deadline_unix, body);
        let deadline = Instant::now() + Duration::from_nanos(deadline_unix.saturating_sub(now_unix_ns()));
        let gathered: Gathered<RunReply> = gather(
            &self.client,
            subjects::subject(Verb::Run, &order.hosts),
            &request,
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
    pub async fn read(&self, host: &str, body: ReadBody, signer: &Signer) -> Result<ReadReply, FleetError> {
        let selector = Selector { host: Some(host.into()), ..Default::default() };
        selector.check().map_err(FleetError::BadRequest)?;
        let expected = self.expected(&selector, signer).await?;
        let deadline = now_unix_ns() + READ_DEADLINE.as_nanos() as u64;
        let request = signer.seal(&self.client.new_inbox(), &selector, deadline, body);
        let mut gathered: Gathered<ReadReply> = gather(
            &self.client,
            subjects::subject(Verb::Read, &selector),
            &request,
            expected.up.keys().cloned().collect(),
            Instant::now() + READ_DEADLINE,
        )
        .await?;
        match gathered.answers.pop() {
            Some(answer) => answer.result.map_err(|e| FleetError::Remote {
                host: host.into(),
                kind: e.kind,
                code: e.code,
                message: e.message,
            }),
            None => Err(FleetError::Bus(format!(
                "host {host} did not answer within {} s (down, partitioned or overloaded)",
                READ_DEADLINE.as_secs()
            ))),
        }
    }

    /// Puts a module into the fleet's object store (once per content) under `name`, its
    /// catalog entry signed by `signer`.
    pub async fn ship(&self, name: &str, bytes: &[u8], signer: &Signer) -> Result<Shipped, FleetError> {
        modules::ship(&self.js, name, bytes, &self.by, signer).await
    }

    /// The module last shipped under `name`, its entry as signed.
    pub async fn lookup(&self, name: &str) -> Result<Shipped, FleetError> {
        modules::lookup(&self.js, name).await
    }

    /// A module by hash, checked.
    pub async fn fetch(&self, sha256: &str) -> Result<Vec<u8>, FleetError> {
        modules::fetch(&self.js, sha256).await
    }

    /// Runs the module `shipped` on every selected host, then hands the partials to `merge` (on
    /// the blocking pool: it runs wasm) and assembles the answer.
    pub async fn invoke<M>(
        &self,
        order: &FleetInvokeOrder,
        shipped: &Shipped,
        signer: &Signer,
        merge: M,
    ) -> Result<FleetInvokeView, FleetError>
    where
        M: FnOnce(Partials) -> Result<Merged, FleetError> + Send + 'static,
    {
        order.hosts.check().map_err(FleetError::BadRequest)?;
        if order.deadline.is_zero() || order.deadline > MAX_DEADLINE {
            return Err(FleetError::BadRequest(format!(
                "deadline {:?}: give one between 1 ms and {} s",
                order.deadline,
                MAX_DEADLINE.as_secs()
            )));
        }
        let started = Instant::now();
        let deadline = started + order.deadline;
        let own = self.domain().await;
        let Collected { mut answered, missing: missing_hosts, mut failed, partials, leaves, covers } = match &own {
            // A datacenter or the whole fleet, in a fleet with leaves: as a tree.
            Some(own) if order.hosts.host.is_none() && order.hosts.rack.is_none() => {
                self.tree(order, shipped, own, deadline, signer).await?
            }
            _ => {
                let expected = self.expected(&order.hosts, signer).await?;
                let subject = subjects::subject(Verb::Invoke, &order.hosts);
                let body = invoke_body(order, shipped, own.clone());
                let request = signer.seal(&self.client.new_inbox(), &order.hosts, unix_at(deadline), body);
                self.scatter(&request, subject, expected, deadline).await?
            }
        };
        if partials.is_empty() {
            // Why, in the hosts' own words: the first failure (all the same, usually).
            let why = failed.first().map(|f| format!("; {}: {}", f.place.host, f.why)).unwrap_or_default();
            return Err(FleetError::NotFound(format!(
                "no host of {} answered with a result ({} failed, {} missing){why}",
                order.hosts.describe(),
                failed.len(),
                missing_hosts.len()
            )));
        }
        let merged = tokio::task::spawn_blocking(move || merge(partials))
            .await
            .map_err(|e| FleetError::Bus(format!("the merge task failed: {e}")))??;
        for (place, why) in merged.refused {
            // A leaf's partial stands for every host it merged.
            let hosts = covers.get(&place.host).cloned().unwrap_or_else(|| vec![place.clone()]);
            for host in hosts {
                answered.retain(|a| a.place != host);
                failed.push(FleetMiss { place: host, why: why.clone(), code: "bad_partial".into() });
            }
        }
        Ok(FleetInvokeView {
            name: shipped.entry.name.clone(),
            sha256: shipped.entry.sha256.clone(),
            output: merged.response.output,
            answered,
            missing: missing_hosts,
            failed,
            log: merged.response.log,
            elapsed_ns: started.elapsed().as_nanos() as u64,
            merge_ns: merged.merge_ns,
            leaves,
        })
    }

    /// Every selected host invoked on `subject` by `request` and gathered until `deadline`.
    async fn scatter(
        &self,
        request: &Sealed,
        subject: String,
        expected: Expected,
        deadline: Instant,
    ) -> Result<Collected, FleetError> {
        let gathered: Gathered<InvokeReply> =
            gather(&self.client, subject, request, expected.up.keys().cloned().collect(), deadline).await?;
        let mut c = Collected::default();
        for answer in gathered.answers {
            match answer.result {
                Ok(reply) => {
                    c.answered.push(FleetAnswered {
                        place: answer.place.clone(),
                        elapsed_ns: answer.elapsed.as_nanos() as u64,
                    });
                    c.partials.push((answer.place, reply.partial));
                }
                Err(e) => c.failed.push(FleetMiss { place: answer.place, why: e.message, code: e.code }),
            }
        }
        c.missing = expected.silent;
        c.missing.extend(missing(&gathered.missing, &expected.up, gathered.elapsed));
        Ok(c)
    }

    /// A tree: one agent of every leaf gathers and merges the leaf's selected hosts by a
    /// deadline of its own ([`leaves::leaf_deadline`]) and answers with one partial. A leaf
    /// still silent 40 % of the way to that deadline is asked again (its queue group picks
    /// another agent if the first is gone); the hosts of a leaf that never answers are named
    /// missing from what it answered last.
    async fn tree(
        &self,
        order: &FleetInvokeOrder,
        shipped: &Shipped,
        own: &str,
        deadline: Instant,
        signer: &Signer,
    ) -> Result<Collected, FleetError> {
        let mut known = leaves::known(&self.js).await;
        if known.is_empty() {
            // First question from this domain: find the leaves (and remember them).
            leaves::roll_call(&self.client, &self.js, leaves::HOSTS_WINDOW, signer).await?;
            known = leaves::known(&self.js).await;
            if known.is_empty() {
                // No leaf answered: nobody to wait for (the caller says no host answered).
                return Ok(Collected::default());
            }
        }
        let now = Instant::now();
        let leaf_deadline = leaves::leaf_deadline(now, deadline);
        let query = self.client.new_inbox();
        // The leaves' request, and the one their coordinators pass on to their hosts, signed
        // here; twice, the second for asking a leaf again (its own nonces: no host takes it for
        // a replay of the first).
        let leaf_request = || {
            let invoke = invoke_body(order, shipped, Some(own.to_string()));
            let hosts = signer.seal(&query, &order.hosts, unix_at(leaf_deadline), invoke.clone());
            let body =
                LeafInvokeBody { invoke, leaf_deadline_unix_ns: unix_at(leaf_deadline), hosts_request: hosts.bytes };
            signer.seal(&query, &order.hosts, unix_at(deadline), body)
        };
        let gathered: Gathered<LeafInvokeReply> = gather_by(
            &self.client,
            &leaf_request(),
            Ask {
                subject: subjects::leaf_subject(Verb::Invoke, None),
                expected: known.keys().cloned().collect(),
                deadline,
                key: KeyBy::Leaf,
                resend: Some(Resend {
                    at: now + leaf_deadline.saturating_duration_since(now).mul_f64(0.4),
                    subject: |leaf| subjects::leaf_subject(Verb::Invoke, Some(leaf)),
                    request: leaf_request(),
                }),
                at_least: None,
            },
        )
        .await?;
        let selected = |entry: &LeafEntry| -> Vec<FleetPlace> {
            entry.hosts.iter().filter(|p| order.hosts.matches(&p.host, &p.rack, &p.dc)).cloned().collect()
        };
        let mut c = Collected::default();
        let trusted = self.trust.as_deref().map(gate::trusted_now);
        for answer in gathered.answers {
            let leaf = answer.leaf.unwrap_or_default();
            // A partial merged only if a trusted host key sealed it for this query.
            let result = answer.result.and_then(|reply| {
                let unsealed = match (&trusted, &reply.partial) {
                    (Some(list), Some(partial)) => seal::check(list, &query, reply.seal.as_deref(), partial).err(),
                    _ => None,
                };
                match unsealed {
                    Some(why) => Err(WireError::new(ErrorKind::Forbidden, "fleet_unsealed_partial", why)),
                    None => Ok(reply),
                }
            });
            match result {
                Ok(reply) => {
                    leaves::record(&self.js, &leaf, reply.leaf_hosts).await;
                    if let Some(partial) = reply.partial {
                        c.covers.insert(
                            answer.place.host.clone(),
                            reply.answered.iter().map(|a| a.place.clone()).collect(),
                        );
                        c.leaves.push(FleetLeafAnswer {
                            leaf,
                            coordinator: answer.place.clone(),
                            hosts: reply.answered.len() as u64,
                            elapsed_ns: answer.elapsed.as_nanos() as u64,
                            merge_ns: reply.merge_ns,
                        });
                        c.partials.push((answer.place, partial));
                    }
                    c.answered.extend(reply.answered);
                    c.missing.extend(reply.missing);
                    c.failed.extend(reply.failed);
                }
                Err(e) => {
                    let hosts = known.get(&leaf).map(selected).unwrap_or_else(|| vec![answer.place.clone()]);
                    let why = format!("leaf {leaf}'s coordinator {} failed: {}", answer.place.host, e.message);
                    c.failed.extend(hosts.into_iter().map(|place| FleetMiss {
                        place,
                        why: why.clone(),
                        code: e.code.clone(),
                    }));
                }
            }
        }
        for leaf in &gathered.missing {
            let why = format!(
                "its leaf {leaf} did not answer within {} ms (the leaf's server down or cut off from the hub, or \
                 none of its agents up)",
                gathered.elapsed.as_millis()
            );
            let hosts = known.get(leaf).map(selected).unwrap_or_default();
            c.missing.extend(hosts.into_iter().map(|place| FleetMiss {
                place,
                why: why.clone(),
                code: "leaf_deadline".into(),
            }));
        }
        c.answered.sort_by_key(|a| a.elapsed_ns);
        Ok(c)
    }

    /// A leaf's part of a tree, on the agent its queue group chose: [`Coordinator::gather_leaf`],
    /// then the partials merged into one by `merge` (on the blocking pool: it runs wasm), which
    /// answers the encoded partial and the partials it refused (by index, with why).
    pub async fn lead_leaf<M>(
        &self,
        envelope: &Envelope<LeafInvokeBody>,
        merge: M,
    ) -> Result<LeafInvokeReply, FleetError>
    where
        M: FnOnce(Vec<Vec<u8>>) -> Result<(Vec<u8>, Vec<(usize, String)>), FleetError> + Send + 'static,
    {
        let mut gathered = self.gather_leaf(envelope).await?;
        if gathered.partials.is_empty() {
            return Ok(gathered.reply(None, Vec::new(), 0));
        }
        let partials: Vec<Vec<u8>> = gathered.partials.iter_mut().map(|(_, bytes)| std::mem::take(bytes)).collect();
        let started = Instant::now();
        let (partial, refused) = tokio::task::spawn_blocking(move || merge(partials))
            .await
            .map_err(|e| FleetError::Bus(format!("the leaf's merge task failed: {e}")))??;
        Ok(gathered.reply(Some(partial), refused, started.elapsed().as_nanos() as u64))
    }

    /// The leaf's selected hosts (from its own registry, on its `domain` subject) invoked and
    /// gathered by the leaf's deadline, for [`Coordinator::lead_leaf`].
    pub async fn gather_leaf(&self, envelope: &Envelope<LeafInvokeBody>) -> Result<LeafGathered, FleetError> {
        let Some(own) = self.domain().await else {
            return Err(FleetError::BadRequest(
                "this agent's NATS server has no JetStream domain: it is no leaf".into(),
            ));
        };
        let listing = match &self.leaf_registry {
            Some(live) => live.list(&self.js, &Selector::default()).await?,
            None => registry::list(&registry::bucket(&self.js).await?, &Selector::default()).await?,
        };
        let leaf_hosts = listing.iter().filter(|h| h.status != "left").map(|h| h.place.clone()).collect();
        let selected: Vec<FleetHost> = listing
            .into_iter()
            .filter(|h| envelope.selector.matches(&h.place.host, &h.place.rack, &h.place.dc))
            .collect();
        let expected = expected_of(selected);
        if expected.up.is_empty() {
            return Ok(LeafGathered {
                answered: Vec::new(),
                missing: expected.silent,
                failed: Vec::new(),
                partials: Vec::new(),
                leaf_hosts,
            });
        }
        let deadline =
            Instant::now() + Duration::from_nanos(envelope.body.leaf_deadline_unix_ns.saturating_sub(now_unix_ns()));
        // The asker's own request to the leaf's hosts, passed on as it was signed.
        let request = Sealed { query: envelope.query.clone(), bytes: envelope.body.hosts_request.clone() };
        let subject = subjects::domain_subject(Verb::Invoke, &own);
        let c = self.scatter(&request, subject, expected, deadline).await?;
        Ok(LeafGathered {
            answered: c.answered,
            missing: c.missing,
            failed: c.failed,
            partials: c.partials,
            leaf_hosts,
        })
    }
}

/// `invoke`'s body for `order`.
fn invoke_body(order: &FleetInvokeOrder, shipped: &Shipped, origin_domain: Option<String>) -> InvokeBody {
    InvokeBody {
        name: shipped.entry.name.clone(),
        sha256: shipped.entry.sha256.clone(),
        module: shipped.signed.clone(),
        from_unix_ns: order.range.from_unix_ns(),
        to_unix_ns: order.range.to_unix_ns(),
        params: order.params.clone(),
        origin_domain,
    }
}

/// The Unix time (ns) of a monotonic instant, by the clock now.
fn unix_at(t: Instant) -> u64 {
    let now = Instant::now();
    match t.checked_duration_since(now) {
        Some(ahead) => now_unix_ns() + ahead.as_nanos() as u64,
        None => now_unix_ns().saturating_sub(now.duration_since(t).as_nanos() as u64),
    }
}

/// Who of `hosts` to wait for (`up`), and who to name missing without waiting (`silent`, or
/// `unreachable`: their leaf did not answer).
fn expected_of(hosts: Vec<FleetHost>) -> Expected {
    let mut up = BTreeMap::new();
    let mut silent = Vec::new();
    for FleetHost { place, status, silent_s, leaf, .. } in hosts {
        match status.as_str() {
            "up" => {
                up.insert(place.host.clone(), place);
            }
            "silent" => silent.push(FleetMiss {
                place,
                why: format!("no heartbeat for {silent_s} s before the query; not asked"),
                code: "silent".into(),
            }),
            "unreachable" => silent.push(FleetMiss {
                place,
                why: format!(
                    "its leaf {} has not answered for {silent_s} s; not asked",
                    leaf.as_deref().unwrap_or("?")
                ),
                code: "leaf_deadline".into(),
            }),
            _ => {} // left cleanly: not part of the selection any more
        }
    }
    Expected { up, silent }
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
