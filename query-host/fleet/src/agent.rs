//! The agent's side of the fleet: keep this host's registration alive and answer the requests
//! of its scopes — `invoke` (an analysis over local data, answered as a partial result),
//! `run` (a synchronized run from a common instant) and `read` (a stored run or a range's
//! stacks, for the fleet view). On a leaf node (a server with a JetStream domain) it also joins
//! its leaf's queue group and, when chosen, answers for the whole leaf: its registry
//! (`hosts`), or a tree merge's leaf level (`invoke`: the leaf's hosts gathered and merged).
//!
//! Every request passes the host's [`Gate`] first — signed by a trusted key, for this host,
//! new — and is then done through the core's `ActingFor` as the caller it names: the scope
//! checks and the audit trail are those of the HTTP API and the control socket, and every
//! fleet action and refusal is recorded in this host's `audit.log`.
//!
//! It runs on its own thread with a small tokio runtime, so a slow or unreachable NATS server
//! never holds up collection; the core's blocking work (an analysis, a run that lasts seconds)
//! goes to the blocking pool. Requests are answered concurrently up to [`MAX_IN_FLIGHT`]; past
//! that a request is refused at once with `busy` (the asker lists the host as failed, with why,
//! instead of waiting for its deadline). A request received after its deadline is dropped.

use std::{sync::Arc, time::Duration};

use async_nats::{Message, jetstream};
use futures_util::StreamExt;
use serde::Serialize;
use tokio::sync::{Semaphore, watch};
use tracing::{info, warn};

use super::{
    Connection, Coordinator, FleetError,
    gate::{Gate, Trust},
    leaves,
    live_registry::LiveRegistry,
    modules, payload_limit, registry,
    registry::Registration,
    seal,
    subjects::{self, Verb},
    wire::{
        self, Envelope, InvokeBody, InvokeReply, LeafHostsReply, LeafInvokeBody, LeafInvokeReply, ReadBody, ReadReply,
        Reply, RunBody, RunReply, WIRE_VERSION, WireError,
    },
};
use loupe_api::{
    access::{Caller, Scope},
    clock::now_unix_ns,
    model::{ErrorKind, FleetPlace},
    ops::{HostApi, Op},
    signed::{FleetKey, trust::TrustFile},
};
use loupe_core::{CoreError, Host, RunOrder, runs::MAX_START_AHEAD};

/// Requests answered at once; more are refused with `busy`.
pub const MAX_IN_FLIGHT: usize = 8;
/// Most samples of a synchronized run (its per-slot series travel back in the reply).
pub const MAX_FLEET_SAMPLES: u32 = 20_000;
/// Room left in a reply for NATS's own framing and headers.
const REPLY_HEADROOM: usize = 4 << 10;

/// A running fleet membership; [`FleetAgent::stop`] leaves the fleet cleanly.
pub struct FleetAgent {
    runtime: tokio::runtime::Runtime,
    client: async_nats::Client,
    place: FleetPlace,
    /// This host's key: signs for the callers of its HTTP fleet routes.
    key: Arc<FleetKey>,
    /// Whose requests it takes (`Gate::trust_kind`).
    trust: &'static str,
    /// Its trust file, if it has one: the asking side checks leaves' seals against it.
    trust_file: Option<Arc<TrustFile>>,
    stop: watch::Sender<bool>,
    serving: tokio::task::JoinHandle<Result<(), FleetError>>,
}

