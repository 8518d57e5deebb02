//! The whole path for every example analysis: upload → list → invoke → result, against stored
//! data whose answers are known (planted bursts, stalls, connection counts, cross-region
//! bytes, stacks), through a real `loupe serve` and real wasm components from `udf-sdk`.

mod common;

use common::{data::*, *};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const EXAMPLES: &[(&str, &str)] = &[
    ("burst-detector", "burst_detector"),
    ("incast-detector", "incast_detector"),
    ("nic-stall-detector", "nic_stall_detector"),
    ("cross-region-share", "cross_region_share"),
    ("hot-functions", "hot_functions"),
    ("flame", "flame"),
    ("noop", "noop"),
    ("sample-count", "sample_count"),
];

fn ok(a: Answer) -> Value {
    assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
    a.json()
}

fn rows(v: &Value) -> Vec<Vec<Value>> {
    assert_eq!(v["kind"], "table", "{v}");
    v["rows"].as_array().unwrap().iter().map(|r| r.as_array().unwrap().clone()).collect()
}

fn columns(v: &Value) -> Vec<String> {
    v["columns"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap().to_string()).collect()
}

#[test]
fn every_example_answers_what_the_data_holds() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = fill(dir.path());
    // Waits off the CPU beside the samples: no answer over CPU samples below may count them.
    fill_waits(dir.path());
    let server = Server::start(dir.path(), &[]);
    let http = Http::new(&server.url, Some(&server.token("netops")));

    // Upload and list.
    for (name, krate) in EXAMPLES {
        let up = http.upload(name, krate);
        assert_eq!(up["owner"], "netops");
        assert_eq!(up["replaced"], false);
    }
    let list = ok(http.get("/api/v1/udfs"));
    assert_eq!(list.as_array().unwrap().len(), EXAMPLES.len());
    for (name, krate) in EXAMPLES {
        let entry = list.as_array().unwrap().iter().find(|u| u["name"] == *name).unwrap();
        let bytes = wasm(krate);
        assert_eq!(entry["size"], bytes.len() as u64);
        assert_eq!(entry["sha256"].as_str().unwrap(), format!("{:x}", Sha256::digest(&bytes)));
        assert_eq!(entry["owner"], "netops");
        assert!(!entry["description"]["summary"].as_str().unwrap().is_empty());
    }
    let all = json!({"from": 0, "to": (T0 + 3600 * SEC).to_string()});

    // Burst detector: exact rows, then min_samples, threshold and range narrowing.
    let mut req = all.clone();
    req["params"] = json!({"threshold_bps": 10_000_000});
    let v = ok(http.invoke("burst-detector", req.clone()));
    assert_eq!(columns(&v), ["run_id", "start_ns", "samples", "duration_ns", "bytes", "peak_bps"]);
    let want = vec![
        json!([a, T0 + 100 * MS, 10, 10 * MS, 500_000, 50_000_000]),
        json!([a, T0 + 500 * MS, 3, 3 * MS, 60_000, 20_000_000]),
        json!([a, T0 + 1999 * MS, 1, MS, 60_000, 60_000_000]),
        json!([b, RUN_B_START + 100 * MS, 5, 50 * MS, 1_000_000, 20_000_000]),
    ];
    let got: Vec<Value> = rows(&v).into_iter().map(Value::from).collect();
    assert_eq!(got, want);
    req["params"]["min_samples"] = json!(2);
    assert_eq!(rows(&ok(http.invoke("burst-detector", req.clone()))).len(), 3, "the 1-slot burst at the end drops");
    req["params"] = json!({"threshold_bps": 30_000_000});
    let starts: Vec<Value> = rows(&ok(http.invoke("burst-detector", req))).iter().map(|r| r[1].clone()).collect();
    assert_eq!(starts, [json!(T0 + 100 * MS), json!(T0 + 1999 * MS)]);
    let only_a = json!({"from": T0, "to": T0 + SEC, "params": {"threshold_bps": 10_000_000}});
    assert_eq!(rows(&ok(http.invoke("burst-detector", only_a))).len(), 3, "run B starts outside the range");

    // Incast: only the burst with 40 connections.
    let mut req = all.clone();
    req["params"] = json!({"threshold_bps": 10_000_000, "min_conns": 8});
    let v = ok(http.invoke("incast-detector", req));
    assert_eq!(columns(&v), ["run_id", "start_ns", "samples", "bytes", "max_conns"]);
    assert_eq!(rows(&v), vec![vec![json!(a), json!(T0 + 100 * MS), json!(10), json!(500_000), json!(40)]]);

    // NIC stall: the 10-slot silence; with K = 3 the 3-slot one too.
    let v = ok(http.invoke("nic-stall-detector", all.clone()));
    assert_eq!(columns(&v), ["run_id", "start_ns", "samples", "duration_ns", "out_packets"]);
    assert_eq!(rows(&v), vec![vec![json!(a), json!(T0 + 1200 * MS), json!(10), json!(10 * MS), json!(20)]]);
    let mut req = all.clone();
    req["params"] = json!({"min_samples": 3});
    let v = ok(http.invoke("nic-stall-detector", req));
    assert_eq!(rows(&v).len(), 2);
    assert_eq!(rows(&v)[1], vec![json!(a), json!(T0 + 1500 * MS), json!(3), json!(3 * MS), json!(6)]);

    // Cross-region share: a quarter of run A's in bytes, a tenth of its out bytes; none in B.
    let v = ok(http.invoke("cross-region-share", all.clone()));
    assert_eq!(v["kind"], "series");
    let series = v["series"].as_array().unwrap();
    let named =
        |n: &str| series.iter().find(|s| s["name"] == n).unwrap_or_else(|| panic!("no {n}: {v}"))["points"].clone();
    assert_eq!(named("in_share"), json!([[T0, 0.25], [RUN_B_START, 0.0]]));
    assert_eq!(named("out_share"), json!([[T0, 0.1], [RUN_B_START, 0.0]]));
    let run_a = run_a();
    let sum = |c: loupe_store::Counter| -> u64 { run_a.per_cpu.iter().flat_map(|p| p.counter(c)).sum() };
    use loupe_store::Counter::*;
    let total = (sum(InCrossRegionBytes) + sum(OutCrossRegionBytes)) as f64 / (sum(InBytes) + sum(OutBytes)) as f64;
    let got = named("total_share");
    assert_eq!(got[0][0], json!(T0));
    assert!((got[0][1].as_f64().unwrap() - total).abs() < 1e-12, "{got} vs {total}");
    assert_eq!(got[1], json!([RUN_B_START, 0.0]));

    // Hot functions: the planted counts, and the same numbers as the host's own profile.
    let v = ok(http.invoke("hot-functions", all.clone()));
    assert_eq!(columns(&v), ["function", "module", "self_samples", "total_samples", "self_percent"]);
    let r = rows(&v);
    let top: Vec<(Value, Value, Value)> =
        r.iter().take(3).map(|r| (r[0].clone(), r[2].clone(), r[3].clone())).collect();
    assert_eq!(
        top,
        [
            (json!("hot_leaf"), json!(300), json!(300)),
            (json!("cold_leaf"), json!(102), json!(102)),
            (json!("other_leaf"), json!(60), json!(60)),
        ]
    );
    assert!((r[0][4].as_f64().unwrap() - 300.0 / 462.0 * 100.0).abs() < 1e-9, "{:?}", r[0]);
    let profile = ok(http.get(&format!("/api/v1/profile?from=0&to={}", T0 + 3600 * SEC)));
    for f in profile["functions"].as_array().unwrap() {
        if let Some(row) = r.iter().find(|row| row[0] == f["name"]) {
            assert_eq!((&row[2], &row[3]), (&f["self"], &f["total"]), "{}", f["name"]);
        }
    }
    let mut req = all.clone();
    req["params"] = json!({"pid": 200, "top": 1});
    let r = rows(&ok(http.invoke("hot-functions", req)));
    assert_eq!(r.len(), 1);
    assert_eq!((&r[0][0], &r[0][2]), (&json!("other_leaf"), &json!(60)));

    // Flame graph: exactly the host's profile of the same range.
    let v = ok(http.invoke("flame", all.clone()));
    assert_eq!(v["kind"], "flamegraph");
    assert_eq!(v["profile"]["flamegraph"], profile["flamegraph"]);
    assert_eq!(v["profile"]["samples"], 462);
    // Off the CPU: the waits through the analysis cursor, each weighed by its wait times its 1
    // in N — exactly the host's off-CPU profile (5 waits, 70 ms in all; one PID's 2, 40 ms).
    let mut req = all.clone();
    req["params"] = json!({"off_cpu": true});
    let v = ok(http.invoke("flame", req.clone()));
    let waits = ok(http.get(&format!("/api/v1/profile?kind=off_cpu&from=0&to={}", T0 + 3600 * SEC)));
    assert_eq!(waits["flamegraph"]["value"], 70_000_000u64);
    assert_eq!(v["profile"]["flamegraph"], waits["flamegraph"]);
    req["params"] = json!({"off_cpu": true, "pid": 200});
    assert_eq!(ok(http.invoke("flame", req))["profile"]["flamegraph"]["value"], 40_000_000u64);

    // Sample count (idle included), whole range and one 10-s batch.
    assert_eq!(ok(http.invoke("sample-count", all.clone()))["text"], "504");
    let first = json!({"from": SAMPLES_START, "to": SAMPLES_START + 10 * SEC});
    assert_eq!(ok(http.invoke("sample-count", first))["text"], "168");
    assert_eq!(ok(http.invoke("noop", json!({})))["text"], "ok");

    // Bad parameters: named, typed, required.
    let mut req = all.clone();
    req["params"] = json!({"threshold": 5});
    http.invoke("burst-detector", req).assert_error(400, "bad_params", "unknown parameter 'threshold'");
    http.invoke("burst-detector", all.clone()).assert_error(
        400,
        "bad_params",
        "missing required parameter 'threshold_bps'",
    );
    let mut req = all.clone();
    req["params"] = json!({"threshold_bps": "fast"});
    http.invoke("burst-detector", req).assert_error(400, "bad_params", "must be an unsigned integer");
    http.invoke("noop", json!({"from": 10, "to": 5})).assert_error(400, "bad_range", "after");
    http.invoke("noop", json!({"from": "yesterday"})).assert_error(400, "bad_time", "RFC 3339");
    http.invoke("missing", json!({})).assert_error(404, "not_found", "no analysis named 'missing'");

    // Metrics count the invocations and the failures by cause.
    let m = String::from_utf8(http.get("/metrics").body).unwrap();
    assert!(m.contains("loupe_analysis_invocations_total{analysis=\"burst-detector\"} 7"), "{m}");
    assert!(m.contains("loupe_analysis_failures_total{analysis=\"burst-detector\",cause=\"bad_params\"} 3"), "{m}");
    assert!(m.contains("loupe_runs 2"), "{m}");
    assert!(m.contains("loupe_stack_samples 509"), "504 CPU samples and 5 waits: {m}");
    server.stop();
}

/// Uploaded analyses survive a restart, from their cached artifacts or, when an artifact is
/// missing or damaged, recompiled from the component.
#[test]
fn analyses_survive_restarts_and_damaged_caches() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path());
    let server = Server::start(dir.path(), &[]);
    let token = server.token("perf");
    let http = Http::new(&server.url, Some(&token));
    http.upload("noop", "noop");
    http.upload("count", "sample_count");
    server.stop();

    let artifact = dir.path().join("udfs/count/compiled.cwasm");
    assert!(artifact.exists());
    std::fs::write(&artifact, b"garbage").unwrap();
    std::fs::remove_file(dir.path().join("udfs/noop/compiled.cwasm")).unwrap();

    let server = Server::start(dir.path(), &[]);
    let http = Http::new(&server.url, Some(&token));
    let list = ok(http.get("/api/v1/udfs"));
    let names: Vec<&str> = list.as_array().unwrap().iter().map(|u| u["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["count", "noop"]);
    assert_eq!(ok(http.invoke("noop", json!({})))["text"], "ok");
    assert_eq!(ok(http.invoke("count", json!({})))["text"], "504");
    assert!(std::fs::read(&artifact).unwrap().len() > 1000, "the artifact was rewritten");
    server.stop();
}
