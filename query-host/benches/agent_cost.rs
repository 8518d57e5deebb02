//! What the always-on stack sampler costs: a `loupe agent` sampling stacks at 10 Hz on every CPU
//! (no traffic runs), measured from outside through /proc: CPU seconds per wall second after a
//! warm-up (first-time symbolization of the host's binaries is excluded), and peak RSS; and
//! per thread, CPU and how often it ran (`schedstat`), which says where the cost goes.
//!
//! Four agents in turn: on an idle host, with user stacks unwound from the binaries' tables
//! (the default) and by frame pointers only (`--no-unwind-tables`, the baseline of the first);
//! and while a process keeps one CPU busy in a libc
//! function that only libc's debug file names, with `--no-debug-files` and with debug files
//! looked up (their ratio is what naming frames from debug files costs). CPU per sample divides
//! by the samples the agent stored in the window (idle ones included).
//!
//! `cargo bench -p loupe-query-host --bench agent_cost` (root; `LOUPE_BENCH_SECONDS`, default 60).

use std::{
    fs,
    process::{Command, Stdio},
    thread,
    time::{Duration, Instant},
};

fn cpu_seconds(pid: u32) -> f64 {
    loupe_testbed::sampling::process_cpu_seconds(pid).expect("agent alive")
}

fn status_kb(pid: u32, key: &str) -> u64 {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status.lines().find(|l| l.starts_with(key)).and_then(|l| l.split_whitespace().nth(1)).unwrap().parse().unwrap()
}

/// Per thread name: CPU nanoseconds and times it ran (`/proc/PID/task/*/schedstat`: exact,
/// where `stat`'s ticks are 10 ms).
fn threads(pid: u32) -> std::collections::BTreeMap<String, (u64, u64)> {
    let mut out = std::collections::BTreeMap::new();
    for task in fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten().flatten() {
        let name = fs::read_to_string(task.path().join("comm")).unwrap_or_default().trim().to_string();
        let stat = fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
        let f: Vec<u64> = stat.split_whitespace().filter_map(|x| x.parse().ok()).collect();
        if let [ns, _, runs] = f[..] {
            let e = out.entry(name).or_insert((0, 0));
            e.0 += ns;
            e.1 += runs;
        }
    }
    out
}

/// What one agent cost over the measured window.
struct Figures {
    cpu_share: f64,
    wall: f64,
    samples: u64,
    rss_kb: u64,
    hwm_kb: u64,
    /// Per thread name: CPU µs per second and wakeups per second over the window.
    threads: Vec<(String, f64, f64)>,
}