impl FleetAgent {
    /// Joins the fleet at `place` (in the background: NATS may be down now and come up later),
    /// taking requests signed by the keys `trust` names; `key` is this host's own.
    pub fn start(
        conn: Connection,
        place: FleetPlace,
        host: Arc<Host>,
        trust: Trust,
        key: Arc<FleetKey>,
    ) -> Result<FleetAgent, FleetError> {
        for (what, name) in [("host", &place.host), ("rack", &place.rack), ("dc", &place.dc)] {
            subjects::check_name(what, name).map_err(FleetError::BadRequest)?;
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .max_blocking_threads(MAX_IN_FLIGHT + 2)
            .thread_name("loupe-fleet")
            .enable_all()
            .build()
            .map_err(|e| FleetError::Bus(format!("starting the fleet runtime: {e}")))?;
        // With retries on, this returns at once and connects in the background.
        let client = runtime.block_on(super::connect(&conn, true))?;
        let (stop, stopped) = watch::channel(false);
        if matches!(trust, Trust::Insecure) {
            warn!(
                "fleet: --fleet-insecure: any key's signed request is taken, with every scope; for demos and tests only"
            );
        }
        let trust_file = match &trust {
            Trust::File(file) => Some(Arc::clone(file)),
            Trust::Insecure | Trust::Nobody => None,
        };
        let gate = Gate::new(trust, place.clone());
        let trust = gate.trust_kind();
        let serving = runtime.spawn(serve(
            client.clone(),
            conn.shown_url(),
            place.clone(),
            host,
            gate,
            Arc::clone(&key),
            stopped,
        ));
        Ok(FleetAgent { runtime, client, place, key, trust, trust_file, stop, serving })
    }

    /// This host's key, which signs for the callers of its HTTP fleet routes.
    pub fn key(&self) -> Arc<FleetKey> {
        Arc::clone(&self.key)
    }

    /// Whose requests it takes: `trust_file`, `insecure` or `none`.
    pub fn trust_kind(&self) -> &'static str {
        self.trust
    }

    /// The asking side, on this agent's connection (for the HTTP API's fleet routes): it merges
    /// a leaf's partial only if a host key of this agent's trust file sealed it.
    pub fn coordinator(&self) -> super::Coordinator {
        let _inside = self.runtime.enter();
        let coordinator = super::Coordinator::with_client(self.client.clone(), &self.place.host);
        match &self.trust_file {
            Some(file) => coordinator.with_trust(Arc::clone(file)),
            None => coordinator,
        }
    }

    /// Marks this host `left` in the registry (if NATS is reachable within a few seconds)
    /// and stops answering.
    pub fn stop(self) {
        let _ = self.stop.send(true);
        let FleetAgent { runtime, serving, .. } = self;
        match runtime.block_on(async { tokio::time::timeout(Duration::from_secs(5), serving).await }) {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => warn!("fleet membership ended: {e}"),
            Ok(Err(e)) => warn!("fleet task failed: {e}"),
            Err(_) => warn!("the fleet did not stop within 5 s"),
        }
        runtime.shutdown_timeout(Duration::from_secs(1));
    }
}

/// What a request handler needs.
struct Ctx {
    client: async_nats::Client,
    js: jetstream::Context,
    place: FleetPlace,
    host: Arc<Host>,
    gate: Gate,
    /// This host's key: seals the partials it merges for its leaf.
    key: Arc<FleetKey>,
    slots: Semaphore,
    /// Its server's JetStream domain (its leaf), once asked.
    domain: std::sync::OnceLock<Option<String>>,
    /// Rewrite the registration now (the domain became known).
    register_now: tokio::sync::Notify,
    /// Its leaf's registry, watched from the first time this agent leads the leaf.
    leaf_registry: LiveRegistry,
}

impl Ctx {
    fn domain(&self) -> Option<&str> {
        self.domain.get().and_then(|d| d.as_deref())
    }
}

