//! `profile()`, `samples()` and `pids()` against a brute-force computation over the samples
//! written: every filter, half-open ranges, ranges cutting batches, overlapping batches.

mod common;

use common::samples::*;
use common::*;
use loupe_store::{Frame, ProfileQuery, Retention, StackSample, Store, TimeRange};
use rand::Rng;

struct Fixture {
    _dir: tempfile::TempDir,
    store: Store,
    all: Vec<StackSample>,
    batches: Vec<(u64, u64)>,
}

/// 8 batches of 10 s on 6 CPUs, lost counts on some, written out of time order, plus one
/// late batch whose samples overlap the others' time span.
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), Retention::default());
    let mut synth = Synth::new(7, SynthParams::small(6), T0);
    let mut pending = Vec::new();
    for i in 0..8u64 {
        let mut b = Vec::new();
        synth.next_batch(100, &mut b);
        pending.push((b, if i % 3 == 0 { i + 1 } else { 0 }));
    }
    // A straggler batch spanning the middle of the others (e.g. a CPU drained late).
    let mut late = Vec::new();
    let mut synth2 = Synth::new(8, SynthParams::small(2), T0 + 15 * SEC);
    synth2.next_batch(300, &mut late);
    for s in &mut late {
        s.cpu += 2; // same CPUs as other batches
    }
    pending.push((late, 4));
    let order = [3usize, 0, 8, 1, 7, 2, 6, 5, 4];
    let mut all = Vec::new();
    let mut batches = Vec::new();
    for &i in &order {
        let (b, lost) = &pending[i];
        let meta = store.put_samples(b, *lost, T0).unwrap();
        batches.push((meta.start_unix_ns, *lost));
        all.extend(as_stored(b));
    }
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    Fixture { _dir: dir, store, all, batches }
}

#[test]
fn profile_matches_brute_force_for_every_filter() {
    let f = fixture();
    let min = f.all.iter().map(|s| s.time_unix_ns).min().unwrap();
    let max = f.all.iter().map(|s| s.time_unix_ns).max().unwrap();
    let mut rng = rng(9);
    // Popular and unpopular pids and comms, and ones that never occur.
    let pids: Vec<u32> = vec![f.all[0].pid, f.all[f.all.len() / 2].pid, f.all[17].pid, 0, 999_999_999];
    let comms: Vec<String> = vec![f.all[3].comm.clone(), f.all[f.all.len() - 1].comm.clone(), "nope".into()];
    let mut ranges: Vec<TimeRange> = vec![
        TimeRange::ALL,
        TimeRange::new(min, max + 1).unwrap(),
        TimeRange::new(min, max).unwrap(), // excludes the very last sample
        TimeRange::new(min + 1, max + 1).unwrap(),
        TimeRange::new(T0 + 10 * SEC, T0 + 20 * SEC).unwrap(),
        TimeRange::new(T0 + 25 * SEC, T0 + 25 * SEC).unwrap(),
        TimeRange::new(0, min).unwrap(),
    ];
    // Ranges at exact sample times (half-open edges) and random cuts.
    for _ in 0..25 {
        let a = f.all[rng.random_range(0..f.all.len())].time_unix_ns;
        let b = f.all[rng.random_range(0..f.all.len())].time_unix_ns;
        ranges.push(TimeRange::new(a.min(b), a.max(b)).unwrap());
        let c = rng.random_range(min - SEC..max + SEC);
        ranges.push(TimeRange::new(c, c + rng.random_range(0..30 * SEC)).unwrap());
    }
    let mut checked = 0;
    let mut nonzero = 0;
    for (ri, range) in ranges.iter().enumerate() {
        for include_idle in [false, true] {
            let mut queries = vec![ProfileQuery { include_idle, ..ProfileQuery::range(*range) }];
            for &p in &pids {
                queries.push(ProfileQuery { pid: Some(p), include_idle, ..ProfileQuery::range(*range) });
            }
            for c in &comms {
                queries.push(ProfileQuery { comm: Some(c.clone()), include_idle, ..ProfileQuery::range(*range) });
            }
            for cpu in [0u32, 3, 5, 6] {
                queries.push(ProfileQuery { cpu: Some(cpu), include_idle, ..ProfileQuery::range(*range) });
            }
            if ri % 5 == 0 {
                queries.push(ProfileQuery {
                    pid: Some(pids[0]),
                    comm: Some(f.all[0].comm.clone()),
                    cpu: Some(f.all[0].cpu),
                    include_idle,
                    ..ProfileQuery::range(*range)
                });
            }
            for q in &queries {
                let counted = assert_profile_matches(&f.store, &f.all, &f.batches, q);
                checked += 1;
                nonzero += usize::from(counted > 0);
            }
        }
    }
    assert!(checked > 500 && nonzero > 200, "{checked} queries, {nonzero} with samples");
}

