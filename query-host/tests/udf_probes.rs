//! The probe cursor (`open-probes`) end to end: stored probe sessions of a packet loop —
//! `handle → parse, lookup ×2, forward`, durations known, one slow `forward` — read by the
//! `probe-latency` example analysis through a real `loupe serve`; and the cursor's bounds on
//! a session of a million calls, in the host (every batch, what the host holds) and through
//! the sandbox.

mod common;

use common::*;
use loupe_core::probes::probe_view;
use loupe_sandbox::{
    bindings::{
        HostInfo,
        loupe::udf::{
            data::{Host as _, HostProbeCursor},
            types::TimeRange as WitRange,
        },
    },
    cursors::ProbeCursor,
    host::{DataHost, MAX_OPEN_CURSORS},
    log::InvocationLog,
    probes::{MAX_PROBE_CALL_BATCH_BYTES, PROBE_CALL_GUEST_BYTES, PROBE_CALL_PAGE},
};
use loupe_store::{ProbeCall, ProbeFunction, ProbeSession, Retention, Store};
use serde_json::{Value, json};
use wasmtime::component::Resource;

/// 2026-11-23 00:00 UTC, like the testbed's synthetic data.
const T0: u64 = 1_795_392_000_000_000_000;
const SEC: u64 = 1_000_000_000;
const BIAS_NS: u64 = 30;
const FUNCTIONS: [&str; 4] = ["handle", "parse", "lookup", "forward"];
/// The slow `forward`: how long, on which thread and packet.
const SLOW_FORWARD_NS: u64 = 80_000;
/// Time inside `handle` outside its callees: 15 ns before the first, 10 between each two, 15
/// after the last.
const HANDLE_SELF_NS: u64 = 15 + 3 * 10 + 15;

/// The durations of one packet's calls: parse, lookup, lookup, forward.
fn packet_ns(thread: u32, i: u32) -> [u64; 4] {
    let i = u64::from(i) + u64::from(thread) * 7;
    [120 + (i * 7) % 40, 200 + (i * 13) % 60, 210 + (i * 17) % 50, 300 + (i * 11) % 100]
}

/// A packet loop on `threads` threads of `packets` packets each, recorded with `--calls`:
/// calls by thread, then entry (the order the kernel's records are stored in), parents as
/// global indexes; histograms, counts and sums from the same durations, as the kernel's
/// log-linear buckets count them. `slow`: (thread, packet) whose `forward` takes
/// [`SLOW_FORWARD_NS`].
fn packet_loop(start: u64, threads: u32, packets: u32, slow: Option<(u32, u32)>) -> ProbeSession {
    let mut calls: Vec<ProbeCall> = Vec::with_capacity((threads * packets * 5) as usize);
    let call = |function: u32, tid: u32, entry: u64, ns: u64, parent: Option<u32>| ProbeCall {
        function,
        pid: 4242,
        tid,
        cpu: tid % 4,
        entry_unix_ns: entry,
        exit_unix_ns: entry + ns,
        depth: u32::from(parent.is_some()),
        parent,
    };
    for thread in 0..threads {
        let tid = 4242 + thread;
        let mut t = start + 1_000 + u64::from(thread) * 333;
        for i in 0..packets {
            let mut ns = packet_ns(thread, i);
            if slow == Some((thread, i)) {
                ns[3] = SLOW_FORWARD_NS;
            }
            let handle = calls.len() as u32;
            let total = HANDLE_SELF_NS + ns.iter().sum::<u64>();
            calls.push(call(0, tid, t, total, None));
            let mut at = t + 15;
            for (k, d) in ns.into_iter().enumerate() {
                calls.push(call([1, 2, 2, 3][k], tid, at, d, Some(handle)));
                at += d + 10;
            }
            t += total + 2_000;
        }
    }
    let functions = FUNCTIONS
        .iter()
        .enumerate()
        .map(|(f, name)| {
            let mut buckets = std::collections::BTreeMap::<u32, u64>::new();
            let (mut n, mut total, mut max) = (0u64, 0u64, 0u64);
            for c in calls.iter().filter(|c| c.function == f as u32) {
                let d = c.exit_unix_ns - c.entry_unix_ns;
                *buckets.entry(loupe_bpf::bucket_of(d)).or_default() += 1;
                (n, total, max) = (n + 1, total + d, max.max(d));
            }
            ProbeFunction {
                name: name.to_string(),
                symbol: name.to_string(),
                binary: "/usr/local/bin/nf".into(),
                address: 0x401000 + 0x100 * f as u64,
                probe_offset: 0,
                calls: n,
                sampled: n,
                total_ns: total,
                max_ns: max,
                buckets: buckets.into_iter().collect(),
            }
        })
        .collect();
    ProbeSession {
        id: 0,
        start_unix_ns: start,
        end_unix_ns: calls.last().map_or(start, |c| c.exit_unix_ns) + SEC,
        pids: vec![4242],
        binary: None,
        sample_every: 1,
        with_calls: true,
        ended: "duration".into(),
        notes: vec![],
        bias_ns: BIAS_NS,
        functions,
        calls,
        calls_lost: 0,
    }
}

