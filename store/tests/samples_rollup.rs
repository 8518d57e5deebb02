//! Hour rollups (`samples::rollup`): profiles over whole hours read them and still equal a
//! brute-force count of the samples written; whatever changes an hour's batches (a late batch,
//! retention) keeps them exact; a store without them gets them at open; a corrupt or wrong one
//! is reported, never silently summed; the threads of one process name count as one, and a
//! rollup written thread by thread (before that) still verifies and serves.

mod common;

use std::path::Path;

use common::samples::*;
use common::*;
use loupe_store::keys::{self, SampleTotals};
use loupe_store::samples::codec;
use loupe_store::{ProfileQuery, Retention, StackSample, StoreError, TimeRange};
use rand::Rng;

const HOUR: u64 = 3_600 * SEC;

fn hour_of(t: u64) -> u64 {
    t - t % HOUR
}

struct Fixture {
    dir: tempfile::TempDir,
    all: Vec<StackSample>,
    /// (batch start, lost) of every batch written.
    batches: Vec<(u64, u64)>,
    /// Each batch's samples, in the order written.
    written: Vec<Vec<StackSample>>,
    /// The hour `T0` lies in (T0 is 800 s into it); the data reaches 2,000 s into hour 3.
    h0: u64,
}

fn retention() -> Retention {
    Retention { max_age: std::time::Duration::from_secs(365 * 86_400), max_bytes: u64::MAX }
}

/// 100 batches of 120 s on 2 CPUs from `T0` (3 h 20 min: hours 0–2 complete, hour 3 not),
/// with lost counts on some.
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), retention());
    let mut synth = Synth::new(11, SynthParams::small(2), T0);
    let (mut all, mut batches, mut written) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..100u64 {
        let mut b = Vec::new();
        synth.next_batch(1_200, &mut b);
        let lost = if i % 7 == 0 { i + 1 } else { 0 };
        let meta = store.put_samples(&b, lost, T0).unwrap();
        batches.push((meta.start_unix_ns, lost));
        all.extend(as_stored(&b));
        written.push(b);
    }
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    Fixture { dir, all, batches, written, h0: hour_of(T0) }
}

/// The hours that have a rollup, read with sled itself (the store must be closed).
fn rollup_hours(dir: &Path) -> Vec<u64> {
    let db = open_sled(dir);
    let tree = db.open_tree("runs").unwrap();
    tree.scan_prefix([keys::ROLLUP]).keys().map(|k| keys::parse_rollup_key(&k.unwrap()).unwrap()).collect()
}

#[test]
fn profiles_over_whole_hours_read_rollups_and_match_brute_force() {
    let f = fixture();
    let h0 = f.h0;
    let store = open_store(f.dir.path(), retention());
    let stats = store.sample_stats().unwrap();
    assert!(stats.rollup_bytes > 0 && stats.rollup_bytes < stats.stored_bytes / 4, "{stats:?}");
    drop(store);
    // Hours 0–2 are complete (a later hour has batches); hour 3, the newest, is not.
    assert_eq!(rollup_hours(f.dir.path()), vec![h0, h0 + HOUR, h0 + 2 * HOUR]);

    let store = open_store(f.dir.path(), retention());
    let (min, max) = (f.batches[0].0, f.all.iter().map(|s| s.time_unix_ns).max().unwrap());
    let mut ranges = vec![
        TimeRange::ALL,
        TimeRange::new(min, max + 1).unwrap(),
        TimeRange::new(min, max).unwrap(),
        TimeRange::new(min + 1, max + 1).unwrap(),
        // Exactly hours 1 and 2: hour 1's last batch ends in hour 2, hour 2's in hour 3.
        TimeRange::new(h0 + HOUR, h0 + 3 * HOUR).unwrap(),
        TimeRange::new(h0 + HOUR, h0 + 3 * HOUR + 120 * SEC).unwrap(),
        TimeRange::new(h0, h0 + 4 * HOUR).unwrap(),
        TimeRange::new(h0 + HOUR + 1, u64::MAX).unwrap(),
        TimeRange::new(0, h0 + 2 * HOUR + 60 * SEC).unwrap(),
    ];
    let mut rng = rng(12);
    for _ in 0..12 {
        let a = rng.random_range(min - SEC..max + SEC);
        ranges.push(TimeRange::new(a, a + rng.random_range(HOUR..3 * HOUR)).unwrap());
    }
    let pid = f.all[f.all.len() / 3].pid;
    let comm = f.all[5].comm.clone();
    for range in &ranges {
        for include_idle in [false, true] {
            let base = ProfileQuery { include_idle, ..ProfileQuery::range(*range) };
            for q in [
                base.clone(),
                ProfileQuery { pid: Some(pid), ..base.clone() },
                ProfileQuery { comm: Some(comm.clone()), ..base.clone() },
                ProfileQuery { cpu: Some(1), ..base.clone() },
            ] {
                assert_profile_matches(&store, &f.all, &f.batches, &q);
            }
        }
        let want: std::collections::BTreeSet<u32> =
            f.all.iter().filter(|s| range.contains(s.time_unix_ns)).map(|s| s.pid).collect();
        assert_eq!(store.pids(*range).unwrap(), want, "{range:?}");
    }
}

