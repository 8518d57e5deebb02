//! Probe sessions: a realistic session (100k calls with parents across chunks, histograms)
//! round-trips through a reopen; listing by range and limit; lookup and delete by id; ids never
//! reused; every refusal writes nothing; retention by age and by bytes, oldest first across
//! kinds, with totals equal to a recount; corrupt records are `Corrupt` naming the session,
//! never a panic.

mod common;

use std::time::Duration;

use common::probes::*;
use common::*;
use loupe_store::probes::codec::{self as probe_codec, CHUNK_CALLS};
use loupe_store::*;

const MIN: u64 = 60 * SEC;

fn open(dir: &std::path::Path) -> Store {
    open_store(dir, Retention::default())
}

/// A small session (a few hundred calls) starting at `start`.
fn small(seed: u64, start: u64) -> ProbeSession {
    packet_loop_session(seed, start, 2, 300)
}

/// Stats, listing and verify agree with a recount of the stored sessions.
fn assert_totals_consistent(store: &Store) {
    let listed = store.probe_sessions(TimeRange::ALL, usize::MAX).unwrap();
    let stats = store.stats().unwrap();
    assert_eq!(stats.probe_sessions, listed.len() as u64);
    assert_eq!(stats.probe_bytes, listed.iter().map(|s| s.stored_bytes).sum::<u64>());
    assert_eq!(stats.total_bytes, stats.stored_bytes + stats.sample_bytes + stats.timeline_bytes + stats.probe_bytes);
    let v = store.verify().unwrap();
    assert!(v.is_ok(), "{:?}", v.problems);
    assert_eq!((v.probe_sessions, v.probe_bytes), (stats.probe_sessions, stats.probe_bytes));
    assert_eq!(v.probe_calls, listed.iter().map(|s| s.recorded_calls).sum::<u64>());
}

#[test]
fn realistic_session_roundtrips_through_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = packet_loop_session(1, T0, 4, 100_000);
    session.notes = vec!["sampling raised to 1 in 1 (no change)".into(), "ünïcödé note".into()];
    session.binary = Some("/usr/local/bin/pktloop".into());
    session.calls_lost = 17;
    session.ended = "stopped".into();
    let n = session.calls.len();
    assert!(n >= 100_000 && session.functions.iter().all(|f| f.calls > 0 && !f.buckets.is_empty()));
    // Parents reach back across the chunk boundary, and a call of depth 2 is there.
    assert!(session.calls[CHUNK_CALLS..].iter().any(|c| c.parent.is_some_and(|p| (p as usize) < CHUNK_CALLS)));
    assert!(session.calls.iter().any(|c| c.depth == 2));
    session.id = 12345; // ignored
    let id = {
        let store = open(dir.path());
        let id = store.put_probe_session(session.clone()).unwrap();
        assert_eq!(id, 1);
        session.id = id;
        assert_eq!(store.probe_session(id).unwrap().as_ref(), Some(&session));
        id
    };
    let store = open(dir.path());
    assert_eq!(store.probe_session(id).unwrap(), Some(session.clone()));
    let listed = store.probe_sessions(TimeRange::ALL, 10).unwrap();
    let s = &listed[0];
    assert_eq!((s.id, s.start_unix_ns, s.end_unix_ns), (id, T0, session.end_unix_ns));
    assert_eq!(s.functions, FUNCTIONS.map(String::from).to_vec());
    assert_eq!(s.calls, n as u64);
    assert_eq!(s.recorded_calls, n as u64);
    assert_eq!((s.pids.clone(), s.binary.clone(), s.ended.as_str()), (vec![PID], session.binary.clone(), "stopped"));
    let per_call = s.stored_bytes as f64 / n as f64;
    println!("{n} calls: {} bytes, {per_call:.2} bytes per call", s.stored_bytes);
    assert!(per_call <= 12.0, "{per_call} bytes per call");
    assert_totals_consistent(&store);
    // The same calls unsorted (threads interleaved) round-trip too, only less compactly.
    let mut mixed = interleaved(&session);
    let id2 = store.put_probe_session(mixed.clone()).unwrap();
    mixed.id = id2;
    assert_eq!(store.probe_session(id2).unwrap(), Some(mixed));
    // And a session without calls or functions.
    let mut empty = session_of(T0 + DAY, vec![], &[]);
    empty.with_calls = false;
    empty.pids = vec![];
    empty.binary = Some("/usr/bin/true".into());
    let id3 = store.put_probe_session(empty.clone()).unwrap();
    empty.id = id3;
    assert_eq!(store.probe_session(id3).unwrap(), Some(empty));
    assert_totals_consistent(&store);
}

