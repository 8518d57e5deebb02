//! The agent's CPU while processes come and go, which is where a profiler spends its CPU: each
//! new binary's `.eh_frame` is parsed into an unwind table (or its table read from the disk
//! cache), each new process's mappings are read, and its frames are named.
//!
//! One agent (`--frequency 10 --no-http`) on this host: after a 12-s warm-up (its first batch
//! written, the host's own binaries named), its CPU share over an idle window (the baseline,
//! measured in the same run), then over a window of churn: a process started every 50 ms from
//! 40 distinct binaries (`loupe_testbed::programs`), each living 1 s and on the CPU 2.5 ms of
//! every 50 ms (~20 alive at once, half a core between them). Then, from the store, the share
//! of those processes' samples whose user stack is whole (reaches the thread's root) and what
//! cut the others.
//!
//! Goals (issue: the agent within an operator's limits): idle ≤ 0.1 %, churn ≤ 1 % of a core,
//! ≥ 95 % of the churning processes' samples whole.
//!
//! `cargo bench -p loupe-query-host --bench agent_churn` (root; `LOUPE_BENCH_SECONDS`, the churn
//! window, default 60; the idle window is a third of it).

use std::{
    process::{Child, Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    thread,
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use loupe_testbed::{
    programs::{COMM, Programs},
    sampling::process_cpu_seconds,
};

fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64
}

/// CPU seconds the process's threads have run, to the nanosecond (`schedstat`; `stat`'s ticks
/// are 10 ms, 0.03 % of a core over 30 s).
fn cpu_seconds(pid: u32) -> f64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return process_cpu_seconds(pid).expect("the agent runs");
    };
    let ns: u64 = tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    ns as f64 / 1e9
}

/// The agent's CPU share (of one core) over `window`.
fn cpu_share(pid: u32, window: Duration) -> f64 {
    let (cpu0, t0) = (cpu_seconds(pid), Instant::now());
    thread::sleep(window);
    (cpu_seconds(pid) - cpu0) / t0.elapsed().as_secs_f64()
}

/// Starts a process every 50 ms until `stop`, each living 1 s, counting them in `started`.
fn churn(programs: Programs, stop: Arc<AtomicBool>, started: Arc<AtomicUsize>) {
    let mut alive: Vec<Child> = Vec::new();
    let mut next = Instant::now();
    let mut i = 0;
    while !stop.load(Ordering::Relaxed) {
        alive.push(programs.spawn(i, Some(Duration::from_secs(1)), Duration::from_micros(2500)));
        i += 1;
        started.store(i, Ordering::Relaxed);
        alive.retain_mut(|c| c.try_wait().ok().flatten().is_none());
        next += Duration::from_millis(50);
        thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    for mut c in alive {
        let _ = c.wait();
    }
}

fn bench(name: &str, value: f64, unit: &str) {
    println!(r#"BENCH {{"name": "{name}", "value": {value:.4}, "unit": "{unit}"}}"#);
}

fn main() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("SKIP agent_churn bench: needs root (eBPF)");
        return;
    }
    let seconds: u64 = std::env::var("LOUPE_BENCH_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(60);
    let dir = tempfile::tempdir().unwrap();
    let Some(programs) = Programs::build(&dir.path().join("programs"), 40) else {
        println!("SKIP agent_churn bench: cc cannot build the 40 programs");
        return;
    };
    let data = dir.path().join("data");
    let mut agent = Command::new(env!("CARGO_BIN_EXE_loupe"))
        .args(["agent", "--frequency", "10", "--no-http", "--data-dir"])
        .arg(&data)
        .env("RUST_LOG", "error")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("loupe agent starts");
    let pid = agent.id();
    thread::sleep(Duration::from_secs(12));
    let idle = cpu_share(pid, Duration::from_secs(seconds / 3));

    let (stop, started) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
    let spawner = {
        let (stop, started) = (stop.clone(), started.clone());
        thread::spawn(move || churn(programs, stop, started))
    };
    let from = now_ns();
    let busy = cpu_share(pid, Duration::from_secs(seconds));
    stop.store(true, Ordering::Relaxed);
    spawner.join().unwrap();
    let to = now_ns();
    // SAFETY: kill(2) on the child we spawned.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let _ = agent.wait();

    let out = Command::new(env!("CARGO_BIN_EXE_loupe"))
        .args(["profile", "--json", "--comm", COMM, "--from", &from.to_string(), "--to", &to.to_string(), "--data-dir"])
        .arg(&data)
        .output()
        .unwrap();
    let view: serde_json::Value = loupe_api::formats::deep_json::from_slice(&out.stdout).unwrap_or_default();
    let stacks = &view["user_stacks"];
    let (samples, whole) = (stacks["samples"].as_u64().unwrap_or(0), stacks["whole"].as_u64().unwrap_or(0));
    let share = whole as f64 / samples.max(1) as f64;
    let started = started.load(Ordering::Relaxed);

    println!("agent_churn, {seconds} s of churn ({started} processes of 40 binaries started, 1 s each):");
    println!(
        "  agent CPU: idle {:.3} % of a core (goal ≤ 0.1), churn {:.3} % (goal ≤ 1), churn / idle {:.1}×",
        100.0 * idle,
        100.0 * busy,
        busy / idle.max(1e-9)
    );
    println!(
        "  the churning processes' samples: {samples}, whole {whole} ({:.1} %, goal ≥ 95); cut: {}",
        100.0 * share,
        stacks["cut"]
    );
    bench("agent_cpu_idle", 100.0 * idle, "% of a core");
    bench("agent_cpu_churn", 100.0 * busy, "% of a core");
    bench("agent_cpu_churn_over_idle", busy / idle.max(1e-9), "x");
    bench("churn_whole_share", share, "fraction");
    bench("churn_samples", samples as f64, "samples");
}
