//! Probe sessions (`loupe probe`): what uprobes on named functions of running processes
//! measured — per function its call count and latency histogram, and optionally one record
//! per sampled call with its parent — stored whole when the session ends, beside runs,
//! samples and timelines, under the same retention.
//!
//! [`Store::put_probe_session`] stores one, [`Store::probe_sessions`] lists them by time,
//! [`Store::probe_session`] reads one back whole, [`Store::delete_probe_session`] deletes one.
//! A session is written once and read rarely, but may carry up to
//! [`model::MAX_SESSION_CALLS`] (1 M) call records, so the layout is built around **bytes per
//! call** and **listing without touching calls**: metadata and histograms are one record
//! apart from the calls, and the calls a varint stream coded against the previous call, in
//! chunks of [`codec::CHUNK_CALLS`] that each decode on their own.
//!
//! The layout, why it has this shape and what it measured: `docs/probes.md`, "How it is
//! stored" (with atomicity, ids, retention, the decoders' bounds and what each file holds).
//!
//! # Atomicity
//! A session's records and the totals are one sled batch, flushed before
//! [`Store::put_probe_session`] returns; a delete is another. Ids are never reused. Every
//! decoder bounds what it allocates before it allocates; a corrupt record is
//! [`crate::StoreError::Corrupt`] naming the session.
//!
//! # Where things are
//! `write`, `query`, `cursor` (paged: [`Store::probe_sessions_page`],
//! [`Store::probe_session_parts`]), `records`, `codec`, `verify`, [`model`].

// Public (but hidden) only so the fuzz targets reach the decoders the store uses.
#[doc(hidden)]
pub mod codec;
mod cursor;
pub mod model;
mod query;
pub(crate) mod records;
pub(crate) mod verify;
mod write;

pub use cursor::{ProbeCallChunks, ProbePos};

#[cfg(doc)]
use crate::Store;