async fn serve(
    client: async_nats::Client,
    // As logs show it (no credentials).
    url: String,
    place: FleetPlace,
    host: Arc<Host>,
    gate: Gate,
    key: Arc<FleetKey>,
    mut stopped: watch::Receiver<bool>,
) -> Result<(), FleetError> {
    let js = jetstream::new(client.clone());
    let mut subs = Vec::new();
    for subject in subjects::agent_subjects(&place.host, &place.rack, &place.dc, None) {
        subs.push(
            client
                .subscribe(subject.clone())
                .await
                .map_err(|e| FleetError::Bus(format!("subscribing {subject}: {e}")))?,
        );
    }
    let mut requests = futures_util::stream::select_all(subs);
    let ctx = Arc::new(Ctx {
        client: client.clone(),
        js: js.clone(),
        place: place.clone(),
        host,
        gate,
        key,
        slots: Semaphore::new(MAX_IN_FLIGHT),
        domain: std::sync::OnceLock::new(),
        register_now: tokio::sync::Notify::new(),
        leaf_registry: LiveRegistry::new(),
    });
    // The leaf's subjects wait for the server to say its domain (NATS may not be up yet).
    let mut leaf_requests = futures_util::stream::SelectAll::new();
    let discovery = leaves::discover_domain(&client, &js);
    tokio::pin!(discovery);
    let mut discovering = true;
    let heartbeat = tokio::spawn(keep_registered(Arc::clone(&ctx), stopped.clone()));
    match client.connection_state() {
        async_nats::connection::State::Connected => {
            info!(host = %place.host, rack = %place.rack, dc = %place.dc, %url, "joined the fleet")
        }
        _ => info!(host = %place.host, rack = %place.rack, dc = %place.dc, %url, "joining the fleet once NATS answers"),
    }
    loop {
        tokio::select! {
            msg = requests.next() => match msg {
                Some(msg) => { tokio::spawn(answer(Arc::clone(&ctx), msg)); }
                None => break,
            },
            Some(msg) = leaf_requests.next(), if !leaf_requests.is_empty() => {
                tokio::spawn(answer(Arc::clone(&ctx), msg));
            }
            domain = &mut discovery, if discovering => {
                discovering = false;
                let _ = ctx.domain.set(domain.clone());
                ctx.register_now.notify_one();
                if let Some(d) = domain {
                    leaf_requests = join_leaf(&client, &place, &d).await?;
                    info!(host = %place.host, leaf = %d, "on leaf {d}: answering for it in turn with its other agents");
                }
            }
            _ = stopped.changed() => break,
        }
    }
    // The heartbeat writes `left` on its way out.
    let _ = tokio::time::timeout(Duration::from_secs(3), heartbeat).await;
    let _ = tokio::time::timeout(Duration::from_secs(1), client.flush()).await;
    info!("left the fleet");
    Ok(())
}

/// The subscriptions of an agent on leaf `domain`: its hosts' subject, and the leaf-level
/// subjects in the leaf's queue group (one agent of the leaf gets each leaf request).
async fn join_leaf(
    client: &async_nats::Client,
    place: &FleetPlace,
    domain: &str,
) -> Result<futures_util::stream::SelectAll<async_nats::Subscriber>, FleetError> {
    let failed = |subject: &str, e: &dyn std::fmt::Display| FleetError::Bus(format!("subscribing {subject}: {e}"));
    let mut subs = Vec::new();
    let hosts = subjects::agent_subjects(&place.host, &place.rack, &place.dc, Some(domain)).pop().expect("5 subjects");
    subs.push(client.subscribe(hosts.clone()).await.map_err(|e| failed(&hosts, &e))?);
    for subject in subjects::leaf_subjects(domain) {
        subs.push(
            client
                .queue_subscribe(subject.clone(), subjects::leaf_queue(domain))
                .await
                .map_err(|e| failed(&subject, &e))?,
        );
    }
    Ok(futures_util::stream::select_all(subs))
}

/// Rewrites the registration every heartbeat; after a stop, once more as `left`.
async fn keep_registered(ctx: Arc<Ctx>, mut stopped: watch::Receiver<bool>) {
    let joined = now_unix_ns();
    let mut bucket = None;
    let mut warned = false;
    loop {
        let leaving = *stopped.borrow();
        if bucket.is_none() {
            bucket = registry::bucket(&ctx.js)
                .await
                .map_err(|e| {
                    if !warned {
                        warn!("{e}")
                    }
                })
                .ok();
        }
        if let Some(b) = &bucket {
            let reg = registration(&ctx, joined, leaving);
            match registry::put(b, &reg).await {
                Ok(()) if warned => {
                    info!(host = %ctx.place.host, "registered in the fleet again");
                    warned = false;
                }
                Ok(()) => {}
                Err(e) => {
                    if !warned {
                        warn!("{e}; retrying every heartbeat");
                        warned = true;
                    }
                    // Fetched again at the next beat: a bus that lost its store has no bucket
                    // until someone makes it, and the handle's stream may be gone.
                    bucket = None;
                }
            }
        }
        if leaving {
            return;
        }
        tokio::select! {
            _ = tokio::time::timeout(registry::HEARTBEAT, stopped.changed()) => {}
            () = ctx.register_now.notified() => {}
        }
    }
}

