//! Opening a store again in the same process.
//!
//! sled releases its directory's file lock only once the background writes of the last
//! dropped handle are done, a few milliseconds after `drop`. A test that closes a store and
//! opens it again (or opens its sled database directly to damage a record) must wait for that,
//! or it fails now and then with `Locked` (CI saw it in `timeline_corrupt`). Both helpers wait up
//! to 10 s and fail on any other error at once.

use std::path::Path;
use std::time::Duration;

use loupe_store::{Retention, Store, StoreError};

const TRIES: usize = 1000;
const PAUSE: Duration = Duration::from_millis(10);

/// Opens the store in `dir`, waiting while a handle dropped a moment ago still holds the lock.
pub fn open_store(dir: &Path, retention: Retention) -> Store {
    try_open_store(dir, retention).unwrap()
}

/// [`open_store`] for a test that expects the open to fail: any error but `Locked` is returned.
pub fn try_open_store(dir: &Path, retention: Retention) -> Result<Store, StoreError> {
    for _ in 0..TRIES {
        match Store::open(dir, retention.clone()) {
            Err(StoreError::Locked { .. }) => std::thread::sleep(PAUSE),
            r => return r,
        }
    }
    panic!("{} stayed locked for 10 s", dir.display());
}

/// Opens the store's sled database itself (to read or damage records), once the store is
/// closed.
pub fn open_sled(dir: &Path) -> sled::Db {
    for _ in 0..TRIES {
        match loupe_store::sled_db(dir) {
            Err(e) if e.to_string().contains("could not acquire lock") => std::thread::sleep(PAUSE),
            r => return r.unwrap(),
        }
    }
    panic!("{} stayed locked for 10 s", dir.display());
}

/// Changes the store's records (its `runs` tree) with sled itself, once the store is closed.
pub fn with_tree(dir: &Path, f: impl FnOnce(&sled::Tree)) {
    let db = open_sled(dir);
    let tree = db.open_tree("runs").unwrap();
    f(&tree);
    db.flush().unwrap();
}
