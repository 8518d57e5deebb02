//! Stack samples: CPU profiling at ~10 Hz per CPU, stored beside the runs, under the same
//! retention.
//!
//! The agent hands over *batches* (about 10 s of samples from every CPU) with
//! [`Store::put_samples`]; [`Store::profile`] sums them into a flame-graph-ready list of
//! stacks, [`Store::samples`] returns them one by one. A day of a 96-CPU host is ~83 M samples,
//! so the layout is built around two numbers: **bytes per sample** (a week must fit a few GB)
//! and **the cost of a day-long profile** (it must not decode 83 M samples).
//!
//! # Layout
//! All records live in the `runs` tree next to the run records (one sled batch can only
//! touch one tree, and a batch, its dictionary entries and the totals must land together):
//!
//! ```text
//! B ++ start:u64 ++ batch:u64             → batch metadata: end, samples, lost, cpus, bytes
//! h ++ start:u64 ++ batch:u64             → batch table: distinct (thread, idle, stack)
//!                                           entries and their counts = the histogram; and
//!                                           the per-CPU blocks: each CPU's samples of the
//!                                           batch, as times + indexes into the table
//! b ++ start:u64 ++ cpu:u32 ++ batch:u64  → one CPU's block, in batches written before the
//!                                           blocks moved into the `h` record (still read)
//! H ++ hour:u64                           → hour rollup: the tables of the batches that
//!                                           start in that clock hour, summed
//! d ++ f|c|s|t ++ id:u32                  → dictionary: frame, comm, stack (frame ids),
//!                                           thread (pid, tid, comm id, cgroup id)
//! d ++ v ++ pid:u32 ++ local:u32          → a process's stack vocabulary: its name `local`
//!                                           for a stack id
//! x                                       → sample totals and dictionary id counters
//! ```
//!
//! `start` is the batch's earliest sample, so all three kinds sort by time and a query is a
//! range scan (starting `max batch span` before the range, kept in `x`, so a batch that began
//! earlier but reaches into the range is found). Why this shape:
//!
//! - **Stacks are deduplicated** into a dictionary (frames → frame ids, frame-id sequences →
//!   stack ids), and so are comms and threads (`(pid, tid, comm, cgroup)` → thread id, since
//!   the same threads recur batch after batch). A sample then carries two small integers
//!   instead of ~20 frames and a string. Ids are *dense* and allocated in order of first
//!   appearance rather than being a 64-bit content hash: tables refer to them thousands of
//!   times per batch, and a popular stack's id takes a few bits where a hash takes 64.
//!   Content → id lookups use a hash in memory (the cache is the whole dictionary, see
//!   `dict`). New dictionary records go into the same atomic sled batch as the first batch
//!   that uses them, so a stored block never refers to a missing stack, whatever the crash.
//! - **Each process names its stacks in its own vocabulary**, and a batch table names a stack
//!   by that name (table format 3): a process uses a few dozen of the store's thousands of
//!   stacks, so its names are small numbers where a stack id is not. On the benchmark's day
//!   this took the tables' stack columns from 4.75 to ~2.9 bits a sample, for ~36,000 names
//!   (one record each) a day. Names are given in order of first use, in the same atomic batch
//!   as the first table that uses them, so a batch still decodes alone against the dictionary.
//! - **The batch table is the pre-aggregated histogram.** Across all CPUs of a 10-s batch the
//!   same `(thread, idle, stack)` recurs, so the batch stores each distinct entry once, with
//!   its count. A `profile()` over a long range reads one table per batch (8,640 a day,
//!   ~100 µs each to decode) instead of 96 blocks per batch and 83 M samples. It is kept per
//!   batch rather than per block because the 96 per-CPU histograms of a batch share entries
//!   and structure: one table costs less than 96, and is 96× fewer records to read.
//! - **Hour rollups sum the tables of an hour**, since 8,640 tables a day was still what a
//!   whole-day profile cost (~1 s). An hour's 360 tables share most entries, so their sum is
//!   far smaller; a profile reads the rollup of every hour whose batches lie wholly in its
//!   range and the batches of the other hours. A rollup is written once its hour is complete
//!   and deleted with the first change to the hour's batches, in the same atomic batch (see
//!   `rollup`).
//! - **Per-CPU blocks** hold the samples themselves: times and, per sample, which table entry
//!   it is (the table is partitioned by first CPU, so a block names only the entries it
//!   shares with lower CPUs; see `codec`). Counting a block's indexes gives that CPU's
//!   histogram: a query with a CPU filter decodes only that CPU's blocks (indexes only, no
//!   times, when the batch lies inside the range); a query whose range cuts a batch decodes
//!   the cut batch's blocks sample by sample. A batch's blocks are in its table record, after
//!   the table, with a directory saying where each CPU's lies: a `b` record a CPU cost its
//!   key and header (~30 bytes for ~100 samples, ~2.4 bits a sample) and a record is what
//!   sled keeps per key; the table is read for every batch a query touches anyway.
//! - **Columns are bit-packed** (`encoding::bits`) inside a MessagePack `bin`, each with the shortest
//!   of fixed-width / Exp-Golomb / Rice / sparse codes, after delta, zigzag, move-to-front
//!   and grid (timer period) transforms. Times are kept to the microsecond and take ~3.5
//!   bits, the entry index ~5.5 (the batch table ~6.5 more per sample; `docs/hot-paths.md`).
//!   General-purpose compression is not used: the columns are already entropy-coded and the
//!   records small, and measured on the benchmark's blocks and tables, zstd -3 and lz4 made
//!   them 0–5 % *larger*.
//!
//! # Atomicity, retention, dictionary sweep
//! A batch (its `B` and `h` records, new `d` records and the updated `x` totals) is one
//! sled batch; so is the deletion of a batch (with its hour's rollup). Retention treats a sample batch like a run whose
//! start is the batch's first sample: by age, every batch that started before `now - max_age`
//! goes; by bytes, the older of the oldest run and the oldest batch goes until the total of
//! runs, batches, rollups *and* dictionary fits the cap. Dictionary entries outlive the batches that
//! used them; once the batches deleted since the last sweep reach a third of those left, the
//! writer sweeps: it collects the threads and stacks still referenced by some batch table, the
//! names processes give them there, and the comms and frames those use, and deletes the rest
//! (in atomic chunks, each with the totals, names first; a crash mid-sweep only leaves
//! unreferenced entries behind). Ids are never reused; a name no table uses any more may be
//! given again (see `dict`).
//! The sweep reads every table (~1 s per stored day); it runs about once per third of the
//! retention period.
//!
//! # Reading
//! Readers hold the store's read lock for the whole query, so they never see a batch half
//! written or half deleted, and the dictionary cache is updated under the matching write lock.
//! A writer waits for a running query (a day-long profile: about a second).
//!
//! # Where things are
//! - `write`: [`Store::put_samples`]: dedup into the dictionary, encode, one atomic batch (the
//!   retention pass after it is run by the store's `put`, above both this module and retention);
//! - `query`: [`Store::profile`], [`Store::samples`], [`Store::pids`]; `cursor`:
//!   [`Store::sample_cursor`] and [`Store::wait_cursor`] (page by page, with dictionary ids);
//! - `records`: a batch's `B`/`h`/`b` records by key (list, read, delete),
//!   [`Store::sample_batches`];
//! - `totals`: the `x` record, [`Store::sample_stats`], [`Store::lost_samples`];
//! - `rename`: [`Store::unnamed_frames`], [`Store::rename_frames`] (naming frames later);
//! - `rollup`: hour rollups — when an hour is sealed, when a query may use one;
//! - `dict`: the dictionaries and their in-memory cache; `sweep`: deleting what no batch uses;
//! - `codec` (records ↔ bytes, one file per record kind) on top of the store's shared
//!   `encoding` (bit-packed integer columns, MessagePack);
//! - `off_cpu`: waits off the CPU ([`Store::put_off_cpu`], [`Store::off_cpu_samples`], profiles of `SampleKind::OffCpu`): the
//!   same batches under keys of their own, each sample weighed by how long its thread waited;
//! - `verify`: the sample part of [`Store::verify`]; [`model`]: the public types.

// Public (but hidden) only so the fuzz targets (`fuzz/`) reach the decoders the store uses.
#[doc(hidden)]
pub mod codec;
mod cursor;
#[doc(hidden)]
pub mod dict;
pub mod model;
#[doc(hidden)]
pub mod off_cpu;
mod query;
mod records;
mod rename;
pub(crate) mod rollup;
mod sweep;
mod totals;
pub(crate) mod verify;
mod write;

pub use cursor::{RawSample, RawWait, SampleCursor, WaitCursor};
pub use rename::Renamed;

#[cfg(doc)]
use crate::Store;

/// The most samples one batch may hold: 4,194,304 (a 10-s batch of a 1,000-CPU host at 100 Hz
/// is 1 M; of a 400-CPU host at the sampler's maximum of 1,000 Hz, 4 M). Every column of a
/// batch's records is at most this long, which bounds what a reader allocates for a record
/// whatever its header says (see `encoding::bits::MAX_COLUMN`).
pub const MAX_BATCH_SAMPLES: usize = crate::encoding::bits::MAX_COLUMN;