fn open_store(dir: &std::path::Path) -> Store {
    Store::open(dir, Retention { max_age: std::time::Duration::from_secs(100 * 365 * 86400), max_bytes: 1 << 40 })
        .unwrap()
}

/// The store, for a server started next: dropped, it waits until sled lets go of its lock.
fn store_for_a_server(dir: &std::path::Path) -> loupe_testbed::synthetic::Kept {
    loupe_testbed::synthetic::open_kept(dir)
}

fn ok(a: Answer) -> Value {
    assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
    a.json()
}

/// The rows of a table answer.
fn table_rows(v: &Value) -> Vec<Vec<Value>> {
    assert_eq!(v["kind"], "table", "{v}");
    v["rows"].as_array().unwrap().iter().map(|r| r.as_array().unwrap().clone()).collect()
}

/// The analysis' log line "N sessions, C calls in B batches (largest L)" as (N, C, B, L).
fn batch_line(v: &Value) -> (u64, u64, u64, u64) {
    let lines = v["log"].as_array().unwrap();
    let line = lines
        .iter()
        .filter_map(|l| l["message"].as_str())
        .find(|m| m.contains(" batches (largest "))
        .unwrap_or_else(|| panic!("no batch line in {lines:?}"));
    let n: Vec<u64> =
        line.split(|c: char| !c.is_ascii_digit()).filter(|s| !s.is_empty()).map(|s| s.parse().unwrap()).collect();
    (n[0], n[1], n[2], n[3])
}

