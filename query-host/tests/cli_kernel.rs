//! The `loupe` command line on a real kernel: `loupe run` inside a testbed namespace while
//! known traffic flows, then `runs list/show/export` and `import` against what it stored.

use std::{
    net::{SocketAddr, UdpSocket},
    path::Path,
    process::{Command, Output, Stdio},
    thread,
    time::Duration,
};

use loupe_testbed::{require_root, topology::*, traffic};
use serde_json::Value;

const LOUPE: &str = env!("CARGO_BIN_EXE_loupe");

fn loupe_in(ns: &str, data: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", ns, LOUPE]).args(args).arg("--data-dir").arg(data).env("RUST_LOG", "off");
    cmd
}

fn json(out: &Output) -> Value {
    assert!(out.status.success(), "loupe failed: {}", String::from_utf8_lossy(&out.stderr));
    loupe_api::formats::deep_json::from_slice(&out.stdout).expect("JSON output")
}

/// Runs a command, failing the test if it does not finish in time (a hang must not stall CI).
fn output_within(mut cmd: Command, limit: Duration) -> Output {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawning");
    let deadline = std::time::Instant::now() + limit;
    while child.try_wait().expect("waiting").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("{cmd:?} still running after {limit:?}");
        }
        thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("collecting output")
}

/// Polls `ready` until it gives a value; fails if `limit` passes or `child` exits first.
fn wait_for<T>(
    child: &mut std::process::Child,
    what: &str,
    limit: Duration,
    mut ready: impl FnMut() -> Option<T>,
) -> T {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Some(v) = ready() {
            return v;
        }
        assert!(std::time::Instant::now() < deadline, "{what}: not within {limit:?}");
        assert!(child.try_wait().unwrap().is_none(), "{what}: the agent exited first");
        thread::sleep(Duration::from_millis(50));
    }
}

/// The agent's stop signal.
fn sigterm(child: &std::process::Child) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
}

fn sum(v: &Value) -> u64 {
    v.as_array().expect("array").iter().map(|x| x.as_u64().unwrap()).sum()
}

