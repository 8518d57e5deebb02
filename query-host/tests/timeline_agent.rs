//! Application timelines through the agent: real writer processes (this test binary re-run as
//! a child that logs with `loupe_timeline`) write ring files; a real `loupe agent` tails them
//! and stores the events; `loupe timeline list|show` reads them back.
//!
//! - counts exact for rate-9 events, lags equal to the stored times' differences, the ring
//!   file removed once its writer exited and was drained;
//! - `kill -9` of the writer and a restart of the agent while it logs: every stored sequence
//!   number once, in order, and what is missing counted as lost — never hidden;
//! - a ring file the reader cannot parse is skipped with a log line; the agent keeps going.

use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use common::{Http, Server};
use serde_json::Value;

mod common;

const LOUPE: &str = env!("CARGO_BIN_EXE_loupe");
const WRITER_ENV: &str = "LOUPE_TEST_TIMELINE_WRITER";

/// The child: logs what `LOUPE_TEST_TIMELINE_WRITER` says (`sequence N` or `stream`), printing
/// `ready` once its first event is published, then pausing a second — the agent finds new ring
/// files every 250 ms, and a ring of 8,192 records holds well under a second of these writers —
/// then logging about 30,000 (`sequence`) or 20,000 (`stream`) events a second.
#[test]
#[ignore = "run by the other tests as a writer process"]
fn writer_child() {
    let Ok(mode) = std::env::var(WRITER_ENV) else { return };
    let tl = loupe_timeline::define;
    let start = tl("loop_start", 0, 9, &["i"]).unwrap();
    let step = tl("step", 1, 9, &["i"]).unwrap();
    let end = tl("loop_end", 0, 9, &["i"]).unwrap();
    let mut said = false;
    let mut ready = || {
        if !said {
            println!("ready");
            said = true;
            thread::sleep(Duration::from_secs(1));
        }
    };
    match mode.split_whitespace().collect::<Vec<_>>()[..] {
        ["sequence", n] => {
            for i in 0..n.parse::<u64>().unwrap() {
                loupe_timeline::breath();
                start.log(i, 0, 0, 0);
                step.log(i, 0, 0, 0);
                end.log(i, 0, 0, 0);
                ready();
                if i % 10 == 9 {
                    thread::sleep(Duration::from_millis(1));
                }
            }
            println!("done");
        }
        ["stream"] => {
            // One event per iteration, numbered, about 20,000 a second, until killed.
            for i in 0.. {
                loupe_timeline::breath();
                start.log(i, 0, 0, 0);
                ready();
                if i % 200 == 199 {
                    thread::sleep(Duration::from_millis(10));
                }
            }
        }
        _ => panic!("unknown mode {mode}"),
    }
}

struct Writer {
    child: Child,
    pid: u32,
}

fn writer(dir: &Path, mode: &str) -> Writer {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args(["--exact", "writer_child", "--ignored", "--nocapture", "--test-threads=1"])
        .env(WRITER_ENV, mode)
        .env("LOUPE_TIMELINE_DIR", dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // libtest prints its own header first.
    assert!(lines.any(|l| l.is_ok_and(|l| l.trim_end().ends_with("ready"))), "the writer never logged");
    thread::spawn(move || lines.for_each(drop));
    let pid = child.id();
    Writer { child, pid }
}

struct Agent {
    child: Child,
    log: PathBuf,
}

fn agent(data: &Path, timeline: &Path, log: PathBuf) -> Agent {
    agent_with(data, timeline, log, &[])
}

fn agent_with(data: &Path, timeline: &Path, log: PathBuf, more: &[&str]) -> Agent {
    let child = Command::new(LOUPE)
        .args(["agent", "--no-stacks", "--no-http", "--data-dir"])
        .arg(data)
        .arg("--timeline-dir")
        .arg(timeline)
        .args(more)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    Agent { child, log }
}

impl Agent {
    fn stop(mut self) -> String {
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let status = self.child.wait().unwrap();
        let log = std::fs::read_to_string(&self.log).unwrap();
        assert!(status.success(), "agent: {status}\n{log}");
        log
    }
}

fn loupe(args: &[&str], data: &Path) -> Value {
    let out = Command::new(LOUPE).args(args).arg("--json").arg("--data-dir").arg(data).output().unwrap();
    assert!(out.status.success(), "loupe {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    loupe_api::formats::deep_json::from_slice(&out.stdout).unwrap()
}

/// Waits until `ready` holds (checked every 200 ms), at most `limit`.
fn wait_for(limit: Duration, what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !ready() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(200));
    }
}

