//! Analysis runtime figures, in one process over one store:
//!
//! 1. invocation overhead of an analysis that does nothing (`noop`, compiled once): p50/p99,
//!    with the on-demand and the pooling instance allocator;
//! 2. the burst detector compiled natively and to wasm over the same stored runs: the
//!    wasm/native time ratio (goal ≤ 1.5), both including reading the runs from the store;
//! 3. streaming throughput of the sample cursor into a guest (`sample-count`), against the
//!    same cursor read natively.
//!
//! `cargo bench -p loupe-query-host --bench udf` (after building udf-sdk for wasm32-wasip2).

use std::time::{Duration, Instant};

// burst-detector's algorithm (the shared `loupe-detect` crate), compiled natively.
use loupe_detect as burst_detector;

use loupe_api::model::{AnalysisOutput, RunView, SeriesSet};
use loupe_core::analyses::host_info;
use loupe_sandbox::{
    runtime::{Allocation, Runtime},
    sandbox::Limits,
};
use loupe_store::{
    Counter, CpuColumns, Frame, NewRun, ProfileQuery, Retention, RunSource, StackSample, Store, TimeRange,
};
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde_json::{Map, Value, json};

const T0: u64 = 1_795_392_000_000_000_000;
const THRESHOLD_BPS: u64 = 40_000_000;

fn wasm(name: &str) -> Vec<u8> {
    std::fs::read(loupe_testbed::wasm_component(name)).unwrap()
}

/// `runs` runs of 2000 × 1 ms on 8 CPUs: a noisy baseline with random bursts.
fn fill_runs(store: &Store, runs: usize, rng: &mut StdRng) {
    for r in 0..runs {
        let per_cpu = (0..8)
            .map(|c| {
                let mut col = CpuColumns::zeroed(c, 2000);
                let mut burst = 0;
                for i in 0..2000 {
                    if burst == 0 && rng.random_bool(0.01) {
                        burst = rng.random_range(1..20);
                    }
                    let v = if burst > 0 {
                        burst -= 1;
                        rng.random_range(5_000..12_000)
                    } else {
                        rng.random_range(0..3_000)
                    };
                    col.counter_mut(Counter::InBytes)[i] = v;
                    col.counter_mut(Counter::InPackets)[i] = v / 1500 + 1;
                }
                col
            })
            .collect();
        let run = NewRun {
            iface: "eth0".into(),
            host: "bench".into(),
            rack: None,
            start_unix_ns: T0 + r as u64 * 60_000_000_000,
            interval_ns: 1_000_000,
            samples: 2000,
            local_prefixes: vec![],
            source: RunSource::Imported { format: "bench".into() },
            per_cpu,
            conn_counts: None,
            clock: None,
        };
        store.put_run(run, T0).unwrap();
    }
}