#[test]
fn odd_sessions_roundtrip() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    for (seed, n) in [(1u64, 1usize), (2, CHUNK_CALLS), (3, CHUNK_CALLS + 1), (4, 3 * CHUNK_CALLS - 1)] {
        let mut s = random_session(seed, T0 + seed * MIN, n);
        let id = store.put_probe_session(s.clone()).unwrap();
        s.id = id;
        assert_eq!(store.probe_session(id).unwrap(), Some(s), "{n} random calls");
    }
    // Extreme values: times near 2^64, the most functions, the most buckets, u32::MAX ids.
    let mut calls = vec![];
    for i in 0..200u32 {
        let entry = u64::MAX - 1_000_000 + u64::from(i) * 13;
        calls.push(ProbeCall {
            function: i % MAX_SESSION_FUNCTIONS as u32,
            pid: u32::MAX - i % 2,
            tid: i % 7,
            cpu: if i % 3 == 0 { u32::MAX } else { 0 },
            entry_unix_ns: entry,
            exit_unix_ns: if i % 5 == 0 { u64::MAX } else { entry },
            depth: if i % 11 == 0 { u32::MAX } else { i % 3 },
            parent: (i > 0).then(|| (i * 7919) % i),
        });
    }
    let names: Vec<String> = (0..MAX_SESSION_FUNCTIONS).map(|i| format!("f{i}")).collect();
    let names: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
    let mut s = session_of(u64::MAX - 2_000_000, calls, &names);
    s.end_unix_ns = u64::MAX - 1;
    s.functions[0].buckets = (0..MAX_BUCKETS as u32).map(|b| (b, u64::from(b) + 1)).collect();
    s.functions[1].buckets = vec![(0, u64::MAX)];
    s.sample_every = u32::MAX;
    let id = store.put_probe_session(s.clone()).unwrap();
    s.id = id;
    assert_eq!(store.probe_session(id).unwrap(), Some(s));
    assert_totals_consistent(&store);
}

#[test]
fn listing_by_range_and_limit_in_time_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    // Stored out of time order: listing follows start time (then id), like runs.
    let minutes = [3u64, 0, 4, 1, 2, 1];
    let ids: Vec<u64> = minutes.iter().map(|&m| store.put_probe_session(small(m, T0 + m * MIN)).unwrap()).collect();
    assert_eq!(ids, vec![1, 2, 3, 4, 5, 6]);
    let all = store.probe_sessions(TimeRange::ALL, usize::MAX).unwrap();
    let order: Vec<(u64, u64)> = all.iter().map(|s| ((s.start_unix_ns - T0) / MIN, s.id)).collect();
    assert_eq!(order, vec![(0, 2), (1, 4), (1, 6), (2, 5), (3, 1), (4, 3)]);
    let range = TimeRange::new(T0 + MIN, T0 + 3 * MIN).unwrap();
    let got: Vec<u64> = store.probe_sessions(range, usize::MAX).unwrap().iter().map(|s| s.id).collect();
    assert_eq!(got, vec![4, 6, 5]);
    let got: Vec<u64> = store.probe_sessions(range, 2).unwrap().iter().map(|s| s.id).collect();
    assert_eq!(got, vec![4, 6]);
    assert!(store.probe_sessions(range, 0).unwrap().is_empty());
    assert!(store.probe_sessions(TimeRange::new(T0 + 10 * MIN, T0 + 20 * MIN).unwrap(), 5).unwrap().is_empty());
    assert!(store.probe_sessions(TimeRange::new(T0, T0).unwrap(), 5).unwrap().is_empty());
    for s in &all {
        let whole = store.probe_session(s.id).unwrap().unwrap();
        assert_eq!(s.recorded_calls, whole.calls.len() as u64);
        assert_eq!(s.calls, whole.functions.iter().map(|f| f.calls).sum::<u64>());
        assert_eq!(s.functions, whole.functions.iter().map(|f| f.name.clone()).collect::<Vec<_>>());
    }
    assert_totals_consistent(&store);
}

