//! Stack-sample store at the scale of a real host: `cargo bench -p loupe-store --bench samples`.
//!
//! Generates a synthetic day of a 96-CPU host sampled at 10 Hz (≈ 83 M samples; see
//! `tests/common/samples.rs` for the mix), writes it in 10-second batches of all CPUs the way
//! the agent does (single thread, each batch flushed), then measures in a fresh process:
//! bytes per sample (the store's own count, dictionary included, and sled's size on disk),
//! `profile()` over the whole day with no filter (wall time, heap peak from a counting
//! allocator, and peak RSS), with a PID filter, with a CPU filter, and over 10 minutes.
//!
//! - `LOUPE_BENCH_HOURS` (default 24) shrinks the day.
//! - The store is kept under `/var/tmp/loupe-bench-samples-…` (keyed by the parameters) and
//!   reused by later runs, which print the ingest figures recorded when it was built.
//!   `LOUPE_BENCH_REBUILD=1` rebuilds it.
//! - `LOUPE_BENCH_DUMP=DIR` also writes the first 2,000 block values to DIR (to try general
//!   compressors on them).

#[path = "../tests/common/mod.rs"]
mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::samples::{Synth, SynthParams};
use common::{SEC, T0};
use loupe_store::{ProfileQuery, Retention, Store, TimeRange};

/// Counts live heap bytes and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            if new >= l.size() {
                let now = LIVE.fetch_add(new - l.size(), Ordering::Relaxed) + new - l.size();
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(l.size() - new, Ordering::Relaxed);
            }
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

const MB: f64 = 1024.0 * 1024.0;
/// Bump when the generator or the store's encoding changes, so old stores are not reused.
const GENERATION: u32 = 12;
const TICKS_PER_BATCH: u64 = 100; // 10 s at 10 Hz

fn vm_kb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix(field)?.trim().strip_suffix("kB")?.trim().parse().ok()).unwrap_or(0)
}

/// Resets VmHWM to the current RSS (Linux ≥ 4.0); false if not possible.
fn reset_hwm() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn retention() -> Retention {
    Retention { max_age: Duration::from_secs(365 * 86_400), max_bytes: u64::MAX }
}

fn main() {
    let hours: u64 = std::env::var("LOUPE_BENCH_HOURS").ok().and_then(|v| v.parse().ok()).unwrap_or(24);
    let params = SynthParams::day_host();
    let dir = PathBuf::from(format!(
        "/var/tmp/loupe-bench-samples-g{GENERATION}-{hours}h-{}cpu-{}hz",
        params.cpus, params.hz
    ));
    if std::env::var("LOUPE_BENCH_PHASE").as_deref() == Ok("query") {
        query_phase(&dir, hours);
        return;
    }
    let ingest_file = dir.with_extension("ingest.txt");
    let rebuild = std::env::var("LOUPE_BENCH_REBUILD").is_ok_and(|v| v == "1");
    if rebuild || !ingest_file.exists() {
        let _ = std::fs::remove_file(&ingest_file);
        let _ = std::fs::remove_dir_all(&dir);
        let line = build(&dir, hours, params);
        std::fs::write(&ingest_file, &line).expect("record ingest figures");
        println!("{line}");
    } else {
        let line = std::fs::read_to_string(&ingest_file).unwrap_or_default();
        println!("{} (recorded when {} was built)", line.trim_end(), dir.display());
    }
    // Query figures in a fresh process, so peak memory is the query's, not the ingest's.
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .env("LOUPE_BENCH_PHASE", "query")
        .status()
        .expect("run the query phase");
    assert!(status.success(), "query phase failed");
}