#[test]
fn probe_latency_names_the_percentiles_and_the_slow_forward() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, stored) = {
        let store = store_for_a_server(dir.path());
        let a = store.put_probe_session(packet_loop(T0 + 60 * SEC, 2, 2_000, Some((1, 1234)))).unwrap();
        // A session without `--calls`: percentiles only.
        let mut quiet = packet_loop(T0 + 120 * SEC, 1, 500, None);
        quiet.calls.clear();
        quiet.with_calls = false;
        let b = store.put_probe_session(quiet).unwrap();
        // Outside the range asked for below.
        store.put_probe_session(packet_loop(T0 + 7200 * SEC, 1, 10, Some((0, 3)))).unwrap();
        let stored = store.probe_session(a).unwrap().unwrap();
        store.flush().unwrap();
        (a, b, stored)
    };
    let cli = probe_view(&stored, false);
    let server = Server::start(dir.path(), &[]);
    let http = Http::new(&server.url, Some(&server.token("perf")));
    http.upload("probe-latency", "probe_latency");
    let req = json!({"from": 0, "to": (T0 + 3600 * SEC).to_string(), "params": {"top": 3}});
    let v = ok(http.invoke("probe-latency", req));
    let names: Vec<&str> = v["columns"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "what",
            "session",
            "function",
            "calls",
            "timed",
            "p50_ns",
            "p90_ns",
            "p99_ns",
            "mean_ns",
            "max_ns",
            "pid",
            "tid",
            "entry_ns",
            "duration_ns",
            "self_ns"
        ]
    );
    let rows = table_rows(&v);
    assert_eq!(batch_line(&v).0, 2, "the session outside the range is not read");

    // Percentiles: exactly what `loupe probes show` says (histogram midpoints, the bias
    // subtracted), and within a bucket (1/16) of the exact ones.
    let latency: Vec<&Vec<Value>> = rows.iter().filter(|r| r[0] == "latency" && r[1] == a).collect();
    assert_eq!(latency.len(), 4);
    for (row, f) in latency.iter().zip(&cli.functions) {
        assert_eq!(row[2], f.name.as_str());
        let want = json!([f.calls, f.timed, f.p50_ns, f.p90_ns, f.p99_ns, f.mean_ns, f.max_ns]);
        assert_eq!(Value::from(row[3..10].to_vec()), want, "{}", f.name);
        let mut exact: Vec<u64> = stored
            .calls
            .iter()
            .filter(|c| stored.functions[c.function as usize].name == f.name)
            .map(|c| c.exit_unix_ns - c.entry_unix_ns)
            .collect();
        exact.sort_unstable();
        for (q, got) in [(0.5, f.p50_ns), (0.99, f.p99_ns)] {
            let want = exact[(q * exact.len() as f64).ceil() as usize - 1] - BIAS_NS;
            let got = got.unwrap();
            assert!(got.abs_diff(want) <= (want + BIAS_NS) / 16 + 1, "{} q{q}: {got} vs {want}", f.name);
        }
    }
    assert_eq!(latency[3][9], SLOW_FORWARD_NS, "forward's maximum is the slow one");
    let quiet: Vec<&Vec<Value>> = rows.iter().filter(|r| r[0] == "latency" && r[1] == b).collect();
    assert_eq!(quiet.len(), 4, "a session without calls still has its percentiles");
    assert!(quiet[0][5].as_u64().unwrap() > 0);

    // The slowest call: the `handle` around the slow `forward`, whose heaviest child is that
    // forward; its self time is the gaps between its callees.
    let slow = rows.iter().position(|r| r[0] == "slow #1").expect("a slowest call");
    let s = &rows[slow];
    let [p, l1, l2, _] = packet_ns(1, 1234);
    let handle_ns = HANDLE_SELF_NS + p + l1 + l2 + SLOW_FORWARD_NS;
    assert_eq!((&s[1], &s[2], &s[11]), (&json!(a), &json!("handle"), &json!(4243)));
    assert_eq!((&s[13], &s[14]), (&json!(handle_ns), &json!(HANDLE_SELF_NS)));
    let slow_handle =
        stored.calls.iter().find(|c| c.function == 0 && c.exit_unix_ns - c.entry_unix_ns == handle_ns).unwrap();
    assert_eq!(s[12], slow_handle.entry_unix_ns);
    let children: Vec<(Value, Value, Value)> = rows[slow + 1..slow + 4]
        .iter()
        .map(|r| {
            assert_eq!(r[0], "  in #1");
            (r[2].clone(), r[3].clone(), r[13].clone())
        })
        .collect();
    assert_eq!(
        children,
        [
            (json!("forward"), json!(1), json!(SLOW_FORWARD_NS)),
            (json!("lookup"), json!(2), json!(l1 + l2)),
            (json!("parse"), json!(1), json!(p)),
        ],
        "heaviest child first"
    );
    // The CLI's slowest tree agrees.
    assert_eq!((cli.slowest[0].duration_ns, cli.slowest[0].self_ns), (handle_ns, HANDLE_SELF_NS));
    // Then the next slowest, slower first, and nothing from the session without calls.
    let durations: Vec<u64> = rows
        .iter()
        .filter(|r| r[0].as_str().is_some_and(|w| w.starts_with("slow #")))
        .map(|r| r[13].as_u64().unwrap())
        .collect();
    assert_eq!(durations.len(), 3);
    assert!(durations.windows(2).all(|w| w[0] >= w[1]) && durations[1] < handle_ns, "{durations:?}");
    assert!(rows.iter().filter(|r| r[0] != "latency").all(|r| r[1] == a));

    // `session` narrows to one; `function` ranks that function's own calls.
    let req = json!({"from": 0, "to": (T0 + 3600 * SEC).to_string(), "params": {"session": b, "function": "forward"}});
    let v = ok(http.invoke("probe-latency", req));
    assert!(table_rows(&v).iter().all(|r| r[1] == b && r[0] == "latency"), "b has no calls to rank");
    let req = json!({"from": 0, "to": (T0 + 3600 * SEC).to_string(), "params": {"top": 1, "function": "forward"}});
    let r = table_rows(&ok(http.invoke("probe-latency", req)));
    let s = r.iter().find(|r| r[0] == "slow #1").unwrap();
    assert_eq!((&s[2], &s[13], &s[14]), (&json!("forward"), &json!(SLOW_FORWARD_NS), &json!(SLOW_FORWARD_NS)));
    server.stop();
}