/// `batches` batches of ~10 s × 32 CPUs × 10 Hz, over a pool of 500 stacks.
fn fill_samples(store: &Store, batches: usize, rng: &mut StdRng) -> u64 {
    let stacks: Vec<Vec<Frame>> = (0..500)
        .map(|s| (0..rng.random_range(3..25)).map(|d| Frame::user(format!("fn_{s}_{d}"), "/usr/bin/app")).collect())
        .collect();
    let mut n = 0;
    for b in 0..batches {
        let start = T0 + b as u64 * 10_000_000_000;
        let mut batch = Vec::new();
        for tick in 0..100u64 {
            for cpu in 0..32 {
                let pid = rng.random_range(1000..1040);
                batch.push(StackSample {
                    time_unix_ns: start + tick * 100_000_000 + cpu as u64 * 1000,
                    cpu,
                    pid,
                    tid: pid,
                    comm: format!("app{}", pid % 7),
                    cgroup_id: 1,
                    idle: false,
                    frames: stacks[rng.random_range(0..stacks.len())].clone(),
                });
            }
        }
        n += batch.len() as u64;
        store.put_samples(&batch, 0, start).unwrap();
    }
    n
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let store =
        Store::open(dir.path(), Retention { max_age: Duration::from_secs(1 << 40), max_bytes: 1 << 40 }).unwrap();
    let mut rng = StdRng::seed_from_u64(7);
    let runs = 300;
    fill_runs(&store, runs, &mut rng);
    let samples = fill_samples(&store, 100, &mut rng);
    let info = host_info(&store).unwrap();
    let all = TimeRange::ALL;
    let none = Map::new();
    println!("store: {runs} runs (2000 × 1 ms, 8 CPUs), {samples} stack samples (32 CPUs, 500 stacks)");

    // 1. Invocation overhead.
    for allocation in [Allocation::OnDemand, Allocation::Pooling] {
        let rt = Runtime::new(Limits::default(), allocation).unwrap();
        let (noop, _) = rt.compile(&wasm("noop"), &store, &info).unwrap();
        for _ in 0..50 {
            rt.invoke(&noop, "bench", &store, &info, all, &none).unwrap();
        }
        let mut times: Vec<Duration> = (0..2000)
            .map(|_| {
                let t = Instant::now();
                rt.invoke(&noop, "bench", &store, &info, all, &none).unwrap();
                t.elapsed()
            })
            .collect();
        times.sort();
        println!(
            "noop invocation ({allocation:?}): p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs (2000 calls)",
            percentile(&times, 0.5).as_secs_f64() * 1e6,
            percentile(&times, 0.99).as_secs_f64() * 1e6,
            times.last().unwrap().as_secs_f64() * 1e6
        );
        println!(
            r#"BENCH {{"name": "udf_noop_invocation_p99_{}", "value": {:.1}, "unit": "us"}}"#,
            format!("{allocation:?}").to_lowercase(),
            percentile(&times, 0.99).as_secs_f64() * 1e6
        );
    }

    // 2. Burst detector: wasm vs native over the same stored runs.
    let rt = Runtime::new(Limits::default(), Allocation::OnDemand).unwrap();
    let (bursts, _) = rt.compile(&wasm("burst_detector"), &store, &info).unwrap();
    let params: Map<String, Value> = json!({"threshold_bps": THRESHOLD_BPS}).as_object().unwrap().clone();
    // Natively, like the analysis: reading the runs and summing only the series it uses.
    // (And, as before the analysis could ask for one series, with all eleven summed.)
    let native_with = |series: SeriesSet| -> usize {
        let mut found = 0;
        for meta in store.runs(all, None, None).unwrap() {
            let run = store.run(meta.id).unwrap().unwrap();
            let view = RunView::with_series(&run, false, series);
            found +=
                burst_detector::detect(view.start_unix_ns, view.interval_ns, &view.metrics.in_bytes, THRESHOLD_BPS, 1)
                    .len();
        }
        found
    };
    let native = || native_with(SeriesSet::NONE.with("in_bytes"));
    let native_all = || native_with(SeriesSet::ALL);
    let in_wasm = || -> usize {
        let r = rt.invoke(&bursts, "bench", &store, &info, all, &params).unwrap();
        match r.output {
            AnalysisOutput::Table { rows, .. } => rows.len(),
            _ => panic!("not a table"),
        }
    };
    assert_eq!(native(), in_wasm(), "native and wasm find the same bursts");
    let rounds = 7;
    let (mut tn, mut tw, mut ta) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let t = Instant::now();
        std::hint::black_box(native());
        tn.push(t.elapsed());
        let t = Instant::now();
        std::hint::black_box(in_wasm());
        tw.push(t.elapsed());
        let t = Instant::now();
        std::hint::black_box(native_all());
        ta.push(t.elapsed());
    }
    tn.sort();
    tw.sort();
    ta.sort();
    let (n, w, a) = (tn[rounds / 2], tw[rounds / 2], ta[rounds / 2]);
    println!(
        "burst detector over {runs} runs: native {:.1} ms, wasm {:.1} ms (median of {rounds}) → wasm/native {:.2} ({} bursts); \
         native summing all 11 series {:.1} ms (wasm/that {:.2})",
        n.as_secs_f64() * 1e3,
        w.as_secs_f64() * 1e3,
        w.as_secs_f64() / n.as_secs_f64(),
        native(),
        a.as_secs_f64() * 1e3,
        w.as_secs_f64() / a.as_secs_f64(),
    );
    println!(
        r#"BENCH {{"name": "udf_burst_detector_wasm_ms", "value": {:.2}, "unit": "ms", "baseline": {:.2}}}"#,
        w.as_secs_f64() * 1e3,
        n.as_secs_f64() * 1e3
    );

    // 3. Sample cursor throughput into a guest vs read natively.
    let (count, _) = rt.compile(&wasm("sample_count"), &store, &info).unwrap();
    let native_scan = || -> u64 {
        let mut c = store.sample_cursor(ProfileQuery { include_idle: true, ..ProfileQuery::range(all) }).unwrap();
        let mut n = 0u64;
        while let Some(page) = c.next_page().unwrap() {
            n += page.iter().fold(0u64, |acc, s| acc + 1 + (s.stack as u64 & 0));
        }
        n
    };
    let guest_scan = || -> u64 {
        let r = rt.invoke(&count, "bench", &store, &info, all, &none).unwrap();
        serde_json::to_value(&r.output).unwrap()["text"].as_str().unwrap().parse().unwrap()
    };
    assert_eq!(native_scan(), samples);
    assert_eq!(guest_scan(), samples);
    let (mut tn, mut tg) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let t = Instant::now();
        native_scan();
        tn.push(t.elapsed());
        let t = Instant::now();
        guest_scan();
        tg.push(t.elapsed());
    }
    tn.sort();
    tg.sort();
    println!(
        "sample cursor: into the guest {:.2} M samples/s, read natively {:.2} M samples/s (guest/native {:.2})",
        samples as f64 / tg[2].as_secs_f64() / 1e6,
        samples as f64 / tn[2].as_secs_f64() / 1e6,
        tn[2].as_secs_f64() / tg[2].as_secs_f64()
    );
    println!(
        r#"BENCH {{"name": "udf_sample_cursor_guest", "value": {:.3}, "unit": "M samples/s", "baseline": {:.3}}}"#,
        samples as f64 / tg[2].as_secs_f64() / 1e6,
        samples as f64 / tn[2].as_secs_f64() / 1e6
    );
}
