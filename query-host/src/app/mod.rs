//! Composition: what each command of the `loupe` binary puts together — the agent (core +
//! ingest + every door), `serve` (core + HTTP), and the one-shot commands (a local core, the
//! agent's control socket, or a remote API). The CLI definition is in `crate::cli`; the logic
//! is below, in the core.

pub mod agent;
pub mod commands;
pub mod data_dir;
pub mod demo;
pub mod demo_app;
pub mod fleet;
pub mod probes;
pub mod progress;
pub mod resident;
pub mod serve;
pub mod tokens;
pub mod udf;
pub mod zero_pages;

use std::{
    os::{fd::AsRawFd, unix::net::UnixStream},
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

/// The size of one of sled's metric histograms (65,536 `usize` buckets): the first open of a
/// process fills 40 of them with zeros that are never used again (see [`zero_pages`]).
const SLED_HISTOGRAM_BYTES: usize = 65_536 * size_of::<usize>();

/// Makes the data dir its owner's alone ([`data_dir`]), opens the store, then gives back the
/// ~20 MiB of zeros sled's first open leaves resident (in the `loupe` binary, whose allocator
/// notes them; elsewhere a no-op).
pub fn open_store(args: &StoreArgs) -> Result<Store, StoreError> {
    match data_dir::make_private(&args.data_dir) {
        Ok(done) => {
            if let Some(foreign) = &done.foreign {
                tracing::warn!(
                    data_dir = %args.data_dir.display(),
                    foreign = %foreign,
                    "the data dir holds files Loupe did not write: its own mode is left as it is \
                     (give Loupe a directory of its own to keep its data private)"
                );
            }
            if done.paths > 0 {
                tracing::warn!(
                    data_dir = %args.data_dir.display(),
                    paths = done.paths,
                    mode_was = %done.dir_mode.map_or("0700 or less".into(), |m| format!("{m:o}")),
                    "the data dir and what it holds were readable by other users: now by its owner alone (0700 and 0600)"
                );
            }
        }
        Err(e) => tracing::warn!(data_dir = %args.data_dir.display(), "could not make the data dir private: {e}"),
    }
    let store = zero_pages::watch(SLED_HISTOGRAM_BYTES, || {
        Store::open(&args.data_dir, Retention { max_age: args.retention, max_bytes: args.max_bytes })
    });
    let released = zero_pages::release();
    if released > 0 {
        tracing::debug!(released, "unused zero pages given back after opening the store");
    }
    store
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
///
/// SIGINT and SIGTERM (which set `stop`, see [`stop_on_signals`]) also write to a pipe this
/// waits on, so the wait ends at once without waking to look at the flag (an idle agent's main
/// thread woke five times a second, then once, each wake ~50–100 µs of CPU on this VM). The
/// flag is checked before each wait, so a signal that came before the pipe was there is seen
/// at once. Otherwise the thread wakes just after each minute of the wall clock ends, and
/// `each_wake` runs then (the audit trail's folded lines of the minute are written by it).
pub fn wait_for_stop(stop: &AtomicBool, deadline: Option<Instant>, mut each_wake: impl FnMut()) {
    let (wake, ids) = match signal_pipe() {
        Ok((wake, ids)) => (Some(wake), ids),
        Err(e) => {
            tracing::debug!("no signal pipe ({e}); checking the stop flag every 200 ms");
            (None, Vec::new())
        }
    };
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            stop.store(true, Ordering::Relaxed);
            break;
        }
        let minute = until_minute_ends();
        let wait = deadline.map_or(minute, |d| d.saturating_duration_since(now).min(minute));
        match &wake {
            Some(wake) => {
                let mut fds = libc::pollfd { fd: wake.as_raw_fd(), events: libc::POLLIN, revents: 0 };
                // SAFETY: one valid pollfd; `wake` outlives the call.
                unsafe { libc::poll(&mut fds, 1, wait.as_millis().min(i32::MAX as u128) as i32) };
            }
            None => thread::sleep(wait.min(Duration::from_millis(200))),
        }
        each_wake();
    }
    for id in ids {
        signal_hook::low_level::unregister(id);
    }
}

/// How long until just after the wall clock's current minute ends, when [`wait_for_stop`]
/// wakes to run its `each_wake`.
fn until_minute_ends() -> Duration {
    use loupe_core::audit::NANOS_PER_MINUTE;
    let now = loupe_api::clock::now_unix_ns();
    Duration::from_nanos(NANOS_PER_MINUTE - now % NANOS_PER_MINUTE) + Duration::from_millis(50)
}

/// A pipe SIGINT and SIGTERM write a byte to; the read end and the handlers' ids.
fn signal_pipe() -> std::io::Result<(UnixStream, Vec<signal_hook::SigId>)> {
    let (read, write) = UnixStream::pair()?;
    write.set_nonblocking(true)?;
    let mut ids = Vec::new();
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        ids.push(signal_hook::low_level::pipe::register(signal, write.try_clone()?)?);
    }
    Ok((read, ids))
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
