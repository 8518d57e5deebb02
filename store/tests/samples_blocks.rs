//! Where a batch's per-CPU blocks live: in the batch's table record (`h`), one record a batch
//! for all its CPUs. Batches written before, with one `b` record a CPU, still read, verify and
//! delete beside new ones; a batch with blocks in both places is reported.

mod common;

use std::time::Duration;

use common::samples::*;
use common::*;
use loupe_store::keys::{self, SampleTotals};
use loupe_store::samples::codec;
use loupe_store::{ProfileQuery, Retention, StackSample, Store, TimeRange};

fn retention() -> Retention {
    Retention { max_age: Duration::from_secs(365 * 86_400), max_bytes: u64::MAX }
}

struct Fixture {
    dir: tempfile::TempDir,
    all: Vec<StackSample>,
    /// (batch start, lost) of every batch written.
    batches: Vec<(u64, u64)>,
}

/// 12 batches of 10 s on 4 CPUs.
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), retention());
    let mut synth = Synth::new(5, SynthParams::small(4), T0);
    let (mut all, mut batches) = (Vec::new(), Vec::new());
    for i in 0..12u64 {
        let mut b = Vec::new();
        synth.next_batch(100, &mut b);
        let meta = store.put_samples(&b, i % 3, T0).unwrap();
        assert_eq!(meta.cpus.len(), 4);
        batches.push((meta.start_unix_ns, i % 3));
        all.extend(as_stored(&b));
    }
    Fixture { dir, all, batches }
}

fn assert_sound(store: &Store) {
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}

/// Whole, per CPU, and cut through the middle of a batch: every way a reader takes blocks.
fn queries(f: &Fixture) -> Vec<ProfileQuery> {
    let mid = f.batches[5].0 + 3 * SEC;
    let whole = ProfileQuery { include_idle: true, ..ProfileQuery::range(TimeRange::ALL) };
    let cut = ProfileQuery { include_idle: true, ..ProfileQuery::range(TimeRange::new(mid, u64::MAX).unwrap()) };
    let mut out = vec![whole.clone(), cut.clone()];
    for cpu in 0..4 {
        out.push(ProfileQuery { cpu: Some(cpu), ..whole.clone() });
        out.push(ProfileQuery { cpu: Some(cpu), ..cut.clone() });
    }
    out
}

/// Everything a reader can ask of `f`'s store: profiles, raw samples, pids.
fn assert_reads_all(store: &Store, f: &Fixture) {
    for q in queries(f) {
        assert_profile_matches(store, &f.all, &f.batches, &q);
    }
    let mut got = store.samples(&ProfileQuery { include_idle: true, ..ProfileQuery::range(TimeRange::ALL) }).unwrap();
    sort_samples(&mut got);
    let mut want = f.all.clone();
    sort_samples(&mut want);
    assert_eq!(got, want);
    let pids: std::collections::BTreeSet<u32> = f.all.iter().map(|s| s.pid).collect();
    assert_eq!(store.pids(TimeRange::ALL).unwrap(), pids);
}

fn keys_of(tree: &sled::Tree, kind: u8) -> Vec<sled::IVec> {
    tree.scan_prefix([kind]).keys().map(|k| k.unwrap()).collect()
}

/// Rewrites batch `(start, id)` as batches were written before their blocks moved into their
/// table record: the table alone, a `b` record a CPU, metadata and totals counting the bytes.
/// With `keep_record`, the table record keeps its blocks too (a batch with blocks twice).
fn to_record_a_cpu(tree: &sled::Tree, start: u64, id: u64, keep_record: bool) {
    let (hk, bk) = (keys::batch_key(keys::TABLE, start, id), keys::batch_key(keys::BATCH, start, id));
    let record = tree.get(hk).unwrap().unwrap();
    let codec::RecordPerCpu { table: alone, blocks } = codec::split_batch_record(&record).unwrap();
    let table = if keep_record { record.to_vec() } else { alone };
    let mut others = (hk.len() + table.len()) as u64;
    tree.insert(hk, table).unwrap();
    for (cpu, v) in blocks {
        let k = keys::block_key(start, cpu, id);
        others += (k.len() + v.len()) as u64;
        tree.insert(k, v).unwrap();
    }
    // The metadata counts its own record's bytes too: settle on the size that says itself.
    let mut row = codec::decode_batch(&tree.get(bk).unwrap().unwrap()).unwrap();
    let before = row.stored_bytes;
    let mut bytes = others;
    let value = loop {
        row.stored_bytes = bytes;
        let v = codec::encode_batch(&row);
        let size = others + (bk.len() + v.len()) as u64;
        if size == bytes {
            break v;
        }
        bytes = size;
    };
    tree.insert(bk, value).unwrap();
    let mut t = SampleTotals::decode(&tree.get(keys::SAMPLE_TOTALS).unwrap().unwrap()).unwrap();
    t.batch_bytes = t.batch_bytes - before + bytes;
    tree.insert(keys::SAMPLE_TOTALS, t.encode()).unwrap();
}

/// The batches' `(start, id)`, in time order, read with sled.
fn batch_ids(tree: &sled::Tree) -> Vec<(u64, u64)> {
    keys_of(tree, keys::BATCH).iter().map(|k| keys::parse_batch_key(k).unwrap()).collect()
}