fn ring_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir).map(|d| d.map(|e| e.unwrap().path()).collect()).unwrap_or_default()
}

#[test]
fn agent_stores_every_event_with_its_lag_and_retires_the_ring() {
    let dir = tempfile::tempdir().unwrap();
    let (data, rings) = (dir.path().join("data"), dir.path().join("rings"));
    std::fs::create_dir_all(&rings).unwrap();
    let agent = agent(&data, &rings, dir.path().join("agent.log"));
    let n = 20_000u64;
    let mut w = writer(&rings, &format!("sequence {n}"));
    assert!(w.child.wait().unwrap().success());
    let pid = w.pid.to_string();
    // Drained and removed once the agent sees the writer gone.
    wait_for(Duration::from_secs(15), "the ring file to be retired", || ring_files(&rings).is_empty());
    agent.stop();

    let list = loupe(&["timeline", "list", "--pid", &pid], &data);
    let source = &list["sources"][0];
    assert_eq!((source["events"].as_u64(), source["lost"].as_u64()), (Some(3 * n), Some(0)), "{list}");
    for name in ["loop_start", "step", "loop_end"] {
        let e = list["events"].as_array().unwrap().iter().find(|e| e["name"] == name).unwrap();
        assert_eq!(e["count"], n, "{name}");
        assert_eq!(e["arg_names"], serde_json::json!(["i"]), "{name}: its definition's argument names");
    }
    let defs: Vec<&str> =
        source["definitions"].as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(defs, ["loop_end", "loop_start", "step"]);
    assert_eq!(
        (&source["definitions"][2]["level"], &source["definitions"][2]["arg_names"][0]),
        (&1.into(), &"i".into())
    );
    // loop_end's lag is the iteration: since loop_start (the previous event of level ≤ 0).
    let shown = loupe(&["timeline", "show", "--pid", &pid, "--limit", "3000"], &data);
    let events = shown["events"].as_array().unwrap();
    assert_eq!(events.len(), 3000);
    assert!(events.iter().all(|e| e["arg_names"] == serde_json::json!(["i"])), "every event names its argument");
    let mut checked = 0;
    for w in events.windows(3) {
        if w[0]["name"] == "loop_start" && w[2]["name"] == "loop_end" && w[0]["args"][0] == w[2]["args"][0] {
            let (t0, t2) = (w[0]["time_unix_ns"].as_u64().unwrap(), w[2]["time_unix_ns"].as_u64().unwrap());
            let lag = w[2]["lag_ns"].as_u64().expect("loop_end has a lag");
            assert!(lag.abs_diff(t2 - t0) <= 2, "lag {lag} vs {} between the stored times", t2 - t0);
            let step_lag = w[1]["lag_ns"].as_u64().expect("step has a lag");
            assert!(step_lag.abs_diff(w[1]["time_unix_ns"].as_u64().unwrap() - t0) <= 2);
            checked += 1;
        }
    }
    assert!(checked >= 900, "{checked} iterations checked");
    // Paging: the second page starts where the first ended.
    let first = loupe(&["timeline", "show", "--pid", &pid, "--event", "loop_end", "--limit", "5"], &data);
    let args: Vec<u64> = first["events"].as_array().unwrap().iter().map(|e| e["args"][0].as_u64().unwrap()).collect();
    assert_eq!(args, vec![0, 1, 2, 3, 4]);

    // The HTTP API answers the same, pages by `next`, and refuses bad pages clearly.
    let server = Server::start(&data, &[]);
    let http = Http::new(&server.url, Some(&server.token("apps")));
    assert_eq!(http.get(&format!("/api/v1/timeline?pid={pid}")).json(), list);
    let page = |after: &str| {
        let a = http.get(&format!("/api/v1/timeline/events?pid={pid}&event=loop_end&limit=3{after}"));
        assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
        a.json()
    };
    let p1 = page("");
    let p2 = page(&format!("&after={}", p1["next"].as_str().expect("a next page")));
    let seq =
        |p: &Value| p["events"].as_array().unwrap().iter().map(|e| e["args"][0].as_u64().unwrap()).collect::<Vec<_>>();
    assert_eq!((seq(&p1), seq(&p2)), (vec![0, 1, 2], vec![3, 4, 5]));
    http.get("/api/v1/timeline/events?limit=0").assert_error(400, "bad_limit", "limit 0");
    http.get("/api/v1/timeline/events?limit=10001").assert_error(400, "bad_limit", "10000");
    http.get("/api/v1/timeline/events?after=zz").assert_error(400, "bad_cursor", "next");
    http.get("/api/v1/timeline/events?after=9301").assert_error(400, "bad_cursor", "next");

    // The example analysis reads the same events through the sandbox's timeline cursor.
    http.upload("timeline-lags", "timeline_lags");
    let a = http.invoke("timeline-lags", serde_json::json!({"from": 0, "params": {"iteration": "loop_end", "top": 3}}));
    assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
    let out = a.json();
    let rows = out["rows"].as_array().unwrap();
    let stats = list["events"].as_array().unwrap().iter().find(|e| e["name"] == "loop_end").unwrap();
    let lags = rows.iter().find(|r| r[0] == "lags" && r[4] == "loop_end").expect("a lags row for loop_end");
    assert_eq!((&lags[6], &lags[11]), (&stats["count"], &stats["lag_max_ns"]), "count and max agree with the store's");
    let (p50, store_p50) = (lags[9].as_u64().unwrap() as f64, stats["lag_p50_ns"].as_u64().unwrap() as f64);
    assert!((p50 - store_p50).abs() <= store_p50 / 32.0 + 1.0, "p50 {p50} vs the store's {store_p50}");
    // The slowest iteration is the one with the largest lag, and shows the step inside it.
    let slow = rows.iter().position(|r| r[0] == "slow #1").expect("a slowest iteration");
    assert_eq!(rows[slow][8], stats["lag_max_ns"]);
    assert_eq!((&rows[slow - 1][0], &rows[slow - 1][4]), (&Value::from("  in #1"), &Value::from("step")));
    // … with its argument named through the sandbox's `timeline-definitions`.
    let i = rows[slow - 1][12].as_str().expect("an args cell");
    assert!(i.strip_prefix("i=").is_some_and(|v| v.parse::<u64>().is_ok()), "step's args: {i:?}");
    assert_eq!(lags[12], "i", "the lags row names the arguments");
    server.stop();
}