/// A session of exactly 1,000,000 calls (4 threads × 50,000 packets × 5 calls).
fn million(store: &Store) -> u64 {
    let s = packet_loop(T0 + 60 * SEC, 4, 50_000, Some((2, 40_000)));
    assert_eq!(s.calls.len(), loupe_store::MAX_SESSION_CALLS);
    store.put_probe_session(s).unwrap()
}

fn data_host(store: &Store) -> DataHost {
    let info = HostInfo {
        hostname: "test".into(),
        loupe_version: "0".into(),
        cpus: 2,
        retained: WitRange { from_ns: 0, to_ns: 0 },
    };
    DataHost::new(store.clone(), info, InvocationLog::new(64 << 10))
}

fn borrow(c: &Resource<ProbeCursor>) -> Resource<ProbeCursor> {
    Resource::new_borrow(c.rep())
}

#[test]
fn the_probe_cursor_hands_out_a_million_calls_in_bounded_batches() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path());
    let id = million(&store);
    let small = store.put_probe_session(packet_loop(T0 + 90 * SEC, 1, 100, None)).unwrap();
    let whole = store.probe_session(id).unwrap().unwrap();
    let mut host = data_host(&store);
    let all = WitRange { from_ns: 0, to_ns: u64::MAX };

    let cursor = host.open_probes(all).unwrap().unwrap();
    assert!(host.next_calls(borrow(&cursor)).unwrap().is_empty(), "no calls before a session");
    let s = host.next_session(borrow(&cursor)).unwrap().expect("the big session");
    assert_eq!((s.id, s.recorded_calls, s.bias_ns, s.functions.len()), (id, 1_000_000, BIAS_NS, 4));
    assert_eq!(s.functions[3].histogram.iter().map(|b| b.count).sum::<u64>(), 200_000);
    let (mut n, mut batches) = (0usize, 0);
    loop {
        let batch = host.next_calls(borrow(&cursor)).unwrap();
        if batch.is_empty() {
            break;
        }
        batches += 1;
        assert!(batch.len() <= PROBE_CALL_PAGE, "a batch of {}", batch.len());
        assert!(batch.len() * PROBE_CALL_GUEST_BYTES <= MAX_PROBE_CALL_BATCH_BYTES);
        // The host holds the rest of one stored chunk of calls at most, never the session.
        let held = host.table.get(&cursor).unwrap().held_calls();
        assert!(held < loupe_store::probes::codec::CHUNK_CALLS, "{held} calls held");
        for (k, c) in batch.iter().enumerate() {
            let (i, want) = (n + k, &whole.calls[n + k]);
            assert_eq!(
                (c.entry_ns, c.exit_ns, c.tid, c.function),
                (want.entry_unix_ns, want.exit_unix_ns, want.tid, want.function)
            );
            assert_eq!(c.parent, want.parent);
            assert!(c.parent.is_none_or(|p| (p as usize) < i));
        }
        n += batch.len();
    }
    assert_eq!(n, 1_000_000);
    // 15 stored chunks of 65,536 calls, 4 batches each, then one of 16,960 in 2.
    assert_eq!(batches, 15 * 4 + 2);
    assert!(host.next_calls(borrow(&cursor)).unwrap().is_empty(), "exhausted stays exhausted");

    // The next session skips nothing it should not, and a session left half-read is dropped.
    let s = host.next_session(borrow(&cursor)).unwrap().expect("the small session");
    assert_eq!((s.id, s.recorded_calls), (small, 500));
    assert_eq!(host.next_calls(borrow(&cursor)).unwrap().len(), 500);
    assert!(host.next_session(borrow(&cursor)).unwrap().is_none());
    host.drop(cursor).unwrap();
    assert_eq!(host.open_cursors, 0);

    let half = host.open_probes(all).unwrap().unwrap();
    host.next_session(borrow(&half)).unwrap().unwrap();
    assert_eq!(host.next_calls(borrow(&half)).unwrap().len(), PROBE_CALL_PAGE);
    assert!(host.table.get(&half).unwrap().held_calls() > 0);
    assert_eq!(host.next_session(borrow(&half)).unwrap().map(|s| s.id), Some(small));
    assert!(host.table.get(&half).unwrap().held_calls() == 0, "the rest of the big session let go");
    host.drop(half).unwrap();

    // Nothing the guest passes is trusted: a bad range is an error it can handle; cursors
    // count against the same limit as the others, and one past it traps.
    let bad = host.open_probes(WitRange { from_ns: 10, to_ns: 5 }).unwrap();
    assert!(bad.is_err());
    let mut open = Vec::new();
    for _ in 0..MAX_OPEN_CURSORS {
        open.push(host.open_probes(all).unwrap().unwrap());
    }
    assert!(host.open_probes(all).is_err(), "the 17th cursor traps");
    assert!(host.cursor_limit_hit);
    for c in open {
        host.drop(c).unwrap();
    }
    assert_eq!(host.open_cursors, 0);
}

