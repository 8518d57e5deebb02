//! Stack samples: exact round trip, deduplication, odd and bad input.

mod common;

use std::time::Duration;

use common::samples::*;
use common::*;
use loupe_store::{Frame, ProfileQuery, Retention, StackSample, Store, StoreError, TimeRange};

fn all(include_idle: bool) -> ProfileQuery {
    ProfileQuery { include_idle, ..ProfileQuery::range(TimeRange::ALL) }
}

fn assert_sound(store: &Store) {
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    let stats = store.sample_stats().unwrap();
    assert_eq!(report.sample_batches, stats.batches);
    assert_eq!(report.samples, stats.samples);
    assert_eq!(report.sample_bytes + stats.dictionary_bytes + stats.rollup_bytes, stats.stored_bytes);
}

#[test]
fn samples_roundtrip_every_field() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), Retention::default());
    let mut synth = Synth::new(1, SynthParams::small(4), T0);
    let mut written = Vec::new();
    let mut batch = Vec::new();
    for i in 0..3 {
        synth.next_batch(100, &mut batch);
        // Any order: reverse one batch, shuffle-ish another.
        if i == 1 {
            batch.reverse();
        }
        if i == 2 {
            batch.sort_by_key(|s| (s.tid, s.time_unix_ns));
        }
        let meta = store.put_samples(&batch, 0, T0).unwrap();
        assert_eq!(meta.samples, batch.len() as u64);
        assert_eq!(meta.cpus, vec![0, 1, 2, 3]);
        written.extend(as_stored(&batch));
    }
    // Odd samples: unicode, empty stacks, extremes, duplicate times, a CPU far away.
    let t = T0 + 3600 * SEC;
    let odd = vec![
        sample(t, 7, 1234, "ünïcødé-名前", vec![Frame::user("名前::関数<λ>", "libü.so"), Frame::kernel("do_sys_öpen")]),
        sample(t, 7, 1234, "ünïcødé-名前", vec![]),
        sample(t, 7, 0, "swapper/7", vec![Frame::kernel("intel_idle")]),
        StackSample {
            time_unix_ns: t + 1,
            cpu: u32::MAX,
            pid: u32::MAX,
            tid: 0,
            comm: String::new(),
            cgroup_id: u64::MAX,
            idle: true, // idle flag independent of pid
            frames: vec![Frame::user("", ""), Frame::user("libfoo.so+0x1a2b", "libfoo.so")],
        },
        sample(t + 5 * SEC, 7, 1, "init", vec![Frame::kernel("x"); 3]),
    ];
    store.put_samples(&odd, 0, t).unwrap();
    written.extend(as_stored(&odd));

    let mut expect: Vec<_> = written.clone();
    sort_samples(&mut expect);
    let got = store.samples(&all(true)).unwrap();
    assert!(got.windows(2).all(|w| w[0].time_unix_ns <= w[1].time_unix_ns), "not in time order");
    let mut got_sorted = got.clone();
    sort_samples(&mut got_sorted);
    assert_eq!(got_sorted.len(), expect.len());
    for (g, e) in got_sorted.iter().zip(&expect) {
        assert_eq!(g, e);
    }
    // Without idle samples.
    let busy = store.samples(&all(false)).unwrap();
    assert_eq!(busy.len(), written.iter().filter(|s| !s.idle).count());
    assert!(busy.iter().all(|s| !s.idle));
    assert_sound(&store);

    // Reopen: the dictionary comes back from disk.
    drop(store);
    let store = open_store(dir.path(), Retention::default());
    let mut again = store.samples(&all(true)).unwrap();
    sort_samples(&mut again);
    assert_eq!(again, expect);
    // And new batches after reopening reuse the stored dictionary.
    let before = store.sample_stats().unwrap();
    let mut shifted = written[..50].to_vec();
    for s in &mut shifted {
        s.time_unix_ns += 10 * DAY;
    }
    store.put_samples(&shifted, 0, T0).unwrap();
    let after = store.sample_stats().unwrap();
    assert_eq!((after.stacks, after.frames, after.comms), (before.stacks, before.frames, before.comms));
    assert_eq!(after.dictionary_bytes, before.dictionary_bytes);
    assert_sound(&store);
}

