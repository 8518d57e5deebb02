//! Writing and reading runs back: exact roundtrips, validation, reopen, schema version.

mod common;

use common::*;
use loupe_store::{Counter, CpuColumns, Retention, RunId, RunSource, Store, StoreError, TimeRange};

fn open(dir: &std::path::Path) -> Store {
    open_store(dir, Retention::default())
}

#[test]
fn roundtrip_random_columns_with_and_without_conn_counts() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut r = rng(1);
    let plain = random_run(&mut r, T0, 2000, &[0, 1, 7, 300]);
    let counted = with_counts(random_run(&mut r, T0 + SEC, 500, &[2]), &mut r);
    assert!(plain.per_cpu[0].in_conns.iter().any(|v| v >> 127 == 1));

    let m1 = store.put_run(plain.clone(), T0).unwrap();
    let m2 = store.put_run(counted.clone(), T0).unwrap();
    assert_ne!(m1.id, m2.id);

    for (meta, new) in [(m1, plain), (m2, counted)] {
        let got = store.run(meta.id).unwrap().expect("run present");
        assert_eq!(got.meta, meta);
        assert_eq!(got.per_cpu, new.per_cpu);
        assert_eq!(got.conn_counts, new.conn_counts);
        assert_eq!(got.meta.iface, new.iface);
        assert_eq!(got.meta.host, new.host);
        assert_eq!(got.meta.rack, new.rack);
        assert_eq!(got.meta.start_unix_ns, new.start_unix_ns);
        assert_eq!(got.meta.interval_ns, new.interval_ns);
        assert_eq!(got.meta.samples, new.samples);
        assert_eq!(got.meta.local_prefixes, new.local_prefixes);
        assert_eq!(got.meta.source, new.source);
        let cpus: Vec<u32> = new.per_cpu.iter().map(|c| c.cpu).collect();
        assert_eq!(got.meta.cpus, cpus);
        assert_eq!(store.run_meta(meta.id).unwrap(), Some(meta));
    }
    assert!(store.verify().unwrap().is_ok());
}

#[test]
fn roundtrip_bursty_run_and_edge_values() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut run = bursty_run(&mut rng(2), T0, 100_000, 2000, 2, 0.3);
    // Values at the edges of the encodings: last slot, first slot, max values.
    let last = 1999;
    run.per_cpu[0].counter_mut(Counter::OutCrossRegionBytes)[last] = u64::MAX;
    run.per_cpu[0].counter_mut(Counter::InBytes)[0] = 1;
    run.per_cpu[1].in_conns[last] = u128::MAX;
    run.per_cpu[1].out_conns[0] = 1 << 127;
    run.rack = None;
    run.source = RunSource::Imported { format: "pcap".into() };
    let meta = store.put_run(run.clone(), T0).unwrap();
    let got = store.run(meta.id).unwrap().unwrap();
    assert_eq!(got.per_cpu, run.per_cpu);
    assert_eq!(got.meta.rack, None);
    assert_eq!(got.meta.source, run.source);
    assert_eq!(got.conn_counts, None);
}

#[test]
fn cpus_come_back_sorted() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut run = random_run(&mut rng(3), T0, 10, &[5, 1, 3]);
    let meta = store.put_run(run.clone(), T0).unwrap();
    assert_eq!(meta.cpus, vec![1, 3, 5]);
    run.per_cpu.sort_by_key(|c| c.cpu);
    assert_eq!(store.run(meta.id).unwrap().unwrap().per_cpu, run.per_cpu);
}

#[test]
fn idle_run_is_small() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let meta = store.put_run(idle_run(T0, 100_000, 2000, 2), T0).unwrap();
    assert!(meta.stored_bytes < 600, "idle 2000x2 run takes {} bytes", meta.stored_bytes);
    let bursty = store.put_run(bursty_run(&mut rng(4), T0 + SEC, 100_000, 2000, 2, 0.3), T0).unwrap();
    assert!(bursty.stored_bytes < 40_000, "bursty 2000x2 run takes {} bytes", bursty.stored_bytes);
}

