//! Synthetic stored data whose answers are known: two runs with planted bursts, a NIC stall,
//! connection counts and cross-region bytes; stack samples with known stacks; and a profile
//! wide enough to stress a flame graph; probe sessions of a packet loop (per-function counts,
//! latency histograms, call trees with a planted slow `forward`). Used by the query host's API
//! tests, the web UI's browser tests and `loupe-synth`.

use std::path::Path;

use loupe_store::{
    ConnCounts, Counter, CpuColumns, Frame, NewRun, OffCpuSample, ProbeCall, ProbeFunction, ProbeSession, Retention,
    RunSource, StackSample, Store, TimelineEvent, TimelineEventDef, TimelineSource,
};

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
        clock: None,
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

/// The store at `dir`, keeping everything (the data is dated 2026-11-23). Each `fill_*` opens it
/// in turn, and a reopen right after the previous handle dropped was once refused as `Locked`
/// (in the browser tests' setup, `loupe-synth`, on a loaded machine: the lock outlived the
/// handle briefly), so a `Locked` is waited out for a few seconds.
pub fn open_kept(dir: &Path) -> Kept {
    let retention = Retention { max_age: std::time::Duration::from_secs(100 * 365 * 86400), max_bytes: 1 << 40 };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        match Store::open(dir, retention.clone()) {
            Err(loupe_store::StoreError::Locked { .. }) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => return Kept { store: Some(other.unwrap()), dir: dir.to_path_buf() },
        }
    }
}

/// A store a `fill_*` (or a test) writes before another process opens it. Dropped, it waits until sled has let go of the store's lock: sled's
/// background writes hold the lock file a moment past the last handle, and another process that
/// opens the store in that moment is refused as `Locked`. On a loaded machine that moment was
/// long enough for `loupe serve`, started right after a fill, to exit (fresh check beside a CPU
/// hog of 9d5539e, `udf_kernel::an_upload_onto_a_full_disk_fails_cleanly`).
pub struct Kept {
    store: Option<Store>,
    dir: std::path::PathBuf,
}

impl std::ops::Deref for Kept {
    type Target = Store;

    fn deref(&self) -> &Store {
        self.store.as_ref().expect("open until dropped")
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        drop(self.store.take());
        // sled locks `<dir>/db` with flock(2): free once an exclusive lock of our own is granted.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while std::time::Instant::now() < deadline {
            match std::fs::File::open(self.dir.join("db")).map(|f| f.try_lock()) {
                Err(_) | Ok(Ok(())) => return,
                Ok(Err(_)) => std::thread::sleep(std::time::Duration::from_millis(20)),
            }
        }
        panic!("the store at {} was still locked 30 s after its last handle dropped", self.dir.display());
    }
}

/// Writes run A, run B and the samples into a fresh store at `dir`; returns the run ids.
pub fn fill_known(dir: &Path) -> (u64, u64) {
    let store = open_kept(dir);
    let a = store.put_run(run_a(), T0 + 90 * SEC).unwrap().id.0;
    let b = store.put_run(run_b(), T0 + 90 * SEC).unwrap().id.0;
    for batch in samples() {
        store.put_samples(&batch, 0, T0 + 90 * SEC).unwrap();
    }
    store.flush().unwrap();
    (a, b)
}

/// A known change between two 30-s ranges of pid 400 ("changed"): [`CHANGE_BASE`] holds
/// 100 × `hash` ← `work` ← `main`, 100 × `old_path` ← `main`, 200 × `copy` ← `work` ← `main`;
/// [`CHANGE_AFTER`] holds 200 × `hash` (its share doubled, 25 % → 50 %), 100 × `new_path`
/// (new), 100 × `copy` (halved), and no `old_path` (gone). Each side 400 samples, in 3 batches.
pub fn changed_samples() -> [Vec<StackSample>; 2] {
    let side = |start: u64, mix: &[(&[&str], u32)]| {
        let mut out = Vec::new();
        let mut k = 0u64;
        for (names, n) in mix {
            for _ in 0..*n {
                out.push(StackSample {
                    time_unix_ns: start + (k % 300) * 100 * MS,
                    cpu: (k % 2) as u32,
                    pid: 400,
                    tid: 400,
                    comm: "changed".into(),
                    cgroup_id: 1,
                    idle: false,
                    frames: frames(names),
                });
                k += 1;
            }
        }
        out.sort_by_key(|s| s.time_unix_ns);
        out
    };
    [
        side(
            CHANGE_BASE.0,
            &[(&["hash", "work", "main"], 100), (&["old_path", "main"], 100), (&["copy", "work", "main"], 200)],
        ),
        side(
            CHANGE_AFTER.0,
            &[(&["hash", "work", "main"], 200), (&["new_path", "main"], 100), (&["copy", "work", "main"], 100)],
        ),
    ]
}