fn build(dir: &Path, hours: u64, params: SynthParams) -> String {
    let batches = hours * 3600 / 10;
    println!(
        "samples: generating {hours} h of a {}-cpu host at {} Hz: {batches} batches of {} samples into {}",
        params.cpus,
        params.hz,
        params.cpus as u64 * TICKS_PER_BATCH,
        dir.display()
    );
    let store = Store::open(dir, retention()).expect("open store");
    let mut synth = Synth::new(42, params, T0);
    let mut batch = Vec::new();
    let mut put_time = Duration::ZERO;
    let mut gen_time = Duration::ZERO;
    let mut total = 0u64;
    let started = Instant::now();
    for i in 0..batches {
        let t = Instant::now();
        synth.next_batch(TICKS_PER_BATCH, &mut batch);
        gen_time += t.elapsed();
        let lost = if i % 97 == 0 { 13 } else { 0 };
        let t = Instant::now();
        store.put_samples(&batch, lost, T0).expect("put_samples");
        put_time += t.elapsed();
        total += batch.len() as u64;
        if i % 360 == 359 {
            eprintln!(
                "  {:>5.1} h written, {:.0} samples/s in put_samples, {:.0} s elapsed",
                (i + 1) as f64 / 360.0,
                total as f64 / put_time.as_secs_f64(),
                started.elapsed().as_secs_f64()
            );
        }
    }
    store.flush().expect("flush");
    format!(
        "samples: ingest: {total} samples in {} batches: {:.0} samples/s single thread \
         (put_samples only, each batch flushed: {:.1} s; generating them took {:.1} s more)",
        batches,
        total as f64 / put_time.as_secs_f64(),
        put_time.as_secs_f64(),
        gen_time.as_secs_f64()
    )
}

struct Measured<T> {
    value: T,
    wall: Duration,
    heap_peak: usize,
    rss_peak_kb: u64,
}

fn measure<T>(f: impl FnOnce() -> T) -> Measured<T> {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let hwm_ok = reset_hwm();
    let t = Instant::now();
    let value = f();
    let wall = t.elapsed();
    let heap_peak = PEAK.load(Ordering::Relaxed) - base;
    let rss_peak_kb = if hwm_ok { vm_kb("VmHWM:") } else { 0 };
    Measured { value, wall, heap_peak, rss_peak_kb }
}

