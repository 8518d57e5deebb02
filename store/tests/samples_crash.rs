//! Crash safety of sample batches: a child process writes batches (and, through retention,
//! deletes old ones and sweeps the dictionary) in a tight loop and is SIGKILLed; the store
//! must reopen with every batch whole, every block decodable, every referenced stack present
//! and the totals exact.
//!
//! The child is this very test binary, re-executed to run the ignored `samples_crash_child`
//! test with `LOUPE_STORE_SAMPLES_CRASH_DIR` set.

mod common;

use std::time::Duration;

use common::samples::*;
use common::*;
use loupe_store::{ProfileQuery, Retention, TimeRange};

const DIR_VAR: &str = "LOUPE_STORE_SAMPLES_CRASH_DIR";
const ROUND_VAR: &str = "LOUPE_STORE_SAMPLES_CRASH_ROUND";

fn retention() -> Retention {
    // Small enough that retention deletes batches (and sweeps) while the child writes.
    Retention { max_age: Duration::from_secs(1 << 40), max_bytes: 150_000 }
}

/// Child side: write batches forever, printing each id once `put_samples` has returned.
#[test]
#[ignore = "helper process for samples_crash_safety_under_sigkill"]
fn samples_crash_child() {
    let Ok(dir) = std::env::var(DIR_VAR) else {
        eprintln!("samples_crash_child only runs as the child of samples_crash_safety_under_sigkill");
        return;
    };
    let round: u64 = std::env::var(ROUND_VAR).unwrap().parse().unwrap();
    let store = open_store(std::path::Path::new(&dir), retention());
    // Each round starts later and mixes in new programs, so the dictionary grows and shrinks.
    let start = T0 + round * DAY;
    let mut synth = Synth::new(round, SynthParams { programs: 4 + round as usize, ..SynthParams::small(8) }, start);
    let mut batch = Vec::new();
    for i in 0u64.. {
        synth.next_batch(20, &mut batch);
        if i % 5 == 0 {
            for s in &mut batch {
                for f in &mut s.frames {
                    f.function = format!("{}#{round}.{i}", f.function).into();
                }
            }
        }
        let meta = store.put_samples(&batch, i % 3, start).unwrap();
        println!("PUT {}", meta.id);
    }
}

#[test]
fn samples_crash_safety_under_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let mut total_acked = 0;
    for round in 1..=4u64 {
        let env = [(DIR_VAR, dir.path().display().to_string()), (ROUND_VAR, round.to_string())];
        let acked = kill_writer_mid_stream("samples_crash_child", &env, Duration::from_millis(400 + 53 * round));
        total_acked += acked.len();

        let store = open_store(dir.path(), retention());
        // verify() decodes every block against its table and checks every referenced stack,
        // comm and frame exists, and that the totals equal the records.
        let report = store.verify().unwrap();
        assert!(report.is_ok(), "round {round}: {:?}", report.problems);
        let batches = store.sample_batches(TimeRange::ALL).unwrap();
        let stats = store.sample_stats().unwrap();
        assert_eq!(stats.batches, batches.len() as u64, "round {round}");
        let all = ProfileQuery { include_idle: true, ..ProfileQuery::range(TimeRange::ALL) };
        let samples = store.samples(&all).unwrap();
        assert_eq!(samples.len() as u64, stats.samples, "round {round}");
        let profile = store.profile(&all).unwrap();
        assert_eq!(profile.samples, stats.samples);
        assert_eq!(profile.lost, batches.iter().map(|b| b.lost).sum::<u64>());
        // The newest acknowledged batch survived the kill.
        let last = *acked.last().unwrap();
        assert!(
            batches.iter().any(|b| b.id == last),
            "round {round}: acknowledged batch {last} lost ({} acked)",
            acked.len()
        );
    }
    assert!(total_acked >= 8, "child wrote only {total_acked} batches");
    // Retention ran during the writes (the cap holds only part of what was written).
    let store = open_store(dir.path(), retention());
    let stats = store.sample_stats().unwrap();
    println!("{total_acked} batches acknowledged, {} kept, {stats:?}", stats.batches);
    assert!(stats.batches < total_acked as u64, "retention never deleted a batch");
}
