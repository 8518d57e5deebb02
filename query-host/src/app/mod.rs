//! Composition: what each command of the `loupe` binary puts together — the agent (core +
//! ingest + every door), `serve` (core + HTTP), and the one-shot commands (a local core, the
//! agent's control socket, or a remote API). The CLI definition is in `crate::cli`; the logic
//! is below, in the core.

pub mod agent;
pub mod commands;
pub mod demo;
pub mod fleet;
pub mod probes;
pub mod progress;
pub mod serve;
pub mod tokens;
pub mod udf;

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    thread,
    time::{Duration, Instant},
};

use anyhow::{Context, Result};
use loupe_store::{Retention, Store, StoreError};

use crate::cli::StoreArgs;

pub fn open_store(args: &StoreArgs) -> Result<Store, StoreError> {
    Store::open(&args.data_dir, Retention { max_age: args.retention, max_bytes: args.max_bytes })
}

/// A flag set by SIGINT or SIGTERM.
pub fn stop_on_signals() -> Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop)).context("installing signal handlers")?;
    }
    Ok(stop)
}

/// Waits until `stop` is set or `deadline` passes (then sets `stop` itself).
pub fn wait_for_stop(stop: &AtomicBool, deadline: Option<Instant>) {
    while !stop.load(Ordering::Relaxed) {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            stop.store(true, Ordering::Relaxed);
            break;
        }
        thread::sleep(Duration::from_millis(200));
    }
}

/// After a stop is asked for, the process ends within `limit` whatever its threads are doing:
/// a stop must never wait on a filesystem, a client or a kernel call that does not return.
/// (Filters left attached by a forced exit are removed at the next start.)
pub fn exit_within(limit: Duration) {
    let _ = thread::Builder::new().name("loupe-exit-watchdog".into()).spawn(move || {
        thread::sleep(limit);
        tracing::error!(after = ?limit, "shutdown took too long; exiting now");
        std::process::exit(3);
    });
}
