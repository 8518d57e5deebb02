//! The agent: one worker thread per interface owns that interface's sampler, runs the periodic
//! schedule and on-demand requests one at a time (so runs never overlap on an interface), and
//! hands every finished run to the store. One more thread samples every CPU's stacks
//! continuously (unless `--no-stacks`) and stores them in batches.

mod demo;
mod worker;

use std::{
    collections::HashMap,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    thread,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use loupe_bpf::{SamplerOptions, TrafficSampler, parse_prefix};
use loupe_store::Store;
use tracing::info;

pub use worker::{Schedule, Worker};

use crate::{
    cli::AgentArgs,
    commands::open_store,
    control::{self, Handler},
    server::{AppState, Server},
    stacks::StackCollector,
    view::hostname,
};

pub fn main(args: AgentArgs) -> Result<()> {
    let shutdown = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&shutdown)).context("installing signal handlers")?;
    }
    let mut ifaces = args.ifaces.clone();
    let mut schedule =
        Schedule { intervals: args.intervals.clone(), samples: args.samples, period: args.period, jitter: args.jitter };
    if !(0.0..=1.0).contains(&schedule.jitter) {
        bail!("jitter {} out of bounds (0 to 1)", schedule.jitter);
    }
    let _demo = if args.demo {
        let demo = demo::Demo::start(Arc::clone(&shutdown))?;
        ifaces.push(demo::HOST_IF.to_string());
        // Show something within seconds, not minutes.
        if args.period == Duration::from_secs(60) {
            schedule.period = Duration::from_secs(5);
        }
        Some(demo)
    } else {
        None
    };
    if ifaces.is_empty() && args.no_stacks {
        bail!("nothing to sample: give --iface IF (repeatable) or --demo, or drop --no-stacks");
    }
    let store = open_store(&args.store)?;
    let local_prefixes = args.local_prefixes.iter().map(|p| parse_prefix(p)).collect::<Result<Vec<_>, _>>()?;
    let options = SamplerOptions { capacity: schedule.samples, local_prefixes };
    for interval in &schedule.intervals {
        loupe_bpf::RunRequest { interval: *interval, samples: schedule.samples, start: loupe_bpf::StartAt::Now }
            .validate(schedule.samples)?;
    }

    let host = hostname();
    let mut workers = HashMap::new();
    for iface in &ifaces {
        let sampler = TrafficSampler::attach(iface, &options)?;
        let worker = Worker::spawn(sampler, schedule.clone(), store.clone(), host.clone(), Arc::clone(&shutdown));
        workers.insert(iface.clone(), worker);
    }
    // Stacks: sampled continuously on every CPU, symbolized and stored in batches.
    let stacks = if args.no_stacks {
        None
    } else {
        let mut collector = StackCollector::start(&args.stacks.options(), store.clone())?;
        let stop = Arc::clone(&shutdown);
        Some(thread::Builder::new().name("loupe-stacks".into()).spawn(move || collector.run(None, &stop))?)
    };
    let handler = Arc::new(Handler { store: store.clone(), workers });
    let control = control::serve(&args.store.data_dir, Arc::clone(&handler), Arc::clone(&shutdown))?;
    let http = if args.no_http {
        None
    } else {
        let options = args.http.options();
        let state = AppState::new(&args.store.data_dir, store.clone(), Some(Arc::clone(&handler)), &options)?;
        Some(Server::start(state, &options)?)
    };
    info!(ifaces = ?ifaces, data_dir = %args.store.data_dir.display(), "agent sampling");

    let deadline = args.duration.map(|d| Instant::now() + d);
    while !shutdown.load(Ordering::Relaxed) {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            shutdown.store(true, Ordering::Relaxed);
            break;
        }
        thread::sleep(Duration::from_millis(500));
    }
    info!("shutting down");
    if let Some(http) = http {
        http.stop()?;
    }
    control::wake(&args.store.data_dir);
    let _ = control.join();
    for worker in handler.workers.values() {
        worker.join();
    }
    if let Some(stacks) = stacks {
        match stacks.join() {
            Ok(Ok(done)) => info!(samples = done.samples, lost = done.lost, "stack sampling stopped"),
            Ok(Err(e)) => tracing::error!("stack sampling failed: {e:#}"),
            Err(_) => tracing::error!("stack sampling thread panicked"),
        }
    }
    store.flush()?;
    report(&store)
}

fn report(store: &Store) -> Result<()> {
    let stats = store.stats()?;
    info!(runs = stats.runs, stored_bytes = stats.stored_bytes, "store");
    Ok(())
}