#[test]
fn kill_9_and_agent_restart_lose_nothing_silently() {
    let dir = tempfile::tempdir().unwrap();
    let (data, rings) = (dir.path().join("data"), dir.path().join("rings"));
    std::fs::create_dir_all(&rings).unwrap();
    let first = agent(&data, &rings, dir.path().join("agent1.log"));
    let mut w = writer(&rings, "stream");
    thread::sleep(Duration::from_millis(1500));
    first.stop();
    // The writer goes on alone; its ring (8,192 records) laps while no agent reads.
    thread::sleep(Duration::from_millis(800));
    let second = agent(&data, &rings, dir.path().join("agent2.log"));
    thread::sleep(Duration::from_millis(1500));
    w.child.kill().unwrap(); // SIGKILL, mid-stream
    w.child.wait().unwrap();
    wait_for(Duration::from_secs(15), "the killed writer's ring to be drained", || ring_files(&rings).is_empty());
    second.stop();

    let pid = w.pid.to_string();
    let list = loupe(&["timeline", "list", "--pid", &pid], &data);
    let stored = list["sources"].as_array().unwrap().iter().map(|s| s["events"].as_u64().unwrap()).sum::<u64>();
    let lost = list["sources"].as_array().unwrap().iter().map(|s| s["lost"].as_u64().unwrap()).sum::<u64>();
    let shown = loupe(&["timeline", "show", "--pid", &pid, "--limit", "1000000"], &data);
    let seqs: Vec<u64> = shown["events"].as_array().unwrap().iter().map(|e| e["args"][0].as_u64().unwrap()).collect();
    assert_eq!(seqs.len() as u64, stored);
    assert!(seqs.windows(2).all(|p| p[0] < p[1]), "a sequence number stored twice or out of order");
    assert_eq!(seqs[0], 0, "the first agent read from the start");
    let last = *seqs.last().unwrap();
    let missing = last + 1 - stored;
    // Everything the writer published up to the last stored event is stored or counted lost:
    // the second agent resumed where the first stopped reading.
    assert_eq!(lost, missing, "sequence numbers missing vs counted lost");
    assert!(missing > 0, "the ring should have lapped while no agent ran");
    eprintln!("stored {stored}, last seq {last}, missing {missing}, counted lost {lost}");
}

