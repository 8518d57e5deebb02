//! Crash safety: a child process writes (and, through retention, deletes) runs in a tight
//! loop and is SIGKILLed; the store must reopen with every run whole and totals exact.
//!
//! The child is this very test binary, re-executed to run the ignored `crash_child_writer`
//! test with `LOUPE_STORE_CRASH_DIR` set.

mod common;

use std::time::Duration;

use common::*;
use loupe_store::{Retention, RunId, TimeRange};

const DIR_VAR: &str = "LOUPE_STORE_CRASH_DIR";
const ROUND_VAR: &str = "LOUPE_STORE_CRASH_ROUND";

fn retention() -> Retention {
    // Small enough that retention deletes runs while the child writes.
    Retention { max_age: Duration::from_secs(1 << 40), max_bytes: 400_000 }
}

/// Child side: write runs forever, printing each id once `put_run` has returned.
#[test]
#[ignore = "helper process for crash_safety_under_sigkill"]
fn crash_child_writer() {
    let Ok(dir) = std::env::var(DIR_VAR) else {
        eprintln!("crash_child_writer only runs as the child of crash_safety_under_sigkill");
        return;
    };
    let round: u64 = std::env::var(ROUND_VAR).unwrap().parse().unwrap();
    let store = open_store(std::path::Path::new(&dir), retention());
    let mut r = rng(round);
    for i in 0.. {
        let start = T0 + round * 1_000_000 * SEC + i * SEC;
        let cpus = 1 + (i % 8) as u32;
        let mut run = bursty_run(&mut r, start, 100_000, 2000, cpus, 0.3);
        if i % 3 == 0 {
            run = with_counts(run, &mut r);
        }
        let meta = store.put_run(run, start).unwrap();
        println!("PUT {}", meta.id);
    }
}

#[test]
fn crash_safety_under_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let mut total_acked = 0;
    for round in 1..=4u64 {
        let env = [(DIR_VAR, dir.path().display().to_string()), (ROUND_VAR, round.to_string())];
        let run_for = Duration::from_millis(300 + 37 * round);
        let acked: Vec<RunId> =
            kill_writer_mid_stream("crash_child_writer", &env, run_for).into_iter().map(RunId).collect();
        total_acked += acked.len();

        let store = open_store(dir.path(), retention());
        let report = store.verify().unwrap();
        assert!(report.is_ok(), "round {round}: {:?}", report.problems);
        let listed = store.runs(TimeRange::ALL, None, None).unwrap();
        let stats = store.stats().unwrap();
        assert_eq!(stats.runs, listed.len() as u64, "round {round}");
        assert_eq!(stats.stored_bytes, listed.iter().map(|m| m.stored_bytes).sum::<u64>());
        for meta in &listed {
            let run = store.run(meta.id).unwrap().expect("listed run readable");
            assert_eq!(run.per_cpu.len(), meta.cpus.len());
            assert_eq!(run.conn_counts.is_some(), run.meta.source != loupe_store::RunSource::Agent);
        }
        // The newest acknowledged put survived the kill (retention keeps newer runs first,
        // and the cap holds several runs).
        let last = *acked.last().unwrap();
        assert!(
            store.run(last).unwrap().is_some(),
            "round {round}: acknowledged run {last} lost ({} acked)",
            acked.len()
        );
    }
    assert!(total_acked >= 8, "child wrote only {total_acked} runs");
}
