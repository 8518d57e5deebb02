//! Retention with timeline batches mixed with runs and sample batches: by age every kind
//! that started before the cutoff goes; by bytes the oldest of any kind goes first until the
//! total (timeline bytes and dictionary included) fits; unreferenced sources are swept; the
//! totals stay exact (`verify`).

mod common;

use std::time::Duration;

use common::samples::*;
use common::timeline::*;
use common::*;
use loupe_store::*;

const MS: u64 = 1_000_000;

/// Writes, every 10 s over `minutes`, a run, a sample batch and a timeline batch (from a new
/// process every minute, so sources come and go).
fn write_mixed(store: &Store, minutes: u64) -> Vec<(u64, &'static str)> {
    let mut written = Vec::new();
    let mut synth = Synth::new(3, SynthParams::small(4), T0);
    let mut samples = Vec::new();
    let mut evs = Vec::new();
    for m in 0..minutes {
        let source = packet_loop_source(1000 + m as u32, "pktloop");
        let mut lp = PacketLoop::new(m, 2, T0 + m * 60 * SEC, 200_000.0);
        for s in 0..6u64 {
            let t = T0 + m * 60 * SEC + s * 10 * SEC;
            store.put_run(idle_run(t + 3 * MS, 1_000_000, 200, 2), t).unwrap();
            written.push((t + 3 * MS, "run"));
            synth.next_batch(5, &mut samples);
            for x in &mut samples {
                x.time_unix_ns = t + 5 * MS + x.time_unix_ns % (9 * SEC);
            }
            store.put_samples(&samples, 0, t).unwrap();
            lp.run_until(t + 10 * SEC, &mut evs);
            let meta = store.put_timeline(&source, &evs, 1, t + 10 * SEC).unwrap();
            written.push((meta.start_unix_ns, "timeline"));
            evs.clear();
        }
    }
    written
}

#[test]
fn age_retention_deletes_old_timeline_batches_with_runs_and_samples() {
    let dir = tempfile::tempdir().unwrap();
    let retention = Retention { max_age: Duration::from_secs(120), ..Retention::default() };
    let store = open_store(dir.path(), retention);
    write_mixed(&store, 5);
    let now = T0 + 5 * 60 * SEC;
    store.enforce_retention(now).unwrap(); // (the puts already applied it as they went)
    let stats = store.stats().unwrap();
    assert!(stats.timeline_batches < 30 && stats.runs < 30 && stats.sample_batches < 30, "{stats:?}");
    assert!(stats.timeline_batches >= 12, "{stats:?}");
    let cutoff = now - 120 * SEC;
    let left = store.timeline_sources(TimeRange::ALL).unwrap();
    assert!(left.iter().all(|s| s.first_unix_ns >= cutoff), "{left:?}");
    assert!(store.runs(TimeRange::ALL, None, None).unwrap().iter().all(|r| r.start_unix_ns >= cutoff));
    let (evs, _) = store.timeline_events(&TimelineQuery::range(TimeRange::ALL), None, usize::MAX).unwrap();
    assert!(evs.iter().all(|e| e.time_unix_ns >= cutoff));
    assert_eq!(evs.len() as u64, store.stats().unwrap().timeline_events);
    // The processes of the first three minutes are gone from the dictionary too.
    store.sweep_timeline_dictionary().unwrap();
    assert_eq!(store.timeline_stats_totals().unwrap().sources, left.len() as u64);
    let v = store.verify().unwrap();
    assert!(v.is_ok(), "{:?}", v.problems);
}

#[test]
fn byte_retention_deletes_oldest_first_across_kinds_and_counts_timeline_bytes() {
    let dir = tempfile::tempdir().unwrap();
    // Measure what everything takes, then reopen the same data with a third of that as the cap.
    let full = {
        let store = open_store(dir.path(), Retention::default());
        write_mixed(&store, 4);
        let s = store.stats().unwrap();
        assert!(s.timeline_bytes > 0 && s.total_bytes == s.stored_bytes + s.sample_bytes + s.timeline_bytes);
        s
    };
    let cap = full.total_bytes / 3;
    let store = open_store(dir.path(), Retention { max_bytes: cap, ..Retention::default() });
    let report = store.enforce_retention(T0).unwrap();
    let s = store.stats().unwrap();
    assert!(s.total_bytes <= cap, "{} > {cap}", s.total_bytes);
    assert!(report.deleted_timeline_batches > 0 && report.deleted_runs > 0 && report.deleted_sample_batches > 0);
    // Oldest first: everything kept starts after everything deleted, whatever its kind.
    let oldest_kept = [
        store.runs(TimeRange::ALL, None, None).unwrap().first().map(|r| r.start_unix_ns),
        store.sample_batches(TimeRange::ALL).unwrap().first().map(|b| b.start_unix_ns),
        store.timeline_sources(TimeRange::ALL).unwrap().iter().map(|t| t.first_unix_ns).min(),
    ];
    let oldest_kept = oldest_kept.iter().flatten().min().copied().unwrap();
    assert!(oldest_kept > T0 + 60 * SEC, "kept from {}", (oldest_kept - T0) / SEC);
    assert_eq!(s.lost_timeline_events, s.timeline_batches, "one lost per batch, minus deleted ones");
    let v = store.verify().unwrap();
    assert!(v.is_ok(), "{:?}", v.problems);
    // A timeline batch larger than the cap alone is refused, nothing written.
    let small = open_store(&dir.path().join("small"), Retention { max_bytes: 100, ..Retention::default() });
    let mut evs = Vec::new();
    PacketLoop::new(1, 1, T0, 1000.0).run_until(T0 + 10 * MS, &mut evs);
    let err = small.put_timeline(&packet_loop_source(1, "x"), &evs, 0, T0).unwrap_err();
    assert!(matches!(err, StoreError::TooLarge { .. }), "{err}");
    assert_eq!(small.stats().unwrap().total_bytes, 0);
}
