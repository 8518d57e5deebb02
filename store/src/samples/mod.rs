//! Stack samples: CPU profiling at ~10 Hz per CPU, and waits off the CPU, stored beside the
//! runs, under the same retention.
//!
//! The agent hands over *batches* (about 10 s of samples from every CPU) with
//! [`Store::put_samples`]; [`Store::profile`] sums them into a flame-graph-ready list of
//! stacks, [`Store::samples`] returns them one by one. A day of a 96-CPU host is ~83 M samples,
//! so the layout is built around **bytes per sample** and **the cost of a day-long profile**:
//!
//! - stacks, comms and threads are deduplicated into a dictionary of dense ids, written in the
//!   same atomic sled batch as the first batch that uses them;
//! - each batch stores its histogram (the distinct `(thread, idle, stack)`, with counts), and
//!   each complete hour the sum of its batches' histograms, so a long profile never decodes
//!   single samples; per-CPU blocks beside the table serve CPU filters and cut batches.
//!
//! The layout, why it has this shape and what it measured: `docs/stacks.md`, "How it is
//! stored" (with atomicity, retention and the dictionary sweep); bits per column:
//! `docs/hot-paths.md`.
//!
//! # Reading
//! Readers hold the store's read lock for the whole query, so they never see a batch half
//! written or half deleted; a writer waits for a running query.
//!
//! # Where things are
//! `write`, `query`, `cursor`, `records`, `totals`, `rename`, `rollup`, `dict`, `sweep`,
//! `codec`, `off_cpu`, `verify`, [`model`]; what each holds: `docs/stacks.md`, same section.

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
