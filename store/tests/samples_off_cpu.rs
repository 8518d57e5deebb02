//! Waits off the CPU: stored beside the CPU samples, never mixed with them, weighed by how long
//! each thread waited (times its 1-in-N), and handled by retention, the dictionary sweep and
//! `verify` like any batch.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::samples::*;
use common::*;
use loupe_store::{
    Frame, OffCpuSample, ProfileQuery, Retention, SampleKind, StackSample, Store, StoreError, TimeRange, keys,
};
use rand::Rng;

const SEC: u64 = 1_000_000_000;

/// Off-CPU waits made from a synthetic host's busy samples: each waits 1 µs to 2 s (stored to
/// the microsecond), one in 1, 1, 3 or 1,000. Stacks get a `[wait]` leaf of their own, so no
/// CPU sample shares them.
fn waits(seed: u64, batches: usize, cpus: u32) -> Vec<Vec<OffCpuSample>> {
    let mut synth = Synth::new(seed, SynthParams::small(cpus), T0);
    let mut rng = rng(seed ^ 0x0ff);
    (0..batches)
        .map(|_| {
            let mut b = Vec::new();
            synth.next_batch(100, &mut b);
            b.into_iter()
                .filter(|s| !s.idle)
                .map(|mut s| {
                    s.frames.insert(0, Frame::kernel("[wait] schedule"));
                    let waited_ns = rng.random_range(1_000..2 * SEC);
                    let one_in = [1, 1, 3, 1000][rng.random_range(0..4)];
                    OffCpuSample { sample: s, waited_ns, one_in }
                })
                .collect()
        })
        .collect()
}

fn off_cpu(q: ProfileQuery) -> ProfileQuery {
    ProfileQuery { kind: SampleKind::OffCpu, ..q }
}

/// A wait as stored: its time and duration to the microsecond.
fn stored(w: &OffCpuSample) -> OffCpuSample {
    OffCpuSample {
        sample: StackSample { time_unix_ns: StackSample::stored_time(w.sample.time_unix_ns), ..w.sample.clone() },
        waited_ns: StackSample::stored_time(w.waited_ns),
        one_in: w.one_in,
    }
}

/// The off-CPU profile by brute force: per stack, the waits' `waited × one_in` summed.
fn brute(all: &[OffCpuSample], q: &ProfileQuery) -> (u64, Vec<(Vec<Frame>, u64)>) {
    let mut per: HashMap<&Vec<Frame>, u64> = HashMap::new();
    let mut n = 0;
    for w in all.iter().filter(|w| matches(&w.sample, q)) {
        *per.entry(&w.sample.frames).or_default() += w.weight_ns();
        n += 1;
    }
    let mut stacks: Vec<_> = per.into_iter().map(|(f, v)| (f.clone(), v)).collect();
    stacks.sort();
    (n, stacks)
}

fn assert_clean(store: &Store) {
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}

#[test]
fn waits_come_back_exactly_and_profiles_weigh_them() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), Retention::default());
    let written = waits(1, 5, 6);
    for b in &written {
        let meta = store.put_off_cpu(b, T0).unwrap();
        assert_eq!(meta.samples, b.len() as u64);
    }
    let all: Vec<OffCpuSample> = written.iter().flatten().map(stored).collect();
    let mut got = store.off_cpu_samples(&ProfileQuery::range(TimeRange::ALL)).unwrap();
    let mut want = all.clone();
    for v in [&mut got, &mut want] {
        v.sort_by(|a, b| {
            let key = |w: &OffCpuSample| (w.sample.time_unix_ns, w.sample.cpu, w.sample.tid, w.waited_ns);
            key(a).cmp(&key(b))
        });
    }
    assert_eq!(got, want);

    // Whole range, cut ranges, and each filter: the same sums as by brute force.
    let (first, last) = (
        all.iter().map(|w| w.sample.time_unix_ns).min().unwrap(),
        all.iter().map(|w| w.sample.time_unix_ns).max().unwrap(),
    );
    let mid = first + (last - first) / 3;
    let some = &all[all.len() / 2].sample;
    let ranges = [TimeRange::ALL, TimeRange::new(mid, last).unwrap(), TimeRange::new(first, mid).unwrap()];
    for range in ranges {
        let base = off_cpu(ProfileQuery::range(range));
        for q in [
            base.clone(),
            ProfileQuery { pid: Some(some.pid), ..base.clone() },
            ProfileQuery { comm: Some(some.comm.clone()), ..base.clone() },
            ProfileQuery { cpu: Some(some.cpu), ..base.clone() },
            ProfileQuery { comm: Some("no such comm".into()), ..base.clone() },
        ] {
            let p = store.profile(&q).unwrap();
            let (n, stacks) = brute(&all, &q);
            let mut got = p.stacks.clone();
            got.sort();
            assert_eq!((p.samples, p.lost), (n, 0), "{q:?}");
            assert_eq!(got, stacks, "{q:?}");
            assert_eq!(p.span.is_some(), n > 0, "{q:?}");
        }
    }
    // A wait of 1 in 1,000 stands for 1,000 like it.
    let heavy = all.iter().find(|w| w.one_in == 1000).unwrap();
    let q = off_cpu(ProfileQuery { pid: Some(heavy.sample.pid), ..ProfileQuery::range(TimeRange::ALL) });
    let total: u64 = store.profile(&q).unwrap().stacks.iter().map(|(_, v)| v).sum();
    assert!(total >= heavy.waited_ns * 1000);
    assert_clean(&store);
}

