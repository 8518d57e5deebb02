//! Store throughput and compactness: `cargo bench -p loupe-store`.
//!
//! Writes realistic runs (2000 samples, ~30 % bursty non-zero slots, sketches with a few
//! bits) on 2 and 16 CPUs, then reads them back and lists them, printing one plain line per
//! figure. `LOUPE_BENCH_RUNS` overrides the number of runs per shape.

#[path = "../tests/common/mod.rs"]
mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use common::*;
use loupe_store::{NewRun, Retention, Store, TimeRange};

fn rate(n: usize, d: Duration) -> String {
    format!("{:.0}", n as f64 / d.as_secs_f64())
}

fn bench_shape(label: &str, runs: Vec<NewRun>) {
    let n = runs.len();
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::open(dir.path(), Retention::default()).expect("open store");

    let t = Instant::now();
    let ids: Vec<_> = runs.into_iter().map(|run| store.put_run(run, T0).expect("put_run").id).collect();
    println!("store: write {label} runs: {} runs/s (each put flushed)", rate(n, t.elapsed()));

    let t = Instant::now();
    for id in &ids {
        black_box(store.run(*id).expect("run").expect("present"));
    }
    println!("store: read {label} runs (full run): {} runs/s", rate(n, t.elapsed()));

    let t = Instant::now();
    let mut listings = 0;
    while t.elapsed() < Duration::from_millis(500) {
        let listed = store.runs(TimeRange::ALL, None, None).expect("runs");
        assert_eq!(listed.len(), n);
        black_box(listed);
        listings += 1;
    }
    let e = t.elapsed();
    println!("store: list {n} {label} runs: {} listings/s ({} metas/s)", rate(listings, e), rate(listings * n, e));

    store.flush().expect("flush");
    let stats = store.stats().expect("stats");
    println!(
        "store: {label} bytes per run: {} stored (key+value), {} on disk (sled size_on_disk {} B / {n} runs)",
        stats.stored_bytes / n as u64,
        stats.disk_bytes / n as u64,
        stats.disk_bytes
    );
    let name = label.to_lowercase().replace(|c: char| !c.is_ascii_alphanumeric(), "_");
    println!(
        r#"BENCH {{"name": "store_{name}_bytes_per_run_on_disk", "value": {}, "unit": "B"}}"#,
        stats.disk_bytes / n as u64
    );
}

fn main() {
    // `cargo bench` passes `--bench`; accept and ignore libtest-style arguments.
    let n: usize = std::env::var("LOUPE_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(500);
    let mut r = rng(42);
    for cpus in [2u32, 16] {
        let runs = (0..n as u64).map(|i| bursty_run(&mut r, T0 + i * SEC, 100_000, 2000, cpus, 0.3)).collect();
        bench_shape(&format!("2000-sample {cpus}-cpu"), runs);
    }
    let idle = (0..n as u64).map(|i| idle_run(T0 + i * SEC, 100_000, 2000, 2)).collect();
    bench_shape("2000-sample 2-cpu idle", idle);
}