fn query_phase(dir: &Path, hours: u64) {
    if let Ok(dump) = std::env::var("LOUPE_BENCH_DUMP") {
        dump_blocks(dir, Path::new(&dump));
    }
    // The first profile reads from disk: drop the page cache (root only) before the store opens.
    let cold = drop_page_cache();
    let rss_start = vm_kb("VmRSS:");
    let store = Store::open(dir, retention()).expect("open store");
    let stats = store.stats().expect("stats");
    let ss = store.sample_stats().expect("sample_stats");
    let n = ss.samples.max(1) as f64;
    println!(
        "samples: stored: {} samples, {} batches, {} stacks, {} frames, {} comms",
        ss.samples, ss.batches, ss.stacks, ss.frames, ss.comms
    );
    println!(
        "samples: bytes per sample: {:.3} stored (stored_bytes {:.1} MB incl. dictionary {:.2} MB and hour \
         rollups {:.2} MB) / {:.3} on disk (sled size_on_disk {:.1} MB)",
        ss.stored_bytes as f64 / n,
        ss.stored_bytes as f64 / MB,
        ss.dictionary_bytes as f64 / MB,
        ss.rollup_bytes as f64 / MB,
        stats.disk_bytes as f64 / n,
        stats.disk_bytes as f64 / MB
    );
    println!(
        r#"BENCH {{"name": "samples_bytes_per_sample_stored", "value": {:.3}, "unit": "B"}}"#,
        ss.stored_bytes as f64 / n
    );
    println!(
        r#"BENCH {{"name": "samples_bytes_per_sample_on_disk", "value": {:.3}, "unit": "B"}}"#,
        stats.disk_bytes as f64 / n
    );
    let batches = store.sample_batches(TimeRange::ALL).expect("batches");
    let day = TimeRange::new(batches[0].start_unix_ns, batches.last().unwrap().end_unix_ns + 1).unwrap();
    let report = |label: &str, m: &Measured<loupe_store::Profile>| {
        println!(
            "samples: profile {label}: {:.3} s wall, heap peak +{:.1} MB, peak RSS {:.1} MB (process RSS at start \
             {:.1} MB): {} samples, {} stacks, {} lost",
            m.wall.as_secs_f64(),
            m.heap_peak as f64 / MB,
            m.rss_peak_kb as f64 / 1024.0,
            rss_start as f64 / 1024.0,
            m.value.samples,
            m.value.stacks.len(),
            m.value.lost
        );
        let name = label.to_lowercase().replace(|c: char| !c.is_ascii_alphanumeric(), "_");
        println!(r#"BENCH {{"name": "samples_profile_{name}", "value": {:.3}, "unit": "s"}}"#, m.wall.as_secs_f64());
    };
    let q_day = ProfileQuery::range(day);
    let m = measure(|| store.profile(&q_day).expect("profile"));
    let first = if cold { "cold: page cache dropped" } else { "first in this process; not root, page cache kept" };
    report(&format!("whole day ({hours} h), no filter ({first})"), &m);
    assert!(m.value.samples > 0);
    let m = measure(|| store.profile(&q_day).expect("profile"));
    report(&format!("whole day ({hours} h), no filter (again)"), &m);
    let q_idle = ProfileQuery { include_idle: true, ..ProfileQuery::range(day) };
    let m = measure(|| store.profile(&q_idle).expect("profile"));
    report("whole day, idle included", &m);
    assert_eq!(m.value.samples, ss.samples, "a whole-day profile with idle must count every sample");

    // The busiest PID of the first minute.
    let first_minute = TimeRange::new(day.from_unix_ns(), day.from_unix_ns() + 60 * SEC).unwrap();
    let mut by_pid: HashMap<u32, u64> = HashMap::new();
    for s in store.samples(&ProfileQuery::range(first_minute)).expect("samples") {
        *by_pid.entry(s.pid).or_default() += 1;
    }
    let (&pid, _) = by_pid.iter().max_by_key(|(_, n)| **n).expect("a busy pid");
    let q = ProfileQuery { pid: Some(pid), ..ProfileQuery::range(day) };
    let m = measure(|| store.profile(&q).expect("profile"));
    report(&format!("whole day, pid {pid}"), &m);
    let q = ProfileQuery { cpu: Some(17), ..ProfileQuery::range(day) };
    let m = measure(|| store.profile(&q).expect("profile"));
    report("whole day, cpu 17", &m);
    // Ten minutes starting at an odd instant: both ends cut a batch.
    let from = day.from_unix_ns() + (day.to_unix_ns() - day.from_unix_ns()) / 2 + 1_234_567_891;
    let ten = TimeRange::new(from, from + 600 * SEC).unwrap();
    let m = measure(|| store.profile(&ProfileQuery::range(ten)).expect("profile"));
    report("10 minutes (edges cut batches), no filter", &m);
    // The same, as the UI's flame graph reads it: each frame once, no copy per stack (most of
    // the figure above is making and freeing those copies).
    let m = measure(|| {
        let p = store.indexed_profile(&ProfileQuery::range(ten)).expect("profile");
        let stacks = p.stacks.iter().map(|(_, n)| (Vec::new(), *n)).collect();
        loupe_store::Profile { samples: p.samples, lost: p.lost, span: p.span, stacks }
    });
    report("10 minutes (edges cut batches), no filter, indexed", &m);
    let m = measure(|| store.profile(&ProfileQuery { pid: Some(pid), ..ProfileQuery::range(ten) }).expect("profile"));
    report(&format!("10 minutes, pid {pid}"), &m);
    let m = measure(|| store.pids(day).map(|p| loupe_store::Profile { samples: p.len() as u64, ..Default::default() }));
    println!("samples: pids() over the whole day: {:.3} s, {} pids", m.wall.as_secs_f64(), m.value.unwrap().samples);
    let ten_s = TimeRange::new(from, from + 10 * SEC).unwrap();
    let m = measure(|| store.samples(&ProfileQuery::range(ten_s)).expect("samples"));
    println!("samples: samples() over 10 s: {:.3} s, {} samples", m.wall.as_secs_f64(), m.value.len());
}

/// Writes dirty pages back and drops the page cache, so the next reads come from the disk;
/// false (and a note) when that is not allowed (not root).
fn drop_page_cache() -> bool {
    let _ = std::process::Command::new("sync").status();
    match std::fs::write("/proc/sys/vm/drop_caches", "3") {
        Ok(()) => true,
        Err(e) => {
            println!("samples: cold figures are not cold: cannot drop the page cache ({e}; needs root)");
            false
        }
    }
}

/// Writes the first 2,000 per-CPU block values and 200 batch-table values as files, reading
/// the sled tree directly (before the store is opened: sled allows one handle per process).
fn dump_blocks(dir: &Path, out: &Path) {
    let db = loupe_store::sled_db(dir).expect("open sled");
    let tree = db.open_tree("runs").expect("runs tree");
    std::fs::create_dir_all(out).expect("dump dir");
    for (prefix, n) in [(b"b", 2000), (b"h", 200)] {
        for (i, kv) in tree.scan_prefix(prefix).take(n).enumerate() {
            let (_, v) = kv.expect("read");
            std::fs::write(out.join(format!("{}{i:05}", prefix[0] as char)), &v).expect("write dump");
        }
    }
    println!("samples: dumped block and table values to {}", out.display());
}
