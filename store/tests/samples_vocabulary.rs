//! Per-process stack vocabularies: a batch table names each stack by its place among the
//! stacks its process used before (`d v` records, table format 3). The names are stored with
//! the first batch that needs them, read back after reopening, swept with their batches, and
//! a missing one fails the batches that use it, clearly, and nothing else.

mod common;

use std::collections::HashSet;
use std::time::Duration;

use common::samples::*;
use common::*;
use loupe_store::{Frame, ProfileQuery, Retention, StackSample, Store, StoreError, TimeRange, keys};

fn retention() -> Retention {
    Retention { max_age: Duration::from_secs(3600), max_bytes: u64::MAX }
}

fn all() -> ProfileQuery {
    ProfileQuery { include_idle: true, ..ProfileQuery::range(TimeRange::ALL) }
}

/// The distinct `(pid, stack)` of some samples: the names their vocabularies must hold.
fn names<'a>(batches: impl IntoIterator<Item = &'a Vec<StackSample>>) -> HashSet<(u32, &'a [Frame])> {
    batches.into_iter().flatten().map(|s| (s.pid, s.frames.as_slice())).collect()
}

fn stored_samples(store: &Store) -> Vec<StackSample> {
    let mut got = store.samples(&all()).unwrap();
    sort_samples(&mut got);
    got
}

fn assert_sound(store: &Store) {
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}

/// The store holds exactly `want` (as stored) and verifies.
fn assert_holds(store: &Store, mut want: Vec<StackSample>) {
    sort_samples(&mut want);
    assert_eq!(stored_samples(store), want);
    assert_sound(store);
}

/// Process `pid` on `cpu` using the stack `[name, main]` of each name, one a second from `from`.
fn uses(pid: u32, comm: &str, cpu: u32, from: u64, names: &[&str]) -> Vec<StackSample> {
    let f = |n: &str| Frame::user(n, "app");
    let at = |i: usize| from + i as u64 * SEC;
    names.iter().enumerate().map(|(i, n)| sample(at(i), cpu, pid, comm, vec![f(n), f("main")])).collect()
}

#[test]
fn every_process_names_each_of_its_stacks_once_across_batches_and_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let mut synth = Synth::new(21, SynthParams::small(4), T0);
    let batches: Vec<Vec<StackSample>> = (0..4)
        .map(|_| {
            let mut b = Vec::new();
            synth.next_batch(100, &mut b);
            b
        })
        .collect();
    let store = open_store(dir.path(), retention());
    for b in &batches[..3] {
        store.put_samples(b, 0, T0).unwrap();
    }
    let stats = store.sample_stats().unwrap();
    assert_eq!(stats.vocabulary, names(&batches[..3]).len() as u64, "{stats:?}");
    // Processes share stacks (idle ones, library ones) but each names them on its own.
    assert!(stats.vocabulary > stats.stacks, "{stats:?}");
    let mut want: Vec<StackSample> = batches[..3].iter().flat_map(|b| as_stored(b)).collect();
    assert_holds(&store, want.clone());
    drop(store);
    // Reopened, the names come from disk, and a new batch extends them.
    let store = open_store(dir.path(), retention());
    assert_holds(&store, want.clone());
    store.put_samples(&batches[3], 0, T0).unwrap();
    assert_eq!(store.sample_stats().unwrap().vocabulary, names(&batches).len() as u64);
    want.extend(as_stored(&batches[3]));
    assert_holds(&store, want);
}