#[test]
fn run_list_show_export_import_round_trip() {
    require_root!();
    let pair = VethPair::new("cli").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let _sink = pair.b.run(|| UdpSocket::bind((B_V4, 7000))).unwrap().unwrap();
    let sender = pair.a.run(|| UdpSocket::bind((A_V4, 0))).unwrap().unwrap();

    let child =
        loupe_in(&pair.b.name, &data, &["run", "--iface", B_IF, "--interval", "1ms", "--samples", "1500", "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
    thread::sleep(Duration::from_millis(400)); // attach and start
    let expected =
        traffic::udp_send(&sender, SocketAddr::new(B_V4.into(), 7000), 200, 1000, Duration::from_micros(500)).unwrap();
    let run = json(&child.wait_with_output().unwrap());

    assert_eq!(run["iface"], B_IF);
    assert_eq!(run["interval_ns"], 1_000_000);
    assert_eq!(run["samples"], 1500);
    for (name, series) in run["metrics"].as_object().unwrap() {
        assert_eq!(series.as_array().unwrap().len(), 1500, "{name} has one entry per sample");
    }
    assert_eq!(sum(&run["metrics"]["in_bytes"]), expected);
    assert_eq!(sum(&run["metrics"]["in_packets"]), 200);
    assert_eq!(run["metrics"]["in_conns"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).max(), Some(1));
    let id = run["id"].as_u64().unwrap().to_string();

    // Listed, and shown per CPU with CPU series that add up to the totals.
    let list = json(&loupe_in(&pair.b.name, &data, &["runs", "list", "--from", "-1h", "--json"]).output().unwrap());
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["id"].to_string(), id);
    let shown = json(&loupe_in(&pair.b.name, &data, &["runs", "show", &id, "--json", "--per-cpu"]).output().unwrap());
    assert_eq!(shown["metrics"], run["metrics"]);
    let per_cpu_bytes: u64 = shown["per_cpu"].as_array().unwrap().iter().map(|c| sum(&c["metrics"]["in_bytes"])).sum();
    assert_eq!(per_cpu_bytes, expected);

    // Export to the Millisampler dataset format, import into another store, export again.
    let exported = dir.path().join("run.json");
    let out = loupe_in(
        &pair.b.name,
        &data,
        &["runs", "export", &id, "--format", "millisampler", "-o", exported.to_str().unwrap()],
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let record: Value = serde_json::from_slice(&std::fs::read(&exported).unwrap()).unwrap();
    assert_eq!(record["ingressBytes"], run["metrics"]["in_bytes"]);
    assert_eq!(record["connections"], run["metrics"]["in_conns"]);
    assert_eq!(record["sampling_freq"], 1000);
    let other = dir.path().join("other");
    let out = Command::new(LOUPE)
        .args(["import", "millisampler", exported.to_str().unwrap(), "--data-dir"])
        .arg(&other)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let new_id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let again = dir.path().join("again.json");
    let out = Command::new(LOUPE)
        .args(["runs", "export", &new_id, "--format", "millisampler", "-o", again.to_str().unwrap(), "--data-dir"])
        .arg(&other)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let record_again: Value = serde_json::from_slice(&std::fs::read(&again).unwrap()).unwrap();
    for (key, value) in record.as_object().unwrap() {
        assert!(record_again[key] == *value, "export → import → export changed {key}");
    }
    assert_eq!(record_again.as_object().unwrap().len(), record.as_object().unwrap().len(), "keys differ");
}

#[test]
fn a_second_run_on_a_busy_interface_is_refused() {
    require_root!();
    let pair = VethPair::new("busy").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let first = loupe_in(
        &pair.a.name,
        &dir.path().join("one"),
        &["run", "--iface", A_IF, "--interval", "1ms", "--samples", "1500"],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    thread::sleep(Duration::from_millis(400));
    let second = loupe_in(&pair.a.name, &dir.path().join("two"), &["run", "--iface", A_IF]).output().unwrap();
    let err = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("a run is already active on interface '{A_IF}'")), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let first = first.wait_with_output().unwrap();
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
}

#[test]
fn unknown_interface_and_missing_privilege_are_named() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(LOUPE).args(["run", "--iface", "nosuch0", "--data-dir"]).arg(dir.path()).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(err.contains("unknown interface 'nosuch0'"), "{err}");

    // As an unprivileged user (nobody), with a data dir it may write.
    let data = dir.path().join("nobody");
    std::fs::create_dir(&data).unwrap();
    Command::new("chown").args(["65534:65534"]).arg(&data).status().unwrap();
    // Its owner's alone, as Loupe would make it (a looser one is tightened with a warning line).
    Command::new("chmod").args(["700"]).arg(&data).status().unwrap();
    Command::new("chmod").args(["755"]).arg(dir.path()).status().unwrap();
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
            LOUPE,
            "run",
            "--iface",
            "lo",
            "--data-dir",
        ])
        .arg(&data)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("not enough privilege"), "{err}");
    assert!(err.contains("lacks CAP_BPF, CAP_PERFMON, CAP_NET_ADMIN ("), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");

    // As root with CAP_BPF and CAP_PERFMON but neither CAP_NET_ADMIN nor CAP_SYS_ADMIN (which
    // stands in for it at BPF_PROG_LOAD and tcx): the one capability it lacks is named, the ones
    // it holds are not.
    let out = Command::new("setpriv")
        .args([
            "--bounding-set=-net_admin,-sys_admin",
            "--inh-caps=-net_admin,-sys_admin",
            LOUPE,
            "run",
            "--iface",
            "lo",
            "--data-dir",
        ])
        .arg(dir.path().join("no-net-admin"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("not enough privilege") && err.contains("lacks CAP_NET_ADMIN ("), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn agent_runs_on_schedule_and_answers_cli_calls() {
    require_root!();
    let pair = VethPair::new("agent").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let agent = loupe_in(
        &pair.b.name,
        &data,
        &[
            "agent",
            "--iface",
            B_IF,
            "--intervals",
            "100us,1ms",
            "--samples",
            "500",
            "--period",
            "1s",
            "--jitter",
            "0.1",
            "--duration",
            "7s",
            "--no-auth",
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    thread::sleep(Duration::from_millis(1500));
    // While the agent holds the store and the interface, CLI calls go through the agent.
    let _sink = pair.b.run(|| UdpSocket::bind((B_V4, 7001))).unwrap().unwrap();
    let sender = pair.a.run(|| UdpSocket::bind((A_V4, 0))).unwrap().unwrap();
    let start = format!("+{}ms", 300);
    let on_demand = loupe_in(
        &pair.b.name,
        &data,
        &["run", "--iface", B_IF, "--interval", "1ms", "--samples", "400", "--at", &start, "--json"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    thread::sleep(Duration::from_millis(450));
    let expected =
        traffic::udp_send(&sender, SocketAddr::new(B_V4.into(), 7001), 20, 500, Duration::from_millis(2)).unwrap();
    let run = json(&on_demand.wait_with_output().unwrap());
    assert_eq!(sum(&run["metrics"]["in_bytes"]), expected, "on-demand run through the agent");
    // The same through the agent's HTTP API (POST /api/v1/runs), with the CLI in client mode.
    // (Far enough ahead that a periodic run (≤ 0.5 s) still in progress ends before it.)
    let remote = loupe_in(
        &pair.b.name,
        &data,
        &[
            "--server",
            "http://127.0.0.1:7878",
            "run",
            "--iface",
            B_IF,
            "--interval",
            "1ms",
            "--samples",
            "400",
            "--at",
            "+900ms",
            "--json",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    thread::sleep(Duration::from_millis(1050));
    let expected =
        traffic::udp_send(&sender, SocketAddr::new(B_V4.into(), 7001), 30, 400, Duration::from_millis(2)).unwrap();
    let run = json(&remote.wait_with_output().unwrap());
    assert_eq!(sum(&run["metrics"]["in_bytes"]), expected, "on-demand run through the HTTP API");
    let list = json(&loupe_in(&pair.b.name, &data, &["runs", "list", "--json"]).output().unwrap());
    // Its status, through the control socket and the HTTP API alike: everything asked runs.
    for via in [&[][..], &["--server", "http://127.0.0.1:7878"][..]] {
        let status = json(&loupe_in(&pair.b.name, &data, &[via, &["status", "--json"]].concat()).output().unwrap());
        assert_eq!((status["status"].as_str(), status["mode"].as_str()), (Some("ok"), Some("agent")), "{status}");
        assert_eq!(status["ifaces"], serde_json::json!([B_IF]), "{status}");
        assert!(status.get("off").is_none(), "nothing is off on this kernel: {status}");
    }
    // The agent samples stacks too; its profile is served through the control socket. (Stacks
    // are written every 10 s and at shutdown: ask again after it stopped for the full set.)
    let agent = agent.wait_with_output().unwrap();
    // No agent, no status: said, not a store's made-up health.
    let none = loupe_in(&pair.b.name, &data, &["status"]).output().unwrap();
    assert!(!none.status.success());
    assert!(String::from_utf8_lossy(&none.stderr).contains("no agent runs on"), "{none:?}");
    let profile = json(&loupe_in(&pair.b.name, &data, &["profile", "--json", "--idle"]).output().unwrap());
    assert!(profile["samples"].as_u64().unwrap() > 0, "the agent stored no stack samples");
    assert!(agent.status.success(), "{}", String::from_utf8_lossy(&agent.stderr));
    let runs = list.as_array().unwrap();
    // Periodic runs of both intervals, one per period or so, and the on-demand one.
    let of = |ns: u64| runs.iter().filter(|r| r["interval_ns"] == ns).count();
    assert!(of(100_000) >= 1, "no 100us runs: {list}");
    assert!(of(1_000_000) >= 3, "no periodic 1ms runs besides the two on-demand ones: {list}");
    // Runs on one interface never overlap.
    let mut spans: Vec<(u64, u64)> = runs
        .iter()
        .map(|r| {
            let s = r["start_unix_ns"].as_u64().unwrap();
            (s, s + r["interval_ns"].as_u64().unwrap() * r["samples"].as_u64().unwrap())
        })
        .collect();
    spans.sort();
    for w in spans.windows(2) {
        assert!(w[0].1 <= w[1].0, "overlapping runs: {w:?}");
    }
}

#[test]
fn a_full_data_dir_fails_cleanly_and_keeps_what_it_had() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    let mount_point = dir.path().join("small");
    std::fs::create_dir(&mount_point).unwrap();
    let mounted = Command::new("mount")
        // The store keeps 4 MiB free (`loupe_store::FREE_FLOOR`): ~2 MiB for runs.
        .args(["-t", "tmpfs", "-o", "size=6m", "loupe-cli-full"])
        .arg(&mount_point)
        .status()
        .unwrap();
    assert!(mounted.success(), "mounting a tmpfs");
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let _unmount = Unmount(&mount_point);
    let data = mount_point.join("data");
    // A busy 2000-sample run (pseudo-random values) of the dataset format.
    let mut x: u64 = 7;
    let mut series = || -> Vec<u64> {
        (0..2000)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                x >> 40
            })
            .collect()
    };
    let record = serde_json::json!({
        "server_hostname": "h", "sampling_freq": 1000, "ingressBytes": series(), "egressBytes": series(),
        "inRxmitBytes": series(), "outRxmitBytes": series(), "inCongestionExperiencedBytes": series(), "connections": series(),
    });
    let file = dir.path().join("run.json");
    std::fs::write(&file, record.to_string()).unwrap();
    let mut stored = Vec::new();
    let err = loop {
        let mut import = Command::new(LOUPE);
        import.args(["import", "millisampler"]).arg(&file).arg("--data-dir").arg(&data).env("RUST_LOG", "off");
        let out = output_within(import, Duration::from_secs(30));
        if !out.status.success() {
            break String::from_utf8_lossy(&out.stderr).into_owned();
        }
        stored.push(String::from_utf8_lossy(&out.stdout).trim().to_string());
        assert!(stored.len() < 500, "a 6 MB tmpfs never filled up");
    };
    assert!(!stored.is_empty(), "nothing fit before the disk was full: {err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("loupe: error: ") && err.contains("no space left"), "{err}");
    // With room again, every run stored before the failure reads back whole.
    let grown = Command::new("mount").args(["-o", "remount,size=64m"]).arg(&mount_point).status().unwrap();
    assert!(grown.success());
    let list = json(&Command::new(LOUPE).args(["runs", "list", "--json", "--data-dir"]).arg(&data).output().unwrap());
    let listed: Vec<String> = list.as_array().unwrap().iter().map(|r| r["id"].to_string()).collect();
    for id in &stored {
        assert!(listed.contains(id), "run {id} lost after the disk filled");
        let run =
            json(&Command::new(LOUPE).args(["runs", "show", id, "--json", "--data-dir"]).arg(&data).output().unwrap());
        assert_eq!(run["metrics"]["in_bytes"], record["ingressBytes"]);
    }
}

/// Tried as an operator would: the agent's data dir is removed (or only its `agent.sock`
/// unlinked) while it runs, then SIGTERM. It must stop promptly: its stop never depends on the
/// filesystem (the control socket is woken by a socket pair, not by connecting to its path).
#[test]
fn sigterm_stops_the_agent_whatever_happened_to_its_files() {
    require_root!();
    for remove in ["the data dir", "agent.sock"] {
        let pair = VethPair::new("stop").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let mut agent = loupe_in(
            &pair.b.name,
            &data,
            &[
                "agent",
                "--iface",
                B_IF,
                "--intervals",
                "10ms",
                "--samples",
                "100",
                "--period",
                "1s",
                "--no-stacks",
                "--no-http",
            ],
        )
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
        let sock = data.join("agent.sock");
        wait_for(&mut agent, "the control socket", Duration::from_secs(10), || sock.exists().then_some(()));
        match remove {
            "agent.sock" => std::fs::remove_file(&sock).unwrap(),
            _ => std::fs::remove_dir_all(&data).unwrap(),
        }
        sigterm(&agent);
        let asked = std::time::Instant::now();
        while agent.try_wait().unwrap().is_none() {
            if asked.elapsed() > Duration::from_secs(10) {
                let _ = agent.kill();
                panic!("with {remove} removed, the agent was still running 10 s after SIGTERM");
            }
            thread::sleep(Duration::from_millis(20));
        }
        let took = asked.elapsed();
        let out = agent.wait_with_output().unwrap();
        assert!(took < Duration::from_secs(5), "with {remove} removed, stopping took {took:?}");
        eprintln!("with {remove} removed: stopped {took:?} after SIGTERM ({})", out.status);
    }
}

/// An on-demand run that outlasts the request timeout answers 408 `run_timeout` when the
/// timeout ends — no server thread waits longer — and is stored when it ends all the same.
/// A run asked for more than 10 minutes ahead is refused at once.
#[test]
fn a_run_longer_than_the_request_timeout_answers_408_and_is_stored_later() {
    require_root!();
    let pair = VethPair::new("slow").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let port = 17_000 + (std::process::id() % 1000) as u16;
    let listen = format!("127.0.0.1:{port}");
    let mut agent = loupe_in(
        &pair.b.name,
        &data,
        &[
            "agent",
            "--iface",
            B_IF,
            "--intervals",
            "10ms",
            "--samples",
            "200",
            "--period",
            "1h",
            "--no-stacks",
            "--no-auth",
            "--listen",
            &listen,
            "--request-timeout",
            "2s",
            "--duration",
            "20s",
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    thread::sleep(Duration::from_millis(1500));
    let server = format!("http://{listen}");
    // The agent's loopback is its namespace's: ask from a thread in there.
    let post = |body: &'static str| {
        let url = format!("{server}/api/v1/runs");
        pair.b
            .run(move || {
                let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
                let mut r = agent.post(&url).header("Content-Type", "application/json").send(body).unwrap();
                (r.status().as_u16().to_string(), r.body_mut().read_to_string().unwrap())
            })
            .unwrap()
    };
    let asked = std::time::Instant::now();
    // 100 × 10 ms starting in 4 s: it ends after the 2 s request timeout.
    let (status, body) = post(r#"{"interval": "10ms", "samples": 100, "start": "+4s"}"#);
    let waited = asked.elapsed();
    assert_eq!(status, "408", "{body}");
    assert!(body.contains("run_timeout"), "{body}");
    assert!(waited >= Duration::from_secs(2) && waited < Duration::from_secs(4), "answered after {waited:?}");
    let (status, body) = post(r#"{"interval": "10ms", "samples": 100, "start": "+11m"}"#);
    assert_eq!(status, "400", "{body}");
    assert!(body.contains("at most 10m"), "{body}");
    thread::sleep(Duration::from_secs(5));
    let list = json(&loupe_in(&pair.b.name, &data, &["--server", &server, "runs", "list", "--json"]).output().unwrap());
    // (Periodic runs have 200 samples; the on-demand one has 100.)
    let on_demand = list.as_array().unwrap().iter().filter(|r| r["samples"] == 100).count();
    assert_eq!(on_demand, 1, "the run that outlasted its request was stored: {list}");
    sigterm(&agent);
    assert!(agent.wait().unwrap().success());
}

/// `loupe agent --demo` (what `scripts/start` runs) starts complete: the example analyses are
/// installed, owned by team `demo`, and answer; its application logs a timeline (with argument
/// names) and is probed by the agent within `FIRST_PROBE`, each call recorded.
#[test]
fn the_demo_starts_with_the_example_analyses_installed() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    let wasm_dir = loupe_testbed::wasm_component("flame").parent().unwrap().to_path_buf();
    let port = 18_000 + (std::process::id() % 1000) as u16;
    let listen = format!("127.0.0.1:{port}");
    let mut agent = Command::new(LOUPE)
        .args(["agent", "--demo", "--no-stacks", "--no-auth", "--duration", "90s", "--listen", &listen])
        .arg("--demo-analyses")
        .arg(&wasm_dir)
        .arg("--timeline-dir")
        .arg(dir.path().join("rings"))
        .arg("--data-dir")
        .arg(dir.path())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let http: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let url = format!("http://{listen}/api/v1/udfs");
    let list: Value = wait_for(&mut agent, "the demo's API", Duration::from_secs(20), || {
        let mut r = http.get(&url).call().ok().filter(|r| r.status() == 200)?;
        Some(serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap())
    });
    let mut names: Vec<&str> = list.as_array().unwrap().iter().map(|u| u["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(
        names,
        ["burst-detector", "cross-region-share", "flame", "hot-functions", "incast-detector", "nic-stall-detector"]
    );
    assert!(list.as_array().unwrap().iter().all(|u| u["owner"] == "demo"), "{list}");
    let mut r = http
        .post(format!("{url}/burst-detector/invoke"))
        .header("Content-Type", "application/json")
        .send(r#"{"params": {"threshold_bps": 1000000}}"#)
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.body_mut().read_to_string().unwrap());
    let get = |path: &str| -> Option<Value> {
        let mut r = http.get(format!("http://{listen}{path}")).call().ok().filter(|r| r.status() == 200)?;
        Some(serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap())
    };
    // The demo's application logs its loop …
    let events = wait_for(&mut agent, "the demo application's timeline", Duration::from_secs(20), || {
        let t = get("/api/v1/timeline")?;
        let e =
            t["events"].as_array()?.iter().find(|e| e["comm"] == "loupe-demo-app" && e["name"] == "request")?.clone();
        Some(e)
    });
    assert_eq!(events["arg_names"], serde_json::json!(["id", "bytes"]));
    // … and the agent probes its request handler by itself; stopped here, every call counted.
    let first = loupe_query_host::app::demo_app::FIRST_PROBE + Duration::from_secs(20);
    let handle = wait_for(&mut agent, "the demo's probe session", first, || {
        let p = get("/api/v1/probes")?;
        p["active"].as_array()?.first().map(|s| s["handle"].as_u64().unwrap())
    });
    let mut r = http.post(format!("http://{listen}/api/v1/probes/active/{handle}/stop")).send_empty().unwrap();
    let stopped: Value = serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap();
    assert_eq!(stopped["functions"][0]["name"], "loupe_demo_handle", "{stopped}");
    assert!(stopped["functions"][0]["calls"].as_u64().unwrap() > 0, "{stopped}");
    let stored = get(&format!("/api/v1/probes/{}?calls=true", stopped["id"])).expect("the stored session");
    assert!(!stored["calls"].as_array().is_none_or(Vec::is_empty), "call records kept: {stored}");
    sigterm(&agent);
    assert!(agent.wait().unwrap().success());
}