#[test]
fn lookup_delete_and_ids_never_reused() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open(dir.path());
        assert_eq!(store.probe_session(1).unwrap(), None);
        assert!(!store.delete_probe_session(1).unwrap());
        for m in 0..3 {
            store.put_probe_session(small(m, T0 + m * MIN)).unwrap();
        }
        // Delete the newest: its id is not handed out again.
        assert!(store.delete_probe_session(3).unwrap());
        assert_eq!(store.probe_session(3).unwrap(), None);
        assert!(!store.delete_probe_session(3).unwrap());
        assert_eq!(store.put_probe_session(small(9, T0)).unwrap(), 4);
        assert!(store.delete_probe_session(4).unwrap());
        assert_eq!(store.probe_session(u64::MAX).unwrap(), None);
        assert_totals_consistent(&store);
    }
    // Nor after a reopen, nor after everything was deleted.
    let store = open(dir.path());
    assert_eq!(store.put_probe_session(small(5, T0)).unwrap(), 5);
    for id in [1, 2, 5] {
        assert!(store.delete_probe_session(id).unwrap(), "{id}");
    }
    assert_eq!(store.stats().unwrap().probe_sessions, 0);
    assert_eq!(store.stats().unwrap().probe_bytes, 0);
    assert_eq!(store.put_probe_session(small(6, T0)).unwrap(), 6);
    assert_eq!(store.probe_session(1).unwrap(), None);
    assert_totals_consistent(&store);
}

