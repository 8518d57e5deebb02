//! What a sled error means, and closing a handle after the disk filled up.
//!
//! *Why a module of its own:* sled reports every failure as one `sled::Error`, yet callers need
//! to tell three situations apart — the disk is full (free space, then reopen), another process
//! holds the store (talk to the running agent), anything else — and sled's only word for some of
//! them is an OS error code or a message. [`classify`] is the one place that reads them.
//!
//! # Disk full
//! A failed write leaves every earlier run intact, but sled then refuses further work on that
//! handle, and needs about one free 512 KiB segment to open: free space, then reopen. Closing
//! such a handle is bounded: sled flushes when its last handle drops, and after a write failed
//! with ENOSPC that flush can wait forever for a segment that never becomes stable, so the
//! `Drop` of [`Inner`] gives it two seconds on a helper thread (see there).

use std::io;
use std::mem::ManuallyDrop;
use std::sync::atomic::Ordering;

use crate::{Inner, StoreError};

pub(crate) enum Fault {
    NoSpace,
    Locked,
    Other,
}

pub(crate) fn classify(e: &sled::Error) -> Fault {
    match e {
        sled::Error::Io(io) if io.raw_os_error() == Some(ENOSPC) => Fault::NoSpace,
        sled::Error::Io(io) if io.kind() == io::ErrorKind::StorageFull => Fault::NoSpace,
        // sled's only word for "another process holds the file lock" is this message.
        sled::Error::Io(io) if io.to_string().contains("could not acquire lock") => Fault::Locked,
        _ => Fault::Other,
    }
}

/// ENOSPC on Linux. sled sometimes re-wraps the OS error, keeping only its kind (matched too).
const ENOSPC: i32 = 28;

impl Inner {
    /// The error for a failed sled operation `op`; remembers a full disk for `Drop`.
    pub(crate) fn storage(&self, op: &str, source: sled::Error) -> StoreError {
        let path = self.path.clone();
        let op = op.to_string();
        match classify(&source) {
            Fault::NoSpace => {
                self.out_of_space.store(true, Ordering::Relaxed);
                StoreError::NoSpace { path, op, source }
            }
            Fault::Locked | Fault::Other => StoreError::Storage { path, op, source },
        }
    }

    /// The error for a stored record that does not decode.
    pub(crate) fn corrupt(&self, record: String, detail: String) -> StoreError {
        StoreError::Corrupt { path: self.path.clone(), record, detail }
    }
}

impl Drop for Inner {
    /// sled flushes when its last handle drops, and after a write failed with ENOSPC that flush
    /// can wait forever for a segment that never becomes stable. Everything a `put_run`
    /// returned for is already durable, so such a handle gets two seconds to close on a helper
    /// thread and is otherwise left behind (with its file lock), so the process can still exit.
    fn drop(&mut self) {
        // SAFETY: taken exactly once, here; the fields are never used again.
        let (runs, db) = unsafe { (ManuallyDrop::take(&mut self.runs), ManuallyDrop::take(&mut self.db)) };
        if !self.out_of_space.load(Ordering::Relaxed) {
            drop(runs);
            drop(db);
            return;
        }
        let (done, closed) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            drop(runs);
            drop(db);
            let _ = done.send(());
        });
        let _ = closed.recv_timeout(std::time::Duration::from_secs(2));
    }
}
