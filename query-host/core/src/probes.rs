//! Function probes as a core service: starting a session (on the agent, which owns it like a
//! run, or once in the calling process without an agent), listing the running and stored ones,
//! stopping one, showing one with its percentiles and slowest call trees.

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use loupe_api::access::Caller;
use loupe_store::{ProbeSession, Store, TimeRange};

use super::{
    Host,
    error::{CoreError, CoreResult},
};
use crate::ingest::probes::{Ended, ProbeOptions, ProbeRun, quantile_of, target::TargetSpec};
use loupe_api::model::{
    ActiveProbeView, CallTreeView, CallView, LatencyBucket, ProbeFunctionView, ProbeList, ProbeListEntry, ProbeView,
};

pub use loupe_api::orders::{DEFAULT_BUDGET_PERCENT, MAX_PROBE_SECONDS as MAX_SECONDS, ProbeOrder};
/// Sessions one agent runs at once.
pub const MAX_ACTIVE: usize = 8;
/// Sessions one team runs at once: one team cannot take every slot.
pub const MAX_ACTIVE_PER_TEAM: usize = 4;
/// Stored sessions listed at most.
pub const MAX_LISTED: usize = 1000;
/// Slowest outermost calls shown with their trees.
const SLOWEST: usize = 10;
/// Deepest call tree shown (the kernel times 32 nested calls).
const MAX_TREE_DEPTH: usize = 32;
/// Most nodes of one shown tree.
const MAX_TREE_NODES: usize = 256;
/// A finished session's result is kept this long for `stop` to collect.
const KEEP_FINISHED: Duration = Duration::from_secs(600);

/// What the kernel is asked to probe, how, and for how long, checked against the bounds.
fn checked(order: &ProbeOrder) -> CoreResult<(TargetSpec, ProbeOptions, Duration)> {
    let seconds = order.seconds.unwrap_or(MAX_SECONDS);
    if !(seconds > 0.0 && seconds <= MAX_SECONDS) {
        return Err(CoreError::Probe(format!("seconds {seconds} out of bounds: more than 0, at most {MAX_SECONDS}")));
    }
    let spec = TargetSpec {
        pids: order.pids.clone(),
        binary: order.binary.as_ref().map(PathBuf::from),
        functions: order.functions.clone(),
        allow_single_step: order.allow_single_step,
    };
    let options = ProbeOptions {
        sample_every: order.sample_every.unwrap_or(1),
        record_calls: order.calls,
        budget_percent: order.budget_percent.unwrap_or(DEFAULT_BUDGET_PERCENT),
    };
    Ok((spec, options, Duration::from_secs_f64(seconds)))
}

/// The agent's running sessions.
pub struct ProbeManager {
    store: Store,
    shutdown: Arc<AtomicBool>,
    next: AtomicU64,
    active: Mutex<HashMap<u64, Active>>,
    /// The teams of sessions between their slot's reservation and their entry in `active`:
    /// resolving and attaching happen outside the table's lock, and still count against
    /// [`MAX_ACTIVE`] and [`MAX_ACTIVE_PER_TEAM`].
    starting: Mutex<Vec<String>>,
}

/// A reserved slot; given back when dropped.
struct Starting<'a> {
    starting: &'a Mutex<Vec<String>>,
    team: String,
}

impl Drop for Starting<'_> {
    fn drop(&mut self) {
        let mut starting = self.starting.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = starting.iter().position(|t| *t == self.team) {
            starting.swap_remove(at);
        }
    }
}

/// When a session ended, and its stored id (or why it could not be stored).
type Outcome = Arc<Mutex<Option<(Instant, CoreResult<u64>)>>>;

