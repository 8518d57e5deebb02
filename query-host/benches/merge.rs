//! Merging 1,000 hosts' partial results in the sandbox (the asking side of `loupe fleet
//! invoke`), for the two example fleet analyses, against the same merge done natively by their
//! shared algorithms (`loupe-detect`) — the baseline, measured in the same run.
//!
//! - `fleet-hot-functions` asked datacenter-wide (`per_host_functions=false`): each host's
//!   partial is its per-library counts and its functions for the all-hosts rows (~60 rows);
//! - `rack-contention`: each host's partial is its slots of a 300-slot synchronized run with
//!   bursts (every slot with traffic: ~300 rows) — the large case.
//!
//! Partials are made by the real analyses on real stores (a few hosts), then copied under other
//! host names up to 1,000. Both analyses' partials are columnar and cross as one batch per merge
//! call (the `fleet-batches` world): as tables, `rack-contention`'s took 384 ms, most of it
//! lowering 3.3 million cells into wasm; as a list of columnar partials, 50–53 ms.
//! Goal from the fleet issues: ≤ 50 ms for 1,000 partials.
//!
//! `cargo bench -p loupe-query-host --bench merge` (after building udf-sdk for wasm32-wasip2).

use std::time::Instant;

mod common;

use common::{T0, rename, store};
use loupe_core::analyses::host_info;
use loupe_detect::{fleet_hot, rack};
use loupe_sandbox::{
    bindings::wit,
    partial::{self, Decoded},
    runtime::{Allocation, Runtime},
    sandbox::Limits,
};
use loupe_store::{Counter, CpuColumns, NewRun, RunSource, TimeRange};
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde_json::{Map, Value, json};

const HOSTS: usize = 1000;
const SEEDS: usize = 8;

/// Rows of a columnar partial.
fn rows_of(d: &Decoded) -> usize {
    match d {
        Decoded::Columns(c) => c.columns.first().map_or(0, |col| match &col.values {
            wit::ColumnValues::Unsigned(v) => v.len(),
            wit::ColumnValues::Signed(v) => v.len(),
            wit::ColumnValues::Float(v) => v.len(),
            wit::ColumnValues::Text(t) => t.codes.len(),
        }),
        Decoded::Output(_) => 0,
    }
}

