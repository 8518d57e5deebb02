//! `loupe symbolize` over a synthetic day whose frames are 10 % unnamed: how long naming them
//! takes, and how many get a name.
//!
//! The day is the store benchmark's synthetic host (`store/tests/common/samples.rs`: programs,
//! shared libraries, Zipf-popular stacks, 10 Hz per CPU), except that about 10 % of all frames
//! are stored as `libc.so.6+0x…` with libc's real build ID at random addresses of libc's
//! `.text` — so the real debug file of libc (`libc6-dbg`, under `/usr/lib/debug`) names most of
//! them (an address in padding between functions stays unnamed, as it would for perf).
//!
//! Then the first sight of a binary that carries its own DWARF (this bench's executable, built
//! with the workspace's `line-tables-only` debug info, as every Rust binary of the workspace
//! is): the ingest symbolizer names 3,000 of its addresses in stacks of 30, once from the
//! symbol table only (the default) and once with inlined frames from DWARF (`--inlined-frames`), each with
//! a fresh symbolizer — the one-time price per binary, and how many addresses gained frames.
//!
//! `cargo bench -p loupe-query-host --bench symbolize`
//! - `LOUPE_BENCH_CPUS` (default 16) and `LOUPE_BENCH_HOURS` (default 24) size the day;
//! - the pristine store is kept under `/var/tmp/loupe-bench-symbolize-…` and copied for each
//!   run (`LOUPE_BENCH_REBUILD=1` rebuilds it).

#[path = "../../store/tests/common/samples.rs"]
#[allow(dead_code)]
mod samples;

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use loupe_bpf::{RawStack, UserEnd};
use loupe_core::ingest::symbolize::{INLINED_SUFFIX, NamingOptions, Symbolizer, elf_file::ElfFacts};
use loupe_store::{Retention, Store, TimeRange};
use object::{Object, ObjectSection};
use samples::{Synth, SynthParams, UnnamedFrames};

const T0: u64 = 1_700_000_000_000_000_000;
const LIBC: &str = "/lib/x86_64-linux-gnu/libc.so.6";

fn bench_line(name: &str, value: f64, unit: &str) {
    println!(r#"BENCH {{"name": "{name}", "value": {value:.4}, "unit": "{unit}"}}"#);
}

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// libc's `.text` range, read from the library itself.
fn libc_text() -> std::ops::Range<u64> {
    let bytes = std::fs::read(LIBC).expect("libc");
    let file = object::File::parse(&*bytes).expect("libc is ELF");
    let text = file.section_by_name(".text").expect("libc has .text");
    text.address()..text.address() + text.size()
}

fn build(dir: &Path, cpus: u32, hours: u64, unnamed: UnnamedFrames) {
    let _ = std::fs::remove_dir_all(dir);
    let params = SynthParams { cpus, unnamed: Some(unnamed), ..SynthParams::day_host() };
    let store = Store::open(dir, Retention { max_age: Duration::from_secs(365 * 86_400), max_bytes: u64::MAX })
        .expect("open store");
    let mut synth = Synth::new(42, params, T0);
    let mut batch = Vec::new();
    let started = Instant::now();
    for _ in 0..hours * 360 {
        synth.next_batch(100, &mut batch);
        store.put_samples(&batch, 0, T0).expect("put_samples");
    }
    store.flush().expect("flush");
    eprintln!("symbolize: built {} in {:.0} s", dir.display(), started.elapsed().as_secs_f64());
}

/// Addresses inside this executable's functions, as mapped in this process: function starts
/// from its symbol table plus a few bytes, moved by the executable's load bias.
fn own_addresses(count: usize) -> Vec<u64> {
    let exe = std::env::current_exe().expect("own executable");
    let bytes = std::fs::read(&exe).expect("reading own executable");
    let file = object::File::parse(&*bytes).expect("own executable is ELF");
    use object::{ObjectSymbol, SymbolKind};
    let mut funcs: Vec<u64> = file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.size() >= 16)
        .map(|s| s.address() + s.size() / 2)
        .collect();
    funcs.sort_unstable();
    let step = (funcs.len() / count).max(1);
    // The executable mapping of this file, and what maps its addresses to the file's own.
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let exe_name = exe.to_string_lossy().into_owned();
    let (start, offset) = maps
        .lines()
        .filter(|l| l.ends_with(&*exe_name))
        .find_map(|l| {
            let mut f = l.split_whitespace();
            let start = u64::from_str_radix(f.next()?.split('-').next()?, 16).ok()?;
            let perms = f.next()?;
            let offset = u64::from_str_radix(f.next()?, 16).ok()?;
            perms.contains('x').then_some((start, offset))
        })
        .expect("own executable's text mapping");
    let bias = loupe_unwind::Binary::read(&*bytes).unwrap().bias(start, offset).expect("an executable segment");
    funcs.iter().step_by(step).take(count).map(|a| a.wrapping_add(bias)).collect()
}

/// Names `addresses` with a fresh symbolizer, in stacks of 30: the time, and how many addresses
/// gained inlined frames.
fn name_own(addresses: &[u64], inlined: bool) -> (Duration, usize, usize) {
    let mut symbolizer = Symbolizer::new(&NamingOptions { inlined, no_debug_files: true, ..Default::default() });
    let started = Instant::now();
    let (mut frames, mut expanded) = (0, 0);
    for stack in addresses.chunks(30) {
        let raw = RawStack {
            time_unix_ns: 0,
            cpu: 0,
            pid: std::process::id(),
            tid: std::process::id(),
            comm: "bench".into(),
            cgroup_id: 0,
            idle: false,
            kernel: Vec::new(),
            user: stack.to_vec(),
            user_end: UserEnd::Root,
            off_cpu: None,
            python: None,
        };
        let named = symbolizer.sample(&raw);
        frames += named.frames.len();
        expanded += named.frames.iter().filter(|f| f.function.ends_with(INLINED_SUFFIX)).count();
    }
    (started.elapsed(), frames, expanded)
}