#[test]
fn unreadable_ring_files_are_skipped_with_a_log_line() {
    let dir = tempfile::tempdir().unwrap();
    let (data, rings) = (dir.path().join("data"), dir.path().join("rings"));
    std::fs::create_dir_all(&rings).unwrap();
    std::fs::write(rings.join("4000001-17.tl"), b"not a timeline at all").unwrap();
    std::fs::write(rings.join("4000002-18.tl"), b"").unwrap();
    let agent = agent(&data, &rings, dir.path().join("agent.log"));
    let mut w = writer(&rings, "sequence 100");
    assert!(w.child.wait().unwrap().success());
    let pid = w.pid.to_string();
    wait_for(Duration::from_secs(15), "the good ring to be retired", || ring_files(&rings).len() == 2);
    let log = agent.stop();
    assert!(log.contains("timeline file skipped") && log.contains("4000001-17.tl"), "{log}");
    assert!(log.contains("4000002-18.tl"), "{log}");
    let list = loupe(&["timeline", "list", "--pid", &pid], &data);
    assert_eq!(list["sources"][0]["events"], 300, "{list}");
}

/// The ring directory is everyone's: a ring file one user makes for another user's process (a
/// real ring, renamed for pid 1 and given to `nobody`) is not read, and is counted; the same
/// ring as its writer left it is.
#[test]
fn a_ring_forged_for_another_users_process_is_ignored_and_counted() {
    loupe_testbed::require_root!();
    let dir = tempfile::tempdir().unwrap();
    let (data, rings, real) = kept_ring(dir.path());
    // Its header said the writer's pid; a forger writes pid 1 there too.
    ring_for(&real, &rings, 1, 65534);
    let agent = agent(&data, &rings, dir.path().join("agent.log"));
    wait_for(Duration::from_secs(15), "the forged ring to be looked at", || {
        std::fs::read_to_string(dir.path().join("agent.log")).is_ok_and(|l| l.contains("not tailed"))
    });
    let log = agent.stop();
    assert!(log.contains("uid 65534's file, and process 1 runs as uid 0"), "{log}");
    assert!(log.contains("refused=1"), "{log}");
    let list = loupe(&["timeline", "list", "--pid", "1"], &data);
    assert_eq!(list["sources"].as_array().map_or(0, Vec::len), 0, "{list}");
}

/// Under `dir`: the data dir, an empty ring directory, and a real ring (150 events of a writer
/// that has exited, written while no agent ran) kept aside in a directory of its own.
fn kept_ring(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let (data, rings, kept) = (dir.join("data"), dir.join("rings"), dir.join("kept"));
    std::fs::create_dir_all(&kept).unwrap();
    let mut w = writer(&kept, "sequence 50");
    assert!(w.child.wait().unwrap().success());
    let real = ring_files(&kept).pop().expect("the writer's ring");
    std::fs::create_dir_all(&rings).unwrap();
    (data, rings, real)
}

/// The start time `/proc/PID/stat` gives `pid` (a ring file's name carries it).
fn start_time(pid: u32) -> String {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    stat.rsplit(") ").next().unwrap().split(' ').nth(19).unwrap().to_string()
}

/// A copy of the ring `real`, made for `pid`: its name and header name that pid, and it is
/// `uid`'s file (a forger's, or a program's of that user).
fn ring_for(real: &Path, rings: &Path, pid: u32, uid: u32) -> PathBuf {
    let ring = rings.join(format!("{pid}-{}.tl", start_time(pid)));
    let mut bytes = std::fs::read(real).unwrap();
    let at = loupe_timeline::format::hdr::PID;
    bytes[at..at + 4].copy_from_slice(&pid.to_le_bytes());
    std::fs::write(&ring, bytes).unwrap();
    std::os::unix::fs::chown(&ring, Some(uid), Some(uid)).unwrap();
    ring
}

