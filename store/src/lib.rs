//! Loupe's local store for Millisampler runs, CPU stack samples, programs' timeline events and
//! probe sessions.
//!
//! Stack samples (`perf record -F 10 -a -g`-like profiling) are described in [`samples`]:
//! [`Store::put_samples`], [`Store::profile`], [`Store::samples`], [`Store::pids`],
//! [`Store::sample_stats`]. They share the tree, the writer lock, the totals discipline and the
//! retention policy described below.
//!
//! Programs' timeline events (`loupe-timeline`) are described in [`timeline`]:
//! [`Store::put_timeline`], [`Store::timeline_events`], [`Store::timeline_stats`],
//! [`Store::timeline_sources`] — in the same tree, under the same retention, ≤ 8 bytes an event.
//!
//! Probe sessions (`loupe probe`: per-function call counts and latency histograms, optional
//! per-call records with parents) are described in [`probes`]: [`Store::put_probe_session`],
//! [`Store::probe_sessions`], [`Store::probe_session`], [`Store::delete_probe_session`] —
//! stored whole at the session's end, same tree, same retention, ~5.6 bytes a call.
//!
//! A *run* is a short burst of per-CPU network counters on one interface: `samples` slots of
//! `interval_ns` each, with nine `u64` counters and two 128-bit connection sketches per slot
//! and CPU (see [`model`]). The agent writes one run at a time; the HTTP API lists runs by time
//! and reads whole runs; retention deletes the oldest. This crate knows nothing of the kernel
//! or of HTTP.
//!
//! # Layout
//! One sled tree, `runs`, holds every record of every run under keys made of a one-byte kind
//! and big-endian integers, so byte order is numeric order and a range scan follows time
//! (details in [`keys`]):
//!
//! ```text
//! m ++ start:u64 ++ id:u64             → RunMeta            (MessagePack)
//! c ++ start:u64 ++ id:u64 ++ cpu:u32  → one CPU's columns  (compact codec, then MessagePack)
//! k ++ start:u64 ++ id:u64             → ConnCounts         (only for runs that carry counts)
//! i ++ id:u64                          → start:u64          (lookup by id)
//! s                                    → runs:u64, stored_bytes:u64 (running totals)
//! ```
//!
//! Stack samples (`B h b d x`), timeline events (`E e n y`) and probe sessions (`P p j q`)
//! have their own kinds in the same tree, laid out the same way (see [`keys`]).
//!
//! *Why this shape:* listing runs in a time range ([`Store::runs`]) scans only the small `m`
//! records and never touches columns; reading one run is an index lookup plus one contiguous
//! prefix scan of its `c` rows; deleting the oldest run is "take the first `m` key". A second
//! tree, `meta`, holds the schema version; a store written by an unknown version is refused
//! rather than misread.
//!
//! # Encoding
//! Values are MessagePack (rmp-serde, structs as arrays) of plain integers. Columns are first
//! turned into sparse zero-run-length streams ([`codec`]), because most slots are zero and
//! MessagePack writes small integers in one byte: an idle 2000-sample, 2-CPU run takes about
//! 190 bytes; a busy one costs roughly what its non-zero values need (about 3 bytes per
//! non-zero byte counter, 1 per packet counter, 1–2 per sketch slot), e.g. ~8 KB per CPU
//! when 30 % of the slots carry traffic.
//!
//! Every decoder of a stored record (keys, run metadata and columns, sample blocks, tables,
//! batch metadata, dictionary entries, the totals) checks each length and bound and reports a
//! corrupt record as [`StoreError::Corrupt`]; none may panic or allocate without bound on any
//! input, which `fuzz/` checks (`scripts/fuzz`: one libFuzzer target per decoder, seeded with
//! records of a real store). The bounds that make this hold are [`MAX_RUN_SAMPLES`],
//! [`samples::MAX_BATCH_SAMPLES`], the timeline codec's and [`MAX_SESSION_CALLS`] with the probe
//! codec's.
//!
//! # Disk full
//! A failed write leaves every earlier run intact, but sled then refuses further work on that
//! handle, and needs about one free 512 KiB segment to open: free space, then reopen. Closing
//! such a handle is bounded (sled's final flush can otherwise wait forever; see `faults`).
//!
//! # Atomicity and durability
//! Every record of a run, *and* the updated running totals (`s`), go into one
//! [`sled::Batch`] applied to the one tree, which sled recovers all-or-nothing after a crash;
//! deletes do the same. So after a crash a run is either wholly present or wholly absent, and
//! the totals always equal the sum of the stored runs' `stored_bytes`, which is why
//! [`Store::stats`] and retention need no scan. [`Store::put_run`] flushes before returning,
//! so a returned put survives a crash. Writers (put, delete, retention) are serialized by a
//! mutex (sled already allows only one process per store), and multi-record reads are
//! isolated from batches by a read-write lock, so a reader never sees half of a run.
//!
//! # Where things are
//! One module per responsibility; each one's docs say why it is shaped the way it is.
//!
//! | module | what |
//! |---|---|
//! | [`model`] | the public types: runs, metadata, ranges, retention, stats, the verify report |
//! | `error` | [`StoreError`] |
//! | `open` | [`Store::open`]: directory, sled configuration, schema version |
//! | (this file) | `Store`, and `Inner`: what every clone shares; the writer/visibility locks, `apply`, `flush` |
//! | `faults` | what a sled error means (full disk, locked); closing a handle after ENOSPC |
//! | `validate` | checking a run before anything is written |
//! | `records` | a run's key/value records and its `stored_bytes` |
//! | `runs` | the run API: write, list, page, read, delete |
//! | `put` | every `put_*` method: the kind's write, then retention, under one writer lock (above both, so neither names the other) |
//! | `stats` | [`Store::stats`] from the running counters, [`Store::days`] |
//! | `retention` | by age, then by bytes, runs, sample and timeline batches, probe sessions alike (named only by `put`) |
//! | `verify` | [`Store::verify`], the `fsck` |
//! | [`keys`], [`codec`] | key layout and totals records; runs' column encoding |
//! | `encoding` | what every kind's codec builds on: bit-packed integer columns with zigzag and gap coding (`bits`), MessagePack and its `bin` wrapper (`msgpack`), self-counting records; it names no kind |
//! | [`samples`] | stack samples (its own modules: write, read, dictionary, codec with one file per record kind, sweep) |
//! | [`timeline`] | programs' timeline events (write, query, codec, sources, sweep) |
//! | [`probes`] | probe sessions (write and validation, query, records, codec, verify) |