fn registration(ctx: &Ctx, joined: u64, left: bool) -> Registration {
    let (from, to) = match ctx.host.days() {
        Ok(days) => match (days.first(), days.last()) {
            (Some(a), Some(b)) => (a.day_start_unix_ns, b.day_start_unix_ns + 86_400_000_000_000),
            _ => (0, 0),
        },
        Err(_) => (0, 0),
    };
    Registration {
        place: ctx.place.clone(),
        version: env!("CARGO_PKG_VERSION").into(),
        ifaces: ctx.host.scheduler().map(|s| s.ifaces()).unwrap_or_default(),
        retained_from_unix_ns: from,
        retained_to_unix_ns: to,
        joined_unix_ns: joined,
        heartbeat_unix_ns: now_unix_ns(),
        left,
        domain: ctx.domain().map(str::to_string),
    }
}

/// Answers one request (or drops it: not for us, or no reply subject to answer on).
async fn answer(ctx: Arc<Ctx>, msg: Message) {
    let limit = payload_limit(&ctx.client);
    let bytes = match subjects::route_of(&msg.subject) {
        Some((Verb::Invoke, false)) => handle(&ctx, &msg, limit, Op::Invoke.name(), invoke).await,
        Some((Verb::Run, false)) => handle(&ctx, &msg, limit, Op::StartRun.name(), run).await,
        Some((Verb::Read, false)) => handle(&ctx, &msg, limit, "read", read).await,
        Some((Verb::Invoke, true)) => handle(&ctx, &msg, limit, Op::Invoke.name(), lead_leaf).await,
        Some((Verb::Hosts, true)) => handle(&ctx, &msg, limit, FLEET_HOSTS, list_leaf).await,
        _ => return,
    };
    if let (Some(bytes), Some(reply_to)) = (bytes, msg.reply.clone())
        && let Err(e) = ctx.client.publish(reply_to, bytes.into()).await
    {
        warn!("fleet reply not sent: {e}");
    }
}

/// The audit trail's name for a leaf's registry listed for an asker.
const FLEET_HOSTS: &str = "fleet_hosts";

/// Passes a request through the gate (a refusal is audited as `action` and answered), then
/// runs `work` for the caller it names on the blocking pool, and encodes the reply within the
/// payload limit.
async fn handle<B, R, F>(ctx: &Arc<Ctx>, msg: &Message, limit: usize, action: &str, work: F) -> Option<Vec<u8>>
where
    B: wire::Body + Send + 'static,
    R: Serialize + Send + 'static,
    F: FnOnce(&Ctx, &Envelope<B>, &Caller) -> Result<R, WireError> + Send + 'static,
{
    let reply = |query: String, result: Result<R, WireError>| {
        let reply =
            Reply { v: WIRE_VERSION, query, place: ctx.place.clone(), leaf: ctx.domain().map(str::to_string), result };
        Some(wire::encode_reply(&reply, limit.saturating_sub(REPLY_HEADROOM)))
    };
    let (envelope, caller) = match ctx.gate.open::<B>(&msg.payload, limit, &msg.subject) {
        Ok(Some(opened)) => (opened.envelope, opened.caller),
        Ok(None) => return None,
        Err(refused) => {
            // Past the second's budget a refusal is only counted: not logged, and not answered
            // either (junk sent to every host must not make every host send to whom it names).
            if !ctx.gate.audit_refusal(ctx.host.audit(), action, &msg.subject, &refused) {
                return None;
            }
            warn!(subject = %msg.subject, key = %refused.who.token_id, "fleet request refused: {}", refused.refusal);
            let refusal = WireError::new(ErrorKind::Forbidden, refused.refusal.code(), refused.refusal.to_string());
            return reply(refused.query, Err(refusal));
        }
    };
    // Nobody waits for an answer: nothing is done.
    msg.reply.as_ref()?;
    let query = envelope.query.clone();
    let result = if let Ok(permit) = ctx.slots.try_acquire() {
        let ctx2 = Arc::clone(ctx);
        let outcome = tokio::task::spawn_blocking(move || work(&ctx2, &envelope, &caller)).await;
        drop(permit);
        outcome.unwrap_or_else(|e| {
            Err(WireError::new(ErrorKind::Internal, "internal", format!("the request's task failed: {e}")))
        })
    } else {
        Err(WireError::new(
            ErrorKind::Busy,
            "busy",
            format!("{MAX_IN_FLIGHT} fleet requests already in flight on this host"),
        ))
    };
    reply(query, result)
}