/// Every wait through the cursor, its ids resolved, as `off_cpu_samples` gives it: the cursor
/// hands out the same waits with the same weights, batch by batch in time order; a batch
/// deleted by retention while the cursor is open is skipped; a CPU-sample cursor refuses waits.
#[test]
fn the_wait_cursor_hands_out_the_waits_page_by_page() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), Retention { max_age: Duration::from_secs(60), max_bytes: u64::MAX });
    let written = waits(3, 4, 5);
    let metas: Vec<_> = written.iter().map(|b| store.put_off_cpu(b, T0).unwrap()).collect();
    let read = |q: ProfileQuery| {
        let mut cursor = store.wait_cursor(q).unwrap();
        let mut pages = Vec::new();
        while let Some(page) = cursor.next_page().unwrap() {
            pages.push(page);
        }
        pages
    };
    let resolved = |w: &loupe_store::RawWait| {
        let frames = store.stack_frames(&[w.sample.stack]).unwrap().remove(0);
        let comm = store.comm_names(&[w.sample.comm]).unwrap().remove(0);
        (w.sample.time_unix_ns, w.sample.cpu, w.sample.pid, w.sample.tid, comm, frames, w.waited_ns, w.one_in)
    };
    let want = |q: &ProfileQuery| {
        let mut v: Vec<_> = store
            .off_cpu_samples(q)
            .unwrap()
            .into_iter()
            .map(|w| {
                let s = w.sample;
                (s.time_unix_ns, s.cpu, s.pid, s.tid, s.comm, s.frames, w.waited_ns, w.one_in)
            })
            .collect();
        v.sort();
        v
    };
    let some = written[2][7].sample.clone();
    let base = off_cpu(ProfileQuery::range(TimeRange::ALL));
    for q in [
        base.clone(),
        ProfileQuery { pid: Some(some.pid), ..base.clone() },
        ProfileQuery { cpu: Some(some.cpu), ..base.clone() },
        ProfileQuery { range: TimeRange::new(some.time_unix_ns, u64::MAX).unwrap(), ..base.clone() },
    ] {
        let pages = read(q.clone());
        for page in &pages {
            assert!(page.is_sorted_by_key(|w| (w.sample.time_unix_ns, w.sample.cpu)), "{q:?}");
            assert!(page.iter().all(|w| !w.sample.idle && w.one_in >= 1), "{q:?}");
        }
        let mut got: Vec<_> = pages.iter().flatten().map(resolved).collect();
        got.sort();
        assert!(!got.is_empty(), "{q:?}");
        assert_eq!(got, want(&q), "{q:?}");
    }
    assert_eq!(read(base.clone()).len(), 4, "one page a batch");

    // Retention deletes the first two batches between two pages: the rest still come.
    let mut cursor = store.wait_cursor(base.clone()).unwrap();
    let first = cursor.next_page().unwrap().unwrap();
    assert_eq!(first.len() as u64, metas[0].samples);
    store.enforce_retention(metas[2].start_unix_ns + 60 * SEC).unwrap();
    let rest: usize = std::iter::from_fn(|| cursor.next_page().unwrap()).map(|p| p.len()).sum();
    assert_eq!(rest as u64, metas[2].samples + metas[3].samples);

    // Waits are not CPU samples: the sample cursor refuses an off-CPU query and names the way.
    let err = store.sample_cursor(base).err().unwrap().to_string();
    assert!(err.contains("wait_cursor"), "{err}");
}

