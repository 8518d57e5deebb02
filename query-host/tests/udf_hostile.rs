//! Hostile and broken analyses, each stopped with a clear error naming the limit, while
//! another team's invocation runs at the same time and succeeds, and the server keeps
//! answering. Limits are lowered (2 s, 64 MiB) so the suite stays quick.

mod common;

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    thread,
    time::{Duration, Instant},
};

use common::{data::*, *};
use serde_json::json;

/// Team B invoking `sample-count` in a loop until stopped; every answer must be right.
struct Neighbour {
    stop: Arc<AtomicBool>,
    ok: Arc<AtomicU64>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Neighbour {
    fn start(url: &str, token: &str) -> Neighbour {
        let stop = Arc::new(AtomicBool::new(false));
        let ok = Arc::new(AtomicU64::new(0));
        let http = Http::new(url, Some(token));
        let (s, o) = (Arc::clone(&stop), Arc::clone(&ok));
        let thread = thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                let a = http.invoke("count", json!({}));
                assert_eq!(a.status, 200, "neighbour failed: {}", String::from_utf8_lossy(&a.body));
                assert_eq!(a.json()["text"], "504");
                o.fetch_add(1, Ordering::Relaxed);
            }
        });
        // Let it get going before the hostile call.
        while ok.load(Ordering::Relaxed) == 0 {
            thread::sleep(Duration::from_millis(5));
        }
        Neighbour { stop, ok, thread: Some(thread) }
    }

    /// Stops the loop; returns how many invocations succeeded while the hostile one ran.
    fn finish(mut self, before: u64) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().expect("the neighbour's invocations all succeeded");
        self.ok.load(Ordering::Relaxed) - before
    }
}

