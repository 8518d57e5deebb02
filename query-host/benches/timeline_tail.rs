//! What the agent's tailing costs a program that logs: a writer (this process, logging with
//! `loupe_timeline` like any program) runs a packet-loop-shaped workload — `loop_start`, three
//! steps with ~13 µs of work each, `loop_end`, all rate 9: 5 events per ~40 µs, about 125,000
//! events a second, within what one ring read every 50 ms keeps up with — while a real
//! `loupe agent --no-stacks` tails its ring and stores the events.
//! Rounds alternate agent running / agent stopped (SIGSTOP, so nothing reads the ring), so drift
//! cancels; the figure is the median writer time per iteration with the agent over without,
//! and the agent's CPU per stored event.
//!
//! `cargo bench -p loupe-query-host --bench timeline_tail` (`LOUPE_BENCH_ROUNDS`, default 9
//! pairs of 2 s).

use std::{
    hint::black_box,
    process::{Command, Stdio},
    thread,
    time::{Duration, Instant},
};

fn bench_line(name: &str, value: f64, unit: &str, baseline: &str) {
    println!(r#"BENCH {{"name": "{name}", "value": {value:.4}, "unit": "{unit}", "baseline": "{baseline}"}}"#);
}

fn cpu_seconds(pid: i32) -> f64 {
    loupe_testbed::sampling::process_cpu_seconds(pid as u32).expect("agent alive")
}

/// ~13 µs of arithmetic (a dependent multiply-add chain).
fn work(seed: u64) -> u64 {
    let mut x = seed;
    for i in 0..80_000u64 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
    }
    x
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let rounds: usize = std::env::var("LOUPE_BENCH_ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(9);
    let dir = tempfile::tempdir().unwrap();
    let rings = dir.path().join("rings");
    std::fs::create_dir_all(&rings).unwrap();
    // SAFETY: set before any thread of this process reads the environment.
    unsafe { std::env::set_var("LOUPE_TIMELINE_DIR", &rings) };
    let tl = loupe_timeline::define;
    let start = tl("loop_start", 0, 9, &["i"]).unwrap();
    let steps = [tl("parse", 1, 9, &[]).unwrap(), tl("lookup", 1, 9, &[]).unwrap(), tl("forward", 1, 9, &[]).unwrap()];
    let end = tl("loop_end", 0, 9, &["i"]).unwrap();
    let mut agent = Command::new(env!("CARGO_BIN_EXE_loupe"))
        .args(["agent", "--no-stacks", "--no-http", "--data-dir"])
        .arg(dir.path().join("data"))
        .arg("--timeline-dir")
        .arg(&rings)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pid = agent.id() as i32;
    start.log(0, 0, 0, 0); // the ring file exists; let the agent find it
    thread::sleep(Duration::from_millis(1000));

    let round = Duration::from_secs(2);
    let mut sink = 0u64;
    let mut per_iter = |tailed: bool| {
        // SAFETY: signals to our own child.
        unsafe { libc::kill(pid, if tailed { libc::SIGCONT } else { libc::SIGSTOP }) };
        thread::sleep(Duration::from_millis(100));
        let (t0, cpu0) = (Instant::now(), cpu_seconds(pid));
        let mut n = 0u64;
        while t0.elapsed() < round {
            loupe_timeline::breath();
            start.log(n, 0, 0, 0);
            for s in &steps {
                sink ^= work(n);
                s.log(0, 0, 0, 0);
            }
            end.log(n, 0, 0, 0);
            n += 1;
        }
        let elapsed = t0.elapsed().as_secs_f64();
        (elapsed / n as f64, cpu_seconds(pid) - cpu0, n * 5, elapsed)
    };
    let (mut on, mut off) = (Vec::new(), Vec::new());
    let (mut agent_cpu, mut events, mut tailed_wall) = (0.0, 0u64, 0.0);
    for r in 0..rounds * 2 {
        // Alternate which goes first in each pair.
        let tailed = (r % 2 == 0) == (r / 2 % 2 == 0);
        let (t, cpu, n, wall) = per_iter(tailed);
        if tailed {
            on.push(t);
            agent_cpu += cpu;
            events += n;
            tailed_wall += wall;
        } else {
            off.push(t);
        }
    }
    black_box(sink);
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let _ = agent.wait();
    let spread = |v: &[f64]| {
        let (lo, hi) = (v.iter().copied().fold(f64::MAX, f64::min), v.iter().copied().fold(0.0, f64::max));
        (lo * 1e6, hi * 1e6)
    };
    let (m_on, m_off) = (median(&mut on.clone()), median(&mut off.clone()));
    let slowdown = m_on / m_off - 1.0;
    println!(
        "timeline_tail: writer iteration {:.2} µs tailed by the agent vs {:.2} µs not ({rounds} pairs of {} s; spread {:.2?} vs {:.2?} µs)",
        m_on * 1e6,
        m_off * 1e6,
        round.as_secs(),
        spread(&on),
        spread(&off)
    );
    println!(
        "timeline_tail: writer slowdown {:+.2} % (goal ≤ 5 %); {:.0} events/s logged; agent {:.3} % of one core, {:.0} ns of agent CPU per event",
        slowdown * 100.0,
        events as f64 / tailed_wall,
        agent_cpu / tailed_wall * 100.0,
        agent_cpu * 1e9 / events as f64
    );
    bench_line("timeline_writer_slowdown_tailed", slowdown * 100.0, "%", "agent stopped");
    bench_line("timeline_agent_cpu_per_event", agent_cpu * 1e9 / events as f64, "ns", "");
}
