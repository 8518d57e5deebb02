//! Run generators shared by the integration tests and the benchmark.
#![allow(dead_code)]

use loupe_store::{ConnCounts, Counter, CpuColumns, NewRun, RunSource};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

pub mod open;
pub mod probes;
pub mod samples;
pub mod timeline;

#[allow(unused_imports)] // each test binary uses some of them
pub use open::{open_sled, open_store, try_open_store, with_tree};

pub const T0: u64 = 1_700_000_000_000_000_000; // 2023-11-14T22:13:20Z
pub const SEC: u64 = 1_000_000_000;
pub const DAY: u64 = 86_400 * SEC;

pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

/// A run whose columns are all zero.
pub fn idle_run(start_unix_ns: u64, interval_ns: u64, samples: u32, cpus: u32) -> NewRun {
    NewRun {
        iface: "eth0".into(),
        host: "host-a1.example".into(),
        rack: Some("rack-17".into()),
        start_unix_ns,
        interval_ns,
        samples,
        local_prefixes: vec!["10.0.0.0/8".into(), "2001:db8::/32".into()],
        source: RunSource::Agent,
        per_cpu: (0..cpus).map(|c| CpuColumns::zeroed(c, samples)).collect(),
        conn_counts: None,
        clock: None,
    }
}

/// Realistic traffic: on/off bursts covering about `busy` of the slots, packet sizes from
/// ACKs to MTU, occasional CE marks and retransmits, connection sketches with a few bits.
pub fn bursty_run(
    rng: &mut StdRng,
    start_unix_ns: u64,
    interval_ns: u64,
    samples: u32,
    cpus: u32,
    busy: f64,
) -> NewRun {
    let mut run = idle_run(start_unix_ns, interval_ns, samples, cpus);
    let mean_burst = 20.0;
    let p_end = 1.0 / mean_burst;
    let p_start = (busy / (1.0 - busy)) * p_end;
    for cols in &mut run.per_cpu {
        // A handful of connections, each hashed to one of 128 sketch bits.
        let conns: Vec<u32> = (0..rng.random_range(2..10)).map(|_| rng.random_range(0..128)).collect();
        let mut on = false;
        let mut active: u128 = 0;
        for s in 0..samples as usize {
            on = if on { !rng.random_bool(p_end) } else { rng.random_bool(p_start) };
            if !on {
                continue;
            }
            let in_pk: u64 = rng.random_range(1..60);
            let out_pk: u64 = rng.random_range(1..30);
            let in_b = in_pk * rng.random_range(600..1500);
            let out_b = out_pk * rng.random_range(66..400);
            cols.counter_mut(Counter::InPackets)[s] = in_pk;
            cols.counter_mut(Counter::OutPackets)[s] = out_pk;
            cols.counter_mut(Counter::InBytes)[s] = in_b;
            cols.counter_mut(Counter::OutBytes)[s] = out_b;
            if rng.random_bool(0.05) {
                cols.counter_mut(Counter::InCeBytes)[s] = in_b / rng.random_range(1..4);
            }
            if rng.random_bool(0.01) {
                cols.counter_mut(Counter::InRetxBytes)[s] = 1448;
            }
            if rng.random_bool(0.01) {
                cols.counter_mut(Counter::OutRetxBytes)[s] = 1448;
            }
            if rng.random_bool(0.3) {
                cols.counter_mut(Counter::InCrossRegionBytes)[s] = in_b / 3;
                cols.counter_mut(Counter::OutCrossRegionBytes)[s] = out_b / 3;
            }
            // Connections come and go now and then; otherwise the same set stays active.
            if active == 0 || rng.random_bool(0.1) {
                active = conns.iter().filter(|_| rng.random_bool(0.6)).fold(0u128, |a, b| a | (1u128 << b));
                if active == 0 {
                    active = 1u128 << conns[0];
                }
            }
            cols.in_conns[s] = active;
            cols.out_conns[s] = active;
        }
    }
    run
}

/// Every slot random: full-width counters and dense sketches with the high bits set.
pub fn random_run(rng: &mut StdRng, start_unix_ns: u64, samples: u32, cpus: &[u32]) -> NewRun {
    let mut run = idle_run(start_unix_ns, 1_000_000, samples, 0);
    run.per_cpu = cpus
        .iter()
        .map(|&cpu| {
            let mut c = CpuColumns::zeroed(cpu, samples);
            for col in c.counters.iter_mut() {
                for v in col.iter_mut() {
                    *v = match rng.random_range(0..4) {
                        0 => 0,
                        1 => rng.random_range(1..128),
                        2 => u64::MAX - rng.random_range(0..3),
                        _ => rng.random(),
                    };
                }
            }
            for col in [&mut c.in_conns, &mut c.out_conns] {
                for v in col.iter_mut() {
                    *v = match rng.random_range(0..5) {
                        0 => 0,
                        1 => 1u128 << 127,
                        2 => (1u128 << 127) | (1 << 64) | 1,
                        3 => u128::MAX,
                        _ => rng.random(),
                    };
                }
            }
            c
        })
        .collect();
    run
}

pub fn with_counts(mut run: NewRun, rng: &mut StdRng) -> NewRun {
    let n = run.samples as usize;
    run.source = RunSource::Imported { format: "millisampler-csv".into() };
    run.conn_counts = Some(ConnCounts {
        in_conns: (0..n).map(|_| rng.random_range(0..600)).collect(),
        out_conns: (0..n).map(|i| if i % 3 == 0 { 0 } else { u64::MAX }).collect(),
    });
    run
}

/// Re-runs this test binary's ignored test `child_test` as a child process that writes to
/// `dir` and prints `PUT <id>` after each acknowledged write; waits for its first write, lets
/// it go on for `run_for`, SIGKILLs it, and returns every id it acknowledged.
#[allow(dead_code)]
pub fn kill_writer_mid_stream(child_test: &str, env: &[(&str, String)], run_for: std::time::Duration) -> Vec<u64> {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(&exe)
        .args(["--exact", child_test, "--ignored", "--nocapture", "--test-threads=1"])
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let parse = |l: String| l.strip_prefix("PUT ").and_then(|s| s.parse::<u64>().ok());
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // (libtest prints its own header lines first.)
    let first = lines.by_ref().map_while(Result::ok).find_map(parse).expect("child exited without writing");
    let deadline = std::time::Instant::now() + run_for;
    let reader = std::thread::spawn(move || lines.map_while(Result::ok).filter_map(parse).collect::<Vec<_>>());
    std::thread::sleep(deadline.saturating_duration_since(std::time::Instant::now()));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let mut acked = vec![first];
    acked.extend(reader.join().unwrap());
    acked
}
