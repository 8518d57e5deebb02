//! Stack collection: drains the kernel sampler, symbolizes each sample while its process is
//! still alive, and writes batches to the store every few seconds (so a crash loses at most one
//! batch, and the store sees few, large, atomic writes). Waits off the CPU (`--off-cpu`) go
//! into batches of their own ([`Store::put_off_cpu`]).

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::Result;
use loupe_bpf::{RawStack, StackSampler, StackSamplerOptions};
use loupe_store::{OffCpuSample, StackSample, Store};
use tracing::{info, warn};

use super::symbolize::{NamingOptions, Symbolizer};
use loupe_api::clock::now_unix_ns;

/// How often collected samples are written to the store.
pub const BATCH_EVERY: Duration = Duration::from_secs(10);
/// Most samples written as one batch: half what the store takes in one, so a batch kept for a
/// retry can still grow a little and be written.
pub const BATCH_CAP: usize = loupe_store::samples::MAX_BATCH_SAMPLES / 2;
/// How often the ring buffer is drained (sooner if it fills a quarter): short enough that most
/// sampled processes are still alive to be symbolized, long enough to cost nothing.
pub const DRAIN_EVERY: Duration = Duration::from_millis(500);

/// How long before a drain a sample may have been taken and still not be in it (a record being
/// written as the ring is read, the two clocks' conversion): the stored mark stays this far
/// behind the drain.
const DRAIN_MARGIN_NS: u64 = 20_000_000;

/// How far the collector has stored, and a way to ask it to store now. Samples wait in the
/// collector for up to [`BATCH_EVERY`]: a question about the last seconds (a fleet's hot
/// functions over the last minute) asked meanwhile would be answered short of them, and a host's
/// partial would silently hold less than its own profile read a moment later.
#[derive(Debug, Default)]
pub struct StoredThrough {
    /// Every sample taken before this (Unix ns) is stored.
    through_unix_ns: AtomicU64,
    store_now: AtomicBool,
}

impl StoredThrough {
    /// Every stack sample taken before this (Unix ns) is stored.
    pub fn through_unix_ns(&self) -> u64 {
        self.through_unix_ns.load(Ordering::Acquire)
    }

    /// Asks the collector to store what it holds at its next drain (within [`DRAIN_EVERY`]).
    pub fn ask_to_store(&self) {
        self.store_now.store(true, Ordering::Release);
    }

    pub(crate) fn asked(&self) -> bool {
        self.store_now.swap(false, Ordering::AcqRel)
    }

    pub(crate) fn stored(&self, through_unix_ns: u64) {
        self.through_unix_ns.fetch_max(through_unix_ns, Ordering::AcqRel);
    }
}

/// What a collection did.
#[derive(Clone, Copy, Debug, Default)]
pub struct Collected {
    pub samples: u64,
    /// Waits off the CPU (with `--off-cpu`).
    pub waits: u64,
    pub lost: u64,
}

pub struct StackCollector {
    sampler: StackSampler,
    store: Store,
    naming: NamingOptions,
    raw: Vec<RawStack>,
    batch: Vec<StackSample>,
    waits: Vec<OffCpuSample>,
    lost_reported: u64,
    /// Off-CPU blocks the kernel's burst guard skipped, as of the last warning.
    skipped_reported: u64,
    total: Collected,
    stored: Arc<StoredThrough>,
}

impl StackCollector {
    pub fn start(options: &StackSamplerOptions, naming: NamingOptions, store: Store) -> Result<Self> {
        Ok(Self::new(StackSampler::start(options)?, naming, store))
    }

    /// Why off-CPU waits were asked for and are not sampled (the kernel refused or lacks their
    /// program), in the kernel's words.
    pub fn off_cpu_off(&self) -> Option<&str> {
        self.sampler.off_cpu_refused()
    }