#[test]
fn a_session_deleted_while_read_ends_early_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path());
    let id = million(&store);
    let mut host = data_host(&store);
    let cursor = host.open_probes(WitRange { from_ns: 0, to_ns: u64::MAX }).unwrap().unwrap();
    host.next_session(borrow(&cursor)).unwrap().unwrap();
    let mut n = 0;
    for _ in 0..5 {
        n += host.next_calls(borrow(&cursor)).unwrap().len();
    }
    assert!(store.delete_probe_session(id).unwrap());
    loop {
        let batch = host.next_calls(borrow(&cursor)).unwrap();
        if batch.is_empty() {
            break;
        }
        n += batch.len();
    }
    // Five batches took the first stored chunk (4 batches) and began the second: the chunk
    // already read is handed out whole, nothing after it.
    assert_eq!(n, 2 * loupe_store::probes::codec::CHUNK_CALLS);
    let warned = host.log.lines.iter().any(|l| l.message.contains(&format!("probe session {id} was deleted")));
    assert!(warned, "{:?}", host.log.lines);
    host.drop(cursor).unwrap();
}

#[test]
fn probe_latency_reads_a_million_calls_through_the_sandbox_in_bounded_batches() {
    let dir = tempfile::tempdir().unwrap();
    let slow_handle = {
        let store = store_for_a_server(dir.path());
        let id = million(&store);
        let s = store.probe_session(id).unwrap().unwrap();
        store.flush().unwrap();
        s.calls.iter().filter(|c| c.function == 0).map(|c| c.exit_unix_ns - c.entry_unix_ns).max().unwrap()
    };
    let server = Server::start(dir.path(), &[]);
    let http = Http::new(&server.url, Some(&server.token("perf")));
    http.upload("probe-latency", "probe_latency");
    let v = ok(http.invoke("probe-latency", json!({"from": 0, "to": (T0 + 3600 * SEC).to_string()})));
    let (sessions, calls, batches, largest) = batch_line(&v);
    assert_eq!((sessions, calls), (1, 1_000_000));
    assert!(largest as usize <= PROBE_CALL_PAGE, "a batch of {largest} calls");
    assert!(batches as usize >= 1_000_000usize.div_ceil(PROBE_CALL_PAGE), "{batches} batches");
    let rows = table_rows(&v);
    let slow = rows.iter().position(|r| r[0] == "slow #1").unwrap();
    assert_eq!((&rows[slow][13], &rows[slow + 1][2]), (&json!(slow_handle), &json!("forward")));
    eprintln!(
        "1,000,000 calls in {batches} batches through the sandbox: {:.1} ms, peak guest memory {} KiB",
        v["elapsed_ns"].as_u64().unwrap() as f64 / 1e6,
        v["peak_memory_bytes"].as_u64().unwrap() / 1024
    );
    server.stop();
}
