//! Opening a store: the directory, sled's configuration and the schema version.
//!
//! *Why these choices:* sled runs in `LowSpace` mode (a week of runs on every host matters more
//! than write speed), with 64 KiB log segments ([`SEGMENT_SIZE`]), and without its flush timer
//! (every put flushes before it returns, so the timer would only add wakeups). A second tree,
//! `meta`, holds the schema version ([`SCHEMA_VERSION`]); a store written by an unknown
//! version is refused rather than misread.
//! Every failure names the directory, and a full disk or a store held by another process get
//! their own errors (see [`crate::faults`]). After a failed open on a full disk the sled handle
//! is closed on a helper thread with a bound, for the reason given in [`crate::faults`].

use std::io;
use std::mem::ManuallyDrop;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, RwLock};

use crate::faults::{Fault, classify};
use crate::{Inner, Retention, Store, StoreError};

/// sled's log segment size for a new store (sled's default is 512 KiB, [`SLED_DEFAULT_SEGMENT`]).
///
/// *Why 64 KiB:* sled writes a page larger than a quarter of a segment as a file of its own,
/// replaced whole, and keeps smaller ones in its log, whose segments it cleans only once less
/// than half of them is live. With 512 KiB segments a 96-CPU host's batch records (~20 KB)
/// sat in the log among dead versions: the day of the samples benchmark took 1.41–1.50× on
/// disk what the store wrote. With 64 KiB ones they go to blob files and the log keeps small
/// records only: 1.04× (the same 8,640 batch records written into fresh sleds, each flushed:
/// 16 KiB 1.02×, 32 KiB 1.03×, 128 KiB 1.32×, 4 MiB 2.18×). The price is ~0.35 ms more per
/// flushed batch of that size (0.59 against 0.23 ms); reads and memory did not move. With these
/// segments the disk-full test's store poisoned itself whenever sled met the full disk, which
/// is why the store now stops writing before that (`faults::FREE_FLOOR`).
pub const SEGMENT_SIZE: usize = 64 << 10;
/// The segment size of stores created before [`SEGMENT_SIZE`]: sled opens a store only with
/// the size it was created with, so those keep theirs.
pub const SLED_DEFAULT_SEGMENT: usize = 512 << 10;

/// Opens the sled database in `dir` as [`Store::open`] does: what tools and tests that read or
/// damage a store's records directly must use (plain `sled::open` refuses a store with
/// [`SEGMENT_SIZE`] segments). The store must be closed.
pub fn sled_db(dir: &Path) -> sled::Result<sled::Db> {
    let open = |segment_size| {
        sled::Config::new()
            .path(dir)
            .mode(sled::Mode::LowSpace)
            .segment_size(segment_size)
            // Every put flushes before it returns; sled's own timer would only add wakeups.
            .flush_every_ms(None)
            .open()
    };
    match open(SEGMENT_SIZE) {
        // sled refuses another segment size than the store's ("cannot change the io buffer
        // size across restarts"): a store created before SEGMENT_SIZE, with sled's default.
        // sled checks the size before it takes the directory's lock, so the second open's error
        // is the store's real answer (its lock still held by a handle closing a moment ago, an
        // I/O error); only a refusal of that size too leaves the first error standing. Reporting
        // the first one for a held lock made callers that wait for the lock give up at once
        // (a fresh check's `open_segments` test, 1 run in 4).
        Err(first @ sled::Error::Unsupported(_)) => match open(SLED_DEFAULT_SEGMENT) {
            Err(sled::Error::Unsupported(_)) => Err(first),
            other => other,
        },
        db => db,
    }
}

/// Schema version written into the `meta` tree; bump when the layout or encoding changes.
pub const SCHEMA_VERSION: u32 = 1;
const SCHEMA_KEY: &[u8] = b"schema_version";

impl Store {
    /// Opens (creating if needed) the store in `dir`.
    ///
    /// Fails with an error naming `dir` when it cannot be created, is not a directory, cannot
    /// be written, the disk is full, or it holds a store of an unknown schema version.
    pub fn open(dir: &Path, retention: Retention) -> Result<Store, StoreError> {
        let path = dir.to_path_buf();
        if dir.exists() && !dir.is_dir() {
            return Err(StoreError::CreateDir {
                source: io::Error::new(io::ErrorKind::NotADirectory, "it exists and is not a directory"),
                path,
            });
        }
        std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir { path: path.clone(), source })?;
        let open_err = |source: sled::Error| match classify(&source) {
            Fault::NoSpace => StoreError::NoSpace { path: path.clone(), op: "open".into(), source },
            // Our own handle, closing after the disk filled up (see `crate::faults`).
            Fault::Locked if crate::faults::still_closing(&path) => StoreError::NoSpace {
                path: path.clone(),
                op: "open (a handle of this process that met the full disk is still closing)".into(),
                source,
            },
            Fault::Locked => StoreError::Locked { path: path.clone() },
            Fault::Other => StoreError::Open { path: path.clone(), source },
        };
        let db = sled_db(dir).map_err(open_err)?;
        let trees = (|| {
            let runs = db.open_tree("runs").map_err(open_err)?;
            let meta = db.open_tree("meta").map_err(open_err)?;
            match meta.get(SCHEMA_KEY).map_err(open_err)? {
                None => {
                    meta.insert(SCHEMA_KEY, &SCHEMA_VERSION.to_be_bytes()).map_err(open_err)?;
                    db.flush().map_err(open_err)?;
                }
                Some(v) => {
                    let found = <[u8; 4]>::try_from(v.as_ref()).ok().map(u32::from_be_bytes);
                    if found != Some(SCHEMA_VERSION) {
                        return Err(StoreError::UnknownSchema {
                            found: match found {
                                Some(n) => n.to_string(),
                                None => format!("{:?} (unreadable)", v.as_ref()),
                            },
                            path: path.clone(),
                            supported: SCHEMA_VERSION,
                        });
                    }
                }
            }
            Ok(runs)
        })();
        let runs = match trees {
            Ok(runs) => runs,
            Err(e) => {
                if matches!(e, StoreError::NoSpace { .. }) {
                    crate::faults::close_within_two_seconds(&path, db);
                }
                return Err(e);
            }
        };
        let store = Store {
            inner: Arc::new(Inner {
                path,
                db: ManuallyDrop::new(db),
                runs: ManuallyDrop::new(runs),
                retention,
                writer: Mutex::new(()),
                visibility: RwLock::new(()),
                dict: RwLock::new(Default::default()),
                tl_dict: RwLock::new(Default::default()),
                out_of_space: AtomicBool::new(false),
            }),
        };
        // Stores written before the lost-sample total existed get it now (see `samples::totals`).
        store.inner.upgrade_sample_totals()?;
        // Complete hours without a rollup get one (see `samples::rollup`).
        store.inner.seal_unsealed_hours();
        Ok(store)
    }

    /// The directory this store lives in.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The retention policy given at open.
    pub fn retention(&self) -> &Retention {
        &self.inner.retention
    }
}
