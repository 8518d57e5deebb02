//! Runs as a core service: listing and showing stored runs, starting on-demand runs on the
//! agent's interfaces (through their workers, so runs never overlap on an interface), one-off
//! runs without an agent, and imports.

use std::{
    collections::HashMap,
    sync::{Arc, atomic::AtomicBool},
    time::Duration,
};

use loupe_bpf::{MAX_CAPACITY, RunRequest, SamplerOptions, StartAt, TrafficSampler};
use loupe_store::{NewRun, RunId, Store};

use super::{
    Host,
    error::{CoreError, CoreResult},
};
use crate::ingest::runs::{RunError, RunHost, Schedule, Worker, new_run};
use loupe_api::{
    clock::{hostname, now_unix_ns},
    model::{RunListEntry, RunView},
};

pub use loupe_api::orders::{DEFAULT_SAMPLES, ImportOutcome, MAX_START_AHEAD, RunFilter, RunOrder};

/// The kernel's request for `order`, checked: slot width and count in bounds, start not too
/// far ahead.
pub fn run_request(order: &RunOrder) -> CoreResult<RunRequest> {
    if let Some(t) = order.start_unix_ns
        && t > now_unix_ns().saturating_add(MAX_START_AHEAD.as_nanos() as u64)
    {
        return Err(CoreError::StartTooFar { limit: MAX_START_AHEAD });
    }
    let request = RunRequest {
        interval: order.interval,
        samples: order.samples,
        start: order.start_unix_ns.map_or(StartAt::Now, StartAt::UnixNs),
    };
    request.validate(MAX_CAPACITY)?;
    Ok(request)
}

/// The agent's interfaces, each with the worker that owns its sampler.
pub struct RunScheduler {
    workers: HashMap<String, Worker>,
}

impl RunScheduler {
    /// Attaches the filter to every interface (idle until a run), for [`RunScheduler::start`].
    pub fn attach(ifaces: &[String], options: &SamplerOptions) -> CoreResult<Vec<(String, TrafficSampler)>> {
        let mut samplers = Vec::with_capacity(ifaces.len());
        for iface in ifaces {
            let sampler = TrafficSampler::attach(iface, options)?;
            tracing::info!(iface, hook = %sampler.hook(), "tc filter attached");
            samplers.push((iface.clone(), sampler));
        }
        Ok(samplers)
    }

    /// Starts a worker on `schedule` for each attached interface.
    pub fn start(
        samplers: Vec<(String, TrafficSampler)>,
        schedule: &Schedule,
        store: &Store,
        host: &RunHost,
        shutdown: &Arc<AtomicBool>,
    ) -> RunScheduler {
        let mut workers = HashMap::new();
        for (iface, sampler) in samplers {
            let worker = Worker::spawn(sampler, schedule.clone(), store.clone(), host.clone(), Arc::clone(shutdown));
            workers.insert(iface, worker);
        }
        RunScheduler { workers }
    }

    /// Sampled interfaces, sorted.
    pub fn ifaces(&self) -> Vec<String> {
        let mut known: Vec<String> = self.workers.keys().cloned().collect();
        known.sort();
        known
    }

    /// Waits for every worker to stop (after the shutdown flag is set); samplers detach.
    pub fn join(&self) {
        for worker in self.workers.values() {
            worker.join();
        }
    }

    /// The worker of `iface`, or of the only interface when none is named.
    fn worker(&self, iface: Option<&str>) -> CoreResult<&Worker> {
        match iface {
            Some(i) => self
                .workers
                .get(i)
                .ok_or_else(|| CoreError::UnknownIface { iface: i.to_string(), known: self.ifaces() }),
            None if self.workers.len() == 1 => self.workers.values().next().ok_or(CoreError::NotCollecting),
            None => Err(CoreError::IfaceRequired { known: self.ifaces() }),
        }
    }
}

impl From<RunError> for CoreError {
    fn from(e: RunError) -> Self {
        match e {
            RunError::Sampler(e) => CoreError::Sampler(e),
            RunError::Store(e) => CoreError::Store(e),
            RunError::ShuttingDown => CoreError::ShuttingDown,
            // Only periodic runs are cut; nobody waits on those.
            e @ RunError::Preempted => CoreError::Internal(e.to_string()),
        }
    }
}

impl Host {
    /// Runs that started in the filter's range, oldest first.
    pub fn list_runs(&self, filter: &RunFilter) -> CoreResult<Vec<RunListEntry>> {
        let metas = self.store.runs(filter.range, filter.interval_ns, filter.iface.as_deref())?;
        Ok(metas.iter().map(RunListEntry::from).collect())
    }

    /// One stored run, every slot (and each CPU's series with `per_cpu`).
    pub fn show_run(&self, id: RunId, per_cpu: bool) -> CoreResult<RunView> {
        let run = self.store.run(id)?.ok_or(CoreError::NoRun(id.0))?;
        Ok(RunView::new(&run, per_cpu))
    }

    /// An on-demand run on one of the agent's interfaces; answers once it is stored, or after
    /// `wait` (the run then goes on and is stored when it ends: no thread waits past `wait`).
    /// On the CLI's host ([`Host::collecting_here`]) the run attaches in this process instead.
    pub fn start_run(&self, order: &RunOrder, wait: Duration) -> CoreResult<RunView> {
        if let (None, Some(prefixes)) = (&self.runs, &self.runs_here) {
            let iface = order.iface.as_deref().ok_or(CoreError::IfaceRequired { known: Vec::new() })?;
            return self.run_once(iface, order, prefixes.clone());
        }
        let scheduler = self.runs.as_ref().ok_or(CoreError::NotCollecting)?;
        let request = run_request(order)?;
        let worker = scheduler.worker(order.iface.as_deref())?;
        let meta = match worker.request(request).recv_timeout(wait) {
            Ok(outcome) => outcome?,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => return Err(CoreError::RunTimeout { waited: wait }),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Err(CoreError::ShuttingDown),
        };
        self.show_run(meta.id, false)
    }

    /// A run without an agent: attach to `iface`, run, detach, store (the CLI's `loupe run`
    /// on a host where no agent holds the store).
    fn run_once(&self, iface: &str, order: &RunOrder, local_prefixes: Vec<ipnet::IpNet>) -> CoreResult<RunView> {
        let request = run_request(order)?;
        let options = SamplerOptions { capacity: order.samples, local_prefixes };
        let mut sampler = TrafficSampler::attach(iface, &options)?;
        let counters = sampler.run(&request)?;
        drop(sampler);
        let meta = self.store.put_run(new_run(&counters, &RunHost { name: hostname(), rack: None }), now_unix_ns())?;
        self.show_run(meta.id, false)
    }

    /// Stores runs one atomic put each: a bad one is reported, the others land.
    pub fn import_runs(&self, runs: Vec<NewRun>) -> Vec<ImportOutcome> {
        runs.into_iter()
            .map(|r| self.store.put_run(r, now_unix_ns()).map(|m| m.id.0).map_err(|e| e.to_string()))
            .collect()
    }
}