    /// A collector of a sampler already running (the agent starts it before opening the
    /// store: see `app::agent`).
    pub fn new(sampler: StackSampler, naming: NamingOptions, store: Store) -> Self {
        info!(clock = ?sampler.clock(), hz = sampler.frequency_hz(), "stack sampler running on every CPU");
        Self {
            sampler,
            store,
            naming,
            raw: Vec::new(),
            batch: Vec::new(),
            waits: Vec::new(),
            lost_reported: 0,
            skipped_reported: 0,
            total: Collected::default(),
            stored: Arc::default(),
        }
    }

    /// How far this collector has stored (shared with the host, which waits on it).
    pub fn stored_through(&self) -> Arc<StoredThrough> {
        Arc::clone(&self.stored)
    }

    /// Collects until `deadline` (if any) or until `stop` is set; writes the last batch.
    pub fn run(&mut self, deadline: Option<Instant>, stop: &AtomicBool) -> Result<Collected> {
        // Made here, on the collecting thread: blazesym's caches are not `Send`.
        let mut symbolizer = Symbolizer::new(&self.naming);
        let mut last_write = Instant::now();
        loop {
            let done = stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d);
            let wait = if done { Duration::ZERO } else { DRAIN_EVERY };
            self.sampler.drain(&mut self.raw, wait)?;
            let drained_at = now_unix_ns().saturating_sub(DRAIN_MARGIN_NS);
            for raw in self.raw.drain(..) {
                let sample = symbolizer.sample(&raw);
                match raw.off_cpu {
                    Some(w) => self.waits.push(OffCpuSample { sample, waited_ns: w.waited_ns, one_in: w.one_in }),
                    None => self.batch.push(sample),
                }
            }
            // Written every BATCH_EVERY, or sooner on a host big and fast enough to fill a batch.
            let full = self.batch.len() >= BATCH_CAP || self.waits.len() >= BATCH_CAP;
            let asked = self.stored.asked();
            if done || last_write.elapsed() >= BATCH_EVERY || full || asked {
                let written = self.write_batch();
                if written.is_ok() {
                    self.stored.stored(drained_at);
                }
                if let Err(e) = written {
                    if done {
                        return Err(e);
                    }
                    warn!("writing stack samples failed (kept for the next try): {e:#}");
                    // Retrying an ever larger batch cannot succeed: let the oldest go.
                    if self.batch.len() >= BATCH_CAP {
                        let dropped = self.batch.len() - BATCH_CAP / 2;
                        self.batch.drain(..dropped);
                        warn!(dropped, "stack samples dropped: the store kept refusing them");
                    }
                    if self.waits.len() >= BATCH_CAP {
                        let dropped = self.waits.len() - BATCH_CAP / 2;
                        self.waits.drain(..dropped);
                        warn!(dropped, "off-CPU samples dropped: the store kept refusing them");
                    }
                }
                last_write = Instant::now();
            }
            if done {
                return Ok(self.total);
            }
        }
    }

    fn write_batch(&mut self) -> Result<()> {
        // The waits first: CPU samples that failed to write are kept and retried below, and
        // written waits are not written twice.
        if !self.waits.is_empty() {
            self.store.put_off_cpu(&self.waits, now_unix_ns())?;
            self.total.waits += self.waits.len() as u64;
            self.waits.clear();
        }
        if let Some(stats) = self.sampler.off_cpu_stats()
            && stats.skipped > self.skipped_reported
        {
            warn!(
                skipped = stats.skipped - self.skipped_reported,
                "blocks off the CPU not sampled in a burst past --off-cpu-max-per-second (until the sampling \
                 ratio caught up): the waits of those moments are under-counted"
            );
            self.skipped_reported = stats.skipped;
        }
        let lost_now = self.sampler.lost()?;
        let lost = lost_now - self.lost_reported;
        if self.batch.is_empty() && lost == 0 {
            return Ok(());
        }
        self.store.put_samples(&self.batch, lost, now_unix_ns())?;
        self.total.samples += self.batch.len() as u64;
        self.total.lost += lost;
        self.lost_reported = lost_now;
        if lost > 0 {
            warn!(lost, "stack samples lost (ring buffer full)");
        }
        self.batch.clear();
        Ok(())
    }
}
