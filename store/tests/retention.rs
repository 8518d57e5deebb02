//! Retention by age and by bytes, oldest first, with consistent totals.

mod common;

use std::time::Duration;

use common::*;
use loupe_store::{Retention, RetentionReport, RunMeta, Store, StoreError, TimeRange};

fn starts(store: &Store) -> Vec<u64> {
    store.runs(TimeRange::ALL, None, None).unwrap().iter().map(|m| m.start_unix_ns).collect()
}

fn assert_totals_consistent(store: &Store) {
    let listed = store.runs(TimeRange::ALL, None, None).unwrap();
    let stats = store.stats().unwrap();
    assert_eq!(stats.runs, listed.len() as u64);
    assert_eq!(stats.stored_bytes, listed.iter().map(|m| m.stored_bytes).sum::<u64>());
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}

#[test]
fn retention_by_age_deletes_runs_older_than_max_age() {
    let dir = tempfile::tempdir().unwrap();
    let retention = Retention { max_age: Duration::from_secs(3600), max_bytes: u64::MAX };
    let store = open_store(dir.path(), retention);
    let min = 60 * SEC;
    let metas: Vec<RunMeta> =
        (0..6).map(|i| store.put_run(idle_run(T0 + i * 10 * min, 1000, 100, 2), T0).unwrap()).collect();
    // Cutoff = now - 1h = T0 + 25 min: runs at 0, 10, 20 min go; 30, 40, 50 stay.
    let report = store.enforce_retention(T0 + 85 * min).unwrap();
    assert_eq!(
        report,
        RetentionReport {
            deleted_runs: 3,
            freed_bytes: metas[..3].iter().map(|m| m.stored_bytes).sum(),
            ..Default::default()
        }
    );
    assert_eq!(starts(&store), vec![T0 + 30 * min, T0 + 40 * min, T0 + 50 * min]);
    assert_eq!(store.run(metas[0].id).unwrap(), None);
    assert_totals_consistent(&store);
    // Exactly at the cutoff is kept (older *than* max_age goes).
    let report = store.enforce_retention(T0 + 90 * min).unwrap();
    assert_eq!(report.deleted_runs, 0);
    let report = store.enforce_retention(T0 + 90 * min + 1).unwrap();
    assert_eq!(report.deleted_runs, 1);
    assert_totals_consistent(&store);
}

#[test]
fn put_applies_retention_but_keeps_the_new_run() {
    let dir = tempfile::tempdir().unwrap();
    let retention = Retention { max_age: Duration::from_secs(60), max_bytes: u64::MAX };
    let store = open_store(dir.path(), retention);
    store.put_run(idle_run(T0, 1000, 100, 1), T0).unwrap();
    // Written long after: the first run expires during this put.
    let late = store.put_run(idle_run(T0 + 3600 * SEC, 1000, 100, 1), T0 + 3600 * SEC).unwrap();
    assert_eq!(starts(&store), vec![T0 + 3600 * SEC]);
    // A run already older than max_age when written (a late import) is kept by its own put.
    let old = store.put_run(idle_run(T0 + 10 * SEC, 1000, 100, 1), T0 + 3600 * SEC).unwrap();
    assert!(store.run(old.id).unwrap().is_some());
    assert_totals_consistent(&store);
    // ... and goes at the next enforcement.
    store.enforce_retention(T0 + 3600 * SEC).unwrap();
    assert_eq!(store.run(old.id).unwrap(), None);
    assert!(store.run(late.id).unwrap().is_some());
}

#[test]
fn retention_by_bytes_deletes_oldest_first() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = rng(11);
    let probe = bursty_run(&mut r, 0, 1000, 500, 2, 0.3);
    // Measure one run, then cap at about three of them.
    let one = {
        let d = tempfile::tempdir().unwrap();
        open_store(d.path(), Retention::default()).put_run(probe, 0).unwrap().stored_bytes
    };
    let cap = one * 3 + one / 2;
    let store = open_store(dir.path(), Retention { max_age: Duration::from_secs(1 << 40), max_bytes: cap });
    // Start times deliberately not in insertion order.
    let order = [5u64, 1, 4, 2, 8, 7, 3, 6];
    for (n, &i) in order.iter().enumerate() {
        let run = bursty_run(&mut r, T0 + i * SEC, 1000, 500, 2, 0.3);
        let meta = store.put_run(run, T0).unwrap();
        assert!(store.run(meta.id).unwrap().is_some(), "put {n} deleted its own run");
        let stats = store.stats().unwrap();
        assert!(stats.stored_bytes <= cap, "after put {n}: {} > {cap}", stats.stored_bytes);
        assert_totals_consistent(&store);
    }
    // Each put keeps the newest-started runs that fit, plus itself: the survivors are the
    // latest starts among what was present, so the oldest start times are gone.
    let left = starts(&store);
    assert!(left.len() >= 2 && left.len() <= 4, "{left:?}");
    assert!(left.windows(2).all(|w| w[0] < w[1]));
    assert!(left.contains(&(T0 + 6 * SEC)), "the last run written must survive: {left:?}");
    assert!(!left.contains(&(T0 + SEC)) && !left.contains(&(T0 + 2 * SEC)), "{left:?}");

    // Tightening the cap through enforce_retention deletes oldest first.
    drop(store);
    let store = open_store(dir.path(), Retention { max_age: Duration::from_secs(1 << 40), max_bytes: one + one / 2 });
    let before = store.runs(TimeRange::ALL, None, None).unwrap();
    let report = store.enforce_retention(T0).unwrap();
    let after = store.runs(TimeRange::ALL, None, None).unwrap();
    assert_eq!(after.as_slice(), &before[before.len() - 1..]);
    assert_eq!(report.deleted_runs as usize, before.len() - 1);
    assert_eq!(report.freed_bytes, before[..before.len() - 1].iter().map(|m| m.stored_bytes).sum::<u64>());
    assert_totals_consistent(&store);
}

#[test]
fn run_larger_than_cap_is_refused_and_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), Retention { max_age: Duration::from_secs(3600), max_bytes: 2_000 });
    let small = store.put_run(idle_run(T0, 1000, 100, 1), T0).unwrap();
    let big = random_run(&mut rng(12), T0 + SEC, 2000, &[0, 1]);
    match store.put_run(big, T0) {
        Err(StoreError::TooLarge { bytes, max_bytes }) => {
            assert!(bytes > 2_000);
            assert_eq!(max_bytes, 2_000);
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    // The earlier run was not evicted to make room, and nothing of the big run exists.
    assert_eq!(store.runs(TimeRange::ALL, None, None).unwrap(), vec![small]);
    assert_totals_consistent(&store);
}