#[test]
fn hours_inside_a_range_are_read_from_their_rollup_alone() {
    let f = fixture();
    let h1 = f.h0 + HOUR;
    let whole = ProfileQuery { include_idle: true, ..ProfileQuery::range(TimeRange::ALL) };
    let before = normalized(open_store(f.dir.path(), retention()).profile(&whole).unwrap());
    // Take away the tables of hour 1's batches: only its rollup can still count them.
    with_tree(f.dir.path(), |tree| {
        let hour = tree.range(keys::batch_bound(keys::TABLE, h1)..keys::batch_bound(keys::TABLE, h1 + HOUR));
        let gone: Vec<_> = hour.keys().map(|k| k.unwrap()).collect();
        assert!(gone.len() >= 29, "{} tables in hour 1", gone.len());
        gone.into_iter().for_each(|k| drop(tree.remove(k).unwrap()));
    });
    let store = open_store(f.dir.path(), retention());
    assert_eq!(normalized(store.profile(&whole).unwrap()), before);
    let pids: std::collections::BTreeSet<u32> = f.all.iter().map(|s| s.pid).collect();
    assert_eq!(store.pids(TimeRange::ALL).unwrap(), pids);
    // A range that cuts hour 1 (its first batch starts 80 s into it, its second at 200 s)
    // reads its batches, and finds their tables missing.
    let cut = ProfileQuery::range(TimeRange::new(h1 + 100 * SEC, u64::MAX).unwrap());
    match store.profile(&cut) {
        Err(StoreError::Corrupt { record, .. }) => assert!(record.contains("table"), "{record}"),
        other => panic!("a cut hour without tables profiled as {:?}", other.map(|p| p.samples)),
    }
    let report = store.verify().unwrap();
    assert!(report.problems.iter().any(|p| p.contains("no table")), "{:?}", report.problems);
}

#[test]
fn a_late_batch_reseals_its_hour_and_retention_drops_a_cut_hour() {
    let mut f = fixture();
    let (h0, h1) = (f.h0, f.h0 + HOUR);
    let store = open_store(f.dir.path(), retention());
    // A batch of hour 1 written after hour 3's: the rollup it invalidates is written again.
    let mut late = Vec::new();
    Synth::new(13, SynthParams::small(3), h1 + 100 * SEC).next_batch(50, &mut late);
    let meta = store.put_samples(&late, 5, T0).unwrap();
    f.batches.push((meta.start_unix_ns, 5));
    f.all.extend(as_stored(&late));
    f.written.push(late);
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_profile_matches(&store, &f.all, &f.batches, &ProfileQuery::range(TimeRange::ALL));
    drop(store);
    assert_eq!(rollup_hours(f.dir.path()), vec![h0, h1, h1 + HOUR]);

    // Retention by age cuts into hour 1: hour 0 goes whole, hour 1 loses its rollup.
    let rollups_before = open_store(f.dir.path(), retention()).sample_stats().unwrap().rollup_bytes;
    let cutoff = h1 + 1_000 * SEC;
    let max_age = std::time::Duration::from_secs(3_600);
    let store = open_store(f.dir.path(), Retention { max_age, max_bytes: u64::MAX });
    let report = store.enforce_retention(cutoff + HOUR).unwrap();
    // Hour 0's 24 batches, hour 1's 8 before the cutoff and the late one.
    assert_eq!(report.deleted_sample_batches, 33, "{report:?}");
    let verify = store.verify().unwrap();
    assert!(verify.is_ok(), "{:?}", verify.problems);
    // The dictionary sweep keeps the names the hour left names its stacks by: they are its
    // batches', and it goes when they do.
    store.sweep_sample_dictionary().unwrap();
    let stats = store.sample_stats().unwrap();
    assert!(stats.rollup_bytes < rollups_before && stats.rollup_bytes > 0, "{stats:?}");
    // Batches starting before the cutoff are gone, the others whole.
    let (mut kept, mut alive) = (Vec::new(), Vec::new());
    for (&(start, lost), samples) in f.batches.iter().zip(&f.written) {
        if start >= cutoff {
            kept.push((start, lost));
            alive.extend(as_stored(samples));
        }
    }
    assert_eq!(stats.samples, alive.len() as u64);
    for include_idle in [false, true] {
        for range in [TimeRange::ALL, TimeRange::new(h1, h1 + 3 * HOUR).unwrap()] {
            assert_profile_matches(&store, &alive, &kept, &ProfileQuery { include_idle, ..ProfileQuery::range(range) });
        }
    }
    drop(store);
    assert_eq!(rollup_hours(f.dir.path()), vec![h1 + HOUR]);
}

