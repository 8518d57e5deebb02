//! Listing runs by time, interval and interface; lookups by id; day summaries; concurrency.

mod common;

use common::*;
use loupe_store::{Retention, RunId, Store, StoreError, TimeRange};

fn put(store: &Store, start: u64, interval: u64, iface: &str) -> loupe_store::RunMeta {
    let mut run = idle_run(start, interval, 20, 1);
    run.iface = iface.into();
    store.put_run(run, start).unwrap()
}

fn ids(metas: &[loupe_store::RunMeta]) -> Vec<RunId> {
    metas.iter().map(|m| m.id).collect()
}

#[test]
fn runs_filters_and_orders_by_time() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), Retention::default());
    // Inserted out of time order; two runs share a start time.
    let c = put(&store, T0 + 300, 1_000_000, "eth0");
    let a = put(&store, T0 + 100, 100_000, "eth0");
    let b1 = put(&store, T0 + 200, 100_000, "eth1");
    let b2 = put(&store, T0 + 200, 1_000_000, "eth0");
    let d = put(&store, T0 + 400, 100_000, "eth1");

    let all = store.runs(TimeRange::ALL, None, None).unwrap();
    assert_eq!(ids(&all), vec![a.id, b1.id, b2.id, c.id, d.id]);
    assert_eq!(all[0], a);

    let range = |f, t| TimeRange::new(f, t).unwrap();
    // Half-open: start == from is in, start == to is out.
    assert_eq!(ids(&store.runs(range(T0 + 200, T0 + 300), None, None).unwrap()), vec![b1.id, b2.id]);
    assert_eq!(ids(&store.runs(range(T0 + 201, T0 + 301), None, None).unwrap()), vec![c.id]);
    assert_eq!(ids(&store.runs(range(T0 + 100, T0 + 401), None, None).unwrap()).len(), 5);
    assert!(store.runs(range(T0 + 200, T0 + 200), None, None).unwrap().is_empty());
    assert!(store.runs(range(0, T0), None, None).unwrap().is_empty());

    assert_eq!(ids(&store.runs(TimeRange::ALL, Some(100_000), None).unwrap()), vec![a.id, b1.id, d.id]);
    assert_eq!(ids(&store.runs(TimeRange::ALL, None, Some("eth1")).unwrap()), vec![b1.id, d.id]);
    assert_eq!(ids(&store.runs(TimeRange::ALL, Some(1_000_000), Some("eth0")).unwrap()), vec![b2.id, c.id]);
    assert!(store.runs(TimeRange::ALL, Some(7), None).unwrap().is_empty());
    assert!(store.runs(TimeRange::ALL, None, Some("lo")).unwrap().is_empty());

    let bad = TimeRange::new(5, 4).map(|_| ()).unwrap_err();
    assert!(matches!(bad, StoreError::BadRange { from_unix_ns: 5, to_unix_ns: 4 }));
    let raw = rmp_serde::to_vec_named(&std::collections::BTreeMap::from([("from_unix_ns", 5u64), ("to_unix_ns", 4)]))
        .unwrap();
    assert!(rmp_serde::from_slice::<TimeRange>(&raw).is_err(), "an inverted range cannot be read either");
}

#[test]
fn lookup_by_id() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), Retention::default());
    let a = put(&store, T0 + 5, 1000, "eth0");
    let b = put(&store, T0 + 1, 1000, "eth0");
    assert_eq!(store.run_meta(a.id).unwrap(), Some(a.clone()));
    assert_eq!(store.run(b.id).unwrap().unwrap().meta, b);
    let unknown = RunId(a.id.0.max(b.id.0) + 1000);
    assert_eq!(store.run(unknown).unwrap(), None);
    assert_eq!(store.run_meta(unknown).unwrap(), None);
}

#[test]
fn days_group_by_utc_day_and_interval() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), Retention::default());
    let day0 = T0 - T0 % DAY;
    let m1 = put(&store, day0, 100_000, "eth0");
    let m2 = put(&store, day0 + DAY - 1, 100_000, "eth0");
    let m3 = put(&store, day0 + 3600 * SEC, 10_000_000, "eth0");
    let m4 = put(&store, day0 + DAY, 1_000_000, "eth0");
    let days = store.days().unwrap();
    assert_eq!(days.len(), 2);
    assert_eq!(days[0].day_start_unix_ns, day0);
    assert_eq!(
        days[0].runs_by_interval.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>(),
        vec![(100_000, 2), (10_000_000, 1)]
    );
    assert_eq!(days[0].stored_bytes, m1.stored_bytes + m2.stored_bytes + m3.stored_bytes);
    assert_eq!(days[1].day_start_unix_ns, day0 + DAY);
    assert_eq!(days[1].runs_by_interval.get(&1_000_000), Some(&1));
    assert_eq!(days[1].stored_bytes, m4.stored_bytes);
    // 1970-01-01 is day 0.
    let early = put(&store, DAY + 5, 1, "eth0");
    assert_eq!(store.days().unwrap()[0].day_start_unix_ns, DAY);
    assert!(store.delete_run(early.id).unwrap());
    assert_eq!(store.days().unwrap().len(), 2);
}