#[test]
fn same_stacks_in_many_batches_are_stored_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), Retention::default());
    let mut synth = Synth::new(2, SynthParams::small(8), T0);
    let mut batch = Vec::new();
    synth.next_batch(100, &mut batch);
    let distinct: std::collections::HashSet<&Vec<Frame>> = batch.iter().map(|s| &s.frames).collect();
    let frames: std::collections::HashSet<&Frame> = batch.iter().flat_map(|s| &s.frames).collect();
    let comms: std::collections::HashSet<&String> = batch.iter().map(|s| &s.comm).collect();
    store.put_samples(&batch, 0, T0).unwrap();
    let first = store.sample_stats().unwrap();
    assert_eq!(first.stacks, distinct.len() as u64);
    assert_eq!(first.frames, frames.len() as u64);
    assert_eq!(first.comms, comms.len() as u64);
    let mut batch_bytes = Vec::new();
    for i in 1..20u64 {
        let shifted: Vec<_> = batch
            .iter()
            .map(|s| {
                let mut s = s.clone();
                s.time_unix_ns += i * 10 * SEC;
                s
            })
            .collect();
        batch_bytes.push(store.put_samples(&shifted, 0, T0).unwrap().stored_bytes);
    }
    let last = store.sample_stats().unwrap();
    assert_eq!((last.stacks, last.frames, last.comms), (first.stacks, first.frames, first.comms));
    assert_eq!(last.dictionary_bytes, first.dictionary_bytes);
    assert_eq!(last.batches, 20);
    assert_eq!(last.samples, 20 * batch.len() as u64);
    // A repeated batch costs only its blocks and table: a few bytes per sample.
    let per_sample = batch_bytes[0] as f64 / batch.len() as f64;
    assert!(per_sample < 8.0, "{per_sample} bytes per sample");
    assert_sound(&store);
}

#[test]
fn empty_batches_lost_counts_and_bad_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), Retention::default());
    // Nothing at all: a no-op.
    let meta = store.put_samples(&[], 0, T0).unwrap();
    assert_eq!(meta.id, 0);
    assert_eq!(store.sample_stats().unwrap(), Default::default());
    assert!(store.sample_batches(TimeRange::ALL).unwrap().is_empty());
    // Only lost samples: recorded at `now`.
    let meta = store.put_samples(&[], 7, T0 + 100).unwrap();
    assert!(meta.id > 0);
    assert_eq!((meta.start_unix_ns, meta.samples, meta.lost), (T0 + 100, 0, 7));
    let s = sample(T0 + 5 * SEC, 0, 10, "a", vec![Frame::kernel("k")]);
    let meta2 = store.put_samples(std::slice::from_ref(&s), 3, T0 + 10 * SEC).unwrap();
    assert_eq!(meta2.start_unix_ns, T0 + 5 * SEC);
    let range = |a, b| ProfileQuery::range(TimeRange::new(a, b).unwrap());
    assert_eq!(store.profile(&range(T0, T0 + DAY)).unwrap().lost, 10);
    assert_eq!(store.profile(&range(T0 + 101, T0 + DAY)).unwrap().lost, 3);
    assert_eq!(store.profile(&range(T0, T0 + 100)).unwrap().lost, 0);
    assert_eq!(store.profile(&range(T0, T0 + 101)).unwrap().lost, 7);
    // Half-open at the sample itself.
    assert_eq!(store.profile(&range(T0 + 5 * SEC, T0 + 5 * SEC + 1)).unwrap().samples, 1);
    assert_eq!(store.profile(&range(T0, T0 + 5 * SEC)).unwrap().samples, 0);
    assert_eq!(store.profile(&range(T0 + 5 * SEC, T0 + 5 * SEC)).unwrap(), Default::default());
    assert_eq!(store.sample_batches(TimeRange::ALL).unwrap().len(), 2);
    assert_eq!(store.pids(TimeRange::ALL).unwrap().into_iter().collect::<Vec<_>>(), vec![10]);
    // from > to cannot even be made: not by `new`, not by deserializing.
    let bad = TimeRange::new(5, 4).map(|_| ()).unwrap_err();
    assert!(matches!(bad, StoreError::BadRange { from_unix_ns: 5, to_unix_ns: 4 }));
    let raw = rmp_serde::to_vec_named(&std::collections::BTreeMap::from([("from_unix_ns", 5u64), ("to_unix_ns", 4)]))
        .unwrap();
    assert!(rmp_serde::from_slice::<TimeRange>(&raw).is_err(), "an inverted range cannot be read either");
    assert_sound(&store);
}

