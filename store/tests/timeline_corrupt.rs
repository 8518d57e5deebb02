//! Corrupt timeline records give `StoreError::Corrupt` naming the batch (or a `verify`
//! problem), never a panic: events, metadata, histograms and sources flipped, truncated,
//! replaced by garbage.

mod common;

use common::timeline::*;
use common::*;
use loupe_store::*;

const MS: u64 = 1_000_000;

fn fill(dir: &std::path::Path) {
    let store = open_store(dir, Retention::default());
    let src = packet_loop_source(7, "pktloop");
    let mut lp = PacketLoop::new(7, 2, T0, 20_000.0);
    let mut evs = Vec::new();
    for i in 1..=3 {
        lp.run_until(T0 + i * 100 * MS, &mut evs);
        store.put_timeline(&src, &evs, 0, T0).unwrap();
        evs.clear();
    }
}

/// Rewrites the first record whose key starts with `kind` through `f`, with the store closed.
fn tamper(dir: &std::path::Path, kind: u8, f: &dyn Fn(&mut Vec<u8>)) {
    let db = open_sled(dir);
    let tree = db.open_tree("runs").unwrap();
    let (k, v) = tree.scan_prefix([kind]).next().unwrap().unwrap();
    let mut v = v.to_vec();
    f(&mut v);
    tree.insert(k, v).unwrap();
    db.flush().unwrap();
}

/// Every reader either succeeds or says `Corrupt`; `verify` reports a problem.
fn check(dir: &std::path::Path, what: &str) -> usize {
    let store = open_store(dir, Retention::default());
    let q = TimelineQuery::range(TimeRange::ALL);
    let cut = TimelineQuery::range(TimeRange::new(T0 + 50 * MS, T0 + 250 * MS).unwrap());
    let mut corrupt = 0;
    let mut seen = |r: Result<(), StoreError>| match r {
        Ok(()) => {}
        Err(StoreError::Corrupt { record, .. }) => {
            assert!(record.contains("timeline"), "{what}: {record}");
            corrupt += 1;
        }
        Err(e) => panic!("{what}: {e}"),
    };
    seen(store.timeline_events(&q, None, 100_000).map(drop));
    seen(store.timeline_stats(&q).map(drop));
    seen(store.timeline_stats(&cut).map(drop));
    seen(store.timeline_sources(TimeRange::ALL).map(drop));
    let v = store.verify().unwrap();
    assert!(!v.is_ok(), "{what}: verify found nothing");
    corrupt
}

#[test]
fn corrupt_records_are_clear_errors() {
    type Damage = Box<dyn Fn(&mut Vec<u8>)>;
    let cases: Vec<(&str, u8, Damage)> = vec![
        ("events truncated", b'e', Box::new(|v| v.truncate(v.len() / 2))),
        ("events garbage", b'e', Box::new(|v| v.iter_mut().for_each(|b| *b = 0xff))),
        (
            "events bit flip",
            b'e',
            Box::new(|v| {
                let i = v.len() - 40;
                v[i] ^= 0x10;
            }),
        ),
        (
            "events count",
            b'e',
            Box::new(|v| {
                v[3] ^= 0x7f;
            }),
        ),
        ("metadata garbage", b'E', Box::new(|v| v.truncate(3))),
        (
            "histograms",
            b'E',
            Box::new(|v| {
                let i = v.len() - 3;
                v[i] ^= 0xff;
            }),
        ),
        ("source garbage", b'n', Box::new(|v| v.truncate(5))),
        (
            "source without definitions",
            b'n',
            Box::new(|v| *v = rmp_serde::to_vec(&(7u32, 1007u64, "pktloop", Vec::<u8>::new())).unwrap()),
        ),
    ];
    for (what, kind, f) in cases {
        let dir = tempfile::tempdir().unwrap();
        fill(dir.path());
        tamper(dir.path(), kind, &*f);
        let n = check(dir.path(), what);
        println!("{what}: {n} of 4 readers said Corrupt");
        // A flipped bit may decode to other valid values (columns carry no redundancy): then
        // only `verify` (checked above) notices, by the histograms that disagree.
        if !matches!(what, "events bit flip" | "histograms") {
            assert!(n > 0, "{what}: no reader noticed");
        }
    }
}

#[test]
fn random_damage_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path());
    let mut rng = rng(5);
    use rand::Rng;
    for round in 0..60 {
        let kind = [b'e', b'E', b'n'][round % 3];
        let (i, bit): (f64, u8) = (rng.random(), rng.random_range(0..8));
        tamper(dir.path(), kind, &move |v: &mut Vec<u8>| {
            let at = ((v.len() as f64) * i) as usize % v.len().max(1);
            if let Some(b) = v.get_mut(at) {
                *b ^= 1 << bit;
            }
        });
        let store = open_store(dir.path(), Retention::default());
        let q = TimelineQuery::range(TimeRange::ALL);
        for r in [store.timeline_events(&q, None, 1000).map(drop), store.timeline_stats(&q).map(drop)] {
            if let Err(e) = r {
                assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
            }
        }
        let _ = store.verify().unwrap();
    }
}