#[test]
fn cpu_samples_and_waits_never_mix() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), Retention::default());
    // CPU samples over three hours (so hours get sealed into rollups) and waits among them.
    let mut synth = Synth::new(7, SynthParams::small(4), T0);
    let mut cpu: Vec<StackSample> = Vec::new();
    let mut lost = Vec::new();
    let written = waits(8, 6, 4);
    for i in 0..30 {
        let mut b = Vec::new();
        synth.next_batch(60, &mut b);
        // Jump ahead so the batches span several hours.
        b.iter_mut().for_each(|s| s.time_unix_ns += i * 400 * SEC);
        let meta = store.put_samples(&b, 2, T0).unwrap();
        lost.push((meta.start_unix_ns, 2));
        cpu.extend(as_stored(&b));
        if i % 5 == 0 {
            let w = &written[i as usize / 5];
            let w: Vec<_> = w
                .iter()
                .cloned()
                .map(|mut w| {
                    w.sample.time_unix_ns += i * 400 * SEC;
                    w
                })
                .collect();
            store.put_off_cpu(&w, T0).unwrap();
        }
    }
    assert!(store.sample_stats().unwrap().rollup_bytes > 0, "no hour was rolled up");
    for q in [
        ProfileQuery::range(TimeRange::ALL),
        ProfileQuery { include_idle: true, ..ProfileQuery::range(TimeRange::ALL) },
        ProfileQuery { cpu: Some(1), ..ProfileQuery::range(TimeRange::ALL) },
    ] {
        assert_profile_matches(&store, &cpu, &lost, &q);
    }
    // No wait's `[wait]` leaf in any CPU profile or sample, and no CPU sample among the waits.
    let cpu_profile = store.profile(&ProfileQuery::range(TimeRange::ALL)).unwrap();
    assert!(cpu_profile.stacks.iter().all(|(f, _)| f.first().is_none_or(|f| f.function != "[wait] schedule")));
    let waited = store.profile(&off_cpu(ProfileQuery::range(TimeRange::ALL))).unwrap();
    assert_eq!(waited.samples, written.iter().map(Vec::len).sum::<usize>() as u64);
    assert!(waited.stacks.iter().all(|(f, _)| f.first().is_some_and(|f| f.function == "[wait] schedule")));
    assert_eq!(store.sample_batches(TimeRange::ALL).unwrap().len(), 30);
    assert_eq!(store.off_cpu_batches(TimeRange::ALL).unwrap().len(), 6);
    // Readers of CPU samples alone refuse a query of waits rather than answer wrongly.
    let q = off_cpu(ProfileQuery::range(TimeRange::ALL));
    assert!(matches!(store.samples(&q), Err(StoreError::InvalidSamples(m)) if m.contains("off_cpu_samples")));
    assert!(matches!(store.sample_cursor(q), Err(StoreError::InvalidSamples(_))));
    assert_clean(&store);
}

#[test]
fn bad_waits_are_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), Retention::default());
    let mut b = waits(3, 1, 2).remove(0);
    b[1].one_in = 0;
    let err = store.put_off_cpu(&b, T0).unwrap_err();
    assert!(matches!(&err, StoreError::InvalidSamples(m) if m.contains("one_in")), "{err}");
    b[1].one_in = 1;
    b[2].sample.idle = true;
    assert!(matches!(store.put_off_cpu(&b, T0), Err(StoreError::InvalidSamples(_))));
    assert!(store.off_cpu_batches(TimeRange::ALL).unwrap().is_empty());
    assert_eq!(store.sample_stats().unwrap().samples, 0);
    assert_eq!(store.put_off_cpu(&[], T0).unwrap().id, 0);
    assert_clean(&store);
}

