//! Retention deletes old sample batches (whole), counts their bytes, and sweeps the dictionary.

mod common;

use std::time::Duration;

use common::samples::*;
use common::*;
use loupe_store::{ProfileQuery, Retention, StackSample, Store, TimeRange};

fn assert_consistent(store: &Store) {
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    let stats = store.stats().unwrap();
    let ss = store.sample_stats().unwrap();
    let batches = store.sample_batches(TimeRange::ALL).unwrap();
    assert_eq!(ss.batches, batches.len() as u64);
    assert_eq!(ss.samples, batches.iter().map(|b| b.samples).sum::<u64>());
    let batch_bytes = batches.iter().map(|b| b.stored_bytes).sum::<u64>();
    assert_eq!(ss.stored_bytes, batch_bytes + ss.dictionary_bytes + ss.rollup_bytes);
    assert_eq!(stats.total_bytes, stats.stored_bytes + ss.stored_bytes);
    assert_eq!(
        store.profile(&ProfileQuery { include_idle: true, ..ProfileQuery::range(TimeRange::ALL) }).unwrap().samples,
        ss.samples
    );
}

fn batches(seed: u64, n: usize, cpus: u32) -> Vec<Vec<StackSample>> {
    let mut synth = Synth::new(seed, SynthParams::small(cpus), T0);
    (0..n)
        .map(|_| {
            let mut b = Vec::new();
            synth.next_batch(100, &mut b);
            b
        })
        .collect()
}

#[test]
fn retention_by_age_deletes_whole_old_batches() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), Retention { max_age: Duration::from_secs(60), max_bytes: u64::MAX });
    let metas: Vec<_> = batches(1, 6, 4).iter().map(|b| store.put_samples(b, 1, T0).unwrap()).collect();
    assert_consistent(&store);
    // Cutoff = now - 60 s: batches that started before it go, the rest stay.
    let now = metas[3].start_unix_ns + 60 * SEC;
    let report = store.enforce_retention(now).unwrap();
    assert_eq!(report.deleted_sample_batches, 3);
    assert_eq!(report.deleted_runs, 0);
    assert_eq!(report.freed_bytes, metas[..3].iter().map(|m| m.stored_bytes).sum::<u64>());
    let left: Vec<u64> = store.sample_batches(TimeRange::ALL).unwrap().iter().map(|m| m.id).collect();
    assert_eq!(left, metas[3..].iter().map(|m| m.id).collect::<Vec<_>>());
    let p = store.profile(&ProfileQuery { include_idle: true, ..ProfileQuery::range(TimeRange::ALL) }).unwrap();
    assert_eq!(p.samples, metas[3..].iter().map(|m| m.samples).sum::<u64>());
    assert_eq!(p.lost, 3);
    assert!(
        store.samples(&ProfileQuery::range(TimeRange::new(0, metas[3].start_unix_ns).unwrap())).unwrap().is_empty()
    );
    assert_consistent(&store);
    // A put applies retention too, but keeps its own batch even if it is already old.
    let late = store.put_samples(&batches(2, 1, 2)[0], 0, now + 3600 * SEC).unwrap();
    let left = store.sample_batches(TimeRange::ALL).unwrap();
    assert_eq!(left.iter().map(|m| m.id).collect::<Vec<_>>(), vec![late.id]);
    assert_consistent(&store);
}