/// Runs `loupe agent` (stacks only, 10 Hz) with `extra` arguments for a warm-up and then
/// `seconds`, optionally while `workload` keeps one CPU busy.
fn measure(extra: &[&str], workload: Option<&std::path::Path>, seconds: u64) -> Figures {
    let dir = tempfile::tempdir().unwrap();
    let mut agent = Command::new(env!("CARGO_BIN_EXE_loupe"))
        .args(["agent", "--frequency", "10", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .args(extra)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let pid = agent.id();
    let warmup = Duration::from_secs(12); // one batch written, the host's binaries symbolized once
    let mut busy = workload.map(|w| {
        let secs = (warmup.as_secs() + seconds + 5).to_string();
        Command::new(w).args(["libc", &secs]).stdout(Stdio::null()).spawn().unwrap()
    });
    thread::sleep(warmup);
    let (cpu0, t0, from, threads0) = (cpu_seconds(pid), Instant::now(), now_ns(), threads(pid));
    thread::sleep(Duration::from_secs(seconds));
    let (cpu1, wall, to, threads1) = (cpu_seconds(pid), t0.elapsed().as_secs_f64(), now_ns(), threads(pid));
    let threads = threads1
        .iter()
        .map(|(name, &(ns, runs))| {
            let (ns0, runs0) = threads0.get(name).copied().unwrap_or((0, 0));
            (name.clone(), ns.saturating_sub(ns0) as f64 / 1e3 / wall, runs.saturating_sub(runs0) as f64 / wall)
        })
        .filter(|t| t.2 > 0.0)
        .collect();
    let rss_kb = status_kb(pid, "VmRSS:");
    let hwm_kb = status_kb(pid, "VmHWM:");
    // SAFETY: kill(2) on the child we spawned.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let _ = agent.wait();
    if let Some(b) = busy.as_mut() {
        let _ = b.kill();
        let _ = b.wait();
    }
    // Samples the agent stored in the window (idle ones too: each cost the same to take).
    let out = Command::new(env!("CARGO_BIN_EXE_loupe"))
        .args(["profile", "--json", "--idle", "--from", &from.to_string(), "--to", &to.to_string(), "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let view: serde_json::Value = loupe_query_host::formats::deep_json::from_slice(&out.stdout).unwrap_or_default();
    Figures {
        cpu_share: (cpu1 - cpu0) / wall,
        wall,
        samples: view["samples"].as_u64().unwrap_or(0),
        rss_kb,
        hwm_kb,
        threads,
    }
}

fn now_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
}

fn report(name: &str, what: &str, f: &Figures) {
    let per_sample_us = if f.samples == 0 { 0.0 } else { f.cpu_share * f.wall * 1e6 / f.samples as f64 };
    println!(
        "agent_cost: {what}: {:.3} % of one core (±{:.3} %: /proc ticks are 10 ms), {} samples = {per_sample_us:.0} µs of agent CPU per sample, RSS {} KiB (peak {} KiB)",
        f.cpu_share * 100.0,
        1.0 / f.wall,
        f.samples,
        f.rss_kb,
        f.hwm_kb
    );
    for (thread, us, wakeups) in &f.threads {
        println!("agent_cost:   thread {thread:<16} {us:>7.1} µs of CPU/s, {wakeups:>5.1} runs/s");
    }
    let exact: f64 = f.threads.iter().map(|t| t.1).sum::<f64>() / 1e4;
    println!("agent_cost:   all threads (schedstat, exact): {exact:.3} % of one core");
    println!(r#"BENCH {{"name": "agent_cpu_{name}", "value": {:.5}, "unit": "% of one core"}}"#, f.cpu_share * 100.0);
    println!(r#"BENCH {{"name": "agent_cpu_exact_{name}", "value": {exact:.5}, "unit": "% of one core"}}"#);
    println!(r#"BENCH {{"name": "agent_cpu_per_sample_{name}", "value": {per_sample_us:.1}, "unit": "us"}}"#);
    println!(r#"BENCH {{"name": "agent_rss_{name}", "value": {}, "unit": "KiB"}}"#, f.rss_kb);
}

fn main() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("SKIP agent_cost bench: needs root");
        return;
    }
    let seconds: u64 = std::env::var("LOUPE_BENCH_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(60);
    println!(
        "agent_cost: stacks at 10 Hz on {} CPUs, {seconds} s each after a 12 s warm-up, HTTP server idle",
        num_cpus()
    );
    let idle = measure(&[], None, seconds);
    report("idle_host", "idle host", &idle);
    // The same idle host with user stacks walked by frame pointers only: what unwinding from
    // the binaries' tables adds (loading them, the loader thread, the longer kernel walk).
    let frame_pointers = measure(&["--no-unwind-tables"], None, seconds);
    report("idle_host_frame_pointers_only", "idle host, --no-unwind-tables", &frame_pointers);
    compare(
        "unwind_tables",
        "unwinding from tables / frame pointers only, idle host",
        &idle,
        &frame_pointers,
        "--no-unwind-tables",
    );
    // A process spending its time in libc, whose hot function only libc's debug file names:
    // the agent's cost with and without looking for debug files.
    let dir = tempfile::tempdir().unwrap();
    let names = dir.path().join("names");
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testbed/fixtures/names.c");
    let ok = Command::new("cc").args(["-O2", "-fno-omit-frame-pointer", "-o"]).arg(&names).arg(&src).status();
    if !ok.is_ok_and(|s| s.success()) {
        println!("SKIP agent_cost debug-file comparison: cc cannot build {}", src.display());
        return;
    }
    let off = measure(&["--no-debug-files"], Some(&names), seconds);
    report("libc_busy_no_debug_files", "one CPU busy in libc, --no-debug-files", &off);
    let on = measure(&[], Some(&names), seconds);
    report("libc_busy_debug_files", "one CPU busy in libc, debug files looked up", &on);
    compare("debug_files", "debug-file lookup on / off", &on, &off, "--no-debug-files");
}

/// Prints the CPU and RSS ratios of two agents, and the CPU ratio as a BENCH line.
fn compare(name: &str, what: &str, with: &Figures, baseline: &Figures, baseline_flag: &str) {
    let ratio = with.cpu_share / baseline.cpu_share.max(1e-9);
    println!("agent_cost: {what}: CPU {ratio:.2}x, RSS {:.2}x", with.rss_kb as f64 / baseline.rss_kb.max(1) as f64);
    println!(
        r#"BENCH {{"name": "agent_cpu_{name}_ratio", "value": {ratio:.3}, "unit": "ratio", "baseline": "{baseline_flag}"}}"#
    );
}

fn num_cpus() -> usize {
    thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}