#[test]
fn retention_and_the_sweep_treat_waits_as_batches() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), Retention { max_age: Duration::from_secs(60), max_bytes: u64::MAX });
    let written = waits(4, 6, 3);
    let metas: Vec<_> = written.iter().map(|b| store.put_off_cpu(b, T0).unwrap()).collect();
    assert_clean(&store);
    // By age: the batches that started before `now - 60 s` go, whole.
    let now = metas[3].start_unix_ns + 60 * SEC;
    let report = store.enforce_retention(now).unwrap();
    assert_eq!(report.deleted_sample_batches, 3);
    assert_eq!(report.freed_bytes, metas[..3].iter().map(|m| m.stored_bytes).sum::<u64>());
    let left: Vec<u64> = store.off_cpu_batches(TimeRange::ALL).unwrap().iter().map(|m| m.id).collect();
    assert_eq!(left, metas[3..].iter().map(|m| m.id).collect::<Vec<_>>());
    // The sweep keeps every stack the waits left use, and the profile still names them.
    store.sweep_sample_dictionary().unwrap();
    let kept: Vec<OffCpuSample> = written[3..].iter().flatten().map(stored).collect();
    let q = off_cpu(ProfileQuery::range(TimeRange::ALL));
    let mut got = store.profile(&q).unwrap().stacks;
    got.sort();
    assert_eq!(got, brute(&kept, &q).1);
    assert_clean(&store);
    assert_eq!(store.sample_stats().unwrap().batches, 3);

    // By bytes: the oldest of CPU batches and waits goes first, whichever kind it is.
    let dir = tempfile::tempdir().unwrap();
    let mut synth = Synth::new(5, SynthParams::small(3), T0);
    let mut cpu = Vec::new();
    synth.next_batch(100, &mut cpu);
    let store = open_store(dir.path(), Retention::default());
    let old_wait = store.put_off_cpu(&written[0], T0).unwrap();
    let newer: Vec<StackSample> = cpu
        .iter()
        .cloned()
        .map(|mut s| {
            s.time_unix_ns += 3600 * SEC;
            s
        })
        .collect();
    store.put_samples(&newer, 0, T0).unwrap();
    let total = store.stats().unwrap().total_bytes;
    drop(store);
    let store = open_store(dir.path(), Retention { max_age: Duration::from_secs(1 << 40), max_bytes: total - 1 });
    let report = store.enforce_retention(T0).unwrap();
    assert_eq!(report.deleted_sample_batches, 1);
    assert!(store.off_cpu_batches(TimeRange::ALL).unwrap().is_empty(), "the older waits went");
    assert_eq!(store.sample_batches(TimeRange::ALL).unwrap().len(), 1);
    assert!(report.freed_bytes >= old_wait.stored_bytes);
    assert_clean(&store);
}

#[test]
fn a_damaged_waits_record_is_reported_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let meta = {
        let store = open_store(dir.path(), Retention::default());
        store.put_off_cpu(&waits(6, 1, 2)[0], T0).unwrap()
    };
    // Its waits record cut to half.
    with_tree(dir.path(), |tree| {
        let key = keys::batch_key(keys::OFF_WAITS, meta.start_unix_ns, meta.id);
        let v = tree.get(key).unwrap().unwrap();
        tree.insert(key, &v[..v.len() / 2]).unwrap();
    });
    let store = open_store(dir.path(), Retention::default());
    let q = off_cpu(ProfileQuery::range(TimeRange::ALL));
    let err = store.profile(&q).unwrap_err();
    assert!(matches!(&err, StoreError::Corrupt { record, .. } if record.contains("waits")), "{err}");
    assert!(store.off_cpu_samples(&q).is_err());
    let report = store.verify().unwrap();
    assert!(report.problems.iter().any(|p| p.contains(&format!("off-CPU batch {}", meta.id))), "{:?}", report.problems);
    // Gone altogether: verify says so too.
    drop(store);
    with_tree(dir.path(), |tree| {
        tree.remove(keys::batch_key(keys::OFF_WAITS, meta.start_unix_ns, meta.id)).unwrap();
    });
    let store = open_store(dir.path(), Retention::default());
    let report = store.verify().unwrap();
    assert!(report.problems.iter().any(|p| p.contains("no waits record")), "{:?}", report.problems);
}
