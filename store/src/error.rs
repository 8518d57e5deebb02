//! The store's one error type.
//!
//! *Why one enum:* callers act on a few cases — [`StoreError::Locked`] (talk to the running
//! agent instead), [`StoreError::NoSpace`] (free space, reopen), [`StoreError::BadRange`] (the
//! caller's mistake) — and print the rest, so every variant names the store's path and the
//! operation that failed, and the sled error that caused it is kept as the source. How a sled
//! error becomes `NoSpace`, `Locked` or `Storage` is decided in `faults`.

use std::io;
use std::path::PathBuf;

/// Everything that can go wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store directory could not be created or is not a directory.
    #[error("cannot create store directory {}: {source}", path.display())]
    CreateDir { path: PathBuf, source: io::Error },
    /// sled could not open the store (permissions, lock held by another process, ...).
    #[error("cannot open store at {}: {source}", path.display())]
    Open { path: PathBuf, source: sled::Error },
    /// Another process (normally a running agent) has the store open.
    #[error("store at {} is in use by another process (a running `loupe agent`?)", path.display())]
    Locked { path: PathBuf },
    /// The disk holding the store is full.
    #[error("no space left on device for store at {} ({op}): {source}", path.display())]
    NoSpace { path: PathBuf, op: String, source: sled::Error },
    /// The store was written with a layout this build does not know.
    #[error(
        "store at {} has schema version {found}, but this build only reads version {supported}",
        path.display()
    )]
    UnknownSchema { path: PathBuf, found: String, supported: u32 },
    /// Any other storage failure.
    #[error("store at {} failed to {op}: {source}", path.display())]
    Storage { path: PathBuf, op: String, source: sled::Error },
    /// A stored record does not decode.
    #[error("store at {}: corrupt {record}: {detail}", path.display())]
    Corrupt { path: PathBuf, record: String, detail: String },
    /// The run given to `put_run` is inconsistent; nothing was written.
    #[error("invalid run: {0}")]
    InvalidRun(String),
    /// A sample batch cannot be stored (e.g. a dictionary ran out of ids); nothing was written.
    #[error("invalid sample batch: {0}")]
    InvalidSamples(String),
    /// A timeline batch cannot be stored (an event naming no definition, a source too large,
    /// too many events in one batch, the dictionary out of ids); nothing was written.
    #[error("invalid timeline batch: {0}")]
    InvalidTimeline(String),
    /// A probe session is inconsistent or over a limit (what is wrong is said: too many
    /// functions, calls or buckets, an index out of range, a parent after its child, an exit
    /// before its entry, a string too long); nothing was written.
    #[error("invalid probe session: {0}; nothing was written")]
    InvalidProbeSession(String),
    /// The run (or sample batch) alone is larger than the retention byte cap; nothing was written.
    #[error("needs {bytes} bytes, more than the store's cap of {max_bytes} bytes; nothing written")]
    TooLarge { bytes: u64, max_bytes: u64 },
    /// A time range whose start is after its end.
    #[error("bad time range: from {from_unix_ns} is after to {to_unix_ns}")]
    BadRange { from_unix_ns: u64, to_unix_ns: u64 },
}
