//! What off-CPU sampling costs at a high context-switch rate, on a real kernel (root). Printed
//! figures, no pass/fail gate.
//!
//! `testbed/fixtures/waits.c naps 20 SECONDS`: 20 threads each napping 1 ms at a time, ~20,000
//! blocks (and as many switches back) a second. Against it, the stack sampler at 10 Hz runs
//! with off-CPU sampling (its defaults: blocks ≥ 1 ms, at most 200 stacks a second) and
//! without — the baseline, measured in the same rounds, interleaved. The cost is the off-CPU
//! program's own run time as the kernel counts it (`kernel.bpf_stats_enabled`: every
//! `sched_switch` on the host, taken or not) plus the extra CPU this process spent draining the
//! ring, as a share of one core.
//!
//! A third configuration takes at most 1 stack a second: what every switch costs by itself
//! (the lookup of the task switched in), apart from what each stack taken costs.
//!
//! `cargo bench -p loupe-testbed --bench off_cpu`

use std::{
    path::Path,
    process::Command,
    time::{Duration, Instant},
};

use loupe_bpf::{OffCpuOptions, StackSampler, StackSamplerOptions};

const STATS: &str = "/proc/sys/kernel/bpf_stats_enabled";
const THREADS: &str = "20";
const SECONDS: f64 = 3.0;

fn main() {
    // SAFETY: geteuid only reads the process's credentials.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIP off_cpu bench: needs root (eBPF, perf events, tracepoints)");
        return;
    }
    let before = std::fs::read_to_string(STATS).unwrap_or_else(|_| "0".into());
    std::fs::write(STATS, "1").expect("enabling BPF run-time stats");
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("waits");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/waits.c");
    let ok = Command::new("cc").args(["-O2", "-pthread", "-o"]).arg(&exe).arg(&src).status();
    assert!(ok.expect("running cc").success());
    let rounds = 3;
    let (mut with, mut without, mut rates, mut samples) = (vec![], vec![], vec![], vec![]);
    let (mut switch_only, mut switch_runs, mut switch_ns) = (vec![], vec![], vec![]);
    let few = OffCpuOptions { max_stacks_per_second: 1, ..OffCpuOptions::default() };
    for _ in 0..rounds {
        without.push(round(&exe, None).cost);
        let r = round(&exe, Some(OffCpuOptions::default()));
        with.push(r.cost);
        rates.push(r.blocks_per_second);
        samples.push(r.stacks_per_second);
        let r = round(&exe, Some(few.clone()));
        switch_only.push(r.cost);
        switch_runs.push(r.runs_per_second);
        switch_ns.push(r.kernel_ns_per_run);
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (with, without, rate, taken) = (median(with), median(without), median(rates), median(samples));
    let (switch_only, switch_runs, switch_ns) = (median(switch_only), median(switch_runs), median(switch_ns));
    let extra = (with - without).max(0.0);
    // What each stack taken adds over the switches alone: its kernel and user walks, holding it,
    // sending it, and the drain.
    let per_stack_us = (with - switch_only).max(0.0) * 1e6 / taken.max(1.0);
    println!(
        "# off-CPU sampling at {rate:.0} blocks/s: {:.3} % of a core ({:.3} % with it, {:.3} % without: the drain), \
         {taken:.0} off-CPU samples a second sent ({rounds} rounds, medians)",
        extra * 100.0,
        with * 100.0,
        without * 100.0
    );
    println!(
        "# of which every switch: {switch_ns:.0} ns in the program, {switch_runs:.0} switches/s = {:.3} % of a core \
         (at most 1 stack a second); each stack taken: {per_stack_us:.1} us",
        switch_only * 100.0
    );
    println!(
        r#"BENCH {{"name": "off_cpu_cost_core_percent", "value": {:.4}, "unit": "%", "baseline": {:.4}}}"#,
        with * 100.0,
        without * 100.0
    );
    println!(r#"BENCH {{"name": "off_cpu_blocks_per_second", "value": {rate:.0}, "unit": "1/s"}}"#);
    println!(r#"BENCH {{"name": "off_cpu_ns_per_block", "value": {:.1}, "unit": "ns"}}"#, extra * 1e9 / rate.max(1.0));
    println!(r#"BENCH {{"name": "off_cpu_ns_per_switch", "value": {switch_ns:.1}, "unit": "ns"}}"#);
    println!(r#"BENCH {{"name": "off_cpu_us_per_stack", "value": {per_stack_us:.2}, "unit": "us"}}"#);
    let _ = std::fs::write(STATS, before.trim());
}

/// What one window of naps under a sampler cost.
struct Round {
    /// Share of a core spent on off-CPU sampling (the program's run time) and the drain.
    cost: f64,
    blocks_per_second: f64,
    /// Off-CPU samples a second sent.
    stacks_per_second: f64,
    /// The tracepoint program's runs a second (every switch on the host) and its mean run time.
    runs_per_second: f64,
    kernel_ns_per_run: f64,
}

fn round(exe: &Path, off_cpu: Option<OffCpuOptions>) -> Round {
    let on = off_cpu.is_some();
    let options = StackSamplerOptions { frequency_hz: 10, off_cpu, ..Default::default() };
    let mut sampler = StackSampler::start(&options).expect("starting the sampler");
    let mut child = Command::new(exe).args(["naps", THREADS, &SECONDS.to_string()]).spawn().unwrap();
    // Let the ratio settle on the rate (it follows it once a second).
    let mut out = Vec::new();
    let settle = Instant::now() + Duration::from_millis(1200);
    while Instant::now() < settle {
        sampler.drain(&mut out, Duration::from_millis(100)).unwrap();
    }
    out.clear();
    let (runs0, time0) = if on { sampler.off_cpu_program_stats().unwrap() } else { (0, Duration::ZERO) };
    let (cpu0, t0) = (own_cpu(), Instant::now());
    let window = Duration::from_millis(1500);
    while t0.elapsed() < window {
        sampler.drain(&mut out, Duration::from_millis(100)).unwrap();
    }
    let (cpu1, wall) = (own_cpu(), t0.elapsed().as_secs_f64());
    let (runs1, time1) = if on { sampler.off_cpu_program_stats().unwrap() } else { (0, Duration::ZERO) };
    let _ = child.wait();
    let kernel = (time1 - time0).as_secs_f64();
    let rate = sampler.off_cpu_stats().map_or(0.0, |s| s.blocks_per_second);
    let taken = out.iter().filter(|s| s.off_cpu.is_some()).count() as f64 / wall;
    let runs = (runs1 - runs0) as f64;
    let kernel_ns_per_run = kernel * 1e9 / runs.max(1.0);
    if on {
        eprintln!("  off-CPU program: {runs} runs, {kernel_ns_per_run:.0} ns each, {taken:.0} stacks/s");
    }
    Round {
        cost: (kernel + (cpu1 - cpu0)) / wall,
        blocks_per_second: rate,
        stacks_per_second: taken,
        runs_per_second: runs / wall,
        kernel_ns_per_run,
    }
}

/// This process's CPU time (user + system), in seconds.
fn own_cpu() -> f64 {
    // SAFETY: getrusage writes the struct it is given.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}
