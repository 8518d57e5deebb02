//! What walking CPython's frames costs the CPU sampler per sample, on a real kernel (root).
//! Printed figures, no pass/fail gate.
//!
//! Two Python processes (Debian's `python3.11`), each spinning in a function 30 Python frames
//! deep, keep both CPUs busy, so every sample is of a 30-frame Python stack. The sampler at 999
//! Hz runs with CPython's frames walked and without (the baseline), in interleaved rounds; the
//! kernel counts the perf-event program's run time (`kernel.bpf_stats_enabled`). Per sample:
//! without, the native unwind (and the rest of the sample); with minus without, the Python walk.
//! Medians of the rounds.
//!
//! `cargo bench -p loupe-testbed --bench python_walk`

use std::{
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use loupe_bpf::{StackSampler, StackSamplerOptions};

const STATS: &str = "/proc/sys/kernel/bpf_stats_enabled";
const PYTHON: &str = "/usr/bin/python3.11";
/// 29 frames of `deep` and the module: 30 Python frames.
const SCRIPT: &str = "
import sys, time
def deep(n, until):
    if n == 0:
        x = 0
        while time.time() < until:
            x += 1
        return x
    return deep(n - 1, until)
deep(28, time.time() + float(sys.argv[1]))
";

fn main() {
    // SAFETY: geteuid only reads the process's credentials.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIP python_walk bench: needs root (eBPF, perf events)");
        return;
    }
    if !std::path::Path::new(PYTHON).exists() {
        eprintln!("SKIP python_walk bench: no {PYTHON}");
        return;
    }
    let before = std::fs::read_to_string(STATS).unwrap_or_else(|_| "0".into());
    std::fs::write(STATS, "1").expect("enabling BPF run-time stats");
    let rounds = 5;
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        without.push(round(false));
        with.push(round(true));
    }
    let _ = std::fs::write(STATS, before.trim());
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (on, off) = (median(with.iter().map(|r| r.0).collect()), median(without.iter().map(|r| r.0).collect()));
    let frames = median(with.iter().map(|r| r.1).collect());
    println!(
        "# per sample of a 30-frame Python stack: {:.2} us the whole sample with the Python walk, {off:.2} us \
         without (the native unwind most of it): the walk {:.2} us ({frames:.1} Python frames recorded a sample; \
         {rounds} rounds, medians)",
        on,
        on - off
    );
    println!(
        r#"BENCH {{"name": "python_walk_us_per_sample", "value": {:.3}, "unit": "us", "baseline": {off:.3}}}"#,
        on - off
    );
    println!(r#"BENCH {{"name": "sample_with_python_walk_us", "value": {on:.3}, "unit": "us", "baseline": {off:.3}}}"#);
}

/// One round: (µs of the program per sample, Python frames per sample).
fn round(python_frames: bool) -> (f64, f64) {
    let spin = |seconds: &str| -> Child {
        Command::new(PYTHON).args(["-c", SCRIPT, seconds]).stdout(Stdio::null()).spawn().expect("starting python")
    };
    let mut pythons = [spin("4"), spin("4")];
    let options = StackSamplerOptions { frequency_hz: 999, python_frames, ..Default::default() };
    let mut sampler = StackSampler::start(&options).expect("starting the sampler");
    for p in &pythons {
        sampler.load_process(p.id()).expect("loading the process");
    }
    let mut out = Vec::new();
    let settle = Instant::now() + Duration::from_millis(500);
    while Instant::now() < settle {
        sampler.drain(&mut out, Duration::from_millis(50)).unwrap();
    }
    out.clear();
    let (runs0, time0) = sampler.program_stats().unwrap();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(2) {
        sampler.drain(&mut out, Duration::from_millis(50)).unwrap();
    }
    let (runs1, time1) = sampler.program_stats().unwrap();
    for p in &mut pythons {
        let _ = p.kill();
        let _ = p.wait();
    }
    let runs = (runs1 - runs0).max(1) as f64;
    let frames: usize = out.iter().filter_map(|s| s.python.as_ref()).map(|p| p.frames.len()).sum();
    ((time1 - time0).as_secs_f64() * 1e6 / runs, frames as f64 / out.len().max(1) as f64)
}