fn inlined_first_sight() {
    let addresses = own_addresses(3000);
    let (plain, plain_frames, none) = name_own(&addresses, false);
    let (dwarf, dwarf_frames, inlined) = name_own(&addresses, true);
    assert_eq!(plain_frames, addresses.len(), "one frame an address from symbols alone");
    assert_eq!(none, 0);
    assert_eq!(dwarf_frames, addresses.len() + inlined);
    let size = std::fs::metadata(std::env::current_exe().unwrap()).unwrap().len();
    println!(
        "symbolize: first sight of this {:.0} MB executable, {} addresses: symbols only {:.1} ms, with inlined frames from DWARF {:.1} ms ({:.1}×), {inlined} inlined frames added",
        size as f64 / 1e6,
        addresses.len(),
        plain.as_secs_f64() * 1e3,
        dwarf.as_secs_f64() * 1e3,
        dwarf.as_secs_f64() / plain.as_secs_f64()
    );
    bench_line("symbolize_first_sight_symbols", plain.as_secs_f64() * 1e3, "ms");
    bench_line("symbolize_first_sight_inlined", dwarf.as_secs_f64() * 1e3, "ms");
    bench_line("symbolize_first_sight_inlined_ratio", dwarf.as_secs_f64() / plain.as_secs_f64(), "ratio");
    bench_line("symbolize_inlined_frames_added", inlined as f64, "frames");
}

fn main() {
    inlined_first_sight();
    let libc = ElfFacts::read(Path::new(LIBC)).expect("libc's facts");
    let id = loupe_api::formats::hex::encode(&libc.build_id);
    let debug = PathBuf::from(format!("/usr/lib/debug/.build-id/{}/{}.debug", &id[..2], &id[2..]));
    if !debug.is_file() {
        println!("SKIP symbolize bench: needs libc6-dbg ({} missing; scripts/setup installs it)", debug.display());
        return;
    }
    let (cpus, hours) = (env("LOUPE_BENCH_CPUS", 16) as u32, env("LOUPE_BENCH_HOURS", 24));
    // A tenth of all frames: kernel frames are a tenth of the pool, so 1/9 of the user frames.
    let unnamed =
        UnnamedFrames { fraction: 1.0 / 9.0, module: "libc.so.6".into(), build_id: libc.build_id, text: libc_text() };
    let pristine = PathBuf::from(format!("/var/tmp/loupe-bench-symbolize-{cpus}cpu-{hours}h-{id}"));
    if std::env::var("LOUPE_BENCH_REBUILD").is_ok_and(|v| v == "1") || !pristine.join("conf").exists() {
        build(&pristine, cpus, hours, unnamed);
    }
    let work = tempfile::tempdir().unwrap();
    let data = work.path().join("data");
    let ok = Command::new("cp").arg("-r").arg(&pristine).arg(&data).status().expect("cp");
    assert!(ok.success());
    let (frames, samples) = {
        let store = Store::open(&data, Retention::default()).unwrap();
        let stats = store.sample_stats().unwrap();
        let unnamed = store.unnamed_frames(TimeRange::ALL).unwrap().len();
        println!(
            "symbolize: a {hours} h day of a {cpus}-cpu host: {} samples, {} frames in the dictionary, {unnamed} ({:.1} %) unnamed in libc.so.6",
            stats.samples,
            stats.frames,
            unnamed as f64 * 100.0 / stats.frames as f64
        );
        (unnamed, stats.samples)
    };
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_loupe"))
        .args(["symbolize", "--json", "--data-dir"])
        .arg(&data)
        .env("RUST_LOG", "warn")
        .output()
        .expect("loupe symbolize");
    let wall = t.elapsed();
    assert!(out.status.success(), "loupe symbolize: {}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let named = report["named"].as_u64().unwrap();
    println!(
        "symbolize: `loupe symbolize` named {named} of {} unnamed frames ({:.1} %) in {:.2} s wall ({:.1} µs per frame named; the scan covers {samples} samples)",
        report["unnamed"],
        named as f64 * 100.0 / frames.max(1) as f64,
        wall.as_secs_f64(),
        wall.as_secs_f64() * 1e6 / named.max(1) as f64
    );
    assert_eq!(report["unnamed"].as_u64().unwrap(), frames as u64);
    bench_line("symbolize_day_wall", wall.as_secs_f64(), "s");
    bench_line("symbolize_day_frames_named", named as f64, "frames");
    bench_line("symbolize_day_named_fraction", named as f64 / frames.max(1) as f64, "ratio");
    // What is left unnamed, and the day's profile (what a user runs next).
    let left = Store::open(&data, Retention::default()).unwrap().unnamed_frames(TimeRange::ALL).unwrap().len();
    assert_eq!(left as u64, frames as u64 - named, "renamed frames are no longer unnamed");
    let t = Instant::now();
    let profile = Command::new(env!("CARGO_BIN_EXE_loupe"))
        .args(["profile", "--json", "--data-dir"])
        .arg(&data)
        .output()
        .expect("loupe profile");
    assert!(profile.status.success());
    println!(
        "symbolize: {left} frames left unnamed (addresses between libc's functions); whole-day profile afterwards: {:.2} s",
        t.elapsed().as_secs_f64()
    );
}