fn p50(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn line(name: &str, value: f64, baseline: f64) {
    println!(r#"BENCH {{"name": "{name}", "value": {value:.2}, "unit": "ms", "baseline": {baseline:.3}}}"#);
}

fn main() {
    let runtime = Runtime::new(Limits::default(), Allocation::Pooling).unwrap();
    let mut rng = StdRng::seed_from_u64(3);
    let (_d, asker) = store();
    let info = host_info(&asker).unwrap();

    // fleet-hot-functions: SEEDS real hosts' partials.
    let leaves = common::leaf_pool();
    let hot = runtime
        .compile(&std::fs::read(loupe_testbed::wasm_component("fleet_hot_functions")).unwrap(), &asker, &info)
        .unwrap()
        .0;
    // A datacenter-wide question: functions over all hosts, libraries and totals per host.
    let params: Map<String, Value> = json!({"top": 200, "per_host_functions": false}).as_object().unwrap().clone();
    let mut seeds = Vec::new();
    let mut native_parts = Vec::new();
    for h in 0..SEEDS {
        let (_dir, s) = store();
        let samples = common::samples(&mut rng, &leaves);
        s.put_samples(&samples, 0, T0).unwrap();
        let mut i = host_info(&s).unwrap();
        i.hostname = format!("h{h}");
        let (bytes, _) = runtime.invoke_partial(&hot, "b", &s, &i, TimeRange::ALL, &params).unwrap();
        seeds.push(partial::decode(&bytes).unwrap());
        let counts: std::collections::BTreeMap<(&str, &str), u64> =
            samples.iter().fold(Default::default(), |mut m, s| {
                *m.entry((s.frames[0].function.as_str(), s.frames[0].module.as_str())).or_default() += 1;
                m
            });
        native_parts.push(counts.into_iter().map(|((f, m), n)| (f.to_string(), m.to_string(), n)).collect::<Vec<_>>());
    }
    let partials: Vec<Decoded> =
        (0..HOSTS).map(|i| rename(&seeds[i % SEEDS], &format!("h{}", i % SEEDS), &format!("h{i}"))).collect();
    let rows: usize = partials.iter().map(rows_of).sum();
    let mut sandbox = Vec::new();
    let mut native = Vec::new();
    for _ in 0..5 {
        // As a fleet invoke hands them over: decoded, owned, moved in (the copy is not timed).
        let owned = partials.clone();
        let t = Instant::now();
        runtime.merge(&hot, "b", &asker, &info, TimeRange::ALL, &params, owned).unwrap();
        sandbox.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        let counts = fleet_hot::merge((0..HOSTS).map(|i| {
            let p = &native_parts[i % SEEDS];
            fleet_hot::host_counts(&format!("h{i}"), p.iter().map(|(f, m, n)| (f.as_str(), m.as_str(), *n)), 200, false)
        }));
        std::hint::black_box(fleet_hot::rows(&counts).len());
        native.push(t.elapsed().as_secs_f64() * 1e3);
    }
    println!(
        "fleet-hot-functions: {HOSTS} partials ({rows} rows) merged in the sandbox in p50 {:.1} ms; natively {:.1} ms",
        p50(sandbox.clone()),
        p50(native.clone())
    );
    line("merge_1000_hot_functions", p50(sandbox), p50(native));

    // rack-contention: SEEDS real hosts' 300-slot runs.
    let rc = runtime
        .compile(&std::fs::read(loupe_testbed::wasm_component("rack_contention")).unwrap(), &asker, &info)
        .unwrap()
        .0;
    let params: Map<String, Value> = json!({"threshold_bps": 8_000_000}).as_object().unwrap().clone();
    let mut seeds = Vec::new();
    let mut runs = Vec::new();
    for h in 0..SEEDS {
        let (_dir, s) = store();
        let mut col = CpuColumns::zeroed(0, 300);
        for i in 0..300 {
            col.counter_mut(Counter::InBytes)[i] =
                if rng.random_bool(0.05) { 20_000 } else { rng.random_range(1..900) };
            col.counter_mut(Counter::OutBytes)[i] =
                if rng.random_bool(0.05) { 20_000 } else { rng.random_range(1..900) };
        }
        let run = NewRun {
            iface: "eth0".into(),
            host: format!("h{h}"),
            rack: None,
            start_unix_ns: T0,
            interval_ns: 1_000_000,
            samples: 300,
            local_prefixes: vec![],
            source: RunSource::Agent,
            per_cpu: vec![col.clone()],
            conn_counts: None,
            clock: None,
        };
        s.put_run(run, T0).unwrap();
        let (bytes, _) =
            runtime.invoke_partial(&rc, "b", &s, &host_info(&s).unwrap(), TimeRange::ALL, &params).unwrap();
        seeds.push(partial::decode(&bytes).unwrap());
        runs.push(col);
    }
    let partials: Vec<Decoded> =
        (0..HOSTS).map(|i| rename(&seeds[i % SEEDS], &format!("h{}", i % SEEDS), &format!("h{i}"))).collect();
    let rows: usize = partials.iter().map(rows_of).sum();
    let names: Vec<String> = (0..HOSTS).map(|i| format!("h{i}")).collect();
    let mut sandbox = Vec::new();
    let mut native = Vec::new();
    for _ in 0..7 {
        let owned = partials.clone();
        let t = Instant::now();
        runtime.merge(&rc, "b", &asker, &info, TimeRange::ALL, &params, owned).unwrap();
        sandbox.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        let parts = (0..HOSTS).map(|i| {
            let c = &runs[i % SEEDS];
            rack::contention(
                [rack::RunSlots {
                    host: &names[i],
                    start_ns: T0,
                    interval_ns: 1_000_000,
                    in_bytes: c.counter(Counter::InBytes),
                    out_bytes: c.counter(Counter::OutBytes),
                    in_ce_bytes: &[],
                    retx_bytes: &[],
                }],
                8_000_000,
            )
        });
        let merged = rack::merge(parts);
        std::hint::black_box(rack::incast_slots(&merged, 2, 2).len());
        native.push(t.elapsed().as_secs_f64() * 1e3);
    }
    println!(
        "rack-contention: {HOSTS} partials ({rows} rows) merged in the sandbox in p50 {:.1} ms; natively {:.1} ms",
        p50(sandbox.clone()),
        p50(native.clone())
    );
    line("merge_1000_rack_contention", p50(sandbox), p50(native));
}
