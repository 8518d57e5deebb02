//! Runs, from the kernel to the store: one worker thread per interface owns that interface's
//! sampler and does the periodic runs of each interval (with jitter) and the on-demand runs
//! (including runs that start at an exact wall-clock instant) strictly one after another, so
//! runs never overlap on an interface; each finished run is read, cleared and stored.

use std::{
    collections::VecDeque,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
        mpsc::{self, RecvTimeoutError},
    },
    thread::{self, JoinHandle},
    time::{Duration, Instant},
};

use loupe_bpf::{
    RunCounters, RunRequest, SamplerError, SlotCounters, StartAt, TrafficSampler, clock::monotonic_ns, sketch,
};
use loupe_store::{Counter, CpuColumns, NewRun, RunClock, RunMeta, RunSource, Store, StoreError};
use rand::Rng;
use tracing::{error, info, warn};

use loupe_api::clock::{format_interval, now_unix_ns};

/// Why a run was not stored.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Sampler(#[from] SamplerError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the run was cut short: the agent is shutting down")]
    ShuttingDown,
    #[error("the run was cut before its first slot ended, for a synchronized run")]
    Preempted,
}

/// How often a periodic run checks for a synchronized run that needs the interface.
const POLL_DURING_RUN: Duration = Duration::from_millis(20);
/// A synchronized run starting this soon after a periodic run's end also cuts it (the periodic
/// run's end, reading and storing take a few ms).
const CUT_MARGIN_NS: u64 = 200_000_000;

/// What an on-demand run answers.
pub type RunOutcome = Result<RunMeta, RunError>;

/// The periodic part of an agent's work.
#[derive(Clone, Debug)]
pub struct Schedule {
    pub intervals: Vec<Duration>,
    pub samples: u32,
    pub period: Duration,
    /// Fraction of `period` by which each wait is randomly shortened or lengthened.
    pub jitter: f64,
}

impl Schedule {
    fn next_wait(&self, rng: &mut impl Rng) -> Duration {
        let f = if self.jitter > 0.0 { rng.random_range(-self.jitter..=self.jitter) } else { 0.0 };
        self.period.mul_f64(1.0 + f)
    }
}

/// An on-demand run and where to send its outcome.
pub struct OnDemand {
    pub request: RunRequest,
    pub reply: mpsc::Sender<RunOutcome>,
}

pub struct Worker {
    handle: Mutex<Option<JoinHandle<()>>>,
    requests: Mutex<Option<mpsc::Sender<OnDemand>>>,
}

impl Worker {
    pub fn spawn(
        sampler: TrafficSampler,
        schedule: Schedule,
        store: Store,
        host: RunHost,
        shutdown: Arc<AtomicBool>,
    ) -> Self {
        let (requests, inbox) = mpsc::channel();
        let name = format!("loupe-{}", sampler.iface());
        let handle = thread::Builder::new()
            .name(name)
            .spawn(move || Loop { sampler, schedule, store, host, shutdown, queued: VecDeque::new() }.run(inbox))
            .expect("spawning worker thread");
        Self { handle: Mutex::new(Some(handle)), requests: Mutex::new(Some(requests)) }
    }

    /// Queues an on-demand run; the receiver gets the stored run's metadata when it is done.
    pub fn request(&self, request: RunRequest) -> mpsc::Receiver<RunOutcome> {
        let (reply, rx) = mpsc::channel();
        let sent = match &*self.requests.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(tx) => tx.send(OnDemand { request, reply: reply.clone() }).is_ok(),
            None => false,
        };
        if !sent {
            let _ = reply.send(Err(RunError::ShuttingDown));
        }
        rx
    }

    /// Waits for the worker to stop (after the shutdown flag is set); its sampler detaches.
    pub fn join(&self) {
        self.requests.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(handle) = self.handle.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = handle.join();
        }
    }
}

struct Loop {
    sampler: TrafficSampler,
    schedule: Schedule,
    store: Store,
    host: RunHost,
    shutdown: Arc<AtomicBool>,
    /// On-demand runs received during a periodic run, served next.
    queued: VecDeque<OnDemand>,
}

impl Loop {
    fn run(mut self, inbox: mpsc::Receiver<OnDemand>) {
        let mut rng = rand::rng();
        // Stagger the first runs over the first quarter period.
        let mut due: Vec<(Instant, Duration)> = self
            .schedule
            .intervals
            .iter()
            .map(|&i| (Instant::now() + self.schedule.period.mul_f64(rng.random_range(0.0..0.25)), i))
            .collect();
        while !self.shutdown.load(Ordering::Relaxed) {
            // Requests that arrived during a periodic run go first, in order.
            if let Some(OnDemand { request, reply }) = self.queued.pop_front() {
                let _ = reply.send(self.one_run(&request, None));
                continue;
            }
            let Some(next) = due.iter().enumerate().min_by_key(|(_, d)| d.0).map(|(i, _)| i) else { return };
            // Sleeps until the next run is due (a request, or the channel closing at shutdown,
            // wakes it earlier), re-checking the shutdown flag at least every second.
            let wait = due[next].0.saturating_duration_since(Instant::now()).min(Duration::from_secs(1));
            match inbox.recv_timeout(wait) {
                Ok(OnDemand { request, reply }) => {
                    let _ = reply.send(self.one_run(&request, None));
                    continue;
                }
                // Nobody can ask for runs any more (shutting down): keep the schedule's pace.
                Err(RecvTimeoutError::Disconnected) => thread::sleep(wait),
                Err(RecvTimeoutError::Timeout) => {}
            }
            if Instant::now() >= due[next].0 {
                let request = RunRequest { interval: due[next].1, samples: self.schedule.samples, start: StartAt::Now };
                // (A run cut short by shutdown was already reported as such.)
                if let Err(e) = self.one_run(&request, Some(&inbox))
                    && !self.shutdown.load(Ordering::Relaxed)
                {
                    error!(iface = self.sampler.iface(), "run failed: {e:#}");
                }
                due[next].0 = Instant::now() + self.schedule.next_wait(&mut rng);
            }
        }
    }