#[test]
fn extreme_times_roundtrip() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), Retention::default());
    let f = vec![Frame::kernel("k")];
    let batch = vec![
        sample(u64::MAX - 1, 0, 1, "a", f.clone()),
        sample(0, 0, 1, "a", f.clone()),
        sample(0, 0, 2, "b", f.clone()),
        sample(1 << 63, 1, 1, "a", vec![]),
    ];
    store.put_samples(&batch, 0, 0).unwrap();
    let mut expect: Vec<StackSample> = as_stored(&batch).collect();
    sort_samples(&mut expect);
    let mut got = store.samples(&all(true)).unwrap();
    sort_samples(&mut got);
    assert_eq!(got, expect);
    // A batch spanning all time is found by a query anywhere in it.
    let q = ProfileQuery::range(TimeRange::new(1 << 62, (1 << 63) + 1).unwrap());
    assert_eq!(store.profile(&q).unwrap().samples, 1);
    assert_eq!(store.samples(&q).unwrap().len(), 1);
    assert_sound(&store);
}

#[test]
fn batch_larger_than_cap_is_refused_and_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), Retention { max_age: Duration::from_secs(3600), max_bytes: 3_000 });
    let mut synth = Synth::new(3, SynthParams::small(4), T0);
    let mut batch = Vec::new();
    synth.next_batch(100, &mut batch);
    match store.put_samples(&batch, 0, T0) {
        Err(StoreError::TooLarge { bytes, max_bytes: 3_000 }) => assert!(bytes > 3_000),
        other => panic!("expected TooLarge, got {other:?}"),
    }
    assert_eq!(store.sample_stats().unwrap(), Default::default());
    // The refused batch left no ids in the cache: a small batch afterwards is consistent.
    store.put_samples(&batch[..3], 0, T0).unwrap();
    assert_sound(&store);
    drop(store);
    let store = open_store(dir.path(), Retention { max_age: Duration::from_secs(3600), max_bytes: 3_000 });
    assert_eq!(store.samples(&all(true)).unwrap().len(), 3);
    assert_sound(&store);
}

#[test]
fn stats_and_days_include_samples() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), Retention::default());
    let day0 = T0 - T0 % DAY;
    let run = store.put_run(idle_run(day0 + 10, 1000, 100, 1), T0).unwrap();
    let a = store.put_samples(&[sample(day0 + 20, 0, 5, "a", vec![])], 0, T0).unwrap();
    let b = store
        .put_samples(&[sample(day0 + DAY + 1, 0, 5, "a", vec![]), sample(day0 + DAY + 2, 1, 5, "a", vec![])], 1, T0)
        .unwrap();
    let stats = store.stats().unwrap();
    let ss = store.sample_stats().unwrap();
    assert_eq!((stats.runs, stats.stored_bytes), (1, run.stored_bytes));
    assert_eq!((stats.sample_batches, stats.samples, stats.sample_bytes), (2, 3, ss.stored_bytes));
    // Batch `a`'s hour is complete once `b` is written a day later: it has a rollup.
    assert!(ss.rollup_bytes > 0);
    assert_eq!(ss.stored_bytes, a.stored_bytes + b.stored_bytes + ss.dictionary_bytes + ss.rollup_bytes);
    assert_eq!(stats.total_bytes, run.stored_bytes + ss.stored_bytes);
    let days = store.days().unwrap();
    assert_eq!(days.len(), 2);
    assert_eq!((days[0].stored_bytes, days[0].sample_batches, days[0].samples), (run.stored_bytes, 1, 1));
    assert_eq!(days[0].sample_bytes, a.stored_bytes);
    assert!(days[1].runs_by_interval.is_empty());
    assert_eq!((days[1].sample_batches, days[1].samples, days[1].sample_bytes), (1, 2, b.stored_bytes));
    assert_sound(&store);
}

#[test]
fn sample_times_are_kept_to_the_microsecond() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), Retention::default());
    let f = vec![Frame::kernel("k")];
    let at = |ns: u64, cpu: u32| sample(T0 + ns, cpu, 1, "a", f.clone());
    let meta = store.put_samples(&[at(1_999, 0), at(2_000, 0), at(999, 1), at(5_000_000_001, 1)], 0, T0).unwrap();
    assert_eq!((meta.start_unix_ns, meta.end_unix_ns), (T0, T0 + 5_000_000_000));
    let got: Vec<u64> = store.samples(&all(true)).unwrap().iter().map(|s| s.time_unix_ns - T0).collect();
    assert_eq!(got, [0, 1_000, 2_000, 5_000_000_000]);
    // Ranges select by the stored time: 1,999 ns was stored at 1,000.
    let q = ProfileQuery::range(TimeRange::new(T0 + 1_500, T0 + 2_001).unwrap());
    assert_eq!(store.samples(&q).unwrap().len(), 1);
    assert_sound(&store);
}
