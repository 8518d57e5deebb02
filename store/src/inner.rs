//! What every clone of a [`Store`] shares, and the primitives every writer and reader uses.
//!
//! *Why here:* the locking discipline of the store lives in a handful of small functions —
//! take the writer mutex, apply a sled batch under the visibility lock, read the running totals
//! — and every module (runs, samples, retention, verify) builds on them. Keeping them apart
//! from any one kind of record keeps that discipline in one place:
//!
//! - **Writers** (put, delete, retention, dictionary sweep) are serialized by `writer`, because
//!   each reads the running totals, updates them and writes them back in its batch (sled
//!   already allows only one process per store).
//! - **Batches are applied under `visibility` held exclusively**, and multi-record readers hold
//!   it shared, so a reader never sees half of a run or of a sample batch (sled batches are
//!   crash-atomic, but concurrent readers could otherwise see part of one).
//! - Lock order: `writer`, then `visibility`, then `dict`.

use std::mem::ManuallyDrop;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard};

use crate::keys::{self, Totals};
use crate::samples::dict::Dict;
use crate::{Retention, Store, StoreError};

pub(crate) struct Inner {
    pub(crate) path: PathBuf,
    pub(crate) db: ManuallyDrop<sled::Db>,
    pub(crate) runs: ManuallyDrop<sled::Tree>,
    /// Set once a write failed for lack of space; see the `Drop` impl in [`crate::faults`].
    pub(crate) out_of_space: AtomicBool,
    pub(crate) retention: Retention,
    /// Serializes writers: the running totals are read, updated and written back.
    pub(crate) writer: Mutex<()>,
    /// Held exclusively while a batch is applied and shared by multi-record readers, so a
    /// reader sees a run wholly or not at all (sled batches are crash-atomic, but concurrent
    /// readers could otherwise see part of one).
    pub(crate) visibility: RwLock<()>,
    /// The sample dictionaries, loaded on first use (see [`crate::samples`]). Lock order:
    /// `visibility` before `dict`.
    pub(crate) dict: RwLock<Dict>,
    /// The timeline source dictionary, loaded on first use (see [`crate::timeline`]). Lock
    /// order: `visibility` before `tl_dict`.
    pub(crate) tl_dict: RwLock<crate::timeline::records::TlDict>,
}

impl Inner {
    pub(crate) fn lock_writer(&self) -> MutexGuard<'_, ()> {
        // A panicking writer leaves nothing half-done in sled (batches are atomic), so a
        // poisoned lock is safe to reuse.
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Shared visibility lock: no batch is applied while it is held.
    pub(crate) fn read_lock(&self) -> RwLockReadGuard<'_, ()> {
        self.visibility.read().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn apply(&self, batch: sled::Batch, op: &str) -> Result<(), StoreError> {
        self.apply_then(batch, op, || {})
    }

    /// [`Self::apply`] for a batch that adds data: refused first while the disk is nearly full
    /// (see [`Self::ensure_room`]). Deletions use `apply`, so retention can always free space.
    pub(crate) fn apply_adding(&self, batch: sled::Batch, op: &str) -> Result<(), StoreError> {
        self.apply_adding_then(batch, op, || {})
    }

    /// [`Self::apply_then`] for a batch that adds data (see [`Self::apply_adding`]).
    pub(crate) fn apply_adding_then(
        &self,
        batch: sled::Batch,
        op: &str,
        then: impl FnOnce(),
    ) -> Result<(), StoreError> {
        self.ensure_room(op)?;
        self.apply_then(batch, op, then)
    }

    /// Applies a batch and, only if it was applied, runs `then` before readers can look.
    pub(crate) fn apply_then(&self, batch: sled::Batch, op: &str, then: impl FnOnce()) -> Result<(), StoreError> {
        let _v = self.visibility.write().unwrap_or_else(|e| e.into_inner());
        self.runs.apply_batch(batch).map_err(|e| self.storage(op, e))?;
        then();
        Ok(())
    }

    pub(crate) fn flush(&self, op: &str) -> Result<(), StoreError> {
        self.db.flush().map(drop).map_err(|e| self.storage(op, e))
    }

    /// The run totals (`s` record); zero for a store without runs.
    pub(crate) fn totals(&self) -> Result<Totals, StoreError> {
        match self.runs.get(keys::STATS).map_err(|e| self.storage("read totals", e))? {
            None => Ok(Totals::default()),
            Some(v) => {
                Totals::decode(&v).ok_or_else(|| self.corrupt("totals record".into(), format!("{} bytes", v.len())))
            }
        }
    }
}

impl Store {
    /// Writes everything buffered to disk.
    pub fn flush(&self) -> Result<(), StoreError> {
        self.inner.flush("flush")
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.inner.path)
            .field("retention", &self.inner.retention)
            .finish_non_exhaustive()
    }
}