#[test]
fn names_are_swept_with_their_batches_and_given_again() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), retention());
    // Process 7 uses stacks a, b, c in an old batch; process 8 only a.
    let old = [uses(7, "seven", 0, T0, &["a", "b", "c"]), uses(8, "eight", 1, T0 + 5 * SEC, &["a"])].concat();
    store.put_samples(&old, 0, T0).unwrap();
    assert_eq!(store.sample_stats().unwrap().vocabulary, 4);
    // A day later process 7 uses c and d: the old batch expires, the sweep keeps 7's name
    // for c only, and d gets a name of its own.
    let new = uses(7, "seven", 0, T0 + DAY, &["c", "d"]);
    store.put_samples(&new, 0, T0 + DAY).unwrap();
    let stats = store.sample_stats().unwrap();
    assert_eq!((stats.batches, stats.vocabulary), (1, 2), "{stats:?}");
    assert_sound(&store);
    drop(store);
    // After reopening, process 7 takes up a, b and c again, and 8 comes back with a.
    let store = open_store(dir.path(), retention());
    let again =
        [uses(7, "seven", 1, T0 + DAY + 10 * SEC, &["a", "b", "c"]), uses(8, "eight", 0, T0 + DAY + 20 * SEC, &["a"])]
            .concat();
    store.put_samples(&again, 0, T0 + DAY).unwrap();
    assert_eq!(store.sample_stats().unwrap().vocabulary, 5);
    assert_holds(&store, as_stored(&new).chain(as_stored(&again)).collect());
}

#[test]
fn a_missing_name_fails_the_batches_that_use_it_and_no_other() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), retention());
    let mut synth = Synth::new(22, SynthParams::small(2), T0);
    let mut first = Vec::new();
    synth.next_batch(100, &mut first);
    store.put_samples(&first, 0, T0).unwrap();
    // A later batch with a process of its own, whose one stack is named 0.
    let later = T0 + 60 * SEC;
    let lone = vec![sample(later, 0, 424_242, "lone", vec![Frame::user("only", "lone")])];
    store.put_samples(&lone, 0, later).unwrap();
    let early = ProfileQuery { include_idle: true, ..ProfileQuery::range(TimeRange::new(0, later).unwrap()) };
    let before = normalized(store.profile(&early).unwrap());
    drop(store);
    with_tree(dir.path(), |tree| {
        assert!(tree.remove(keys::vocab_key(424_242, 0)).unwrap().is_some());
    });
    let store = open_store(dir.path(), retention());
    assert_eq!(normalized(store.profile(&early).unwrap()), before, "the first batch does not need the name");
    match store.profile(&all()) {
        Err(StoreError::Corrupt { record, detail, .. }) => {
            assert!(record.contains("table"), "{record}");
            assert!(detail.contains("process 424242 has no stack 0"), "{detail}");
        }
        other => panic!("a table naming a missing stack profiled as {:?}", other.map(|p| p.samples)),
    }
    let report = store.verify().unwrap();
    assert!(report.problems.iter().any(|p| p.contains("process 424242 has no stack 0")), "{:?}", report.problems);
}

/// A name record that is not one (a value that is no stack id, a stack past the counter, a
/// process naming one stack twice) is refused when the dictionary loads, naming what is wrong.
#[test]
fn a_corrupt_name_is_refused_when_the_dictionary_loads() {
    type Damage = fn(&sled::Tree);
    let cases: [(&str, Damage, &str); 4] = [
        ("not a stack id", |t| drop(t.insert(keys::vocab_key(7, 0), &[0xc1][..]).unwrap()), "vocabulary entry 7/0"),
        (
            "a stack past the counter",
            |t| drop(t.insert(keys::vocab_key(7, 2), &[0xcd, 1, 0][..]).unwrap()),
            "stack id 256",
        ),
        ("a name past the counter", |t| drop(t.insert(keys::vocab_key(7, 3), &[2][..]).unwrap()), "as 3, not below"),
        ("a stack twice", |t| drop(t.insert(keys::vocab_key(7, 2), &[1][..]).unwrap()), "names stack 1 twice"),
    ];
    for (what, damage, says) in cases {
        let dir = tempfile::tempdir().unwrap();
        let store = open_store(dir.path(), retention());
        // Stacks 0 and 1 of process 7 (its names 0 and 1), stack 2 of process 8.
        let s = [uses(7, "seven", 0, T0, &["a", "b"]), uses(8, "eight", 0, T0 + 2 * SEC, &["z"])].concat();
        store.put_samples(&s, 0, T0).unwrap();
        drop(store);
        with_tree(dir.path(), damage);
        let store = open_store(dir.path(), retention());
        match store.profile(&all()) {
            Err(StoreError::Corrupt { detail, .. }) => assert!(detail.contains(says), "{what}: {detail}"),
            other => panic!("{what}: profiled as {:?}", other.map(|p| p.samples)),
        }
    }
}
