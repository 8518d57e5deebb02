//! What off-CPU sampling costs at a high context-switch rate, and how close its estimate comes
//! to the truth, on a real kernel (root). Printed figures, no pass/fail gate.
//!
//! **Cost.** `testbed/fixtures/waits.c naps 20 SECONDS`: 20 threads each napping 1 ms at a time,
//! ~20,000 blocks (and as many switches back) a second. Against it, the stack sampler at 10 Hz
//! runs with off-CPU sampling (its defaults: every wait ≥ 5 ms, shorter ones by length, at most
//! 500 sent a second) and without — the baseline, measured in the same rounds, interleaved. The
//! cost is the off-CPU program's own run time as the kernel counts it
//! (`kernel.bpf_stats_enabled`: every `sched_switch` on the host, taken or not) plus the extra
//! CPU this process spent draining the ring, as a share of one core. A third configuration sends
//! at most 1 stack a second: what every switch costs by itself, apart from each stack taken.
//!
//! **Error.** `waits mixed 4 2000`: three threads waiting known times (7-ms naps, 30-ms pipe
//! reads, 40-ms condition waits) beside four threads blocking ~4,000 times a second in 1-ms naps.
//! Each function's time waited as sampled against the program's own clock, kept by length (the
//! default) and — the baseline, in the same run — kept 1 block in N by count (`exact` 0: every
//! wait counts as long, so N follows the whole host's blocking rate, as Loupe sampled before).
//!
//! `cargo bench -p loupe-testbed --bench off_cpu`

use std::{
    path::Path,
    process::Command,
    time::{Duration, Instant},
};

use loupe_bpf::{OffCpuOptions, StackSampler, StackSamplerOptions};
use loupe_testbed::waits::{self, Functions};

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
    let exe = waits::build(dir.path());
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
    errors(&exe);
}

/// Each function's error, kept by length against kept by count, over a few runs of `mixed`.
fn errors(exe: &Path) {
    let functions = Functions::of(exe);
    let by_count = OffCpuOptions { exact: Duration::ZERO, ..OffCpuOptions::default() };
    let mut worst: Vec<(&str, f64, f64)> = Vec::new();
    for (label, options) in [("by time", OffCpuOptions::default()), ("by count", by_count)] {
        let sampler_options = StackSamplerOptions { frequency_hz: 10, off_cpu: Some(options), ..Default::default() };
        let mut sampler = StackSampler::start(&sampler_options).expect("starting the sampler");
        for run in 1..=3 {
            let mut mixed = waits::Mixed::spawn(exe, 4, 2000);
            let pid = mixed.pid;
            sampler.load_process(pid).expect("loading the fixture's tables");
            mixed.go();
            let mut out = Vec::new();
            while mixed.running() {
                sampler.drain(&mut out, Duration::from_millis(100)).unwrap();
            }
            sampler.drain(&mut out, Duration::ZERO).unwrap();
            let truth = mixed.finish();

            let stats = sampler.off_cpu_stats().unwrap_or_default();
            let estimates = truth.estimates(pid, &out, &functions);
            let line: Vec<String> = estimates
                .iter()
                .map(|e| format!("{} {:+.1} % ({} samples)", e.function, e.error() * 100.0, e.samples))
                .collect();
            eprintln!("  {label} run {run} (1 in {}, scale {:?}): {}", stats.one_in, stats.scale, line.join(", "));
            for e in estimates {
                let at = match worst.iter().position(|w| w.0 == e.function) {
                    Some(at) => at,
                    None => {
                        worst.push((e.function, 0.0, 0.0));
                        worst.len() - 1
                    }
                };
                let slot = if label == "by time" { &mut worst[at].1 } else { &mut worst[at].2 };
                *slot = slot.max(e.error().abs() * 100.0);
            }
        }
    }
    for (function, by_time, by_count) in worst {
        println!(
            "# {function}: worst error of 3 runs {by_time:.2} % kept by length, {by_count:.2} % kept 1 in N by count"
        );
        println!(
            r#"BENCH {{"name": "off_cpu_error_percent/{function}", "value": {by_time:.3}, "unit": "%", "baseline": {by_count:.3}}}"#
        );
    }
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
