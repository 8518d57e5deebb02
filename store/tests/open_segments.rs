//! sled's segment size (`open::SEGMENT_SIZE`): a new store is created with it, and a store
//! created before it, with sled's default, still opens, takes samples, reads and verifies.

mod common;

use common::samples::*;
use common::*;
use loupe_store::{ProfileQuery, Retention, SEGMENT_SIZE, SLED_DEFAULT_SEGMENT, Store, StoreError, TimeRange};

fn retention() -> Retention {
    Retention { max_age: std::time::Duration::from_secs(365 * 86_400), max_bytes: u64::MAX }
}

/// The segment size sled recorded for the database in `dir`.
fn recorded_segment_size(dir: &std::path::Path) -> usize {
    let conf = std::fs::read(dir.join("conf")).unwrap(); // text lines, then a checksum
    let conf = String::from_utf8_lossy(&conf);
    let line = conf.lines().find_map(|l| l.strip_prefix("segment_size: ")).expect("a segment_size line");
    line.trim().parse().unwrap()
}

#[test]
fn new_stores_take_small_segments_and_old_ones_keep_theirs() {
    let new = tempfile::tempdir().unwrap();
    drop(open_store(new.path(), retention()));
    assert_eq!(recorded_segment_size(new.path()), SEGMENT_SIZE);

    // A store as created before: sled's default segment size.
    let old = tempfile::tempdir().unwrap();
    drop(sled::Config::new().path(old.path()).segment_size(SLED_DEFAULT_SEGMENT).open().unwrap());
    assert_ne!(SEGMENT_SIZE, SLED_DEFAULT_SEGMENT);
    let mut synth = Synth::new(5, SynthParams::small(2), T0);
    let (mut all, mut batches) = (Vec::new(), Vec::new());
    for round in 0..2 {
        let store = open_store(old.path(), retention());
        for _ in 0..3 {
            let mut b = Vec::new();
            synth.next_batch(50, &mut b);
            let meta = store.put_samples(&b, round, T0).unwrap();
            batches.push((meta.start_unix_ns, round));
            all.extend(as_stored(&b));
        }
        assert_profile_matches(&store, &all, &batches, &ProfileQuery::range(TimeRange::ALL));
        let report = store.verify().unwrap();
        assert!(report.is_ok(), "{:?}", report.problems);
    }
    assert_eq!(recorded_segment_size(old.path()), SLED_DEFAULT_SEGMENT);
    // Tools open either through the store's own function.
    for dir in [new.path(), old.path()] {
        drop(open_sled(dir));
    }
}

/// A store with sled's default segments that another handle still holds (as one dropped a
/// moment ago does while its background writes finish) is reported locked — what callers wait
/// on — not as a store of the wrong segment size: sled checks the size before it takes the lock.
#[test]
fn an_old_store_still_held_is_locked_not_of_the_wrong_size() {
    let old = tempfile::tempdir().unwrap();
    let held = sled::Config::new().path(old.path()).segment_size(SLED_DEFAULT_SEGMENT).open().unwrap();
    held.flush().unwrap();
    match Store::open(old.path(), retention()) {
        Err(StoreError::Locked { .. }) => {}
        other => panic!("a held old store opened as {:?}", other.map(|_| "a store")),
    }
    let e = loupe_store::sled_db(old.path()).unwrap_err();
    assert!(e.to_string().contains("could not acquire lock"), "{e}");
    drop(held);
    drop(open_store(old.path(), retention()));
}