pub mod codec;
// Public (but hidden) only so the fuzz targets (`fuzz/`) reach the bit columns.
#[doc(hidden)]
pub mod encoding;
mod error;
mod faults;
pub mod keys;
pub mod model;
mod open;
pub mod probes;
mod put;
mod records;
mod retention;
mod runs;
pub mod samples;
mod stats;
pub mod timeline;
mod validate;
mod verify;

use std::{
    mem::ManuallyDrop,
    path::PathBuf,
    sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, atomic::AtomicBool},
};

use keys::Totals;
use samples::dict::Dict;

pub use error::StoreError;
pub use faults::FREE_FLOOR;
pub use model::{
    ConnCounts, Counter, CpuColumns, DaySummary, MAX_RUN_SAMPLES, NewRun, Retention, RetentionReport, Run, RunClock,
    RunId, RunMeta, RunPos, RunSource, StoreStats, TimeRange, VerifyReport,
};
pub use open::{SCHEMA_VERSION, SEGMENT_SIZE, SLED_DEFAULT_SEGMENT, sled_db};
pub use probes::model::{
    MAX_BUCKETS, MAX_SESSION_CALLS, MAX_SESSION_FUNCTIONS, ProbeCall, ProbeFunction, ProbeSession, ProbeSessionSummary,
};
pub use probes::{ProbeCallChunks, ProbePos};
pub use samples::model::{
    Frame, FrameKind, IndexedProfile, Name, ObjectAddress, OffCpuSample, Profile, ProfileQuery, SampleBatchMeta, SampleKind,
    SampleStats, StackSample,
};
pub use samples::{RawSample, RawWait, Renamed, SampleCursor, WaitCursor};
pub use timeline::model::{
    EventPos, EventStats, StoredEvent, TimelineBatchMeta, TimelineEvent, TimelineEventDef, TimelineQuery,
    TimelineSource, TimelineSourceSummary, TimelineStats,
};

/// A handle on an open store. Cheap to clone; all clones share the same database.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

