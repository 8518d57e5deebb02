//! What unwinding user stacks from call-frame information costs, on a real kernel (root). Printed
//! figures, no pass/fail gate:
//!
//! 1. **Per sample, in the kernel.** The stack program's own run time per run, as the kernel
//!    counts it (`kernel.bpf_stats_enabled`), while `testbed/fixtures/deep.c` spins 30 calls
//!    deep: built without frame pointers and unwound from its tables (34 user frames down to
//!    `_start`), against the same program built with frame pointers and walked by the kernel's
//!    frame-pointer walker (the sampler without tables) — the baseline. Rounds interleave the
//!    modes; medians are printed.
//! 2. **Tables for this machine's processes.** Every running process loaded into a sampler
//!    with a fresh table cache: binaries, rows, the kernel memory they take, per MiB of
//!    executable code, and the time to see them all the first time (parse + load) against the
//!    second time (read from the on-disk cache) — the baseline.

use std::{
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use loupe_bpf::{RawStack, StackSampler, StackSamplerOptions, UserEnd};

const STATS: &str = "/proc/sys/kernel/bpf_stats_enabled";

fn main() {
    // SAFETY: geteuid only reads the process's credentials.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIP unwind bench: needs root (eBPF, perf events)");
        return;
    }
    let before = std::fs::read_to_string(STATS).unwrap_or_else(|_| "0".into());
    std::fs::write(STATS, "1").expect("enabling BPF run-time stats");
    per_sample();
    tables_of_this_machine();
    let _ = std::fs::write(STATS, before.trim());
}

fn build(dir: &Path, name: &str, flag: &str) -> std::path::PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/deep.c");
    let out = dir.join(name);
    let ok = Command::new("cc").args(["-O2", flag, "-o"]).arg(&out).arg(&src).status().expect("running cc");
    assert!(ok.success());
    out
}

/// One round: the sampler at 1 kHz while `exe` spins 30 calls deep for 1.5 s. Returns the
/// program's ns per run and the mean user frames of the fixture's samples.
fn round(exe: &Path, unwind_tables: bool) -> (f64, f64) {
    let options = StackSamplerOptions { frequency_hz: 1000, unwind_tables, ..Default::default() };
    let mut sampler = StackSampler::start(&options).expect("starting the sampler");
    // It spins once told to, after its tables are loaded (however long that takes).
    let (mut child, pid) =
        loupe_testbed::sampling::spawn_with_pid(Command::new(exe).args(["1.5", "3", "wait"]).stdin(Stdio::piped()));
    sampler.load_process(pid).unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"go\n").unwrap();
    let mut samples: Vec<RawStack> = Vec::new();
    let (runs0, time0) = sampler.program_stats().unwrap();
    while child.try_wait().unwrap().is_none() {
        sampler.drain(&mut samples, Duration::from_millis(200)).unwrap();
    }
    let (runs1, time1) = sampler.program_stats().unwrap();
    sampler.drain(&mut samples, Duration::ZERO).unwrap();
    let mine: Vec<&RawStack> = samples.iter().filter(|s| s.pid == pid).collect();
    if unwind_tables {
        let whole = mine.iter().filter(|s| s.user_end == UserEnd::Root).count();
        let mut ends: std::collections::BTreeMap<String, usize> = Default::default();
        for s in &mine {
            *ends.entry(format!("{:?}/{}", s.user_end, s.user.len())).or_default() += 1;
        }
        assert!(whole * 10 >= mine.len() * 9, "{whole} of {} samples whole: {ends:?}", mine.len());
    }
    let frames = mine.iter().map(|s| s.user.len()).sum::<usize>() as f64 / mine.len().max(1) as f64;
    let ns = (time1 - time0).as_nanos() as f64 / (runs1 - runs0).max(1) as f64;
    (ns, frames)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn per_sample() {
    let dir = tempfile::tempdir().unwrap();
    let without_fp = build(dir.path(), "deep-nofp", "-fomit-frame-pointer");
    let with_fp = build(dir.path(), "deep-fp", "-fno-omit-frame-pointer");
    let rounds: usize = std::env::var("LOUPE_UNWIND_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(5);
    let (mut cfi, mut fp, mut cfi_frames, mut fp_frames) = (vec![], vec![], vec![], vec![]);
    for _ in 0..rounds {
        let (ns, frames) = round(&with_fp, false);
        fp.push(ns);
        fp_frames.push(frames);
        let (ns, frames) = round(&without_fp, true);
        cfi.push(ns);
        cfi_frames.push(frames);
    }
    let (cfi, fp) = (median(cfi), median(fp));
    println!(
        "# stack program per sample: {cfi:.0} ns unwinding {:.1} user frames from tables (no frame pointers), \
         {fp:.0} ns walking {:.1} by frame pointers (kernel walker); ratio {:.2} ({rounds} rounds, medians)",
        median(cfi_frames),
        median(fp_frames),
        cfi / fp
    );
    println!(r#"BENCH {{"name": "unwind_sample_ns_30_frames", "value": {cfi:.0}, "unit": "ns", "baseline": {fp:.0}}}"#);
    println!(r#"BENCH {{"name": "unwind_sample_ratio_vs_frame_pointers", "value": {:.3}, "unit": "ratio"}}"#, cfi / fp);
}

/// Every process's tables loaded; returns (seconds, stats).
fn load_everything(cache: &Path) -> (f64, loupe_bpf::UnwindStats, usize) {
    let options =
        StackSamplerOptions { table_rows: 8 << 20, table_cache: Some(cache.to_path_buf()), ..Default::default() };
    let mut sampler = StackSampler::start(&options).expect("starting the sampler");
    let pids: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&pid| pid != std::process::id())
        .collect();
    let began = Instant::now();
    let loaded = pids.iter().filter(|&&pid| sampler.load_process(pid).is_ok()).count();
    (began.elapsed().as_secs_f64(), sampler.unwind_stats(), loaded)
}

fn tables_of_this_machine() {
    let cache = tempfile::tempdir().unwrap();
    let (first, stats, processes) = load_everything(cache.path());
    let (again, cached, _) = load_everything(cache.path());
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let table_bytes = stats.rows * 8;
    let per_mib = (table_bytes as f64 / 1024.0) / mib(stats.code_bytes).max(1e-9);
    let binaries = stats.tables.max(1) as f64;
    println!(
        "# this machine: {processes} processes, {} binaries with tables ({} without), {} rows = {:.1} MiB of kernel memory \
         for {:.1} MiB of executable code ({per_mib:.0} KiB per MiB)",
        stats.tables,
        stats.without_table,
        stats.rows,
        mib(table_bytes),
        mib(stats.code_bytes)
    );
    println!(
        "# first sight (parse + load) {:.0} ms, {:.2} ms a binary; from the on-disk cache {:.0} ms ({} read from it); ratio {:.1}",
        first * 1e3,
        first * 1e3 / binaries,
        again * 1e3,
        cached.from_cache,
        first / again.max(1e-9)
    );
    println!(r#"BENCH {{"name": "unwind_tables_mib_this_machine", "value": {:.2}, "unit": "MiB"}}"#, mib(table_bytes));
    println!(r#"BENCH {{"name": "unwind_table_kib_per_mib_code", "value": {per_mib:.0}, "unit": "KiB/MiB"}}"#);
    println!(
        r#"BENCH {{"name": "unwind_first_sight_ms_per_binary", "value": {:.3}, "unit": "ms", "baseline": {:.3}}}"#,
        first * 1e3 / binaries,
        again * 1e3 / binaries
    );
}