#[test]
fn refused_sessions_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    store.put_probe_session(small(1, T0)).unwrap();
    let before = store.stats().unwrap();
    type Break = Box<dyn Fn(&mut ProbeSession)>;
    let long = "x".repeat(4097);
    let cases: Vec<(&str, Break)> = vec![
        ("65 functions", {
            Box::new(|s| {
                let f = s.functions[0].clone();
                s.functions = vec![f; MAX_SESSION_FUNCTIONS + 1];
            })
        }),
        ("more than 1000000", {
            Box::new(|s| {
                let c = ProbeCall { parent: None, ..s.calls[0] };
                s.calls = vec![c; MAX_SESSION_CALLS + 1];
            })
        }),
        ("1025 histogram buckets", Box::new(|s| s.functions[1].buckets = (0..1025).map(|b| (b, 1)).collect())),
        ("not strictly ascending", Box::new(|s| s.functions[1].buckets = vec![(5, 1), (4, 1)])),
        ("not strictly ascending", Box::new(|s| s.functions[1].buckets = vec![(5, 1), (5, 1)])),
        ("past the last bucket", Box::new(|s| s.functions[1].buckets = vec![(MAX_BUCKETS as u32, 1)])),
        ("counts 0", Box::new(|s| s.functions[1].buckets = vec![(3, 0)])),
        ("names function 5, the session has 5", Box::new(|s| s.calls[7].function = 5)),
        ("names call 7 as its parent", Box::new(|s| s.calls[7].parent = Some(7))),
        ("names call 9 as its parent", Box::new(|s| s.calls[7].parent = Some(9))),
        ("exits at", Box::new(|s| s.calls[7].exit_unix_ns = s.calls[7].entry_unix_ns - 1)),
        ("before it starts", Box::new(|s| s.end_unix_ns = s.start_unix_ns - 1)),
        ("name of 4097 bytes", {
            let long = long.clone();
            Box::new(move |s| s.functions[2].name = long.clone())
        }),
        ("symbol of 4097 bytes", {
            let long = long.clone();
            Box::new(move |s| s.functions[2].symbol = long.clone())
        }),
        ("a note of 4097 bytes", {
            let long = long.clone();
            Box::new(move |s| s.notes = vec!["fine".into(), long.clone()])
        }),
        ("binary's path of 4097 bytes", {
            let long = long.clone();
            Box::new(move |s| s.binary = Some(long.clone()))
        }),
        ("end reason of 4097 bytes", Box::new(move |s| s.ended = long.clone())),
        ("257 notes", Box::new(|s| s.notes = vec!["n".into(); 257])),
        ("65537 PIDs", Box::new(|s| s.pids = vec![1; 65_537])),
        ("sample_every is 0", Box::new(|s| s.sample_every = 0)),
    ];
    for (want, f) in cases {
        let mut s = small(2, T0 + MIN);
        f(&mut s);
        let err = store.put_probe_session(s).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, StoreError::InvalidProbeSession(_)), "{want}: {msg}");
        assert!(msg.contains(want) && msg.contains("nothing was written"), "{want}: {msg}");
        println!("{msg}");
        assert_eq!(store.stats().unwrap(), before, "{want}");
    }
    assert_eq!(store.probe_sessions(TimeRange::ALL, 10).unwrap().len(), 1);
    // Too large for the cap alone: refused whole too.
    let tiny = open_store(&dir.path().join("tiny"), Retention { max_bytes: 1000, ..Retention::default() });
    let err = tiny.put_probe_session(small(3, T0)).unwrap_err();
    assert!(matches!(err, StoreError::TooLarge { .. }), "{err}");
    assert_eq!(tiny.stats().unwrap().total_bytes, 0);
    // No id was used by the refusals.
    assert_eq!(store.put_probe_session(small(4, T0)).unwrap(), 2);
    assert_eq!(tiny.put_probe_session(session_of(T0, vec![], &[])).unwrap(), 1);
    assert_totals_consistent(&store);
    assert_totals_consistent(&tiny);
}

/// Every 10 minutes from T0 for an hour: a run at +1 s and a probe session at +2 s.
fn write_mixed(store: &Store) {
    for i in 0..6u64 {
        let t = T0 + i * 10 * MIN;
        store.put_run(idle_run(t + SEC, 1_000_000, 200, 2), t).unwrap();
        store.put_probe_session(small(i, t + 2 * SEC)).unwrap();
    }
}

#[test]
fn retention_by_age_removes_sessions_that_started_before_the_cutoff() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), Retention { max_age: Duration::from_secs(3600), max_bytes: u64::MAX });
    write_mixed(&store);
    let before = store.probe_sessions(TimeRange::ALL, usize::MAX).unwrap();
    let runs_before = store.runs(TimeRange::ALL, None, None).unwrap();
    // Cutoff = T0 + 25 min: sessions at 0, 10, 20 min go, like the runs.
    let report = store.enforce_retention(T0 + 85 * MIN).unwrap();
    assert_eq!((report.deleted_probe_sessions, report.deleted_runs), (3, 3));
    let freed = before[..3].iter().map(|s| s.stored_bytes).sum::<u64>()
        + runs_before[..3].iter().map(|r| r.stored_bytes).sum::<u64>();
    assert_eq!(report.freed_bytes, freed);
    let left: Vec<u64> = store.probe_sessions(TimeRange::ALL, usize::MAX).unwrap().iter().map(|s| s.id).collect();
    assert_eq!(left, before[3..].iter().map(|s| s.id).collect::<Vec<_>>());
    assert_eq!(store.probe_session(before[0].id).unwrap(), None);
    assert_totals_consistent(&store);
    // By start: a session that started before the cutoff goes even if it ended after.
    let mut long = small(7, T0 + 55 * MIN);
    long.end_unix_ns = T0 + 200 * MIN;
    let id = store.put_probe_session(long).unwrap();
    store.enforce_retention(T0 + 115 * MIN + 1).unwrap();
    assert_eq!(store.probe_session(id).unwrap(), None);
    assert_totals_consistent(&store);
}

