//! What the always-on stack sampler costs: a `loupe agent` sampling stacks at 10 Hz on every CPU
//! (no traffic runs), measured from outside through /proc: CPU seconds per wall second after a
//! warm-up (first-time symbolization of the host's binaries is excluded), and peak RSS.
//!
//! `cargo bench -p loupe-query-host --bench agent_cost` (root; `LOUPE_BENCH_SECONDS`, default 60).

use std::{
    fs,
    process::{Command, Stdio},
    thread,
    time::{Duration, Instant},
};

fn cpu_seconds(pid: u32) -> f64 {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).expect("agent alive");
    // Fields after the command name (which is in parentheses and may contain spaces).
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = (f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()) as f64; // utime + stime
    ticks / 100.0 // USER_HZ
}

fn status_kb(pid: u32, key: &str) -> u64 {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status.lines().find(|l| l.starts_with(key)).and_then(|l| l.split_whitespace().nth(1)).unwrap().parse().unwrap()
}

fn main() {
    if unsafe { libc::geteuid() } != 0 {
        println!("SKIP agent_cost bench: needs root");
        return;
    }
    let seconds: u64 = std::env::var("LOUPE_BENCH_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(60);
    let dir = tempfile::tempdir().unwrap();
    let mut agent = Command::new(env!("CARGO_BIN_EXE_loupe"))
        .args(["agent", "--frequency", "10", "--data-dir"])
        .arg(dir.path())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let pid = agent.id();
    let warmup = Duration::from_secs(12); // one batch written, the host's binaries symbolized once
    thread::sleep(warmup);
    let (cpu0, t0) = (cpu_seconds(pid), Instant::now());
    thread::sleep(Duration::from_secs(seconds));
    let (cpu1, wall) = (cpu_seconds(pid), t0.elapsed().as_secs_f64());
    let rss = status_kb(pid, "VmRSS:");
    let hwm = status_kb(pid, "VmHWM:");
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let _ = agent.wait();
    let share = (cpu1 - cpu0) / wall;
    println!("agent_cost: stacks at 10 Hz on {} CPUs, {wall:.0} s after a {} s warm-up", num_cpus(), warmup.as_secs());
    println!(
        "agent_cost: {:.5} CPU s per wall s = {:.3} % of one core (goal < 0.1 %; /proc ticks are 10 ms, so ±{:.3} %)",
        share,
        share * 100.0,
        1.0 / wall
    );
    println!("agent_cost: RSS {rss} KiB now, peak {hwm} KiB");
}

fn num_cpus() -> usize {
    thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}