#[test]
fn samples_and_pids_match_brute_force() {
    let f = fixture();
    let all_pids: std::collections::BTreeSet<u32> = f.all.iter().map(|s| s.pid).collect();
    assert_eq!(f.store.pids(TimeRange::ALL).unwrap(), all_pids);
    let mut rng = rng(10);
    for _ in 0..30 {
        let a = f.all[rng.random_range(0..f.all.len())].time_unix_ns;
        let range = TimeRange::new(a, a + rng.random_range(0..20 * SEC)).unwrap();
        let cpu = if rng.random_bool(0.5) { Some(rng.random_range(0..6)) } else { None };
        let q = ProfileQuery { cpu, include_idle: rng.random_bool(0.5), ..ProfileQuery::range(range) };
        let mut want: Vec<StackSample> = f.all.iter().filter(|s| matches(s, &q)).cloned().collect();
        sort_samples(&mut want);
        let got = f.store.samples(&q).unwrap();
        assert!(got.windows(2).all(|w| (w[0].time_unix_ns, w[0].cpu) <= (w[1].time_unix_ns, w[1].cpu)));
        let mut got = got;
        sort_samples(&mut got);
        assert_eq!(got, want, "{q:?}");

        let want_pids: std::collections::BTreeSet<u32> =
            f.all.iter().filter(|s| range.contains(s.time_unix_ns)).map(|s| s.pid).collect();
        assert_eq!(f.store.pids(range).unwrap(), want_pids, "{range:?}");
    }
}

#[test]
fn profile_aggregates_identical_stacks_across_batches_and_cpus() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), Retention::default());
    let hot = vec![Frame::user("hot_loop", "app"), Frame::user("main", "app")];
    let cold = vec![Frame::kernel("read"), Frame::user("main", "app")];
    for b in 0..5u64 {
        let batch: Vec<StackSample> = (0..40u64)
            .map(|i| {
                let frames = if i % 4 == 0 { cold.clone() } else { hot.clone() };
                sample(T0 + b * 10 * SEC + i * 100_000_000, (i % 8) as u32, 77, "app", frames)
            })
            .collect();
        store.put_samples(&batch, 1, T0).unwrap();
    }
    let p = normalized(store.profile(&ProfileQuery::range(TimeRange::ALL)).unwrap());
    assert_eq!(p.samples, 200);
    assert_eq!(p.lost, 5);
    let mut want = vec![(hot, 150), (cold, 50)];
    want.sort();
    assert_eq!(p.stacks, want);
}

/// The cursor yields exactly the samples `samples()` returns (after resolving its ids), for
/// filtered and cut ranges, and the lost count of `profile()`.
#[test]
fn sample_cursor_pages_match_brute_force() {
    let f = fixture();
    let mut rng = rng(11);
    let mut queries = vec![ProfileQuery { include_idle: true, ..ProfileQuery::range(TimeRange::ALL) }];
    for _ in 0..20 {
        let a = f.all[rng.random_range(0..f.all.len())].time_unix_ns;
        let range = TimeRange::new(a, a + rng.random_range(0..25 * SEC)).unwrap();
        let cpu = if rng.random_bool(0.3) { Some(rng.random_range(0..6)) } else { None };
        let pid = if rng.random_bool(0.3) { Some(f.all[rng.random_range(0..f.all.len())].pid) } else { None };
        queries.push(ProfileQuery { cpu, pid, include_idle: rng.random_bool(0.5), ..ProfileQuery::range(range) });
    }
    let mut pages_seen = 0;
    for q in &queries {
        let mut want: Vec<StackSample> = f.all.iter().filter(|s| matches(s, q)).cloned().collect();
        sort_samples(&mut want);
        let mut cursor = f.store.sample_cursor(q.clone()).unwrap();
        assert_eq!(cursor.lost(), f.store.profile(q).unwrap().lost, "{q:?}");
        let mut got = Vec::new();
        while let Some(page) = cursor.next_page().unwrap() {
            assert!(!page.is_empty());
            assert!(page.windows(2).all(|w| (w[0].time_unix_ns, w[0].cpu) <= (w[1].time_unix_ns, w[1].cpu)));
            pages_seen += 1;
            let stacks: Vec<u32> = page.iter().map(|s| s.stack).collect();
            let comms: Vec<u32> = page.iter().map(|s| s.comm).collect();
            let frames = f.store.stack_frames(&stacks).unwrap();
            let names = f.store.comm_names(&comms).unwrap();
            for ((s, frames), comm) in page.iter().zip(frames).zip(names) {
                let cgroup_id = f.all.iter().find(|a| a.tid == s.tid && a.pid == s.pid).unwrap().cgroup_id;
                got.push(StackSample {
                    time_unix_ns: s.time_unix_ns,
                    cpu: s.cpu,
                    pid: s.pid,
                    tid: s.tid,
                    comm,
                    cgroup_id,
                    idle: s.idle,
                    frames,
                });
            }
        }
        sort_samples(&mut got);
        assert_eq!(got, want, "{q:?}");
    }
    assert!(pages_seen > 20, "{pages_seen} pages");
    assert!(f.store.stack_frames(&[u32::MAX]).is_err(), "an unknown stack id is an error");
}

/// The indexed profile holds each frame once, every index is in range, and expanding it gives
/// `profile()`.
#[test]
fn indexed_profile_holds_each_frame_once() {
    let f = fixture();
    let q = ProfileQuery { include_idle: true, ..ProfileQuery::range(TimeRange::ALL) };
    let indexed = f.store.indexed_profile(&q).unwrap();
    let distinct: std::collections::HashSet<&Frame> = indexed.frames.iter().collect();
    assert_eq!(distinct.len(), indexed.frames.len(), "a frame listed twice");
    let used: std::collections::HashSet<u32> = indexed.stacks.iter().flat_map(|(s, _)| s.iter().copied()).collect();
    assert_eq!(used.len(), indexed.frames.len(), "every frame listed is used");
    assert!(used.iter().all(|&i| (i as usize) < indexed.frames.len()));
    assert_eq!(normalized(loupe_store::Profile::from(indexed)), normalized(f.store.profile(&q).unwrap()));
    assert_profile_matches(&f.store, &f.all, &f.batches, &q);
}
