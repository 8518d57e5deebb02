//! What a sled error means, and closing a handle after the disk filled up.
//!
//! *Why a module of its own:* sled reports every failure as one `sled::Error`, yet callers need
//! to tell three situations apart — the disk is full (free space, then reopen), another process
//! holds the store (talk to the running agent), anything else — and sled's only word for some of
//! them is an OS error code or a message. [`classify`] is the one place that reads them.
//!
//! # Disk full
//! The store refuses a write with [`StoreError::NoSpace`] while its filesystem has less than
//! [`FREE_FLOOR`] (4 MiB) free, before sled sees it: the handle stays whole, reads everything,
//! and writes again once space is freed. *Why:* when a write of sled's own meets a full disk,
//! sled may poison the handle — every later call fails, and closing it waits for a segment
//! that never becomes stable, even after space is freed, so its file lock stays held until the
//! process exits (with 64 KiB segments the disk-full test met that every time).
//!
//! Should another process fill the disk between the check and sled's write, the rest of this
//! section still holds. A failed write leaves every earlier run intact, but sled then refuses
//! further work on that handle, and needs about one free segment to open (64 KiB for a store
//! created now, 512 KiB before: see `open::SEGMENT_SIZE`): free space, then reopen. Closing
//! such a handle is bounded: sled flushes when its last handle drops, and after a write failed
//! with ENOSPC that flush can wait forever for a segment that never becomes stable, so the
//! `Drop` of [`Inner`] gives it two seconds on a helper thread (see there); so does an open
//! that got as far as its first write and failed there. Until such a handle has closed, an
//! open of its store in this process is told the disk is full (not that the store is in use).

use std::io;
use std::mem::ManuallyDrop;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
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

/// Free bytes below which the store refuses writes (see the module docs): room for sled's
/// own writes past the record — a leaf rewritten whole as a file, a new log segment.
pub const FREE_FLOOR: u64 = 4 << 20;

/// Bytes an unprivileged writer may still use on the filesystem holding `dir`.
fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `path` is a NUL-terminated string and `st` points to writable memory of the
    // struct's size; statvfs writes it whole when it returns 0, and only then is it read.
    if unsafe { libc::statvfs(path.as_ptr(), st.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: initialized by the successful call above.
    let st = unsafe { st.assume_init() };
    Some(st.f_bavail.saturating_mul(st.f_frsize))
}

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

    /// Refuses a write, with [`StoreError::NoSpace`], while the store's filesystem has less than
    /// [`FREE_FLOOR`] bytes free: see the module docs. A filesystem that cannot say passes.
    pub(crate) fn ensure_room(&self, op: &str) -> Result<(), StoreError> {
        match free_bytes(&self.path) {
            Some(free) if free < FREE_FLOOR => Err(StoreError::NoSpace {
                path: self.path.clone(),
                op: format!("{op}: {free} bytes free, the store keeps {FREE_FLOOR} free"),
                source: sled::Error::Io(io::Error::from_raw_os_error(ENOSPC)),
            }),
            _ => Ok(()),
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
        close_within_two_seconds(&self.path, (runs, db));
    }
}

/// Stores of this process whose handles are still closing after their disk filled up: an open
/// of one meets its file lock, and is told the disk is full, not that another process holds
/// the store.
static CLOSING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn closing() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    CLOSING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Drops the sled handles of the store at `path` after its disk filled up: on a helper thread,
/// waited for at most two seconds (see `Drop for Inner`). The handles close, and let go of the
/// file lock, once sled can write again; until then [`still_closing`] says so.
pub(crate) fn close_within_two_seconds<T: Send + 'static>(path: &Path, handles: T) {
    closing().push(path.to_path_buf());
    let path = path.to_path_buf();
    let (done, closed) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        drop(handles);
        let mut c = closing();
        if let Some(i) = c.iter().position(|p| *p == path) {
            c.swap_remove(i);
        }
        drop(c);
        let _ = done.send(());
    });
    let _ = closed.recv_timeout(std::time::Duration::from_secs(2));
}

/// A handle of the store at `path` is closing after its disk filled up (and holds its lock).
pub(crate) fn still_closing(path: &Path) -> bool {
    closing().iter().any(|p| p == path)
}