/// `invoke`: fetch the module by hash (once; the runtime keeps it compiled), run it over the
/// range, answer its partial result.
fn invoke(ctx: &Ctx, envelope: &Envelope<InvokeBody>, caller: &Caller) -> Result<InvokeReply, WireError> {
    let body = &envelope.body;
    let acting = ctx.host.acting_for(caller.clone()).audit_all();
    let target = || format!("{} ({:.12}) over {}", body.name, body.sha256, envelope.selector.describe());
    let partial = acting
        .act(Op::Invoke, target, || {
            ctx.gate.check_module(&body.module, &body.name, &body.sha256)?;
            let analyses = ctx.host.analyses()?;
            let store = ctx.host.store();
            // On the blocking pool, inside the runtime: the fetch may wait for the object store.
            let rt = tokio::runtime::Handle::current();
            let origin = body.origin_domain.as_deref().filter(|o| Some(*o) != ctx.domain());
            let module = analyses.fleet_module(store, &body.name, &body.sha256, || {
                rt.block_on(modules::pull(&ctx.js, &ctx.client, origin, &body.sha256)).map_err(|e| e.to_string())
            })?;
            let range = loupe_store::TimeRange::new(body.from_unix_ns, body.to_unix_ns)?;
            // What this host sampled up to the range's end, stored first: else a partial asked
            // within seconds of it holds less than the host's own profile (and nothing says so).
            ctx.host.wait_stored(range.to_unix_ns(), stored_within(envelope.deadline_unix_ns))?;
            analyses.invoke_partial(store, &module, &caller.team, range, &body.params)
        })
        .map_err(WireError::from)?;
    Ok(InvokeReply { partial: partial.bytes, elapsed_ns: partial.elapsed_ns })
}

/// How long a host may wait for its stack collector before answering: at most `STORE_WAIT`,
/// and never past the request's deadline (less a second for the answer to travel).
fn stored_within(deadline_unix_ns: u64) -> Duration {
    let left = deadline_unix_ns.saturating_sub(loupe_api::clock::now_unix_ns()).saturating_sub(1_000_000_000);
    Duration::from_nanos(left).min(STORE_WAIT)
}

/// The longest a host waits for its stack collector to store the asked range's end: a store now
/// takes one drain (≤ 0.5 s) and a batch write.
const STORE_WAIT: Duration = Duration::from_secs(5);

/// `invoke` for the leaf, on the agent its queue group chose: the module brought into the
/// leaf's own object store (so its hosts fetch it there), the asker's request passed on to the
/// leaf's selected hosts and gathered by the leaf's deadline, their partials merged into one in
/// this agent's sandbox. Each host checks the request itself: this agent narrows where it goes,
/// never what it may do.
fn lead_leaf(ctx: &Ctx, envelope: &Envelope<LeafInvokeBody>, caller: &Caller) -> Result<LeafInvokeReply, WireError> {
    let body = &envelope.body.invoke;
    let acting = ctx.host.acting_for(caller.clone()).audit_all();
    let target = || format!("leaf merge of {} ({:.12}) over {}", body.name, body.sha256, envelope.selector.describe());
    acting
        .act(Op::Invoke, target, || {
            ctx.gate.check_module(&body.module, &body.name, &body.sha256)?;
            let analyses = ctx.host.analyses()?;
            let rt = tokio::runtime::Handle::current();
            let origin = body.origin_domain.as_deref().filter(|o| Some(*o) != ctx.domain());
            rt.block_on(modules::ensure(&ctx.js, &ctx.client, origin, &body.sha256)).map_err(FleetError::into_core)?;
            let module = analyses.fleet_module(ctx.host.store(), &body.name, &body.sha256, || {
                rt.block_on(modules::fetch(&ctx.js, &body.sha256)).map_err(|e| e.to_string())
            })?;
            let range = loupe_store::TimeRange::new(body.from_unix_ns, body.to_unix_ns)?;
            let (host, params, team) = (Arc::clone(&ctx.host), body.params.clone(), caller.team.clone());
            let merge = move |partials: Vec<Vec<u8>>| {
                let merged =
                    host.analyses()?.merge_to_partial(host.store(), &module, &team, range, &params, partials)?;
                Ok((merged.bytes, merged.refused))
            };
            let coordinator = Coordinator::with_client(ctx.client.clone(), &ctx.place.host)
                .with_domain(ctx.domain().map(str::to_string))
                .with_leaf_registry(ctx.leaf_registry.clone());
            let mut reply = rt.block_on(coordinator.lead_leaf(envelope, merge)).map_err(FleetError::into_core)?;
            // The merged partial sealed with this host's key: the asker checks it is ours.
            if let Some(partial) = &reply.partial {
                let hosts = reply.answered.iter().map(|a| a.place.host.clone()).collect();
                reply.seal = Some(seal::seal(&ctx.key, &envelope.query, partial, hosts));
            }
            Ok(reply)
        })
        .map_err(WireError::from)
}

