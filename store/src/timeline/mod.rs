//! Programs' timeline events (`loupe-timeline`): stored beside runs and stack samples, keyed by
//! time, under the same retention.
//!
//! The agent tails each program's ring file and hands over *batches* — one program's events of
//! the last few seconds — with [`Store::put_timeline`]; [`Store::timeline_events`] pages
//! through events in time order, [`Store::timeline_stats`] gives per-event counts and lag
//! percentiles, [`Store::timeline_sources`] the programs seen. A program looping at tens of
//! thousands of iterations a second logs hundreds of thousands of events a second, so the
//! layout is built around **bytes per event** (goal ≤ 8, against 48 in the ring) and **stats
//! over a day without decoding its events**.
//!
//! # Layout
//! In the `runs` tree, so a batch, its dictionary entry and the totals land in one atomic sled
//! batch (keys in [`crate::keys`]):
//!
//! ```text
//! E ++ start:u64 ++ batch:u64   → metadata: end, events, lost, source id, bytes, and per
//!                                 event id its count and lag histogram
//! e ++ start:u64 ++ batch:u64   → the events: bit-packed columns (see `codec`)
//! n ++ id:u32                   → dictionary: a source = (pid, start ticks, comm, event defs)
//! y                             → timeline totals: batches, events, bytes, lost, id counter
//! ```
//!
//! `start` is the batch's earliest event, so both kinds sort by time and a query is a range
//! scan starting `max span` (kept in `y`) before the range. Why this shape:
//!
//! - **One batch = one source.** A program's events share its pid, comm and definitions, which
//!   the batch names once by a dictionary id; the definitions (names, levels, argument names)
//!   are stored once per distinct content, not per batch, let alone per event. A query
//!   filtering by pid, comm or event name skips whole batches from their metadata.
//! - **Metadata apart from the events**, holding each event id's count and log-linear lag
//!   histogram (32 sub-buckets per power of two: p50/p99 within 1/64 of exact): listing
//!   sources, retention and a day's stats read only these small records; a day's
//!   `timeline_stats` sums ~17k histograms instead of decoding ~10^9 events. Only the two
//!   batches the range cuts are decoded.
//! - **Columns, grouped by thread.** Inside a batch events are ordered by thread, then time,
//!   so each thread's events are a run: the thread id is stored once per run, times are deltas
//!   within a thread (always ≥ 0, and as regular as the program's loop), the CPU is "same as
//!   before" (a sparse column of zeros), and the event id is coded against the thread's
//!   previous event (move-to-front per context: `loop_start` is followed by `loop_end` again,
//!   code 0). Time deltas and arguments get one column per event id, so each column's code
//!   fits its own distribution: a `loop_start` 50 ns after the previous `loop_end`, a
//!   `loop_end` a whole iteration later, a packet count of 0–32, a zero argument for free.
//! - **Lags recomputed, not stored**: an event's lag is the time since the thread's previous
//!   event of equal or lower level — which, inside the batch, the times already say. Only the
//!   difference to that prediction is stored (the reader converts lags and times separately,
//!   so they differ by ±1 ns of rounding now and then), plus the lags of each thread's first
//!   events of a level in the batch, whose predecessor is in an earlier batch.
//! - General-purpose compression is not used: the columns are already entropy-coded (as in
//!   [`crate::samples`], where zstd and lz4 made blocks 0–5 % larger).
//!
//! Measured (`cargo bench -p loupe-store --bench timeline`): a packet loop of 4 threads
//! (`loop_start`/`loop_end` rate 9, `rx`/`tx` rate 7, `process` rate 5 per packet, packet
//! counts as arguments, TSC-converted times and lags; ~330k events/s) takes **2.39 bytes per
//! event** stored, dictionary and metadata included, in 5-second batches (2.40 in 1-second
//! batches; a slower loop of ~850 events/s, whose time deltas are longer, 3.06); random 64-bit
//! values in all four arguments (the worst case) take 34.0 (the ring: 48). Ingest: ~2.1 M
//! events/s, each batch flushed. Over a day of the slower loop (73 M events, 17,280 batches):
//! `timeline_stats` takes 1.46 s for the day and 70 ms for an hour (summing histograms), the
//! first page of 1,000 events ~1.2–1.6 ms for either, and paging through an hour 0.5 M events/s
//! (2.1 M/s on a store of one hour: sled's cache). A page decodes the batches around it whole,
//! so pages of a few events over big batches cost a batch decode each (use pages of ≥ 1,000).
//!
//! # Atomicity, retention, dictionary sweep
//! A batch's `E` and `e` records, its source (if new) and the `y` totals are one sled batch;
//! the deletion of a batch is another. Retention treats a timeline batch like a sample batch:
//! by age, every batch that started before the cutoff goes; by bytes, the oldest of runs,
//! sample batches and timeline batches goes until everything (timeline dictionary included)
//! fits the cap. Sources outlive their batches; when the batches deleted since the last sweep
//! reach a third of those left, the writer deletes the sources no `E` record names (reading
//! only the metadata records). Ids are never reused.
//!
//! # Hostile bytes
//! Every decoder bounds what it allocates before it allocates: a batch holds at most
//! [`codec::MAX_BATCH_EVENTS`] events, a source at most [`codec::MAX_EVENT_DEFS`] definitions
//! of names up to [`codec::MAX_NAME`] bytes, every column at most `encoding::bits::MAX_COLUMN` values and
//! never more than its stream could hold; a corrupt record is [`crate::StoreError::Corrupt`]
//! naming the batch. `fuzz/fuzz_targets/timeline_batch.rs` fuzzes them.
//!
//! # Where things are
//! - `write`: [`Store::put_timeline`] but for retention (the store's `put` runs it); `query`:
//!   the three readers;
//! - `records`: batches by key, deletes, totals, the source dictionary and its sweep;
//! - `codec`: records ↔ bytes; `verify`: the timeline part of [`Store::verify`];
//! - [`model`]: the public types.

// Public (but hidden) only so the fuzz targets reach the decoders the store uses.
#[doc(hidden)]
pub mod codec;
pub mod model;
mod query;
pub(crate) mod records;
pub(crate) mod verify;
mod write;

#[cfg(doc)]
use crate::Store;