#[test]
fn a_batch_keeps_its_blocks_in_its_table_record() {
    let f = fixture();
    let store = open_store(f.dir.path(), retention());
    assert_reads_all(&store, &f);
    assert_sound(&store);
    let metas = store.sample_batches(TimeRange::ALL).unwrap();
    drop(store);
    with_tree(f.dir.path(), |tree| {
        assert!(keys_of(tree, keys::BLOCK).is_empty(), "no record a CPU");
        for m in &metas {
            let record = tree.get(keys::batch_key(keys::TABLE, m.start_unix_ns, m.id)).unwrap().unwrap();
            let dir = codec::decode_block_dir(&record).unwrap().expect("the blocks are in the table record");
            assert_eq!(dir.cpus().collect::<Vec<_>>(), m.cpus, "batch {}", m.id);
            // Two records a batch: its metadata and its table with the blocks.
            let keys = 2 * 17;
            assert_eq!(
                m.stored_bytes,
                (record.len() + keys) as u64
                    + tree.get(keys::batch_key(keys::BATCH, m.start_unix_ns, m.id)).unwrap().unwrap().len() as u64
            );
        }
    });
}

#[test]
fn batches_with_a_record_a_cpu_still_read_verify_and_delete() {
    let f = fixture();
    with_tree(f.dir.path(), |tree| {
        for (i, (start, id)) in batch_ids(tree).into_iter().enumerate() {
            if i % 2 == 0 {
                to_record_a_cpu(tree, start, id, false);
            }
        }
        assert_eq!(keys_of(tree, keys::BLOCK).len(), 6 * 4);
    });
    let store = open_store(f.dir.path(), retention());
    assert_reads_all(&store, &f);
    assert_sound(&store);
    // Retention deletes both kinds whole: nothing of theirs is left.
    let now = f.batches[11].0 + 365 * 86_400 * SEC + SEC;
    let report = store.enforce_retention(now).unwrap();
    assert_eq!(report.deleted_sample_batches, 12);
    assert_sound(&store);
    drop(store);
    with_tree(f.dir.path(), |tree| {
        for kind in [keys::BLOCK, keys::TABLE, keys::BATCH] {
            assert!(keys_of(tree, kind).is_empty(), "records of kind {} left", kind as char);
        }
    });
}

#[test]
fn a_batch_with_blocks_in_both_places_fails_verify() {
    let f = fixture();
    let (start, id) = with_tree_get(&f, |tree| batch_ids(tree)[3]);
    with_tree(f.dir.path(), |tree| to_record_a_cpu(tree, start, id, true));
    let store = open_store(f.dir.path(), retention());
    let report = store.verify().unwrap();
    let both = format!("sample batch {id}: blocks in its record and in records of their own");
    assert_eq!(report.problems, vec![both]);
}

fn with_tree_get<T>(f: &Fixture, get: impl FnOnce(&sled::Tree) -> T) -> T {
    let mut out = None;
    with_tree(f.dir.path(), |tree| out = Some(get(tree)));
    out.unwrap()
}

/// A batch whose block directory does not decode: profiles that read only tables still
/// answer, in full; whatever needs its blocks (a CPU filter, raw samples, verify) gets an error
/// naming the batch's blocks, not a wrong answer.
#[test]
fn a_corrupt_block_directory_fails_only_what_needs_the_blocks() {
    let f = fixture();
    let (start, id) = with_tree_get(&f, |tree| batch_ids(tree)[5]);
    with_tree(f.dir.path(), |tree| {
        let hk = keys::batch_key(keys::TABLE, start, id);
        let mut record = tree.get(hk).unwrap().unwrap().to_vec();
        // The record is the table's record (an array of 5) with the blocks as a sixth element,
        // `[count, units, directory, payloads, shared codes]`: say 3 blocks where there are 4.
        let alone = codec::split_batch_record(&record).unwrap().table;
        assert_eq!((record[0], alone[0]), (0x96, 0x95));
        assert_eq!(record[1..alone.len()], alone[1..]);
        assert_eq!(record[alone.len()..alone.len() + 2], [0x95, 4]);
        record[alone.len() + 1] = 3;
        tree.insert(hk, record).unwrap();
    });
    let store = open_store(f.dir.path(), retention());
    let whole = ProfileQuery { include_idle: true, ..ProfileQuery::range(TimeRange::ALL) };
    assert_profile_matches(&store, &f.all, &f.batches, &whole);
    let names_blocks = |r: Result<loupe_store::Profile, loupe_store::StoreError>| match r {
        Err(loupe_store::StoreError::Corrupt { record, .. }) => {
            assert_eq!(record, format!("sample batch {id} blocks"))
        }
        other => panic!("a batch with a corrupt block directory read as {:?}", other.map(|p| p.samples)),
    };
    names_blocks(store.profile(&ProfileQuery { cpu: Some(0), ..whole.clone() }));
    assert!(store.samples(&whole).is_err());
    let report = store.verify().unwrap();
    assert!(report.problems.iter().any(|p| p.contains(&format!("sample batch {id} blocks"))), "{:?}", report.problems);
}