#[test]
fn retention_by_bytes_removes_oldest_first_across_kinds() {
    let dir = tempfile::tempdir().unwrap();
    let full = {
        let store = open(dir.path());
        write_mixed(&store);
        store.stats().unwrap()
    };
    assert!(full.probe_bytes > 0 && full.total_bytes == full.stored_bytes + full.probe_bytes);
    let cap = full.total_bytes / 2;
    let store = open_store(dir.path(), Retention { max_bytes: cap, ..Retention::default() });
    let report = store.enforce_retention(T0).unwrap();
    let s = store.stats().unwrap();
    assert!(s.total_bytes <= cap, "{} > {cap}", s.total_bytes);
    assert!(report.deleted_probe_sessions > 0 && report.deleted_runs > 0, "{report:?}");
    assert_eq!(report.freed_bytes, full.total_bytes - s.total_bytes);
    // Oldest first: everything kept started after everything deleted, whatever its kind.
    let kept_sessions = store.probe_sessions(TimeRange::ALL, usize::MAX).unwrap();
    let kept_runs = store.runs(TimeRange::ALL, None, None).unwrap();
    let oldest_kept =
        kept_sessions.iter().map(|p| p.start_unix_ns).chain(kept_runs.iter().map(|r| r.start_unix_ns)).min().unwrap();
    let deleted = (6 - kept_sessions.len()) + (6 - kept_runs.len());
    let mut starts: Vec<u64> = (0..6u64).flat_map(|i| [T0 + i * 10 * MIN + SEC, T0 + i * 10 * MIN + 2 * SEC]).collect();
    starts.sort();
    assert_eq!(oldest_kept, starts[deleted], "{deleted} deleted");
    assert_totals_consistent(&store);
    // A put under the cap deletes older sessions (never itself) until everything fits.
    let id = store.put_probe_session(small(8, T0 + 100 * MIN)).unwrap();
    assert!(store.probe_session(id).unwrap().is_some());
    assert!(store.stats().unwrap().total_bytes <= cap);
    assert_totals_consistent(&store);
    // A session alone over the cap is refused (TooLarge), the store untouched.
    let before = store.stats().unwrap();
    let err = store.put_probe_session(packet_loop_session(9, T0 + 200 * MIN, 2, 5_000)).unwrap_err();
    assert!(matches!(err, StoreError::TooLarge { .. }), "{err}");
    assert_eq!(store.stats().unwrap(), before);
}

// ---------------------------------------------------------------------------------------------
// Corrupt records

/// A store with two sessions (the first of two chunks), closed.
fn fill(dir: &std::path::Path) {
    let store = open(dir);
    store.put_probe_session(packet_loop_session(1, T0, 2, CHUNK_CALLS + 500)).unwrap();
    store.put_probe_session(small(2, T0 + MIN)).unwrap();
}

/// Rewrites (or with `None`, removes) the first record whose key starts with `kind`, with the
/// store closed.
fn tamper(dir: &std::path::Path, kind: u8, f: &dyn Fn(&mut Vec<u8>) -> bool) {
    let db = open_sled(dir);
    let tree = db.open_tree("runs").unwrap();
    let (k, v) = tree.scan_prefix([kind]).next().unwrap().unwrap();
    let mut v = v.to_vec();
    if f(&mut v) {
        tree.insert(k, v).unwrap();
    } else {
        tree.remove(k).unwrap();
    }
    db.flush().unwrap();
}