/// Readers running while a writer puts and deletes never see part of a run.
#[test]
fn concurrent_readers_see_whole_runs() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), Retention::default());
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let store = store.clone();
        std::thread::spawn(move || {
            let mut r = rng(9);
            for i in 0..150u64 {
                let run = with_counts(bursty_run(&mut r, T0 + i, 1000, 300, 8, 0.3), &mut r);
                let meta = store.put_run(run, T0).unwrap();
                if i % 2 == 0 {
                    assert!(store.delete_run(meta.id).unwrap());
                }
            }
        })
    };
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let store = store.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut checked = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let max = store.runs(TimeRange::ALL, None, None).unwrap().last().map_or(0, |m| m.id.0);
                    // Probe ids around the newest, including ones being deleted right now.
                    for id in max.saturating_sub(3)..=max + 1 {
                        if let Some(run) = store.run(RunId(id)).unwrap() {
                            assert_eq!(run.per_cpu.len(), 8);
                            assert!(run.conn_counts.is_some(), "run {id} lost its conn counts");
                            checked += 1;
                        }
                    }
                }
                checked
            })
        })
        .collect();
    writer.join().unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let checked: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
    assert!(checked > 0);
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_eq!(report.runs, 75);
}

/// Concatenating `runs_page` pages gives exactly `runs`, for every page size and filter,
/// including runs that share a start time on different interfaces.
#[test]
fn runs_page_concatenates_to_runs() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), Retention::default());
    let mut rng = rng(17);
    use rand::Rng;
    for i in 0..40u64 {
        // Several runs per start time (ties broken by id), interleaved interfaces and intervals.
        let start = T0 + (i % 13) * 1000;
        let iface = ["eth0", "eth1", "lo"][rng.random_range(0..3)];
        let interval = [100_000, 1_000_000][rng.random_range(0..2)];
        put(&store, start, interval, iface);
    }
    let range = |f, t| TimeRange::new(f, t).unwrap();
    let ranges = [TimeRange::ALL, range(T0 + 1000, T0 + 9000), range(T0 + 3000, T0 + 3001), range(0, T0)];
    let filters: [(Option<u64>, Option<&str>); 4] =
        [(None, None), (Some(100_000), None), (None, Some("eth1")), (Some(1_000_000), Some("lo"))];
    for r in ranges {
        for (interval, iface) in filters {
            let want = store.runs(r, interval, iface).unwrap();
            for limit in [1, 2, 3, 7, 40, 1000] {
                let mut got = Vec::new();
                let mut after = None;
                loop {
                    let page = store.runs_page(r, interval, iface, after, limit).unwrap();
                    assert!(page.len() <= limit);
                    let Some(last) = page.last() else { break };
                    after = Some(last.pos());
                    got.extend(page);
                }
                assert_eq!(ids(&got), ids(&want), "range {r:?} interval {interval:?} iface {iface:?} limit {limit}");
            }
        }
    }
    // Two runs with one start time on different interfaces: a page boundary between them.
    let all = store.runs(TimeRange::ALL, None, None).unwrap();
    let tie = all.windows(2).position(|w| w[0].start_unix_ns == w[1].start_unix_ns && w[0].iface != w[1].iface);
    let tie = tie.expect("a start time shared by two interfaces");
    let next = store.runs_page(TimeRange::ALL, None, None, Some(all[tie].pos()), 1).unwrap();
    assert_eq!(next, vec![all[tie + 1].clone()]);
    // A cursor whose run was deleted still resumes where that run was.
    assert!(store.delete_run(all[tie].id).unwrap());
    let next = store.runs_page(TimeRange::ALL, None, None, Some(all[tie].pos()), 2).unwrap();
    assert_eq!(ids(&next), ids(&all[tie + 1..tie + 3]));
    // Edges: limit 0, a cursor before the range, at or after its end, a bad range.
    assert!(store.runs_page(TimeRange::ALL, None, None, None, 0).unwrap().is_empty());
    let before = loupe_store::RunPos { start_unix_ns: 0, id: RunId(u64::MAX) };
    let r = range(T0 + 1000, T0 + 2000);
    assert_eq!(store.runs_page(r, None, None, Some(before), 100).unwrap(), store.runs(r, None, None).unwrap());
    let at_end = loupe_store::RunPos { start_unix_ns: T0 + 2000, id: RunId(0) };
    assert!(store.runs_page(r, None, None, Some(at_end), 100).unwrap().is_empty());
    let bad = TimeRange::new(5, 4).map(|_| ()).unwrap_err();
    assert!(matches!(bad, StoreError::BadRange { from_unix_ns: 5, to_unix_ns: 4 }));
    let raw = rmp_serde::to_vec_named(&std::collections::BTreeMap::from([("from_unix_ns", 5u64), ("to_unix_ns", 4)]))
        .unwrap();
    assert!(rmp_serde::from_slice::<TimeRange>(&raw).is_err(), "an inverted range cannot be read either");
}