#[test]
fn a_store_without_rollups_gets_them_when_opened() {
    let f = fixture();
    let whole = ProfileQuery::range(TimeRange::ALL);
    let before = normalized(open_store(f.dir.path(), retention()).profile(&whole).unwrap());
    // What a store written before rollups existed looks like: no `H` records, and a totals
    // record without the field.
    with_tree(f.dir.path(), |tree| {
        for k in tree.scan_prefix([keys::ROLLUP]).keys() {
            tree.remove(k.unwrap()).unwrap();
        }
        let mut t = SampleTotals::decode(&tree.get(keys::SAMPLE_TOTALS).unwrap().unwrap()).unwrap();
        t.rollup_bytes = 0;
        tree.insert(keys::SAMPLE_TOTALS, t.encode()).unwrap();
    });
    assert!(rollup_hours(f.dir.path()).is_empty());
    let store = open_store(f.dir.path(), retention());
    assert_eq!(normalized(store.profile(&whole).unwrap()), before);
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    drop(store);
    assert_eq!(rollup_hours(f.dir.path()), vec![f.h0, f.h0 + HOUR, f.h0 + 2 * HOUR]);
}

#[test]
fn a_corrupt_or_wrong_rollup_is_reported() {
    let f = fixture();
    let (h1, h2) = (f.h0 + HOUR, f.h0 + 2 * HOUR);
    let whole = ProfileQuery::range(TimeRange::ALL);
    // Garbage in hour 1's rollup: a clear error naming it, from queries and from verify.
    with_tree(f.dir.path(), |tree| drop(tree.insert(keys::rollup_key(h1), &b"\x95\x01\x02"[..]).unwrap()));
    let store = open_store(f.dir.path(), retention());
    match store.profile(&whole) {
        Err(StoreError::Corrupt { record, .. }) => assert!(record.contains("rollup"), "{record}"),
        other => panic!("a corrupt rollup profiled as {:?}", other.map(|p| p.samples)),
    }
    assert!(store.verify().unwrap().problems.iter().any(|p| p.contains("rollup")));
    drop(store);
    // Hour 2's (well-formed) rollup under hour 1's key: refused, its batches are not hour 1's.
    with_tree(f.dir.path(), |tree| {
        let h2_value = tree.get(keys::rollup_key(h2)).unwrap().unwrap();
        tree.insert(keys::rollup_key(h1), h2_value).unwrap();
    });
    let store = open_store(f.dir.path(), retention());
    assert!(matches!(store.profile(&whole), Err(StoreError::Corrupt { .. })));
    drop(store);
    // A rollup whose counts differ from its batches' (one sample moved between entries):
    // verify says so.
    with_tree(f.dir.path(), |tree| {
        tree.remove(keys::rollup_key(h1)).unwrap();
        let v = tree.get(keys::rollup_key(h2)).unwrap().unwrap();
        let dict = load_dict(tree);
        let (row, mut table) = codec::decode_rollup(&v, &dict).unwrap();
        let i = table.counts.iter().position(|&c| c > 1).unwrap();
        table.counts[i] -= 1;
        let j = (i + 1) % table.counts.len();
        table.counts[j] += 1;
        let name = |e: &codec::Entry| dict.vocab_ids[&(dict.thread(e.thread).unwrap().pid, e.stack)];
        let locals: Vec<u32> = table.entries.iter().map(name).collect();
        tree.insert(keys::rollup_key(h2), codec::encode_rollup(&row, &table, Some(&locals))).unwrap();
    });
    let store = open_store(f.dir.path(), retention());
    let problems = store.verify().unwrap().problems;
    assert!(problems.iter().any(|p| p.contains(&format!("rollup of hour {h2}"))), "{problems:?}");
}

/// The sample dictionary of a closed store, as the store loads it.
fn load_dict(tree: &sled::Tree) -> loupe_store::samples::dict::Dict {
    let totals = SampleTotals::decode(&tree.get(keys::SAMPLE_TOTALS).unwrap().unwrap()).unwrap();
    let mut dict = loupe_store::samples::dict::Dict::default();
    for item in tree.scan_prefix([keys::DICT]) {
        let (k, v) = item.unwrap();
        dict.load(codec::decode_dict_record(&k, &v).unwrap(), &totals).unwrap();
    }
    dict
}