/// Every reader either succeeds or says `Corrupt` naming a probe session; `verify` reports a
/// problem. Returns how many readers said `Corrupt`.
fn check(dir: &std::path::Path, what: &str) -> usize {
    let store = open(dir);
    let mut corrupt = 0;
    let mut seen = |r: Result<(), StoreError>| match r {
        Ok(()) => {}
        Err(StoreError::Corrupt { record, detail, .. }) => {
            assert!(record.contains("probe session 1") || record.contains("probe totals"), "{what}: {record}");
            println!("{what}: {record}: {detail}");
            corrupt += 1;
        }
        Err(e) => panic!("{what}: {e}"),
    };
    seen(store.probe_session(1).map(drop));
    seen(store.probe_sessions(TimeRange::ALL, 10).map(drop));
    seen(store.stats().map(drop));
    let v = store.verify().unwrap();
    assert!(!v.is_ok(), "{what}: verify found nothing");
    // The other session is unharmed (unless the totals or the listing are what broke).
    if let Ok(Some(s)) = store.probe_session(2) {
        assert_eq!(s.calls.len(), small(2, T0 + MIN).calls.len());
    }
    corrupt
}

#[test]
fn corrupt_records_are_clear_errors() {
    type Damage = Box<dyn Fn(&mut Vec<u8>) -> bool>;
    let garbage_functions: Damage = Box::new(|v| {
        let mut row = probe_codec::decode_meta(v, T0).unwrap().into_owned();
        row.functions.0 = vec![0x93, 1, 2, 3].into();
        *v = probe_codec::encode_meta(&row);
        true
    });
    let more_calls: Damage = Box::new(|v| {
        let mut row = probe_codec::decode_meta(v, T0).unwrap().into_owned();
        row.recorded_calls += CHUNK_CALLS as u64;
        *v = probe_codec::encode_meta(&row);
        true
    });
    let cases: Vec<(&str, u8, Damage)> = vec![
        (
            "calls truncated",
            b'p',
            Box::new(|v| {
                v.truncate(v.len() / 2);
                true
            }),
        ),
        (
            "calls garbage",
            b'p',
            Box::new(|v| {
                v.iter_mut().for_each(|b| *b = 0xff);
                true
            }),
        ),
        (
            "calls count",
            b'p',
            Box::new(|v| {
                v[1] ^= 0x40;
                true
            }),
        ),
        ("chunk missing", b'p', Box::new(|_| false)),
        (
            "metadata garbage",
            b'P',
            Box::new(|v| {
                v.truncate(3);
                true
            }),
        ),
        ("functions garbage", b'P', garbage_functions),
        ("more calls than chunks", b'P', more_calls),
        (
            "index garbage",
            b'j',
            Box::new(|v| {
                v.truncate(3);
                true
            }),
        ),
        (
            "totals garbage",
            b'q',
            Box::new(|v| {
                *v = vec![0xc1];
                true
            }),
        ),
    ];
    for (what, kind, f) in cases {
        let dir = tempfile::tempdir().unwrap();
        fill(dir.path());
        tamper(dir.path(), kind, &*f);
        let n = check(dir.path(), what);
        assert!(n > 0, "{what}: no reader noticed");
    }
}

#[test]
fn random_damage_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path());
    let mut rng = rng(5);
    use rand::Rng;
    for round in 0..60 {
        let kind = [b'p', b'P', b'j'][round % 3];
        let (i, bit): (f64, u8) = (rng.random(), rng.random_range(0..8));
        tamper(dir.path(), kind, &move |v: &mut Vec<u8>| {
            let at = ((v.len() as f64) * i) as usize % v.len().max(1);
            if let Some(b) = v.get_mut(at) {
                *b ^= 1 << bit;
            }
            true
        });
        let store = open(dir.path());
        for r in [
            store.probe_session(1).map(drop),
            store.probe_session(2).map(drop),
            store.probe_sessions(TimeRange::ALL, 10).map(drop),
        ] {
            if let Err(e) = r {
                assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
            }
        }
        let _ = store.verify().unwrap();
    }
}