/// The baseline range of [`changed_samples`]: T0 + 600 s … + 630 s.
pub const CHANGE_BASE: (u64, u64) = (T0 + 600 * SEC, T0 + 630 * SEC);
/// The changed range: T0 + 660 s … + 690 s.
pub const CHANGE_AFTER: (u64, u64) = (T0 + 660 * SEC, T0 + 690 * SEC);

/// Adds [`changed_samples`] to the store in `dir`, each side in 10-s batches.
pub fn fill_changed(dir: &Path) {
    let store = open_kept(dir);
    for side in changed_samples() {
        let start = side[0].time_unix_ns - side[0].time_unix_ns % (10 * SEC);
        for b in 0..3 {
            let (from, to) = (start + b * 10 * SEC, start + (b + 1) * 10 * SEC);
            let batch: Vec<_> = side.iter().filter(|s| (from..to).contains(&s.time_unix_ns)).cloned().collect();
            store.put_samples(&batch, 0, CHANGE_AFTER.1).unwrap();
        }
    }
    store.flush().unwrap();
}

/// An event logged every time (rate 9) with these argument names.
fn def(name: &str, level: u8, args: &[&str]) -> TimelineEventDef {
    TimelineEventDef { name: name.into(), level, rate: 9, arg_names: args.iter().map(|a| a.to_string()).collect() }
}

/// The program that logs a timeline in the samples' minute: pid [`TIMELINE_PID`], "pktloop".
pub const TIMELINE_PID: u32 = 500;
/// Where its events start: T0 + 60 s, one iteration every 10 ms for 10 s.
pub const TIMELINE_START: u64 = T0 + 60 * SEC;

/// A packet loop's timeline: per iteration i (every 10 ms from [`TIMELINE_START`], 1,000 of
/// them, thread 501), `loop` (level 0, no arguments) at its start, `rx_batch` (level 1,
/// `packets` = i % 32, `bytes` = 64 × that) 100 µs later and `loop_end` (level 0, `packets`)
/// 1 ms after the start — 2 ms for every 100th iteration (its lag says so). Stored in batches
/// of 100 iterations (1 s).
pub fn timeline() -> (TimelineSource, Vec<TimelineEvent>) {
    let source = TimelineSource {
        pid: TIMELINE_PID,
        start_ticks: 4242,
        comm: "pktloop".into(),
        events: vec![def("loop", 0, &[]), def("rx_batch", 1, &["packets", "bytes"]), def("loop_end", 0, &["packets"])],
    };
    let mut events = Vec::new();
    let mut last_end: Option<u64> = None;
    for i in 0..1000u64 {
        let t = TIMELINE_START + i * 10 * MS;
        let long = if i % 100 == 99 { 2 * MS } else { MS };
        let packets = i % 32;
        let ev =
            |time, event, args, lag| TimelineEvent { time_unix_ns: time, tid: 501, cpu: 0, event, args, lag_ns: lag };
        events.push(ev(t, 0, [0; 4], last_end.map(|e| t - e)));
        events.push(ev(t + 100_000, 1, [packets, packets * 64, 0, 0], Some(100_000)));
        events.push(ev(t + long, 2, [packets, 0, 0, 0], Some(long)));
        last_end = Some(t + long);
    }
    (source, events)
}

/// Adds [`timeline`] to the store at `dir`.
pub fn fill_timeline(dir: &Path) {
    let store = open_kept(dir);
    let (source, events) = timeline();
    for chunk in events.chunks(300) {
        store.put_timeline(&source, chunk, 0, TIMELINE_START + 20 * SEC).unwrap();
    }
    store.flush().unwrap();
}

/// Where [`fill_busy_window`]'s ten minutes start: T0 + 1 h.
pub const BUSY_START: u64 = T0 + 3600 * SEC;
/// Its length.
pub const BUSY_LEN: u64 = 600 * SEC;