    /// Runs, stores and logs one run; stops early (storing nothing) on shutdown. A periodic run
    /// (`inbox` given) listens for requests meanwhile: one that must start at an instant before
    /// this run would end (a rack's synchronized run) cuts it short — its whole slots so far are
    /// stored — so the synchronized run starts on time; other requests wait their turn.
    fn one_run(&mut self, request: &RunRequest, inbox: Option<&mpsc::Receiver<OnDemand>>) -> RunOutcome {
        let pending = self.sampler.begin(request)?;
        let mut cut = false;
        while monotonic_ns() < pending.end_mono_ns() {
            if self.shutdown.load(Ordering::Relaxed) {
                self.sampler.abort()?;
                warn!(iface = self.sampler.iface(), "run aborted by shutdown");
                return Err(RunError::ShuttingDown);
            }
            if let Some(inbox) = inbox {
                while let Ok(next) = inbox.try_recv() {
                    cut |=
                        matches!(next.request.start, StartAt::UnixNs(at) if at < pending.end_unix_ns() + CUT_MARGIN_NS);
                    self.queued.push_back(next);
                }
                if cut {
                    break;
                }
            }
            let left = pending.end_mono_ns().saturating_sub(monotonic_ns());
            let step = if inbox.is_some() { POLL_DURING_RUN } else { Duration::from_millis(100) };
            thread::sleep(Duration::from_nanos(left).min(step));
        }
        let counters = if cut {
            info!(iface = self.sampler.iface(), "periodic run cut short for a synchronized run");
            match self.sampler.cut(pending)? {
                Some(counters) => counters,
                None => return Err(RunError::Preempted),
            }
        } else {
            self.sampler.finish(pending)?
        };
        let meta = self.store.put_run(new_run(&counters, &self.host), now_unix_ns())?;
        let sum = |f: fn(&loupe_bpf::SlotCounters) -> u64| -> u64 {
            counters.per_cpu.iter().flat_map(|c| c.slots.iter()).map(f).sum()
        };
        info!(
            id = meta.id.0,
            iface = %meta.iface,
            interval = %format_interval(meta.interval_ns),
            samples = meta.samples,
            in_bytes = sum(|s| s.in_bytes),
            out_bytes = sum(|s| s.out_bytes),
            stored_bytes = meta.stored_bytes,
            "run stored"
        );
        Ok(meta)
    }
}

/// The host and rack a run is stored under: the kernel's host name, or the fleet's `--host` and
/// `--rack` when the agent is in a fleet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunHost {
    pub name: String,
    pub rack: Option<String>,
}

/// Turns what the kernel counted into a run for the store.
pub fn new_run(counters: &RunCounters, host: &RunHost) -> NewRun {
    let samples = counters.samples as usize;
    let per_cpu = counters
        .per_cpu
        .iter()
        .map(|cpu| {
            let mut cols = CpuColumns::zeroed(cpu.cpu, counters.samples);
            for (i, s) in cpu.slots.iter().enumerate().take(samples) {
                for c in Counter::ALL {
                    cols.counter_mut(c)[i] = counter(s, c);
                }
                cols.in_conns[i] = sketch::to_u128(s.in_conns);
                cols.out_conns[i] = sketch::to_u128(s.out_conns);
            }
            cols
        })
        .collect();
    NewRun {
        iface: counters.iface.clone(),
        host: host.name.clone(),
        rack: host.rack.clone(),
        start_unix_ns: counters.start_unix_ns,
        interval_ns: counters.interval_ns,
        samples: counters.samples,
        local_prefixes: counters.local_prefixes.iter().map(ToString::to_string).collect(),
        source: RunSource::Agent,
        per_cpu,
        conn_counts: None,
        clock: Some(RunClock {
            synchronized: counters.on_tai,
            synced: counters.clock.synced,
            max_error_ns: counters.clock.max_error_ns,
            est_error_ns: counters.clock.est_error_ns,
        }),
    }
}

fn counter(s: &SlotCounters, c: Counter) -> u64 {
    match c {
        Counter::InBytes => s.in_bytes,
        Counter::OutBytes => s.out_bytes,
        Counter::InPackets => s.in_packets,
        Counter::OutPackets => s.out_packets,
        Counter::InCeBytes => s.in_ce_bytes,
        Counter::InRetxBytes => s.in_retx_bytes,
        Counter::OutRetxBytes => s.out_retx_bytes,
        Counter::InCrossRegionBytes => s.in_cross_region_bytes,
        Counter::OutCrossRegionBytes => s.out_cross_region_bytes,
    }
}
