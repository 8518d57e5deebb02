//! Probe sessions (`loupe probe`): what uprobes on named functions of running processes
//! measured — per function its call count and latency histogram, and optionally one record
//! per sampled call with its parent — stored whole when the session ends, beside runs,
//! samples and timelines, under the same retention.
//!
//! [`Store::put_probe_session`] stores one, [`Store::probe_sessions`] lists them by time,
//! [`Store::probe_session`] reads one back whole, [`Store::delete_probe_session`] deletes one.
//! A session is written once and read rarely (someone opens it), but may carry up to
//! [`model::MAX_SESSION_CALLS`] (1 M) call records, so the layout is built around **bytes per
//! call** and **listing without touching calls**.
//!
//! # Layout
//! In the `runs` tree, so a session's records and the totals land in one atomic sled batch
//! (keys in [`crate::keys`]):
//!
//! ```text
//! P ++ start:u64 ++ id:u64               → metadata: end, PIDs, binary, sampling, notes, how
//!                                          it ended, function names, call counts, bytes, and
//!                                          the functions' details with histograms (a nested
//!                                          blob, decoded only when the session is read)
//! p ++ start:u64 ++ id:u64 ++ chunk:u32  → ≤ 65,536 calls (varint stream, see `codec`)
//! j ++ id:u64                            → start (lookup by id)
//! q                                      → probe totals: sessions, calls, bytes, id counter
//! ```
//!
//! Why this shape:
//!
//! - **Keyed by start like runs**, so listing a range is a range scan over the small `P`
//!   records and retention's "oldest" is the first `P` key; `j` finds a session by id (what
//!   the CLI and the API hand around) without a scan, and its chunks are one prefix scan.
//! - **Metadata apart from the calls**, and function details apart from the names inside it:
//!   a listing decodes neither calls nor histograms (up to 64 × 1,024 buckets).
//! - **Calls in chunks** of 65,536 (the last one shorter), so no value grows to the
//!   megabytes a whole session's calls take (sled reads and writes a value whole) and a
//!   decoder's allocation is bounded per record. Parents are global
//!   indexes, so a parent may sit in an earlier chunk; everything else in a chunk is coded
//!   against the chunk's own previous call, so a chunk decodes on its own.
//! - **A varint stream against the previous call**: calls arrive sorted by thread, then
//!   entry time, so the thread and CPU are almost always "same as before" (one bit each in a
//!   head byte that also carries the function index when < 15), the depth is predicted from
//!   the parent (one more bit), the entry is a small delta from the previous entry (a nested
//!   call starts shortly after its parent), the exit is a duration, and the parent is a
//!   distance back (1–3 for `handle → parse, lookup, forward`). Any order still round-trips
//!   (signed, wrapping deltas), it just costs more. Entropy-coded bit columns as in
//!   [`crate::timeline`] would likely take less (not measured): a session is stored once and
//!   holds at most 1 M calls, well under the goal of 12 bytes a call, so the simpler byte
//!   stream is used.
//!
//! Measured (`cargo bench -p loupe-store --bench probes`): a packet loop on 4 threads
//! (`handle → parse, lookup, forward`, `forward → retransmit` 1 time in 100, 20–120 ns between
//! probes, 20 µs on average between packets: ~700k calls/s), 1 M calls, takes **5.56 bytes per
//! call** stored, metadata with histograms and index included (5.55 in the call chunks; plain
//! MessagePack of the same calls: 31.9; a `ProbeCall` in memory: 40). The same calls with the
//! threads interleaved take 6.28, every field random 25.0. `put_probe_session` of those 1 M
//! calls takes 32 ms (validated, encoded, written, flushed), `probe_session` 46 ms, listing
//! 100 sessions 0.2 ms.
//!
//! # Atomicity, ids, retention
//! A session's `P`, `p`, `j` records and the `q` totals (with the id counter) are one sled
//! batch, flushed before `put_probe_session` returns; a delete is another (a writer killed
//! mid-stream leaves every session whole or absent: `tests/probes_crash.rs`). Ids start at 1
//! and come from the counter in `q`, so they are never reused, even after the newest session
//! was deleted or the store reopened. `stored_bytes` in the metadata counts every record of
//! the session (itself included), and `q` sums them, so [`Store::stats`] and the retention
//! byte cap need no scan. Retention treats a session like a run started at its start: by age,
//! every session that started before the cutoff goes; by bytes, the oldest of runs, sample
//! batches, timeline batches and probe sessions goes first.
//!
//! # Hostile bytes
//! Every decoder bounds what it allocates before it allocates: a chunk's count is at most
//! [`codec::CHUNK_CALLS`] and at most its bytes / 3 (the smallest call), a session has at most
//! [`codec::MAX_CHUNKS`] chunks, the metadata at most [`model::MAX_SESSION_FUNCTIONS`]
//! functions of at most [`model::MAX_BUCKETS`] buckets, [`codec::MAX_PIDS`] PIDs,
//! [`codec::MAX_NOTES`] notes, strings of at most [`codec::MAX_NAME`] bytes (a MessagePack
//! vector preallocates at most serde's cautious 1 MiB, then grows only as elements decode). A corrupt record is
//! [`crate::StoreError::Corrupt`] naming the session; `fuzz/fuzz_targets/probe_session.rs`
//! fuzzes the decoders.
//!
//! # Where things are
//! - `write`: [`Store::put_probe_session`] but for retention (the store's `put` runs it), and
//!   the validation; `query`: listing, reading,
//!   deleting; `cursor`: paged listings and a session's calls a chunk at a time
//!   ([`Store::probe_sessions_page`], [`Store::probe_session_parts`]), for readers that must
//!   not hold a whole session;
//! - `records`: the records by key (list, read, delete), the totals;
//! - `codec`: records ↔ bytes; `verify`: the probe part of [`Store::verify`];
//! - [`model`]: the public types.

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
