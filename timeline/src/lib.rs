//! Loupe's application timeline: a levelled, rate-sampled event log that programs write in
//! nanoseconds into shared memory, and the reader with which the agent tails it.
//!
//! *Why:* Snabb's timeline showed that a flight recorder for events a few hundred cycles apart
//! is affordable if an event costs about one read of the cycle counter: each event has a
//! *level* (its place in a loop → phase → step hierarchy) and a *rate*; once per iteration
//! ([`breath`]) a random threshold decides which rates are logged, so rare-rate events cost a
//! compare while whole sampled iterations keep their context; an event's *lag* — the time
//! since the previous event of equal or lower level on its thread — turns a stream of stamps
//! into latencies (the lag of `loop_end` is the iteration's).
//!
//! * Writer ([`writer`]; C ABI in `include/loupe_timeline.h`): [`define`], [`breath`],
//!   [`log`]. One file per process, one ring per thread, one release store per record.
//! * Reader ([`reader`]): [`reader::discover`], [`reader::Tailer`] — checks hostile files,
//!   counts losses, converts stamps to wall-clock time, computes lags.
//! * Format ([`format`](mod@format)) and `docs/timeline.md`: byte layout, ordering protocol, clocks.
//!
//! ```no_run
//! use loupe_timeline as tl;
//! let start = tl::define("loop_start", 0, 9, &[]).unwrap();
//! let rx = tl::define("rx_batch", 2, 7, &["packets", "bytes"]).unwrap();
//! let end = tl::define("loop_end", 0, 9, &["packets"]).unwrap();
//! for _ in 0..1000 {
//!     tl::breath();
//!     start.log(0, 0, 0, 0);
//!     rx.log(32, 2048, 0, 0); // logged in 1 of 25 iterations
//!     end.log(32, 0, 0, 0);
//! }
//! ```
//!
//! Measured (`cargo bench -p loupe-timeline`, 2-core AMD EPYC VM): a logged event 12.9–14.1 ns
//! against 11.5 ns for a bare `rdtsc` and 33–54 ns for `tracing` with a minimal subscriber
//! doing the same work; a skipped one 0.7–1.0 ns; 48 bytes per event in the ring; a reader
//! tailing every 20–50 ms slows the writer by less than this machine's noise (a few %).
//! Details in `docs/timeline.md`.

pub mod clock;
pub mod ffi;
pub mod format;
pub mod reader;
pub mod writer;

pub use writer::{DefineError, Event, breath, define, file_path, log, make_dir, now, sync_clock, timeline_dir};
