//! Synthetic stored data whose answers are known: two runs with planted bursts, a NIC stall,
//! connection counts and cross-region bytes; stack samples with known stacks; and a profile
//! wide enough to stress a flame graph. Used by the query host's API tests, the web UI's
//! browser tests and `loupe-synth`.

use std::path::Path;

use loupe_store::{ConnCounts, Counter, CpuColumns, Frame, NewRun, Retention, RunSource, StackSample, Store};

/// 2026-11-23T00:00:00Z.
pub const T0: u64 = 1_795_392_000_000_000_000;
pub const MS: u64 = 1_000_000;
pub const SEC: u64 = 1_000_000_000;

/// Run A: 1 ms × 2000 on 2 CPUs, starting at T0. Each CPU gets half of the slot's bytes.
/// - baseline 200 B/slot in, 300 B/slot out, 1 packet each way per CPU
/// - bursts (in): slots 100..110 at 50,000 B, 500..503 at 20,000 B, slot 1999 at 60,000 B
/// - ingress connections: 40 during 100..110, 2 during 500..503, 1 elsewhere
/// - NIC stall: slots 1200..1210 no ingress at all (out continues); 1500..1503 likewise (short)
/// - cross-region: a quarter of every slot's in bytes, a tenth of out bytes
pub const RUN_A_START: u64 = T0;
/// Run B: 10 ms × 2000 on 1 CPU, at T0 + 60 s: one burst at slots 10..15 of 200,000 B
/// (20 MB/s), baseline 1,000 B; no cross-region bytes.
pub const RUN_B_START: u64 = T0 + 60 * SEC;

fn run(
    start: u64,
    interval: u64,
    cpus: u32,
    in_bytes: &[u64],
    out_bytes: &[u64],
    in_pkts: &[u64],
    out_pkts: &[u64],
    conns: &[u64],
    cross: bool,
) -> NewRun {
    let n = in_bytes.len();
    let per_cpu = (0..cpus)
        .map(|c| {
            let mut col = CpuColumns::zeroed(c, n as u32);
            let share = |v: u64| v / cpus as u64;
            for i in 0..n {
                col.counter_mut(Counter::InBytes)[i] = share(in_bytes[i]);
                col.counter_mut(Counter::OutBytes)[i] = share(out_bytes[i]);
                col.counter_mut(Counter::InPackets)[i] = share(in_pkts[i]);
                col.counter_mut(Counter::OutPackets)[i] = share(out_pkts[i]);
                if cross {
                    col.counter_mut(Counter::InCrossRegionBytes)[i] = share(in_bytes[i]) / 4;
                    col.counter_mut(Counter::OutCrossRegionBytes)[i] = share(out_bytes[i]) / 10;
                }
            }
            col
        })
        .collect();
    NewRun {
        iface: "eth0".into(),
        host: "testhost".into(),
        rack: None,
        start_unix_ns: start,
        interval_ns: interval,
        samples: n as u32,
        local_prefixes: vec![],
        source: RunSource::Imported { format: "test".into() },
        per_cpu,
        conn_counts: Some(ConnCounts { in_conns: conns.to_vec(), out_conns: vec![1; n] }),
    }
}

pub fn run_a() -> NewRun {
    let n = 2000;
    let mut in_b = vec![200u64; n];
    let out_b = vec![300u64; n];
    let mut in_p = vec![2u64; n];
    let out_p = vec![2u64; n];
    let mut conns = vec![1u64; n];
    for i in 100..110 {
        in_b[i] = 50_000;
        conns[i] = 40;
    }
    for i in 500..503 {
        in_b[i] = 20_000;
        conns[i] = 2;
    }
    in_b[1999] = 60_000;
    for i in (1200..1210).chain(1500..1503) {
        in_b[i] = 0;
        in_p[i] = 0;
    }
    run(RUN_A_START, MS, 2, &in_b, &out_b, &in_p, &out_p, &conns, true)
}

pub fn run_b() -> NewRun {
    let n = 2000;
    let mut in_b = vec![1_000u64; n];
    for b in &mut in_b[10..15] {
        *b = 200_000;
    }
    run(RUN_B_START, 10 * MS, 1, &in_b, &vec![500; n], &vec![1; n], &vec![1; n], &vec![3; n], false)
}

fn frames(names: &[&str]) -> Vec<Frame> {
    names.iter().map(|n| Frame::user(*n, "/usr/bin/svc")).collect()
}