/// `hosts` for the leaf: its registry, as this agent lists it (`read`).
fn list_leaf(ctx: &Ctx, envelope: &Envelope<()>, caller: &Caller) -> Result<LeafHostsReply, WireError> {
    let outcome = caller.require(Scope::Read).map_err(CoreError::from).and_then(|()| {
        tokio::runtime::Handle::current()
            .block_on(leaves::list_leaf(&ctx.js, &ctx.leaf_registry))
            .map_err(FleetError::into_core)
    });
    ctx.host.audit().record(caller, FLEET_HOSTS, &envelope.selector.describe(), &outcome);
    outcome.map_err(WireError::from)
}

/// `run`: a run on this host's interface from the common instant, answered once stored.
fn run(ctx: &Ctx, envelope: &Envelope<RunBody>, caller: &Caller) -> Result<RunReply, WireError> {
    let body = &envelope.body;
    if body.samples > MAX_FLEET_SAMPLES {
        return Err(WireError::new(
            ErrorKind::Invalid,
            "bad_request",
            format!("{} samples: a synchronized run has at most {MAX_FLEET_SAMPLES}", body.samples),
        ));
    }
    let configured_before_start_ns = now_unix_ns() as i64 - body.start_unix_ns as i64;
    let order = RunOrder {
        iface: body.iface.clone(),
        interval: Duration::from_nanos(body.interval_ns),
        samples: body.samples,
        start_unix_ns: Some(body.start_unix_ns),
    };
    // The run's own length plus room to store it; never past the asker's deadline by much.
    let wait = order.duration_from_now().min(MAX_START_AHEAD * 2) + Duration::from_secs(10);
    let view =
        ctx.host.acting_for(caller.clone()).audit_all().run_wait(wait).start_run(order).map_err(WireError::from)?;
    Ok(RunReply {
        run_id: view.id,
        iface: view.iface,
        start_unix_ns: view.start_unix_ns,
        interval_ns: view.interval_ns,
        samples: view.samples,
        in_bytes: view.metrics.in_bytes,
        out_bytes: view.metrics.out_bytes,
        clock: view.clock,
        configured_before_start_ns,
    })
}

/// `read`: a stored run or a range's aggregated stacks, as this host's own API would answer
/// them (a reply over the payload limit becomes `too_large`, naming the sizes).
fn read(ctx: &Ctx, envelope: &Envelope<ReadBody>, caller: &Caller) -> Result<ReadReply, WireError> {
    let acting = ctx.host.acting_for(caller.clone()).audit_all();
    match envelope.body {
        ReadBody::Run { id } => {
            let view = acting
                .act(Op::ShowRun, || format!("run {id}"), || ctx.host.show_run(loupe_store::RunId(id), false))
                .map_err(WireError::from)?;
            Ok(ReadReply::Run(view))
        }
        ReadBody::Profile { from_unix_ns, to_unix_ns, kind } => {
            let target = || format!("{kind:?} stacks from {from_unix_ns} to {to_unix_ns}");
            let profile = acting
                .act(Op::Profile, target, || {
                    let range = loupe_store::TimeRange::new(from_unix_ns, to_unix_ns)?;
                    // As for an analysis: what was sampled up to the end, stored first.
                    ctx.host.wait_stored(range.to_unix_ns(), stored_within(envelope.deadline_unix_ns))?;
                    ctx.host.profile(&loupe_store::ProfileQuery { kind, ..loupe_store::ProfileQuery::range(range) })
                })
                .map_err(WireError::from)?;
            Ok(ReadReply::Profile(profile))
        }
    }
}