/// One user's rings take at most `--timeline-per-user` of the tailing slots: three processes
/// of `nobody`, each with a ring of its own that it may speak for, under a bound of 2 — two are
/// tailed and stored, the third is refused and counted.
#[test]
fn one_users_rings_take_at_most_their_share_of_the_slots() {
    use std::os::unix::process::CommandExt;
    loupe_testbed::require_root!();
    let dir = tempfile::tempdir().unwrap();
    let (data, rings, real) = kept_ring(dir.path());
    let mut sleepers: Vec<Child> =
        (0..3).map(|_| Command::new("sleep").arg("120").uid(65534).gid(65534).spawn().unwrap()).collect();
    for s in &sleepers {
        ring_for(&real, &rings, s.id(), 65534);
    }
    let log_path = dir.path().join("agent.log");
    let agent = agent_with(&data, &rings, log_path.clone(), &["--timeline-per-user", "2"]);
    wait_for(Duration::from_secs(15), "the third ring to be refused", || {
        std::fs::read_to_string(&log_path).is_ok_and(|l| l.contains("the most one user may"))
    });
    let log = agent.stop();
    for s in &mut sleepers {
        let _ = s.kill();
        let _ = s.wait();
    }
    assert!(log.contains("uid 65534 already has 2 programs tailed"), "{log}");
    assert!(log.contains("refused=1"), "{log}");
    let stored: Vec<u64> = sleepers
        .iter()
        .flat_map(|s| {
            let list = loupe(&["timeline", "list", "--pid", &s.id().to_string()], &data);
            list["sources"].as_array().cloned().unwrap_or_default()
        })
        .map(|source| source["events"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(stored, [150, 150], "two rings tailed, each whole");
}

/// A C program using `loupe_timeline.h`, linked to the static library the build makes: what it
/// logs reaches the store exactly, arguments included, and its rate-0 event never does.
#[test]
fn a_c_program_logs_through_the_header_into_the_store() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    // target/release/deps/<this test> → target/release/libloupe_timeline.a
    let exe = std::env::current_exe().unwrap();
    let lib = exe.parent().and_then(Path::parent).unwrap().join("libloupe_timeline.a");
    assert!(lib.exists(), "{} missing: `cargo build --release` builds it", lib.display());
    let dir = tempfile::tempdir().unwrap();
    let (data, rings) = (dir.path().join("data"), dir.path().join("rings"));
    std::fs::create_dir_all(&rings).unwrap();
    let writer = dir.path().join("writer");
    let cc = Command::new("cc")
        .args(["-O2", "-I"])
        .arg(root.join("timeline/include"))
        .arg(root.join("timeline/tests/c/writer.c"))
        .arg(&lib)
        .args(["-lpthread", "-lm", "-ldl", "-lgcc_s", "-o"])
        .arg(&writer)
        .output()
        .expect("cc");
    assert!(cc.status.success(), "cc: {}", String::from_utf8_lossy(&cc.stderr));
    let agent = agent(&data, &rings, dir.path().join("agent.log"));
    let out = Command::new(&writer).env("LOUPE_TIMELINE_DIR", &rings).output().unwrap();
    assert!(out.status.success(), "writer: {:?}", out.status);
    let text = String::from_utf8_lossy(&out.stdout);
    let path = text.lines().find_map(|l| l.strip_prefix("path ")).expect("the writer printed its file");
    let pid = Path::new(path).file_name().unwrap().to_str().unwrap().split('-').next().unwrap().to_string();
    wait_for(Duration::from_secs(15), "the C program's ring to be retired", || ring_files(&rings).is_empty());
    agent.stop();
    let list = loupe(&["timeline", "list", "--pid", &pid], &data);
    let count =
        |name: &str| list["events"].as_array().unwrap().iter().find(|e| e["name"] == name).map(|e| e["count"].clone());
    assert_eq!(
        (count("c_loop"), count("c_step"), count("c_never")),
        (Some(1000.into()), Some(1000.into()), None),
        "{list}"
    );
    let shown = loupe(&["timeline", "show", "--pid", &pid, "--event", "c_step", "--limit", "1000"], &data);
    for (i, e) in shown["events"].as_array().unwrap().iter().enumerate() {
        let i = i as u64;
        let want = [i, i * i, i * i * i, i.wrapping_neg()];
        assert_eq!(e["args"], serde_json::json!(want), "event {i}");
    }
}