#[test]
fn retention_by_bytes_deletes_oldest_of_runs_and_batches() {
    let dir = tempfile::tempdir().unwrap();
    let bs = batches(3, 8, 4);
    // Measure, then cap at about four batches plus the whole dictionary.
    let (one, dict) = {
        let d = tempfile::tempdir().unwrap();
        let s = open_store(d.path(), Retention::default());
        let m = s.put_samples(&bs[0], 0, T0).unwrap();
        bs[1..].iter().for_each(|b| drop(s.put_samples(b, 0, T0).unwrap()));
        (m.stored_bytes, s.sample_stats().unwrap().dictionary_bytes)
    };
    let cap = 4 * one + dict;
    let store = open_store(dir.path(), Retention { max_age: Duration::from_secs(1 << 40), max_bytes: cap });
    // Runs interleaved in time with the batches: run i starts 5 s after batch i.
    let mut runs = Vec::new();
    for (i, b) in bs.iter().enumerate() {
        let m = store.put_samples(b, 0, T0).unwrap();
        runs.push(store.put_run(idle_run(m.start_unix_ns + 5 * SEC, 1000, 100, 1), T0).unwrap());
        let stats = store.stats().unwrap();
        assert!(stats.total_bytes <= cap, "after batch {i}: {} > {cap}", stats.total_bytes);
        assert_consistent(&store);
    }
    // What is left is a suffix in time of runs and batches together.
    let mut times: Vec<(u64, bool)> =
        store.sample_batches(TimeRange::ALL).unwrap().iter().map(|m| (m.start_unix_ns, true)).collect();
    times.extend(store.runs(TimeRange::ALL, None, None).unwrap().iter().map(|m| (m.start_unix_ns, false)));
    times.sort();
    assert!(times.len() >= 3);
    let oldest_left = times[0].0;
    let deleted_runs = runs.iter().filter(|r| r.start_unix_ns < oldest_left).count();
    assert!(deleted_runs > 0);
    assert_eq!(store.runs(TimeRange::ALL, None, None).unwrap().len(), runs.len() - deleted_runs);
    assert!(times.iter().any(|t| t.1) && times.iter().any(|t| !t.1));
    assert_consistent(&store);
}

#[test]
fn dictionary_is_swept_once_its_batches_are_gone() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), Retention { max_age: Duration::from_secs(3600), max_bytes: u64::MAX });
    // Old batches from one host mix, new ones from a completely different one.
    let old = batches(4, 3, 4);
    let mut new_synth = Synth::new(5, SynthParams { frames: 200, ..SynthParams::small(4) }, T0 + DAY);
    for b in &old {
        store.put_samples(b, 0, T0).unwrap();
    }
    let old_dict = store.sample_stats().unwrap();
    let mut nb = Vec::new();
    new_synth.next_batch(100, &mut nb);
    for s in &mut nb {
        for f in &mut s.frames {
            f.function = format!("{}-v2", f.function).into(); // different frames from the old ones
        }
    }
    let new_meta = store.put_samples(&nb, 0, T0 + DAY).unwrap(); // the old batches expire here
    let stats = store.sample_stats().unwrap();
    assert_eq!(stats.batches, 1);
    let distinct: std::collections::HashSet<_> = nb.iter().map(|s| &s.frames).collect();
    assert_eq!(stats.stacks, distinct.len() as u64, "old stacks swept (had {})", old_dict.stacks);
    assert_eq!(stats.stored_bytes, new_meta.stored_bytes + stats.dictionary_bytes);
    assert_consistent(&store);
    // The survivors still read back exactly, before and after reopening.
    let mut want: Vec<StackSample> = as_stored(&nb).collect();
    sort_samples(&mut want);
    let all = ProfileQuery { include_idle: true, ..ProfileQuery::range(TimeRange::ALL) };
    let mut got = store.samples(&all).unwrap();
    sort_samples(&mut got);
    assert_eq!(got, want);
    drop(store);
    let store = open_store(dir.path(), Retention { max_age: Duration::from_secs(3600), max_bytes: u64::MAX });
    let mut got = store.samples(&all).unwrap();
    sort_samples(&mut got);
    assert_eq!(got, want);
    // Writing the old stacks again gives them new ids (never reused) and stays consistent.
    let again = store.put_samples(&old[0], 0, T0 + DAY).unwrap();
    assert!(again.id > new_meta.id);
    assert_eq!(store.sample_stats().unwrap().batches, 2);
    assert_eq!(store.sweep_sample_dictionary().unwrap(), 0);
    assert_consistent(&store);
}