/// Ten minutes of a busy 16-CPU host from [`BUSY_START`] (the window view's figure): 96,000 stack
/// samples (16 CPUs at 10 Hz, 40 processes over 300 stack shapes), 100,000 timeline events
/// (5 programs of 20,000: a loop of 4 events every 120 ms per program), about 2,000 recorded probe
/// calls (a packet loop for 0.66 s, 2 threads), and 10 runs (2,000 slots of 1 ms, one a minute).
/// Returns (samples, events, calls, runs).
pub fn fill_busy_window(dir: &Path) -> (u64, u64, u64, u64) {
    let store = open_kept(dir);
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut next = move || rng.next_u64();
    let shapes: Vec<Vec<Frame>> = (0..300)
        .map(|k| {
            let depth = 4 + (next() % 12) as usize;
            let mut f: Vec<Frame> = (0..depth)
                .map(|l| Frame::user(format!("busy{l}::f{}", (k * 7 + l * 3) % (5 + l * 4)), "/usr/bin/busy"))
                .collect();
            f.reverse();
            f
        })
        .collect();
    let mut samples = 0;
    for batch in 0..60u64 {
        let start = BUSY_START + batch * 10 * SEC;
        let mut b = Vec::with_capacity(1600);
        for tick in 0..100u64 {
            for cpu in 0..16u32 {
                let r = next();
                let pid = 1000 + (r % 40) as u32;
                b.push(StackSample {
                    time_unix_ns: start + tick * 100 * MS + u64::from(cpu) * 1000,
                    cpu,
                    pid,
                    tid: pid + ((r >> 8) % 3) as u32,
                    comm: format!("svc{}", pid % 40),
                    cgroup_id: 1,
                    idle: false,
                    frames: shapes[((r >> 16) % 300) as usize].clone(),
                });
            }
        }
        samples += b.len() as u64;
        store.put_samples(&b, 0, start + 10 * SEC).unwrap();
    }
    let mut events = 0;
    for prog in 0..5u32 {
        let source = TimelineSource {
            pid: 2000 + prog,
            start_ticks: 77 + u64::from(prog),
            comm: format!("loop{prog}"),
            events: vec![
                def("rx", 1, &["packets"]),
                def("work", 2, &["items", "bytes"]),
                def("tx", 1, &["packets"]),
                def("loop_end", 0, &["iteration"]),
            ],
        };
        let mut evs = Vec::with_capacity(20_000);
        let mut last_end: Option<u64> = None;
        for i in 0..5000u64 {
            let t = BUSY_START + i * 120 * MS + u64::from(prog) * 7 * MS;
            let tid = 2000 + prog * 10;
            let ev = |time: u64, event, args, lag| TimelineEvent {
                time_unix_ns: time,
                tid,
                cpu: prog,
                event,
                args,
                lag_ns: lag,
            };
            let work = 2 * MS + (next() % 3000) * 1000;
            evs.push(ev(t, 0, [i % 64, 0, 0, 0], last_end.map(|e| t - e)));
            evs.push(ev(t + 200_000, 1, [i % 8, (i % 8) * 1500, 0, 0], Some(200_000)));
            evs.push(ev(t + work, 2, [i % 64, 0, 0, 0], Some(work - 200_000)));
            evs.push(ev(t + work + 100_000, 3, [i, 0, 0, 0], last_end.map(|e| t + work + 100_000 - e)));
            last_end = Some(t + work + 100_000);
        }
        events += evs.len() as u64;
        for chunk in evs.chunks(4000) {
            store.put_timeline(&source, chunk, 0, BUSY_START + BUSY_LEN).unwrap();
        }
    }
    let spec = LoopSpec {
        start_unix_ns: BUSY_START + 100 * SEC,
        length_ns: 660 * MS,
        threads: 2,
        mean_gap_ns: 200_000.0,
        sample_every: 16,
        raised: None,
        record_calls: true,
        bias_ns: 138,
    };
    let session = loop_session(&spec, &mut Rng(DEFAULT_SEED), vec![PROBE_PID], None, "duration");
    let calls = session.calls.len() as u64;
    store.put_probe_session(session).unwrap();
    let mut runs = 0;
    for m in 0..10u64 {
        let n = 2000;
        let ramp: Vec<u64> = (0..n as u64)
            .map(|i| 20_000 + (i * 37 + m * 101) % 9_000 + if i % 500 < 4 { 400_000 } else { 0 })
            .collect();
        let start = BUSY_START + m * 60 * SEC + 5 * SEC;
        let r = run(start, MS, 2, &ramp, &vec![8_000; n], &vec![20; n], &vec![8; n], &vec![4; n], false);
        store.put_run(r, start + 2 * SEC).unwrap();
        runs += 1;
    }
    store.flush().unwrap();
    (samples, events, calls, runs)
}