#[test]
fn invalid_runs_are_rejected_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    store.put_run(idle_run(T0, 1000, 10, 2), T0).unwrap();
    let before = store.stats().unwrap();

    let good = idle_run(T0 + SEC, 1000, 10, 2);
    let mut cases: Vec<(loupe_store::NewRun, &str)> = Vec::new();
    let mut r = good.clone();
    r.per_cpu[1].counter_mut(Counter::InRetxBytes).pop();
    cases.push((r, "cpu 1 column in_retx_bytes has 9 entries"));
    let mut r = good.clone();
    r.per_cpu[0].out_conns.push(0);
    cases.push((r, "cpu 0 column out_conns has 11 entries"));
    let mut r = good.clone();
    r.per_cpu[1].cpu = 0;
    cases.push((r, "cpu 0 appears twice"));
    let mut r = good.clone();
    r.samples = 0;
    r.per_cpu = vec![CpuColumns::zeroed(0, 0)];
    cases.push((r, "samples is 0"));
    let mut r = good.clone();
    r.interval_ns = 0;
    cases.push((r, "interval_ns is 0"));
    let mut r = good.clone();
    r.per_cpu.clear();
    cases.push((r, "no per-CPU columns"));
    let mut r = with_counts(good.clone(), &mut rng(5));
    r.conn_counts.as_mut().unwrap().in_conns.truncate(3);
    cases.push((r, "conn_counts in_conns has 3 entries"));

    for (run, want) in cases {
        match store.put_run(run, T0) {
            Err(StoreError::InvalidRun(msg)) => {
                assert!(msg.contains(want), "message {msg:?} lacks {want:?}")
            }
            other => panic!("expected InvalidRun({want}), got {other:?}"),
        }
    }
    let after = store.stats().unwrap();
    assert_eq!((after.runs, after.stored_bytes), (before.runs, before.stored_bytes));
    assert_eq!(store.runs(TimeRange::ALL, None, None).unwrap().len(), 1);
    assert!(store.verify().unwrap().is_ok());
}

#[test]
fn data_survives_drop_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = rng(6);
    let runs: Vec<_> = (0..5).map(|i| bursty_run(&mut r, T0 + i * SEC, 1_000_000, 2000, 4, 0.3)).collect();
    let metas: Vec<_> = {
        let store = open(dir.path());
        runs.iter().map(|run| store.put_run(run.clone(), T0).unwrap()).collect()
    };
    let store = open(dir.path());
    assert_eq!(store.runs(TimeRange::ALL, None, None).unwrap(), metas);
    for (meta, run) in metas.iter().zip(&runs) {
        assert_eq!(store.run(meta.id).unwrap().unwrap().per_cpu, run.per_cpu);
    }
    let stats = store.stats().unwrap();
    assert_eq!(stats.runs, 5);
    assert_eq!(stats.stored_bytes, metas.iter().map(|m| m.stored_bytes).sum::<u64>());
    // New ids never collide with old ones.
    let newer = store.put_run(idle_run(T0, 1, 1, 1), T0).unwrap();
    assert!(metas.iter().all(|m| m.id != newer.id));
}

#[test]
fn delete_run_removes_everything_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut r = rng(7);
    let a = store.put_run(with_counts(random_run(&mut r, T0, 100, &[0, 1]), &mut r), T0).unwrap();
    let b = store.put_run(random_run(&mut r, T0 + 1, 100, &[0]), T0).unwrap();
    assert!(store.delete_run(a.id).unwrap());
    assert!(!store.delete_run(a.id).unwrap());
    assert!(!store.delete_run(RunId(987_654_321)).unwrap());
    assert_eq!(store.run(a.id).unwrap(), None);
    assert_eq!(store.run_meta(a.id).unwrap(), None);
    assert_eq!(store.runs(TimeRange::ALL, None, None).unwrap(), vec![b.clone()]);
    let stats = store.stats().unwrap();
    assert_eq!((stats.runs, stats.stored_bytes), (1, b.stored_bytes));
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}

#[test]
fn unknown_schema_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    drop(open(dir.path()));
    {
        let db = open_sled(dir.path());
        let meta = db.open_tree("meta").unwrap();
        meta.insert("schema_version", &99u32.to_be_bytes()).unwrap();
        db.flush().unwrap();
    }
    let err = try_open_store(dir.path(), Retention::default()).unwrap_err();
    assert!(matches!(err, StoreError::UnknownSchema { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("schema version 99"), "{msg}");
    assert!(msg.contains(&dir.path().display().to_string()), "{msg}");
}

#[test]
fn model_helpers() {
    assert_eq!(RunId(42).to_string(), "42");
    assert_eq!("42".parse::<RunId>().unwrap(), RunId(42));
    assert!("x".parse::<RunId>().is_err());
    let names: Vec<_> = Counter::ALL.iter().map(|c| c.name()).collect();
    assert_eq!(
        names,
        [
            "in_bytes",
            "out_bytes",
            "in_packets",
            "out_packets",
            "in_ce_bytes",
            "in_retx_bytes",
            "out_retx_bytes",
            "in_cross_region_bytes",
            "out_cross_region_bytes"
        ]
    );
    for (i, c) in Counter::ALL.iter().enumerate() {
        assert_eq!(c.index(), i);
        assert_eq!(Counter::from_name(c.name()), Some(*c));
    }
    let r = Retention::default();
    assert_eq!(r.max_age.as_secs(), 7 * 86_400);
    assert_eq!(r.max_bytes, 10 * 1024 * 1024 * 1024);
    assert!(matches!(TimeRange::new(2, 1), Err(StoreError::BadRange { .. })));
    assert!(TimeRange::new(1, 1).is_ok());
    let t = TimeRange::new(1, 3).unwrap();
    assert!(t.contains(1) && t.contains(2) && !t.contains(3) && !t.contains(0));
}