struct Active {
    view: ActiveProbeView,
    stop: Arc<AtomicBool>,
    result: Outcome,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ProbeManager {
    pub fn new(store: Store, shutdown: Arc<AtomicBool>) -> ProbeManager {
        ProbeManager {
            store,
            shutdown,
            next: AtomicU64::new(1),
            active: Mutex::new(HashMap::new()),
            starting: Mutex::new(Vec::new()),
        }
    }

    /// Attaches (errors come back at once, nothing attached) and watches in a thread of its own;
    /// the session belongs to `team`.
    ///
    /// The table's lock is held only to reserve a slot and to enter the session: the target's
    /// files are opened and the probes attached without it, so a file on a slow filesystem
    /// stalls this request alone, not listing, stopping or the agent's shutdown.
    pub fn start(&self, order: &ProbeOrder, team: &str) -> CoreResult<ActiveProbeView> {
        let (spec, options, length) = checked(order)?;
        let _slot = self.reserve(team)?;
        let mut run = ProbeRun::start(&spec, options)?;
        let handle = self.next.fetch_add(1, Ordering::Relaxed);
        let view = active_view(handle, &run, order, &options, length, team);
        let stop = Arc::new(AtomicBool::new(false));
        let result = Arc::new(Mutex::new(None));
        let thread = {
            let (stop, result, store, shutdown) =
                (Arc::clone(&stop), Arc::clone(&result), self.store.clone(), Arc::clone(&self.shutdown));
            std::thread::Builder::new()
                .name(format!("probe-{handle}"))
                .spawn(move || {
                    let outcome = watch_and_store(&mut run, length, &stop, &shutdown)
                        .and_then(|ended| Ok(store.put_probe_session(run.finish(ended)?)?));
                    if let Err(e) = &outcome {
                        tracing::warn!(handle, "probe session: {e}");
                    }
                    *result.lock().expect("result") = Some((Instant::now(), outcome));
                })
                .map_err(|e| CoreError::Internal(format!("starting the probe thread: {e}")))?
        };
        self.active
            .lock()
            .expect("probe table")
            .insert(handle, Active { view: view.clone(), stop, result, thread: Some(thread) });
        Ok(view)
    }

    /// One of the [`MAX_ACTIVE`] slots for `team`, held until the session is entered in the
    /// table (or fails).
    fn reserve(&self, team: &str) -> CoreResult<Starting<'_>> {
        let mut active = self.active.lock().expect("probe table");
        prune(&mut active);
        let mut starting = self.starting.lock().expect("starting sessions");
        let running: Vec<&str> = active
            .values()
            .filter(|a| a.result.lock().expect("result").is_none())
            .map(|a| a.view.team.as_str())
            .collect();
        let taken = running.len() + starting.len();
        if taken >= MAX_ACTIVE {
            return Err(CoreError::TooManyProbes { active: taken, max: MAX_ACTIVE });
        }
        let of_team = running.iter().filter(|t| **t == team).count() + starting.iter().filter(|t| *t == team).count();
        if of_team >= MAX_ACTIVE_PER_TEAM {
            return Err(CoreError::TooManyTeamProbes {
                team: team.to_string(),
                active: of_team,
                max: MAX_ACTIVE_PER_TEAM,
            });
        }
        starting.push(team.to_string());
        Ok(Starting { starting: &self.starting, team: team.to_string() })
    }

    /// Sessions still attached.
    pub fn active(&self) -> Vec<ActiveProbeView> {
        let mut active = self.active.lock().expect("probe table");
        prune(&mut active);
        let mut views: Vec<ActiveProbeView> =
            active.values().filter(|a| a.result.lock().expect("result").is_none()).map(|a| a.view.clone()).collect();
        views.sort_by_key(|v| v.handle);
        views
    }

    /// Whether `handle` is a session of this manager, running or ended and not yet collected.
    pub fn knows(&self, handle: u64) -> bool {
        self.active.lock().expect("probe table").contains_key(&handle)
    }