/// Waits off the CPU with known weights, in the samples' minute: pid 100 ("svc") waits in
/// `read_config` ← `main` 3 × 10 ms, each kept (1 in 1); pid 200 ("batch") in `lock_table` ←
/// `main` 2 × 5 ms, each kept 1 in 4 (so 40 ms in all). The off-CPU profile: 30 ms and 40 ms.
pub fn waits() -> Vec<OffCpuSample> {
    let wait = |i: u64, pid: u32, comm: &str, leaf: &str, waited_ns: u64, one_in: u32| OffCpuSample {
        sample: StackSample {
            time_unix_ns: SAMPLES_START + i * SEC,
            cpu: (i % 2) as u32,
            pid,
            tid: pid,
            comm: comm.into(),
            cgroup_id: 1,
            idle: false,
            frames: vec![
                Frame::kernel("schedule"),
                Frame::user(leaf, "/usr/bin/svc"),
                Frame::user("main", "/usr/bin/svc"),
            ],
        },
        waited_ns,
        one_in,
    };
    vec![
        wait(1, 100, "svc", "read_config", 10 * MS, 1),
        wait(2, 100, "svc", "read_config", 10 * MS, 1),
        wait(3, 100, "svc", "read_config", 10 * MS, 1),
        wait(4, 200, "batch", "lock_table", 5 * MS, 4),
        wait(5, 200, "batch", "lock_table", 5 * MS, 4),
    ]
}

/// Adds [`waits`] to the store in `dir`.
pub fn fill_waits(dir: &Path) {
    let store = open_kept(dir);
    store.put_off_cpu(&waits(), T0 + 90 * SEC).unwrap();
    store.flush().unwrap();
}

/// Adds `batches` 10-s batches of samples on 8 CPUs over about `stacks` distinct deep stacks
/// (a tree of call paths, so the merged flame graph has roughly `stacks × depth / 2` nodes),
/// starting at T0 + 120 s, under pid 300 ("wide"). Returns the number of samples.
pub fn fill_wide_profile(dir: &Path, stacks: usize, batches: usize) -> u64 {
    let store = open_kept(dir);
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

// ---- probe sessions ----

/// The probed program of the synthetic probe sessions: a packet loop like `testbed/fixtures/nf.c`
/// (see [`crate::nf`]): per thread and packet number i, `handle` calls `parse` once, `lookup`
/// k = 1 + i % 3 times and `forward` once, and `forward` does 10× its work when i % 100 == 99.
pub const PROBE_FUNCTIONS: [&str; 4] = ["handle", "parse", "lookup", "forward"];
pub const PROBE_PID: u32 = 4242;
pub const PROBE_BINARY: &str = "/usr/local/bin/nf";
/// The seed `loupe-synth` uses unless given `--seed`.
pub const DEFAULT_SEED: u64 = 1;

/// Start of the sampled session with calls: inside run B's window (T0 + 60 s … + 80 s).
pub const PROBE_A_START: u64 = T0 + 62 * SEC;
/// Start of the session whose budget raised its sampling: inside run A's window (T0 … + 2 s).
pub const PROBE_B_START: u64 = T0 + 500 * MS;
/// Start of the session without calls (every process that maps the binary): no run overlaps it.
pub const PROBE_C_START: u64 = T0 + 300 * SEC;

/// A deterministic generator (splitmix64): the same seed, the same sessions, on every machine.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [lo, hi).
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo)
    }

    /// Standard normal (Box–Muller).
    fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.unit();
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Log-normal around `median` ns (σ of its logarithm `sigma`), at least 1 ns.
    fn log_normal(&mut self, median: f64, sigma: f64) -> u64 {
        (median * (sigma * self.normal()).exp()).round().max(1.0) as u64
    }

    /// Exponential with mean `mean` ns.
    fn exponential(&mut self, mean: f64) -> u64 {
        (-mean * (1.0 - self.unit()).ln()) as u64
    }
}