#[test]
fn hostile_modules_are_stopped_and_neighbours_do_not_notice() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path());
    let server = Server::start(dir.path(), &["--udf-time-limit", "2s", "--udf-memory-limit", "64MiB"]);
    let a = Http::new(&server.url, Some(&server.token("mallory")));
    let b_token = server.token("alice");
    let b = Http::new(&server.url, Some(&b_token));
    b.upload("count", "sample_count");

    // Runtime limits: upload (allowed: they are valid components), then invoke.
    let runtime_cases: &[(&str, u16, &str, &str)] = &[
        ("hostile_infinite_loop", 408, "time_limit", "time limit of 2s exceeded"),
        ("hostile_memory_bomb", 422, "memory_limit", "memory limit of 67108864 bytes exceeded"),
        ("hostile_deep_recursion", 422, "stack_limit", "wasm stack limit of 1048576 bytes exceeded"),
        ("hostile_huge_output", 422, "output_limit", "exceeds the output limit of 4194304 bytes"),
        ("hostile_panic", 422, "trap", "hostile module panicked on purpose"),
    ];
    for (krate, status, code, needle) in runtime_cases {
        let name = krate.replace('_', "-");
        a.upload(&name, krate);
        let neighbour = Neighbour::start(&server.url, &b_token);
        let before = neighbour.ok.load(Ordering::Relaxed);
        let started = Instant::now();
        // Fast failures are repeated so they overlap the neighbour's calls.
        let rounds = if *code == "time_limit" { 1 } else { 5 };
        for _ in 0..rounds {
            a.invoke(&name, json!({})).assert_error(*status, code, needle);
        }
        let elapsed = started.elapsed();
        let during = neighbour.finish(before);
        assert!(during >= 1, "{krate}: the neighbour made no progress");
        if *code == "time_limit" {
            assert!(elapsed >= Duration::from_secs(2) && elapsed < Duration::from_secs(4), "{krate}: {elapsed:?}");
        }
        assert_eq!(a.get("/api/v1/health").json()["status"], "ok", "{krate}: server still answers");
    }

    // A log flood is capped, not fatal.
    a.upload("flood", "hostile_log_flood");
    let v = a.invoke("flood", json!({})).json();
    assert_eq!(v["text"], "done", "{v}");
    assert!(v["log_dropped"].as_u64().unwrap() > 900_000, "{}", v["log_dropped"]);
    let kept: usize = v["log"].as_array().unwrap().iter().map(|l| l["message"].as_str().unwrap().len()).sum();
    assert!(kept <= 64 << 10, "{kept} log bytes kept");

    // Uploads that are refused, with the neighbour running.
    let neighbour = Neighbour::start(&server.url, &b_token);
    let before = neighbour.ok.load(Ordering::Relaxed);
    a.put_wasm("/api/v1/udfs/junk", b"this is not wasm").assert_error(400, "malformed_wasm", "not a WebAssembly binary");
    let mut truncated = wasm("noop");
    truncated.truncate(truncated.len() / 2);
    a.put_wasm("/api/v1/udfs/junk", &truncated).assert_error(400, "malformed_wasm", "malformed WebAssembly");
    // The smallest valid core module: magic and version 1.
    a.put_wasm("/api/v1/udfs/core", b"\0asm\x01\0\0\0").assert_error(422, "not_a_component", "core WebAssembly module");
    a.put_wasm("/api/v1/udfs/fs", &wasm("hostile_filesystem")).assert_error(422, "forbidden_import", "wasi:filesystem/");
    a.put_wasm("/api/v1/udfs/net", &wasm("hostile_sockets")).assert_error(422, "forbidden_import", "wasi:sockets/");
    a.put_wasm("/api/v1/udfs/big", &vec![0u8; 33 << 20]).assert_error(413, "module_too_large", "module size limit");
    a.put_wasm("/api/v1/udfs/Bad.Name", &wasm("noop")).assert_error(400, "bad_name", "bad analysis name");
    assert!(neighbour.finish(before) >= 1);
    let names: Vec<String> =
        a.get("/api/v1/udfs").json().as_array().unwrap().iter().map(|u| u["name"].as_str().unwrap().into()).collect();
    for refused in ["junk", "core", "fs", "net", "big"] {
        assert!(!names.contains(&refused.to_string()), "{refused} must not be stored: {names:?}");
    }
    assert!(!std::fs::read_dir(dir.path().join("udfs")).unwrap().any(|e| {
        let n = e.unwrap().file_name();
        n.to_string_lossy().starts_with('.')
    }));

    // Failures by cause, in the metrics.
    let m = String::from_utf8(a.get("/metrics").body).unwrap();
    for cause in ["time_limit", "memory_limit", "stack_limit", "output_limit", "trap"] {
        assert!(m.contains(&format!("cause=\"{cause}\"")), "{cause} missing from /metrics:\n{m}");
    }
    server.stop();
}

/// One team cannot crowd out the others: its second concurrent invocation gets 429 while
/// another team's succeeds.
#[test]
fn a_team_at_its_concurrency_limit_gets_429() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path());
    let server = Server::start(dir.path(), &["--udf-time-limit", "2s", "--udf-team-concurrency", "1"]);
    let a_token = server.token("busy");
    let a = Http::new(&server.url, Some(&a_token));
    let b = Http::new(&server.url, Some(&server.token("other")));
    a.upload("spin", "hostile_infinite_loop");
    a.upload("count", "sample_count");
    let url = server.url.clone();
    let spinning = thread::spawn(move || Http::new(&url, Some(&a_token)).invoke("spin", json!({})).status);
    thread::sleep(Duration::from_millis(300));
    a.invoke("count", json!({})).assert_error(429, "team_concurrency_limit", "team 'busy' already runs 1");
    let v = b.invoke("count", json!({}));
    assert_eq!((v.status, v.json()["text"].clone()), (200, json!("504")));
    assert_eq!(spinning.join().unwrap(), 408);
    assert_eq!(a.invoke("count", json!({})).status, 200, "the slot is free again");
    server.stop();
}