    /// Stops a session (or collects one that ended by itself) and returns its stored id,
    /// waiting up to `wait` for it to detach and be stored. Only the team that started it (or
    /// an admin) may: anyone else is refused and the session goes on untouched.
    pub fn stop(&self, handle: u64, wait: Duration, caller: &Caller) -> CoreResult<u64> {
        let result = {
            let active = self.active.lock().expect("probe table");
            let a = active.get(&handle).ok_or(CoreError::NoActiveProbe(handle))?;
            caller.require_owner(&format!("probe session {handle}"), &a.view.team)?;
            a.stop.store(true, Ordering::Relaxed);
            Arc::clone(&a.result)
        };
        let deadline = Instant::now() + wait;
        loop {
            if let Some((_, outcome)) = result.lock().expect("result").take() {
                self.active.lock().expect("probe table").remove(&handle);
                return outcome;
            }
            if Instant::now() >= deadline {
                return Err(CoreError::Internal(format!("probe {handle} did not stop within {wait:?}")));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for every session to detach and be stored (after the shutdown flag is set). A
    /// session still attaching gets up to 5 s to enter the table; one stuck in its target's
    /// filesystem longer is not waited for.
    pub fn join(&self) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !self.starting.lock().expect("starting sessions").is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let threads: Vec<_> =
            self.active.lock().expect("probe table").values_mut().filter_map(|a| a.thread.take()).collect();
        for t in threads {
            let _ = t.join();
        }
    }
}

fn active_view(
    handle: u64,
    run: &ProbeRun,
    order: &ProbeOrder,
    options: &ProbeOptions,
    length: Duration,
    team: &str,
) -> ActiveProbeView {
    let started = run.started_unix_ns();
    ActiveProbeView {
        handle,
        started_unix_ns: started,
        ends_unix_ns: Some(started + length.as_nanos() as u64),
        pids: order.pids.clone(),
        binary: order.binary.clone(),
        functions: run.functions().iter().map(|f| f.name.clone()).collect(),
        sample_every: options.sample_every,
        calls: options.record_calls,
        team: team.to_string(),
    }
}

fn watch_and_store(
    run: &mut ProbeRun,
    length: Duration,
    stop: &AtomicBool,
    shutdown: &AtomicBool,
) -> CoreResult<Ended> {
    let deadline = Instant::now() + length;
    // One flag for the watcher: stop or shutdown, whichever comes first.
    let either = AtomicBool::new(false);
    loop {
        let step = (Instant::now() + Duration::from_millis(200)).min(deadline);
        let ended = run.watch(Some(step), &either)?;
        if ended != Ended::Duration {
            return Ok(ended);
        }
        if shutdown.load(Ordering::Relaxed) {
            return Ok(Ended::Shutdown);
        }
        if stop.load(Ordering::Relaxed) {
            return Ok(Ended::Stopped);
        }
        if Instant::now() >= deadline {
            return Ok(Ended::Duration);
        }
    }
}

/// Forgets results nobody collected.
fn prune(active: &mut HashMap<u64, Active>) {
    active.retain(|_, a| match &*a.result.lock().expect("result") {
        Some((at, _)) => at.elapsed() < KEEP_FINISHED,
        None => true,
    });
}

impl Host {
    /// The agent's sessions, or an error saying this host runs none.
    fn probe_manager(&self) -> CoreResult<&ProbeManager> {
        self.probes.as_ref().ok_or(CoreError::NotCollecting)
    }

    /// Starts a session owned by `team`.
    pub fn start_probe(&self, order: &ProbeOrder, team: &str) -> CoreResult<ActiveProbeView> {
        self.probe_manager()?.start(order, team)
    }

    /// Stops a session and shows what it stored. On the CLI's host a handle it did not start
    /// means the user wanted an agent's.
    pub fn stop_probe(&self, handle: u64, wait: Duration, caller: &Caller) -> CoreResult<ProbeView> {
        let manager = self.probe_manager()?;
        if self.runs_here.is_some() && !manager.knows(handle) {
            return Err(CoreError::NoAgent);
        }
        let id = manager.stop(handle, wait, caller)?;
        self.show_probe(id, false)
    }

    /// Running sessions (on an agent) and stored ones that started in `range`.
    pub fn list_probes(&self, range: TimeRange) -> CoreResult<ProbeList> {
        let active = self.probes.as_ref().map(ProbeManager::active).unwrap_or_default();
        let sessions = self
            .store
            .probe_sessions(range, MAX_LISTED)?
            .into_iter()
            .map(|s| ProbeListEntry {
                id: s.id,
                start_unix_ns: s.start_unix_ns,
                end_unix_ns: s.end_unix_ns,
                pids: s.pids,
                binary: s.binary,
                functions: s.functions,
                calls: s.calls,
                recorded_calls: s.recorded_calls,
                ended: s.ended,
            })
            .collect();
        Ok(ProbeList { active, sessions })
    }

    /// One stored session: percentiles, histograms, slowest call trees (and every call with
    /// `calls`).
    pub fn show_probe(&self, id: u64, calls: bool) -> CoreResult<ProbeView> {
        let session = self.store.probe_session(id)?.ok_or(CoreError::NoProbeSession(id))?;
        Ok(probe_view(&session, calls))
    }
}

/// A stored session as users see it.
pub fn probe_view(s: &ProbeSession, with_calls: bool) -> ProbeView {
    let seconds = (s.end_unix_ns.saturating_sub(s.start_unix_ns) as f64 / 1e9).max(1e-9);
    let unbias = |v: Option<u64>| v.map(|v| v.saturating_sub(s.bias_ns));
    let functions = s
        .functions
        .iter()
        .map(|f| ProbeFunctionView {
            name: f.name.clone(),
            symbol: f.symbol.clone(),
            binary: f.binary.clone(),
            address: f.address,
            probe_offset: f.probe_offset,
            calls: f.calls,
            calls_per_s: f.calls as f64 / seconds,
            timed: f.sampled,
            p50_ns: unbias(quantile_of(&f.buckets, 0.5)),
            p90_ns: unbias(quantile_of(&f.buckets, 0.9)),
            p99_ns: unbias(quantile_of(&f.buckets, 0.99)),
            mean_ns: unbias((f.sampled > 0).then(|| f.total_ns / f.sampled)),
            max_ns: f.max_ns,
            total_ns: f.total_ns,
            histogram: f
                .buckets
                .iter()
                .map(|&(b, count)| LatencyBucket {
                    low_ns: loupe_bpf::bucket_low(b),
                    high_ns: loupe_bpf::bucket_high(b),
                    count,
                })
                .collect(),
        })
        .collect();
    let name = |i: u32| s.functions.get(i as usize).map_or_else(|| format!("#{i}"), |f| f.name.clone());
    ProbeView {
        id: s.id,
        start_unix_ns: s.start_unix_ns,
        end_unix_ns: s.end_unix_ns,
        pids: s.pids.clone(),
        binary: s.binary.clone(),
        sample_every: s.sample_every,
        ended: s.ended.clone(),
        notes: s.notes.clone(),
        bias_ns: s.bias_ns,
        functions,
        calls_recorded: s.calls.len() as u64,
        calls_lost: s.calls_lost,
        slowest: slowest_trees(s, &name),
        calls: with_calls.then(|| {
            s.calls
                .iter()
                .map(|c| CallView {
                    function: name(c.function),
                    pid: c.pid,
                    tid: c.tid,
                    cpu: c.cpu,
                    entry_unix_ns: c.entry_unix_ns,
                    exit_unix_ns: c.exit_unix_ns,
                    depth: c.depth,
                    parent: c.parent,
                })
                .collect()
        }),
    }
}

/// The slowest outermost calls with their recorded callees, built without recursion and
/// bounded in depth and size (stored parents are not trusted to form a shallow tree).
fn slowest_trees(s: &ProbeSession, name: &dyn Fn(u32) -> String) -> Vec<CallTreeView> {
    let n = s.calls.len();
    let mut children: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut roots = Vec::new();
    for (i, c) in s.calls.iter().enumerate() {
        match c.parent {
            Some(p) if (p as usize) < i => children[p as usize].push(i as u32),
            _ => roots.push(i as u32),
        }
    }
    let duration = |i: u32| {
        let c = &s.calls[i as usize];
        c.exit_unix_ns.saturating_sub(c.entry_unix_ns)
    };
    roots.sort_by_key(|&r| std::cmp::Reverse(duration(r)));
    roots.truncate(SLOWEST);
    roots
        .into_iter()
        .map(|root| {
            // Breadth-first into a flat list of (call, parent slot), then assembled bottom-up.
            let mut flat: Vec<(u32, Option<usize>, usize)> = vec![(root, None, 0)];
            let mut next = 0;
            while next < flat.len() && flat.len() < MAX_TREE_NODES {
                let (call, _, depth) = flat[next];
                if depth + 1 < MAX_TREE_DEPTH {
                    for &child in &children[call as usize] {
                        if flat.len() == MAX_TREE_NODES {
                            break;
                        }
                        flat.push((child, Some(next), depth + 1));
                    }
                }
                next += 1;
            }
            let mut nodes: Vec<Option<CallTreeView>> = flat
                .iter()
                .map(|&(call, _, _)| {
                    let c = &s.calls[call as usize];
                    Some(CallTreeView {
                        function: name(c.function),
                        tid: c.tid,
                        entry_unix_ns: c.entry_unix_ns,
                        duration_ns: duration(call),
                        self_ns: duration(call),
                        children: Vec::new(),
                    })
                })
                .collect();
            // Children come after their parents in `flat`: fold from the end.
            for i in (1..flat.len()).rev() {
                let parent = flat[i].1.expect("only the root has no parent");
                let node = nodes[i].take().expect("each node is taken once");
                let p = nodes[parent].as_mut().expect("parents are taken after their children");
                p.self_ns = p.self_ns.saturating_sub(node.duration_ns);
                p.children.push(node);
            }
            let mut root = nodes[0].take().expect("the root");
            reverse_children(&mut root);
            root
        })
        .collect()
}

/// Folding from the end added children last-first; put them back in entry order.
fn reverse_children(root: &mut CallTreeView) {
    let mut stack: Vec<&mut CallTreeView> = vec![root];
    while let Some(node) = stack.pop() {
        node.children.reverse();
        stack.extend(node.children.iter_mut());
    }
}
impl From<crate::ingest::probes::ProbeError> for CoreError {
    fn from(e: crate::ingest::probes::ProbeError) -> Self {
        use crate::ingest::probes::ProbeError;
        match e {
            ProbeError::Kernel(e) => CoreError::Sampler(e),
            ProbeError::Target(crate::ingest::probes::target::TargetError::NoProcess(pid)) => {
                CoreError::Probe(format!("no process with PID {pid}"))
            }
            e => CoreError::Probe(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_team_takes_at_most_its_share_of_the_slots_and_all_teams_the_total() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), loupe_store::Retention::default()).unwrap();
        let probes = ProbeManager::new(store, Default::default());
        let mut held = Vec::new();
        for _ in 0..MAX_ACTIVE_PER_TEAM {
            held.push(probes.reserve("a").unwrap());
        }
        match probes.reserve("a") {
            Err(CoreError::TooManyTeamProbes { team, active: 4, max: 4 }) => assert_eq!(team, "a"),
            other => panic!("{:?}", other.map(|_| ())),
        }
        for _ in MAX_ACTIVE_PER_TEAM..MAX_ACTIVE {
            held.push(probes.reserve("b").unwrap());
        }
        assert!(matches!(probes.reserve("c"), Err(CoreError::TooManyProbes { active: 8, max: 8 })));
        // A slot given back (a session that failed to attach) is free again, for its team.
        held.remove(0);
        assert!(probes.reserve("a").is_ok());
    }
}