/// One synthetic session of the packet loop.
struct LoopSpec {
    start_unix_ns: u64,
    length_ns: u64,
    /// Threads of the program (tids `PROBE_PID + 1 …`), each pinned to a CPU of its own.
    threads: u32,
    /// Mean time between two packets' arrivals on one thread.
    mean_gap_ns: f64,
    /// 1 in this many packets (outermost calls) timed, from the session's start; the budget
    /// raises it to the second value from the given offset on, if any.
    sample_every: u32,
    raised: Option<(u64, u32)>,
    record_calls: bool,
    bias_ns: u64,
}

/// What the probes of one session measured.
struct Measured {
    functions: Vec<ProbeFunction>,
    hist: Vec<std::collections::BTreeMap<u32, u64>>,
    calls: Vec<ProbeCall>,
}

impl Measured {
    fn new() -> Measured {
        let functions = PROBE_FUNCTIONS
            .iter()
            .enumerate()
            .map(|(i, name)| ProbeFunction {
                name: name.to_string(),
                symbol: name.to_string(),
                binary: PROBE_BINARY.into(),
                address: 0x1_2a0 + 0x90 * i as u64,
                probe_offset: 4,
                calls: 0,
                sampled: 0,
                total_ns: 0,
                max_ns: 0,
                buckets: Vec::new(),
            })
            .collect();
        Measured { functions, hist: vec![Default::default(); PROBE_FUNCTIONS.len()], calls: Vec::new() }
    }

    /// A timed call of `function` lasting `ns` as measured.
    fn time(&mut self, function: usize, ns: u64) {
        let f = &mut self.functions[function];
        f.sampled += 1;
        f.total_ns = f.total_ns.saturating_add(ns);
        f.max_ns = f.max_ns.max(ns);
        *self.hist[function].entry(loupe_bpf_common::probes::bucket_of(ns)).or_default() += 1;
    }
}

/// Simulates the packet loop under the probes: every call counted, the chosen packets' calls
/// timed (durations as measured: the work plus the probes' bias, a parent's including its
/// children's) and, with `record_calls`, recorded sorted by thread then entry, naming parents.
fn simulate(spec: &LoopSpec, rng: &mut Rng) -> Measured {
    let mut m = Measured::new();
    let end = spec.start_unix_ns + spec.length_ns;
    let bias = spec.bias_ns;
    for t in 0..spec.threads {
        let tid = PROBE_PID + 1 + t;
        let mut cpu = 2 + t;
        let mut now = spec.start_unix_ns + rng.range(0, 20_000);
        let mut packet: u64 = 0;
        loop {
            now += rng.exponential(spec.mean_gap_ns);
            // Leave room for the packet's calls to return before the session ends.
            if now + 200_000 > end {
                break;
            }
            if rng.unit() < 0.0005 {
                cpu = rng.range(0, 8) as u32;
            }
            let every = match spec.raised {
                Some((from, every)) if now - spec.start_unix_ns >= from => every,
                _ => spec.sample_every,
            };
            let timed = every <= 1 || rng.unit() < 1.0 / f64::from(every);
            let i = packet;
            packet += 1;

            // The calls of packet i: (function, entry, exit) as measured, handle first.
            let gap = |rng: &mut Rng| rng.range(20, 90);
            let mut children: Vec<(usize, u64, u64)> = Vec::with_capacity(5);
            let mut at = now + gap(rng);
            let mut child = |f: usize, work: u64, at: &mut u64, rng: &mut Rng| {
                let d = work + bias;
                children.push((f, *at, *at + d));
                *at += d + gap(rng);
            };
            child(1, rng.log_normal(260.0, 0.35), &mut at, rng);
            for _ in 0..1 + i % 3 {
                // A lookup that misses its cache now and then.
                let work = if rng.unit() < 0.02 { rng.log_normal(1_400.0, 0.25) } else { rng.log_normal(120.0, 0.3) };
                child(2, work, &mut at, rng);
            }
            let forward = rng.log_normal(700.0, 0.3);
            child(3, if i % 100 == 99 { forward * 10 } else { forward }, &mut at, rng);
            let exit = at + bias;

            m.functions[0].calls += 1;
            for &(f, _, _) in &children {
                m.functions[f].calls += 1;
            }
            if timed {
                m.time(0, exit - now);
                for &(f, entry, exit) in &children {
                    m.time(f, exit - entry);
                }
                if spec.record_calls {
                    let parent = m.calls.len() as u32;
                    let call = |function: usize, entry: u64, exit: u64, depth: u32, parent: Option<u32>| ProbeCall {
                        function: function as u32,
                        pid: PROBE_PID,
                        tid,
                        cpu,
                        entry_unix_ns: entry,
                        exit_unix_ns: exit,
                        depth,
                        parent,
                    };
                    m.calls.push(call(0, now, exit, 0, None));
                    for &(f, entry, exit) in &children {
                        m.calls.push(call(f, entry, exit, 1, Some(parent)));
                    }
                }
            }
            now = exit;
        }
    }
    for (f, h) in m.functions.iter_mut().zip(std::mem::take(&mut m.hist)) {
        f.buckets = h.into_iter().collect();
    }
    m
}

