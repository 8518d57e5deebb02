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
            assert!(!thread.is_finished(), "the neighbour's first invocation failed");
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

/// A server with lowered limits (2 s, 64 MiB), team "mallory" for the hostile side and
/// team "alice" whose `count` analysis is the neighbour.
struct Setup {
    _dir: tempfile::TempDir,
    server: Server,
    hostile: Http,
    alice: String,
}

fn setup() -> Setup {
    setup_with("64MiB")
}

fn setup_with(memory: &str) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path());
    let server = Server::start(dir.path(), &["--udf-time-limit", "2s", "--udf-memory-limit", memory]);
    let hostile = Http::new(&server.url, Some(&server.token("mallory")));
    let alice = server.token("alice");
    Http::new(&server.url, Some(&alice)).upload("count", "sample_count");
    Setup { _dir: dir, server, hostile, alice }
}

/// Uploads `krate` (a valid component), invokes it while the neighbour runs, and checks the
/// error, that the neighbour progressed, and that the server still answers.
fn stopped_at_runtime(krate: &str, status: u16, code: &str, needle: &str) {
    stopped_at_runtime_with(setup(), krate, status, code, needle)
}

fn stopped_at_runtime_with(s: Setup, krate: &str, status: u16, code: &str, needle: &str) {
    let name = krate.replace('_', "-");
    s.hostile.upload(&name, krate);
    let neighbour = Neighbour::start(&s.server.url, &s.alice);
    let before = neighbour.ok.load(Ordering::Relaxed);
    let started = Instant::now();
    // Fast failures are repeated so they overlap the neighbour's calls.
    let rounds = if code == "time_limit" { 1 } else { 5 };
    for _ in 0..rounds {
        s.hostile.invoke(&name, json!({})).assert_error(status, code, needle);
    }
    let elapsed = started.elapsed();
    assert!(neighbour.finish(before) >= 1, "{krate}: the neighbour made no progress");
    if code == "time_limit" {
        assert!(elapsed >= Duration::from_secs(2) && elapsed < Duration::from_secs(4), "{krate}: {elapsed:?}");
    }
    assert_eq!(s.hostile.get("/api/v1/health").json()["status"], "ok", "{krate}: server still answers");
    let m = String::from_utf8(s.hostile.get("/metrics").body).unwrap();
    assert!(m.contains(&format!("cause=\"{code}\"")), "{code} missing from /metrics:\n{m}");
    s.server.stop();
}

