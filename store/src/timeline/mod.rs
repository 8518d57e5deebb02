//! Programs' timeline events (`loupe-timeline`): stored beside runs and stack samples, keyed by
//! time, under the same retention.
//!
//! The agent tails each program's ring file and hands over *batches* — one program's events of
//! the last few seconds — with [`Store::put_timeline`]; [`Store::timeline_events`] pages
//! through events in time order, [`Store::timeline_stats`] gives per-event counts and lag
//! percentiles, [`Store::timeline_sources`] the programs seen. A program can log hundreds of
//! thousands of events a second, so the layout is built around **bytes per event** (goal ≤ 8,
//! against 48 in the ring) and **stats over a day without decoding its events**:
//!
//! - a batch holds one source (pid, comm, event definitions, named once by a dictionary id),
//!   its events as bit-packed columns grouped by thread, with lags recomputed from the times;
//! - its metadata, a record apart, holds each event id's count and lag histogram, so a day's
//!   stats sum histograms and only the batches a range cuts are decoded.
//!
//! The layout, why it has this shape and what it measured: `docs/timeline.md`, "How the agent
//! stores events" (with atomicity, retention, the dictionary sweep and the decoders' bounds).
//!
//! # Atomicity
//! A batch's records, its source (if new) and the totals are one sled batch; a deletion is
//! another. Ids are never reused. Every decoder bounds what it allocates before it allocates;
//! a corrupt record is [`crate::StoreError::Corrupt`] naming the batch.
//!
//! # Where things are
//! `write`, `query` (the three readers), `records` (and the sources), `codec`, `verify`, [`model`].

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