fn loop_session(spec: &LoopSpec, rng: &mut Rng, pids: Vec<u32>, binary: Option<&str>, ended: &str) -> ProbeSession {
    let m = simulate(spec, rng);
    let mut notes = Vec::new();
    let mut sample_every = spec.sample_every;
    if let Some((_, every)) = spec.raised {
        let calls: u64 = m.functions.iter().map(|f| f.calls).sum();
        let rate = calls as f64 / (spec.length_ns as f64 / 1e9);
        notes.push(format!(
            "sampling raised from 1 in {} to 1 in {every}: {rate:.0} calls/s cost {:.2} % of a CPU, over the budget of 1.00 %",
            spec.sample_every,
            rate * 1e-6 * 100.0,
        ));
        sample_every = every;
    }
    ProbeSession {
        id: 0,
        start_unix_ns: spec.start_unix_ns,
        end_unix_ns: spec.start_unix_ns + spec.length_ns,
        pids,
        binary: binary.map(str::to_string),
        sample_every,
        with_calls: spec.record_calls,
        ended: ended.into(),
        notes,
        bias_ns: spec.bias_ns,
        functions: m.functions,
        calls: m.calls,
        calls_lost: 0,
    }
}

/// Three sessions of the packet loop (pid [`PROBE_PID`], [`PROBE_FUNCTIONS`]), deterministic
/// from `seed`, in start order:
/// - at [`PROBE_B_START`] (in run A's window), 0.5 s, 1 thread at ~20,000 packets/s, with
///   calls; the budget raised the sampling from every packet to 1 in 64 after 5 ms (a note
///   says so); stopped by the user: ~1,500 recorded calls;
/// - at [`PROBE_A_START`] (in run B's window), 1 s, 2 threads at ~5,000 packets/s each, with
///   calls, 1 packet in 16 timed: ~3,000 recorded calls;
/// - at [`PROBE_C_START`], 2 s, on the binary (no PID), 1 thread at ~10,000 packets/s, every
///   call timed, no calls recorded.
///
/// Each `forward` of packet i % 100 == 99 does 10× the work: the slowest calls are those
/// packets' `handle`, `forward` their heaviest child.
pub fn probe_sessions(seed: u64) -> Vec<ProbeSession> {
    let mut rng = Rng(seed ^ 0x5eed_1e55_0f00_d000);
    let budget = LoopSpec {
        start_unix_ns: PROBE_B_START,
        length_ns: 500 * MS,
        threads: 1,
        mean_gap_ns: 50_000.0,
        sample_every: 1,
        raised: Some((5 * MS, 64)),
        record_calls: true,
        bias_ns: 141,
    };
    let sampled = LoopSpec {
        start_unix_ns: PROBE_A_START,
        length_ns: SEC,
        threads: 2,
        mean_gap_ns: 200_000.0,
        sample_every: 16,
        raised: None,
        record_calls: true,
        bias_ns: 138,
    };
    let counts = LoopSpec {
        start_unix_ns: PROBE_C_START,
        length_ns: 2 * SEC,
        threads: 1,
        mean_gap_ns: 100_000.0,
        sample_every: 1,
        raised: None,
        record_calls: false,
        bias_ns: 143,
    };
    vec![
        loop_session(&budget, &mut rng, vec![PROBE_PID], None, "stopped"),
        loop_session(&sampled, &mut rng, vec![PROBE_PID], None, "duration"),
        loop_session(&counts, &mut rng, vec![], Some(PROBE_BINARY), "duration"),
    ]
}

