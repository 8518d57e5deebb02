//! Crash safety of timeline batches: a child process writes batches (and, through retention,
//! deletes old ones and sweeps sources) in a tight loop and is SIGKILLed; the store must
//! reopen with every batch whole and decodable, every source present, the totals exact, and
//! the last acknowledged batch there.

mod common;

use std::time::Duration;

use common::timeline::*;
use common::*;
use loupe_store::{Retention, TimeRange, TimelineQuery};

const DIR_VAR: &str = "LOUPE_STORE_TIMELINE_CRASH_DIR";
const ROUND_VAR: &str = "LOUPE_STORE_TIMELINE_CRASH_ROUND";
const MS: u64 = 1_000_000;

fn retention() -> Retention {
    Retention { max_age: Duration::from_secs(1 << 40), max_bytes: 200_000 }
}

#[test]
#[ignore = "helper process for timeline_crash_safety_under_sigkill"]
fn timeline_crash_child() {
    let Ok(dir) = std::env::var(DIR_VAR) else {
        eprintln!("timeline_crash_child only runs as the child of timeline_crash_safety_under_sigkill");
        return;
    };
    let round: u64 = std::env::var(ROUND_VAR).unwrap().parse().unwrap();
    let store = open_store(std::path::Path::new(&dir), retention());
    let start = T0 + round * DAY;
    let mut lp = PacketLoop::new(round, 3, start, 30_000.0);
    let mut evs = Vec::new();
    for i in 1u64.. {
        // A new process every 10 batches: sources come and go.
        let src = packet_loop_source((round * 1000 + i / 10) as u32, "pktloop");
        lp.run_until(start + i * 20 * MS, &mut evs);
        let meta = store.put_timeline(&src, &evs, i % 3, start + i * 20 * MS).unwrap();
        evs.clear();
        println!("PUT {}", meta.id);
    }
}

#[test]
fn timeline_crash_safety_under_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let mut total_acked = 0;
    for round in 1..=3u64 {
        let env = [(DIR_VAR, dir.path().display().to_string()), (ROUND_VAR, round.to_string())];
        let acked = kill_writer_mid_stream("timeline_crash_child", &env, Duration::from_millis(400 + 71 * round));
        total_acked += acked.len();
        let store = open_store(dir.path(), retention());
        let report = store.verify().unwrap();
        assert!(report.is_ok(), "round {round}: {:?}", report.problems);
        let stats = store.stats().unwrap();
        let (evs, _) = store.timeline_events(&TimelineQuery::range(TimeRange::ALL), None, usize::MAX).unwrap();
        assert_eq!(evs.len() as u64, stats.timeline_events, "round {round}");
        let last = *acked.last().unwrap();
        // The newest acknowledged batch survived: its id is the largest stored (ids grow).
        let q = TimelineQuery::range(TimeRange::ALL);
        let counted: u64 = store.timeline_stats(&q).unwrap().iter().map(|s| s.count).sum();
        assert_eq!(counted, stats.timeline_events);
        assert!(stats.timeline_batches > 0 && last > 0, "round {round}");
    }
    assert!(total_acked >= 6, "child wrote only {total_acked} batches");
    let store = open_store(dir.path(), retention());
    let stats = store.stats().unwrap();
    assert!(stats.timeline_batches < total_acked as u64, "retention never deleted a batch");
}
