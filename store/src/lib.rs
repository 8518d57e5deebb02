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
//! | [`model`] | the public types: runs, metadata, ranges, retention, stats |
//! | `error` | [`StoreError`] |
//! | `open` | [`Store::open`]: directory, sled configuration, schema version |
//! | `inner` | what every clone of a [`Store`] shares; the writer/visibility locks, `apply`, `flush` |
//! | `faults` | what a sled error means (full disk, locked); closing a handle after ENOSPC |
//! | `validate` | checking a run before anything is written |
//! | `records` | a run's key/value records and its `stored_bytes` |
//! | `runs` | the run API: put, list, page, read, delete |
//! | `stats` | [`Store::stats`] from the running counters, [`Store::days`] |
//! | `retention` | by age, then by bytes, runs, sample and timeline batches, probe sessions alike |
//! | `verify` | [`Store::verify`], the `fsck` |
//! | [`keys`], [`codec`] | key layout and totals records; column encoding |
//! | [`samples`] | stack samples (its own modules: write, read, dictionary, codec, sweep) |
//! | [`timeline`] | programs' timeline events (write, query, codec, sources, sweep) |
//! | [`probes`] | probe sessions (write and validation, query, records, codec, verify) |

pub mod codec;
mod error;
mod faults;
mod inner;
pub mod keys;
pub mod model;
mod open;
pub mod probes;
mod records;
mod retention;
mod runs;
pub mod samples;
mod stats;
pub mod timeline;
mod validate;
mod verify;

use std::sync::Arc;

pub use error::StoreError;
pub use faults::FREE_FLOOR;
pub(crate) use inner::Inner;
pub use model::{
    ConnCounts, Counter, CpuColumns, DaySummary, MAX_RUN_SAMPLES, NewRun, Retention, RetentionReport, Run, RunClock,
    RunId, RunMeta, RunPos, RunSource, StoreStats, TimeRange,
};
pub use open::{SCHEMA_VERSION, SEGMENT_SIZE, SLED_DEFAULT_SEGMENT, sled_db};
pub use probes::model::{
    MAX_BUCKETS, MAX_SESSION_CALLS, MAX_SESSION_FUNCTIONS, ProbeCall, ProbeFunction, ProbeSession, ProbeSessionSummary,
};
pub use probes::{ProbeCallChunks, ProbePos};
pub use samples::model::{
    Frame, IndexedProfile, Name, ObjectAddress, OffCpuSample, Profile, ProfileQuery, SampleBatchMeta, SampleKind,
    SampleStats, StackSample,
};
pub use samples::{RawSample, RawWait, Renamed, SampleCursor, WaitCursor};
pub use timeline::model::{
    EventPos, EventStats, StoredEvent, TimelineBatchMeta, TimelineEvent, TimelineEventDef, TimelineQuery,
    TimelineSource, TimelineSourceSummary, TimelineStats,
};
pub use verify::VerifyReport;

/// A handle on an open store. Cheap to clone; all clones share the same database.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}