/// Uploads bytes that must be refused, while the neighbour runs; nothing is stored.
fn refused_at_upload(bytes: &[u8], status: u16, code: &str, needle: &str) {
    let s = setup();
    let neighbour = Neighbour::start(&s.server.url, &s.alice);
    let before = neighbour.ok.load(Ordering::Relaxed);
    for _ in 0..3 {
        s.hostile.put_wasm("/api/v1/udfs/refused", bytes).assert_error(status, code, needle);
    }
    assert!(neighbour.finish(before) >= 1, "the neighbour made no progress");
    s.hostile.get("/api/v1/udfs/refused").assert_error(404, "not_found", "no analysis named 'refused'");
    let entries: Vec<String> = std::fs::read_dir(s.server.data.join("udfs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(entries, ["count"], "nothing of the refused upload is left");
    s.server.stop();
}

#[test]
fn infinite_loop_hits_the_time_limit() {
    stopped_at_runtime("hostile_infinite_loop", 408, "time_limit", "time limit of 2s exceeded");
}

#[test]
fn memory_growth_bomb_hits_the_memory_limit() {
    stopped_at_runtime("hostile_memory_bomb", 422, "memory_limit", "memory limit of 67108864 bytes exceeded");
}

#[test]
fn deep_recursion_hits_the_stack_limit() {
    stopped_at_runtime("hostile_deep_recursion", 422, "stack_limit", "wasm stack limit of 1048576 bytes exceeded");
}

#[test]
fn huge_output_hits_the_output_limit() {
    stopped_at_runtime("hostile_huge_output", 422, "output_limit", "exceeds the output limit of 4194304 bytes");
}

// What an analysis returns is bounded in depth and size before the host builds anything from
// it (the server once overflowed its stack on a 200,000-frame flame graph). These modules
// need room to build their results, so the memory limit is the default 256 MiB, or 1 GiB for
// the table of millions of rows.

#[test]
fn a_stack_of_200000_frames_hits_the_flame_depth_limit() {
    let s = setup_with("256MiB");
    stopped_at_runtime_with(s, "hostile_deep_flame", 422, "flame_depth_limit", "a stack of 200000 frames");
}

#[test]
fn a_flame_graph_of_900000_nodes_hits_the_node_limit() {
    let s = setup_with("256MiB");
    stopped_at_runtime_with(s, "hostile_wide_flame", 422, "flame_nodes_limit", "flame-graph node limit of 500000");
}

/// 3 million rows are more than the host lets wasmtime copy out of the guest in one call.
#[test]
fn a_table_of_millions_of_rows_hits_the_copy_limit() {
    let s = setup_with("1GiB");
    stopped_at_runtime_with(s, "hostile_huge_table", 422, "output_limit", "more than 134217728 bytes in one call");
}

/// 150,000 rows lift fine and meet the row bound.
#[test]
fn a_table_of_150000_rows_hits_the_row_limit() {
    let s = setup_with("256MiB");
    s.hostile.upload("rows", "hostile_huge_table");
    s.hostile.invoke("rows", json!({"params": {"rows": 150_000}})).assert_error(
        422,
        "table_rows_limit",
        "the result breaks the table row limit of 100000: 150000 rows",
    );
    assert_eq!(s.hostile.invoke("rows", json!({"params": {"rows": 3}})).json()["rows"].as_array().unwrap().len(), 3);
    s.server.stop();
}

#[test]
fn a_table_of_10000_columns_hits_the_column_limit() {
    let s = setup_with("256MiB");
    stopped_at_runtime_with(s, "hostile_wide_table", 422, "table_columns_limit", "10000 columns");
}

#[test]
fn a_2_mib_cell_hits_the_cell_limit() {
    let s = setup_with("256MiB");
    stopped_at_runtime_with(s, "hostile_huge_cell", 422, "cell_size_limit", "a cell of 2097152 bytes");
}

#[test]
fn two_million_points_hit_the_point_limit() {
    let s = setup_with("256MiB");
    stopped_at_runtime_with(s, "hostile_many_points", 422, "series_points_limit", "2000000 points");
}

#[test]
fn a_hundred_thousand_series_hit_the_series_limit() {
    let s = setup_with("256MiB");
    stopped_at_runtime_with(s, "hostile_many_series", 422, "series_limit", "100000 series");
}

/// The resident set of process `pid`, in bytes.
fn rss(pid: u32) -> u64 {
    loupe_testbed::sampling::process_status_kb(pid, "VmRSS:").expect("the server runs") * 1024
}

/// A module that opens cursors forever (ignoring any error) is stopped by a trap at the 17th,
/// and the server's memory does not grow with what it tried.
#[test]
fn opening_cursors_forever_hits_the_cursor_limit() {
    let s = setup();
    let pid = s.server.pid();
    let before = rss(pid);
    s.hostile.upload("hoarder", "hostile_cursor_hoarder");
    for _ in 0..20 {
        s.hostile.invoke("hoarder", json!({})).assert_error(422, "cursor_limit", "more than 16 cursors open at once");
    }
    let grown = rss(pid).saturating_sub(before);
    assert!(grown < 128 << 20, "the server grew by {grown} bytes over 20 hoarding invocations");
    stopped_at_runtime_with(s, "hostile_cursor_hoarder", 422, "cursor_limit", "drop cursors");
}

/// What an analysis touched stays resident after it only as far as `--udf-keep-resident` lets
/// it: the default keeps a pool slot's pages for the next instance (32 MiB at most), 0 hands
/// them back — what an agent under a tight `MemoryMax=` wants.
#[test]
fn memory_an_analysis_touched_stays_resident_only_as_configured() {
    let grown = |keep: &str| -> u64 {
        let dir = tempfile::tempdir().unwrap();
        fill(dir.path());
        let server = Server::start(dir.path(), &["--udf-memory-limit", "48MiB", "--udf-keep-resident", keep]);
        let http = Http::new(&server.url, Some(&server.token("mallory")));
        http.upload("bomb", "hostile_memory_bomb");
        let before = rss(server.pid());
        // It writes every page of 1 MiB chunks until the 48 MiB limit stops it.
        http.invoke("bomb", json!({})).assert_error(422, "memory_limit", "memory limit");
        let grown = rss(server.pid()).saturating_sub(before);
        server.stop();
        grown
    };
    let (kept, handed_back) = (grown("32MiB"), grown("0"));
    eprintln!(
        "after a 48 MiB analysis the server kept {} KiB with --udf-keep-resident 32MiB, {} KiB with 0",
        kept >> 10,
        handed_back >> 10
    );
    assert!(kept >= 24 << 20, "the pool kept only {kept} bytes of a 48 MiB instance (32 MiB asked)");
    assert!(handed_back < 12 << 20, "{handed_back} bytes stayed resident with --udf-keep-resident 0");
}

#[test]
fn a_panic_is_a_trap_with_its_message() {
    stopped_at_runtime("hostile_panic", 422, "trap", "hostile module panicked on purpose");
}

#[test]
fn malformed_bytes_are_refused() {
    refused_at_upload(b"this is not wasm", 400, "malformed_wasm", "not a WebAssembly binary");
    let mut truncated = wasm("noop");
    truncated.truncate(truncated.len() / 2);
    refused_at_upload(&truncated, 400, "malformed_wasm", "malformed WebAssembly");
}

#[test]
fn a_core_module_is_refused_with_how_to_build_a_component() {
    // The smallest valid core module: magic and version 1.
    refused_at_upload(b"\0asm\x01\0\0\0", 422, "not_a_component", "--target wasm32-wasip2");
}

#[test]
fn a_component_importing_the_filesystem_is_refused() {
    refused_at_upload(&wasm("hostile_filesystem"), 422, "forbidden_import", "wasi:filesystem/");
}

#[test]
fn a_component_importing_sockets_is_refused() {
    refused_at_upload(&wasm("hostile_sockets"), 422, "forbidden_import", "wasi:sockets/");
}

#[test]
fn an_oversized_upload_is_refused() {
    refused_at_upload(&vec![0u8; 33 << 20], 413, "module_too_large", "module size limit of 33554432 bytes");
}

#[test]
fn a_log_flood_is_capped_not_fatal() {
    let s = setup();
    s.hostile.upload("flood", "hostile_log_flood");
    let v = s.hostile.invoke("flood", json!({})).json();
    assert_eq!(v["text"], "done", "{v}");
    assert!(v["log_dropped"].as_u64().unwrap() > 900_000, "{}", v["log_dropped"]);
    let kept: usize = v["log"].as_array().unwrap().iter().map(|l| l["message"].as_str().unwrap().len()).sum();
    assert!(kept > 0 && kept <= 64 << 10, "{kept} log bytes kept");
    s.server.stop();
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