/// A rollup's table has one entry per `(pid, comm, idle, stack)`: no two threads of one name.
fn assert_one_entry_per_process_name(table: &codec::Table, dict: &loupe_store::samples::dict::Dict) {
    let keys: std::collections::BTreeSet<_> = table
        .entries
        .iter()
        .map(|e| (dict.thread(e.thread).map(|t| (t.pid, t.comm)).expect("a known thread"), e.idle, e.stack))
        .collect();
    assert_eq!(keys.len(), table.entries.len());
}

#[test]
fn a_rollup_counts_the_threads_of_one_process_name_as_one_and_a_per_thread_one_still_reads() {
    let f = fixture();
    let h1 = f.h0 + HOUR;
    // Hour 1 has a process whose threads share a name (the synthetic `…-w1` workers).
    let mut threads: std::collections::BTreeMap<(u32, String), std::collections::BTreeSet<u32>> = Default::default();
    for s in f.all.iter().filter(|s| hour_of(s.time_unix_ns) == h1 && !s.idle) {
        threads.entry((s.pid, s.comm.clone())).or_default().insert(s.tid);
    }
    let (pid, comm) = threads.iter().find(|(_, t)| t.len() >= 2).map(|(k, _)| k.clone()).expect("a shared name");

    let (mut per_thread_entries, mut merged_entries) = (0, 0);
    with_tree(f.dir.path(), |tree| {
        let dict = load_dict(tree);
        let v = tree.get(keys::rollup_key(h1)).unwrap().unwrap();
        // Stacks named by their process's vocabulary (format 3): without one it does not decode.
        let (row, merged) = codec::decode_rollup(&v, &dict).unwrap();
        let err = codec::decode_rollup(&v, &codec::NoVocabulary).unwrap_err();
        assert!(err.contains("vocabulary") || err.contains("thread"), "{err}");
        assert_one_entry_per_process_name(&merged, &dict);
        merged_entries = merged.entries.len();
        // The same hour summed thread by thread, stacks by dictionary id (format 2), as rollups
        // were written before.
        let mut sums = std::collections::BTreeMap::new();
        for item in tree.range(keys::batch_bound(keys::TABLE, h1)..keys::batch_bound(keys::TABLE, h1 + HOUR)) {
            let (_, v) = item.unwrap();
            let t = codec::decode_table(&v, &dict).unwrap();
            for (e, &n) in t.entries.iter().zip(&t.counts) {
                *sums.entry(*e).or_insert(0u64) += n;
            }
        }
        let (entries, counts): (Vec<_>, Vec<_>) = sums.into_iter().unzip();
        per_thread_entries = entries.len();
        let old = codec::encode_rollup(&row, &codec::single_partition(entries, counts), None);
        tree.insert(keys::rollup_key(h1), old.clone()).unwrap();
        let mut t = SampleTotals::decode(&tree.get(keys::SAMPLE_TOTALS).unwrap().unwrap()).unwrap();
        t.rollup_bytes = t.rollup_bytes + old.len() as u64 - v.len() as u64;
        tree.insert(keys::SAMPLE_TOTALS, t.encode()).unwrap();
    });
    assert!(merged_entries < per_thread_entries, "{merged_entries} entries merged, {per_thread_entries} per thread");

    // The per-thread rollup verifies and serves whole hours exactly, filters included.
    let store = open_store(f.dir.path(), retention());
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    let hours = TimeRange::new(h1, h1 + 3 * HOUR).unwrap();
    for q in [
        ProfileQuery::range(hours),
        ProfileQuery { pid: Some(pid), ..ProfileQuery::range(hours) },
        ProfileQuery { comm: Some(comm.clone()), ..ProfileQuery::range(hours) },
    ] {
        assert_profile_matches(&store, &f.all, &f.batches, &q);
    }
    // A late batch in hour 1 drops it; the rollup written again is the merged one.
    let mut late = Vec::new();
    Synth::new(13, SynthParams::small(2), h1 + 100 * SEC).next_batch(10, &mut late);
    store.put_samples(&late, 0, T0).unwrap();
    drop(store);
    with_tree(f.dir.path(), |tree| {
        let dict = load_dict(tree);
        let (_, t) = codec::decode_rollup(&tree.get(keys::rollup_key(h1)).unwrap().unwrap(), &dict).unwrap();
        assert_one_entry_per_process_name(&t, &dict);
    });
}