/// Where the known samples start: inside run B's window (T0 + 60 s … + 80 s), so a run's
/// "profile of this window" shows them.
pub const SAMPLES_START: u64 = T0 + 60 * SEC;

/// Samples between T0 + 60 s and T0 + 90 s on 2 CPUs, in 3 batches of 10 s, each with
/// 100 × [hot_leaf, mid, main] (pid 100 "svc"), 34 × [cold_leaf, mid, main] (pid 100),
/// 20 × [other_leaf, main] (pid 200 "batch"), 14 idle (pid 0, "swapper/0", empty stack):
/// in all 300 hot, 102 cold, 60 other, 42 idle.
pub fn samples() -> Vec<Vec<StackSample>> {
    let mut batches = Vec::new();
    let mut t = SAMPLES_START;
    let mut k = 0u32;
    for _ in 0..3 {
        let mut b = Vec::new();
        let mut push = |pid: u32, comm: &str, idle: bool, f: Vec<Frame>, n: u32| {
            for _ in 0..n {
                k += 1;
                b.push(StackSample {
                    time_unix_ns: t + (k as u64 % 97) * 100 * MS,
                    cpu: k % 2,
                    pid,
                    tid: pid,
                    comm: comm.into(),
                    cgroup_id: 1,
                    idle,
                    frames: f.clone(),
                });
            }
        };
        push(100, "svc", false, frames(&["hot_leaf", "mid", "main"]), 100);
        push(100, "svc", false, frames(&["cold_leaf", "mid", "main"]), 100 / 3 + 1);
        push(200, "batch", false, frames(&["other_leaf", "main"]), 20);
        push(0, "swapper/0", true, vec![], 40 / 3 + 1);
        batches.push(b);
        t += 10 * SEC;
    }
    batches
}

/// Writes run A, run B and the samples into a fresh store at `dir`; returns the run ids.
pub fn fill_known(dir: &Path) -> (u64, u64) {
    let store =
        Store::open(dir, Retention { max_age: std::time::Duration::from_secs(100 * 365 * 86400), max_bytes: 1 << 40 })
            .unwrap();
    let a = store.put_run(run_a(), T0 + 90 * SEC).unwrap().id.0;
    let b = store.put_run(run_b(), T0 + 90 * SEC).unwrap().id.0;
    for batch in samples() {
        store.put_samples(&batch, 0, T0 + 90 * SEC).unwrap();
    }
    store.flush().unwrap();
    (a, b)
}

/// Adds `batches` 10-s batches of samples on 8 CPUs over about `stacks` distinct deep stacks
/// (a tree of call paths, so the merged flame graph has roughly `stacks × depth / 2` nodes),
/// starting at T0 + 120 s, under pid 300 ("wide"). Returns the number of samples.
pub fn fill_wide_profile(dir: &Path, stacks: usize, batches: usize) -> u64 {
    let store =
        Store::open(dir, Retention { max_age: std::time::Duration::from_secs(100 * 365 * 86400), max_bytes: 1 << 40 })
            .unwrap();
    // Deterministic pseudo-random call paths sharing prefixes: a realistic tree.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let paths: Vec<Vec<Frame>> = (0..stacks)
        .map(|_| {
            let depth = 8 + (next() % 16) as usize;
            let mut frames: Vec<Frame> = (0..depth)
                .map(|level| {
                    // Fan-out grows with depth: few roots, many leaves.
                    let fan = 2 + level as u64 * 3;
                    Frame::user(format!("mod{level}::func_{}", next() % fan), "/usr/bin/wide")
                })
                .collect();
            frames.reverse(); // leaf first
            frames
        })
        .collect();
    let mut n = 0;
    for b in 0..batches {
        let t0 = T0 + 120 * SEC + b as u64 * 10 * SEC;
        let batch: Vec<StackSample> = (0..stacks.max(800))
            .map(|i| StackSample {
                time_unix_ns: t0 + (i as u64 % 100) * 100 * MS,
                cpu: (i % 8) as u32,
                pid: 300,
                tid: 300 + (i % 4) as u32,
                comm: "wide".into(),
                cgroup_id: 1,
                idle: false,
                frames: paths[(i + b * 7919) % paths.len()].clone(),
            })
            .collect();
        n += batch.len() as u64;
        store.put_samples(&batch, 0, T0 + 90 * SEC).unwrap();
    }
    store.flush().unwrap();
    n
}