/// Stores [`probe_sessions`] into the store at `dir` (`Store::put_probe_session`); returns
/// their ids, in start order.
pub fn fill_probes(dir: &Path, seed: u64) -> Vec<u64> {
    let store = open_kept(dir);
    let ids = probe_sessions(seed).into_iter().map(|s| store.put_probe_session(s).unwrap()).collect();
    store.flush().unwrap();
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_sessions_are_deterministic_and_well_formed() {
        let sessions = probe_sessions(DEFAULT_SEED);
        assert_eq!(sessions, probe_sessions(DEFAULT_SEED));
        assert_ne!(sessions, probe_sessions(DEFAULT_SEED + 1));
        assert_eq!(sessions.len(), 3);
        for s in &sessions {
            assert!(s.end_unix_ns > s.start_unix_ns);
            for f in &s.functions {
                let timed: u64 = f.buckets.iter().map(|b| b.1).sum();
                assert_eq!(timed, f.sampled, "{}", f.name);
                assert!(f.sampled <= f.calls && f.sampled > 0, "{}", f.name);
            }
            // handle : parse : forward = 1 : 1 : 1, lookups 1 + i % 3 per packet (2 on average).
            let calls: Vec<u64> = s.functions.iter().map(|f| f.calls).collect();
            assert_eq!(calls[0], calls[1]);
            assert_eq!(calls[0], calls[3]);
            assert!(calls[2] >= calls[0] * 2 - 2 && calls[2] <= calls[0] * 2 + 2, "{calls:?}");
            for (i, c) in s.calls.iter().enumerate() {
                assert!(c.entry_unix_ns >= s.start_unix_ns && c.exit_unix_ns <= s.end_unix_ns);
                match c.parent {
                    None => assert_eq!((c.function, c.depth), (0, 0)),
                    Some(p) => {
                        let p = &s.calls[p as usize];
                        assert!((p.parent, p.function, c.depth, p.tid) == (None, 0, 1, c.tid), "call {i}");
                        assert!(p.entry_unix_ns < c.entry_unix_ns && c.exit_unix_ns < p.exit_unix_ns, "call {i}");
                    }
                }
            }
            if s.with_calls {
                let recorded = s.calls.len();
                assert!((300..=5_000).contains(&recorded), "{recorded} recorded calls");
                for (f, name) in s.functions.iter().zip(PROBE_FUNCTIONS) {
                    assert_eq!(
                        s.calls.iter().filter(|c| PROBE_FUNCTIONS[c.function as usize] == name).count() as u64,
                        f.sampled
                    );
                }
                // The slowest outermost call: a slow forward's packet, forward its heaviest child.
                let dur = |c: &ProbeCall| c.exit_unix_ns - c.entry_unix_ns;
                let (root, slowest) =
                    s.calls.iter().enumerate().filter(|(_, c)| c.parent.is_none()).max_by_key(|(_, c)| dur(c)).unwrap();
                let heaviest = s.calls.iter().filter(|c| c.parent == Some(root as u32)).max_by_key(|c| dur(c)).unwrap();
                assert_eq!(heaviest.function, 3);
                let median_forward = {
                    let mut d: Vec<u64> = s.calls.iter().filter(|c| c.function == 3).map(dur).collect();
                    d.sort_unstable();
                    d[d.len() / 2]
                };
                assert!(dur(heaviest) > 5 * median_forward && dur(heaviest) * 2 > dur(slowest));
            } else {
                assert!(s.calls.is_empty());
            }
        }
        assert_eq!(sessions[0].sample_every, 64);
        assert_eq!(sessions[0].notes.len(), 1);
        assert_eq!(sessions[2].binary.as_deref(), Some(PROBE_BINARY));
    }

    #[test]
    fn probe_sessions_store() {
        let dir = tempfile::tempdir().unwrap();
        let ids = fill_probes(dir.path(), DEFAULT_SEED);
        assert_eq!(ids, vec![1, 2, 3]);
        let store = Store::open(
            dir.path(),
            Retention { max_age: std::time::Duration::from_secs(100 * 365 * 86400), max_bytes: 1 << 40 },
        )
        .unwrap();
        let mut want = probe_sessions(DEFAULT_SEED);
        for (id, s) in ids.iter().zip(&mut want) {
            s.id = *id;
            assert_eq!(store.probe_session(*id).unwrap().as_ref(), Some(&*s));
        }
    }
}
