//! Crash safety of probe sessions: a child process stores sessions of two chunks (and, through
//! the byte cap, deletes old ones) in a tight loop and is SIGKILLed; the store must reopen with
//! every session whole and decodable, the totals exact, the last acknowledged session there,
//! and new ids past every acknowledged one.

mod common;

use std::time::Duration;

use common::probes::*;
use common::*;
use loupe_store::probes::codec::CHUNK_CALLS;
use loupe_store::{Retention, TimeRange};

const DIR_VAR: &str = "LOUPE_STORE_PROBES_CRASH_DIR";
const ROUND_VAR: &str = "LOUPE_STORE_PROBES_CRASH_ROUND";

fn retention() -> Retention {
    // About four sessions of the child's size.
    Retention { max_age: Duration::from_secs(1 << 40), max_bytes: 2_000_000 }
}

#[test]
#[ignore = "helper process for probes_crash_safety_under_sigkill"]
fn probes_crash_child() {
    let Ok(dir) = std::env::var(DIR_VAR) else {
        eprintln!("probes_crash_child only runs as the child of probes_crash_safety_under_sigkill");
        return;
    };
    let round: u64 = std::env::var(ROUND_VAR).unwrap().parse().unwrap();
    let store = open_store(std::path::Path::new(&dir), retention());
    let calls = packet_loop_calls(round, T0, 2, CHUNK_CALLS + 10_000);
    for i in 0u64.. {
        // The same calls shifted in time: each session starts a second after the previous.
        let shift = (round * 1000 + i) * SEC;
        let moved = calls
            .iter()
            .map(|c| loupe_store::ProbeCall {
                entry_unix_ns: c.entry_unix_ns + shift,
                exit_unix_ns: c.exit_unix_ns + shift,
                ..*c
            })
            .collect();
        let id = store.put_probe_session(session_of(T0 + shift, moved, &FUNCTIONS)).unwrap();
        println!("PUT {id}");
    }
}

#[test]
fn probes_crash_safety_under_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let mut total_acked = 0;
    let mut newest = 0;
    for round in 1..=3u64 {
        let env = [(DIR_VAR, dir.path().display().to_string()), (ROUND_VAR, round.to_string())];
        let acked = kill_writer_mid_stream("probes_crash_child", &env, Duration::from_millis(600 + 97 * round));
        total_acked += acked.len();
        newest = newest.max(*acked.iter().max().unwrap());
        let store = open_store(dir.path(), retention());
        let report = store.verify().unwrap();
        assert!(report.is_ok(), "round {round}: {:?}", report.problems);
        let stats = store.stats().unwrap();
        let listed = store.probe_sessions(TimeRange::ALL, usize::MAX).unwrap();
        assert_eq!(listed.len() as u64, stats.probe_sessions, "round {round}");
        assert_eq!(listed.iter().map(|s| s.stored_bytes).sum::<u64>(), stats.probe_bytes);
        // The last acknowledged session survived whole.
        let last = store.probe_session(*acked.last().unwrap()).unwrap().expect("last acknowledged session");
        assert_eq!(last.calls.len(), CHUNK_CALLS + 10_000);
        for s in &listed {
            assert_eq!(store.probe_session(s.id).unwrap().unwrap().calls.len() as u64, s.recorded_calls);
        }
    }
    assert!(total_acked >= 6, "child wrote only {total_acked} sessions");
    let store = open_store(dir.path(), retention());
    assert!(store.stats().unwrap().probe_sessions < total_acked as u64, "retention never deleted a session");
    // Ids go on past everything ever acknowledged (and whatever a killed put may have written).
    let id = store.put_probe_session(session_of(T0, vec![], &[])).unwrap();
    assert!(id > newest, "{id} after {newest}");
}
