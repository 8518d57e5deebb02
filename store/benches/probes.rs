//! Probe session store figures: `cargo bench -p loupe-store --bench probes`.
//!
//! - bytes per stored call (the store's own count: metadata with histograms, call chunks,
//!   index) for a realistic packet-loop session (`tests/common/probes.rs`: 4 threads,
//!   `handle → parse, lookup, forward (→ retransmit)`, 1 M calls, the most a session keeps),
//!   what the call chunks alone take, and what plain MessagePack of the calls would;
//! - the same calls with the threads interleaved (a producer that did not sort them), and the
//!   worst case (every field random);
//! - `put_probe_session` (validate, encode, write, flush) and `probe_session` (read, decode) of
//!   the 1 M-call session, best of `LOUPE_BENCH_ROUNDS` (default 3);
//! - listing 100 sessions (`probe_sessions`, metadata only).

#[path = "../tests/common/mod.rs"]
mod common;

use std::hint::black_box;
use std::time::Instant;

use common::probes::*;
use common::{SEC, T0};
use loupe_store::probes::codec::{CHUNK_CALLS, encode_chunk};
use loupe_store::{ProbeSession, Retention, Store, TimeRange};

fn bench(name: &str, value: f64, unit: &str, baseline: f64) {
    println!("BENCH {{\"name\": \"{name}\", \"value\": {value:.3}, \"unit\": \"{unit}\", \"baseline\": {baseline}}}");
}

/// Stored bytes per call of `session` in a fresh store, and its call chunks' value bytes per
/// call.
fn bytes_per_call(dir: &std::path::Path, session: &ProbeSession) -> (f64, f64) {
    let store = Store::open(dir, Retention { max_bytes: u64::MAX, ..Retention::default() }).unwrap();
    store.put_probe_session(session.clone()).unwrap();
    let n = session.calls.len() as f64;
    let chunks: usize = session
        .calls
        .chunks(CHUNK_CALLS)
        .enumerate()
        .map(|(c, calls)| encode_chunk(calls, c * CHUNK_CALLS, session.start_unix_ns).len())
        .sum();
    (store.stats().unwrap().probe_bytes as f64 / n, chunks as f64 / n)
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let rounds: usize = std::env::var("LOUPE_BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
    let session = packet_loop_session(1, T0, 4, 1_000_000);
    let n = session.calls.len();
    let span = (session.end_unix_ns - session.start_unix_ns) as f64 / 1e9;

    let (per, calls_only) = bytes_per_call(&tmp.path().join("real"), &session);
    println!(
        "realistic packet loop: {n} calls over {span:.1} s on 4 threads: {per:.3} B/call stored ({calls_only:.3} in \
         the call chunks; a ProbeCall in memory: 40)"
    );
    bench("probe_bytes_per_call", per, "bytes", 12.0);
    bench("probe_chunk_bytes_per_call", calls_only, "bytes", 12.0);
    let msgpack = rmp_serde::to_vec(&session.calls).unwrap().len() as f64 / n as f64;
    println!("the same calls as plain MessagePack (what the metadata records use): {msgpack:.3} B/call");
    bench("probe_msgpack_bytes_per_call", msgpack, "bytes", 0.0);
    let (per_mixed, _) = bytes_per_call(&tmp.path().join("mixed"), &interleaved(&session));
    println!("same calls, threads interleaved (unsorted): {per_mixed:.3} B/call");
    bench("probe_bytes_per_call_interleaved", per_mixed, "bytes", 12.0);
    let random = random_session(2, T0, 1_000_000);
    let (per_random, _) = bytes_per_call(&tmp.path().join("random"), &random);
    println!("worst case (every field random): {per_random:.3} B/call");
    bench("probe_bytes_per_call_random", per_random, "bytes", 40.0);

    let store =
        Store::open(&tmp.path().join("timing"), Retention { max_bytes: u64::MAX, ..Retention::default() }).unwrap();
    let (mut put, mut get) = (f64::MAX, f64::MAX);
    for r in 0..rounds as u64 {
        let s = packet_loop_session(10 + r, T0 + (r + 1) * 3600 * SEC, 4, 1_000_000);
        let t = Instant::now();
        let id = store.put_probe_session(s).unwrap();
        put = put.min(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        let back = store.probe_session(id).unwrap().unwrap();
        get = get.min(t.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(back.calls.len(), n);
        black_box(back);
    }
    println!("put_probe_session of {n} calls: {put:.1} ms (flushed); probe_session: {get:.1} ms");
    bench("probe_put_1m_calls_ms", put, "ms", 0.0);
    bench("probe_get_1m_calls_ms", get, "ms", 0.0);

    let list_dir = tmp.path().join("list");
    let store = Store::open(&list_dir, Retention { max_bytes: u64::MAX, ..Retention::default() }).unwrap();
    for i in 0..100u64 {
        store.put_probe_session(packet_loop_session(i, T0 + i * 60 * SEC, 4, 10_000)).unwrap();
    }
    let t = Instant::now();
    let listed = store.probe_sessions(TimeRange::ALL, usize::MAX).unwrap();
    let list = t.elapsed().as_secs_f64() * 1000.0;
    assert_eq!(listed.len(), 100);
    println!("probe_sessions listing 100 sessions (10k calls each): {list:.2} ms");
    bench("probe_list_100_sessions_ms", list, "ms", 0.0);
}