// What every clone of a `Store` shares (`Inner`), and the primitives every writer and reader
// uses. The store's locking discipline lives in these few small functions — take the writer
// mutex, apply a sled batch under the visibility lock, read the running totals — and every
// module (runs, samples, timeline, probes, retention, verify) builds on them. They sit here,
// beside `Store`, rather than in a module of their own: `Inner` also holds those modules'
// caches (the sample and timeline dictionaries), so such a module would be in a circle with
// each of them.
//
// - Writers (put, delete, retention, dictionary sweep) are serialized by `writer`, because
//   each reads the running totals, updates them and writes them back in its batch (sled
//   already allows only one process per store).
// - Batches are applied under `visibility` held exclusively, and multi-record readers hold
//   it shared, so a reader never sees half of a run or of a sample batch (sled batches are
//   crash-atomic, but concurrent readers could otherwise see part of one).
// - Lock order: `writer`, then `visibility`, then `dict`.

pub(crate) struct Inner {
    pub(crate) path: PathBuf,
    pub(crate) db: ManuallyDrop<sled::Db>,
    pub(crate) runs: ManuallyDrop<sled::Tree>,
    /// Set once a write failed for lack of space; see the `Drop` impl in `faults`.
    pub(crate) out_of_space: AtomicBool,
    pub(crate) retention: Retention,
    /// Serializes writers: the running totals are read, updated and written back.
    pub(crate) writer: Mutex<()>,
    /// Held exclusively while a batch is applied and shared by multi-record readers, so a
    /// reader sees a run wholly or not at all (sled batches are crash-atomic, but concurrent
    /// readers could otherwise see part of one).
    pub(crate) visibility: RwLock<()>,
    /// The sample dictionaries, loaded on first use (see `samples`). Lock order:
    /// `visibility` before `dict`.
    pub(crate) dict: RwLock<Dict>,
    /// The timeline source dictionary, loaded on first use (see `timeline`). Lock
    /// order: `visibility` before `tl_dict`.
    pub(crate) tl_dict: RwLock<crate::timeline::records::TlDict>,
}

impl Inner {
    pub(crate) fn lock_writer(&self) -> MutexGuard<'_, ()> {
        // A panicking writer leaves nothing half-done in sled (batches are atomic), so a
        // poisoned lock is safe to reuse.
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Shared visibility lock: no batch is applied while it is held.
    pub(crate) fn read_lock(&self) -> RwLockReadGuard<'_, ()> {
        self.visibility.read().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn apply(&self, batch: sled::Batch, op: &str) -> Result<(), StoreError> {
        self.apply_then(batch, op, || {})
    }

    /// [`Self::apply`] for a batch that adds data: refused first while the disk is nearly full
    /// (see [`Self::ensure_room`]). Deletions use `apply`, so retention can always free space.
    pub(crate) fn apply_adding(&self, batch: sled::Batch, op: &str) -> Result<(), StoreError> {
        self.apply_adding_then(batch, op, || {})
    }

    /// [`Self::apply_then`] for a batch that adds data (see [`Self::apply_adding`]).
    pub(crate) fn apply_adding_then(
        &self,
        batch: sled::Batch,
        op: &str,
        then: impl FnOnce(),
    ) -> Result<(), StoreError> {
        self.ensure_room(op)?;
        self.apply_then(batch, op, then)
    }

    /// Applies a batch and, only if it was applied, runs `then` before readers can look.
    pub(crate) fn apply_then(&self, batch: sled::Batch, op: &str, then: impl FnOnce()) -> Result<(), StoreError> {
        let _v = self.visibility.write().unwrap_or_else(|e| e.into_inner());
        self.runs.apply_batch(batch).map_err(|e| self.storage(op, e))?;
        then();
        Ok(())
    }

    pub(crate) fn flush(&self, op: &str) -> Result<(), StoreError> {
        self.db.flush().map(drop).map_err(|e| self.storage(op, e))
    }

    /// The run totals (`s` record); zero for a store without runs.
    pub(crate) fn totals(&self) -> Result<Totals, StoreError> {
        match self.runs.get(keys::STATS).map_err(|e| self.storage("read totals", e))? {
            None => Ok(Totals::default()),
            Some(v) => {
                Totals::decode(&v).ok_or_else(|| self.corrupt("totals record".into(), format!("{} bytes", v.len())))
            }
        }
    }
}

impl Store {
    /// Writes everything buffered to disk.
    pub fn flush(&self) -> Result<(), StoreError> {
        self.inner.flush("flush")
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.inner.path)
            .field("retention", &self.inner.retention)
            .finish_non_exhaustive()
    }
}
