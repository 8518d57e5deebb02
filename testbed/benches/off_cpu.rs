//! What off-CPU sampling costs at a high context-switch rate, on a real kernel (root). Printed
//! figures, no pass/fail gate.
//!
//! `testbed/fixtures/waits.c naps 20 SECONDS`: 20 threads each napping 1 ms at a time, ~20,000
//! blocks (and as many switches back) a second. Against it, the stack sampler at 10 Hz runs
//! with off-CPU sampling (its defaults: blocks ≥ 1 ms, at most 1,000 stacks a second) and
//! without — the baseline, measured in the same rounds, interleaved. The cost is the off-CPU
//! program's own run time as the kernel counts it (`kernel.bpf_stats_enabled`: every
//! `sched_switch` on the host, taken or not) plus the extra CPU this process spent draining the
//! ring, as a share of one core.
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
    for _ in 0..rounds {
        without.push(round(&exe, false).0);
        let (cost, rate, taken) = round(&exe, true);
        with.push(cost);
        rates.push(rate);
        samples.push(taken);
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (with, without, rate, taken) = (median(with), median(without), median(rates), median(samples));
    let extra = (with - without).max(0.0);
    println!(
        "# off-CPU sampling at {rate:.0} blocks/s: {:.3} % of a core ({:.3} % with it, {:.3} % without: the drain), \
         {taken:.0} off-CPU samples a second sent ({rounds} rounds, medians)",
        extra * 100.0,
        with * 100.0,
        without * 100.0
    );
    println!(
        r#"BENCH {{"name": "off_cpu_cost_core_percent", "value": {:.4}, "unit": "%", "baseline": {:.4}}}"#,
        with * 100.0,
        without * 100.0
    );
    println!(r#"BENCH {{"name": "off_cpu_blocks_per_second", "value": {rate:.0}, "unit": "1/s"}}"#);
    println!(r#"BENCH {{"name": "off_cpu_ns_per_block", "value": {:.1}, "unit": "ns"}}"#, extra * 1e9 / rate.max(1.0));
    let _ = std::fs::write(STATS, before.trim());
}

/// One window of naps under a sampler: (share of a core spent on off-CPU sampling and the
/// drain, blocks a second, off-CPU samples a second).
fn round(exe: &Path, off_cpu: bool) -> (f64, f64, f64) {
    let options =
        StackSamplerOptions { frequency_hz: 10, off_cpu: off_cpu.then(OffCpuOptions::default), ..Default::default() };
    let mut sampler = StackSampler::start(&options).expect("starting the sampler");
    let mut child = Command::new(exe).args(["naps", THREADS, &SECONDS.to_string()]).spawn().unwrap();
    // Let the ratio settle on the rate (it follows it once a second).
    let mut out = Vec::new();
    let settle = Instant::now() + Duration::from_millis(1200);
    while Instant::now() < settle {
        sampler.drain(&mut out, Duration::from_millis(100)).unwrap();
    }
    out.clear();
    let (runs0, time0) = if off_cpu { sampler.off_cpu_program_stats().unwrap() } else { (0, Duration::ZERO) };
    let (cpu0, t0) = (own_cpu(), Instant::now());
    let window = Duration::from_millis(1500);
    while t0.elapsed() < window {
        sampler.drain(&mut out, Duration::from_millis(100)).unwrap();
    }
    let (cpu1, wall) = (own_cpu(), t0.elapsed().as_secs_f64());
    let (runs1, time1) = if off_cpu { sampler.off_cpu_program_stats().unwrap() } else { (0, Duration::ZERO) };
    let _ = child.wait();
    let kernel = (time1 - time0).as_secs_f64();
    let rate = sampler.off_cpu_stats().map_or(0.0, |s| s.blocks_per_second);
    let taken = out.iter().filter(|s| s.off_cpu.is_some()).count() as f64 / wall;
    if off_cpu {
        eprintln!(
            "  off-CPU program: {} runs, {:.0} ns each",
            runs1 - runs0,
            kernel * 1e9 / (runs1 - runs0).max(1) as f64
        );
    }
    ((kernel + (cpu1 - cpu0)) / wall, rate, taken)
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
