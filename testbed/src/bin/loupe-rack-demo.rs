//! `scripts/start --rack-demo`: a small rack on this machine to try the fleet with — its own
//! `nats-server`, an agent per host in a network namespace (`loupe_testbed::rack`), host 0's
//! switch port shaped to 100 Mbit/s, and bursty traffic: every second the other hosts send at
//! host 0 at once (an incast), with a trickle in between. Host 0's web UI (a token made for it,
//! the fleet's example analyses uploaded) shows the fleet view. The rack's NATS and agents are
//! reachable from this namespace over the management network; the commands to try are printed.
//! Host 0's agent also samples waits off the CPU (`--off-cpu`, of the whole machine: the agents
//! share one kernel), for its profile's "waits off the CPU" box. Ctrl-C stops the agents and removes the namespaces.
//!
//! `loupe-rack-demo [--hosts 4] [--leaves N] [--dir ./loupe-rack] [--loupe target/release/loupe] [--incast-log FILE]`
//!
//! `--leaves N` (2 or more) makes the bus a fleet of NATS leaf nodes: a hub on the usual address
//! and N leaf servers, each with JetStream in its own domain; the hosts are split among them in
//! order, each leaf a rack named `r1`, `r2`, … (docs/fleet.md, "A fleet of leaf nodes").
//!
//! `--incast-log FILE` appends one JSON line per sender per incast: when its first datagram left
//! and when its last had been sent (Unix ns, `CLOCK_REALTIME` as the runs' starts), and how many
//! bytes it sent. That is the ground truth the web UI's fleet test checks the heatmap against:
//! on a loaded 2-core machine the senders' threads need not fire together, so "every sender
//! bursts just before h0's peak" is not something the demo guarantees, but "each sender's bytes
//! are in the slots it sent them in" is.

use std::{
    io::Write,
    net::{SocketAddr, UdpSocket},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::atomic::{AtomicBool, Ordering},
    thread,
    time::Duration,
};

use anyhow::{Context, Result, bail};
use loupe_testbed::rack::Rack;

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn main() -> Result<()> {
    let mut hosts = 4usize;
    let mut dir = PathBuf::from("loupe-rack");
    let mut loupe = std::env::current_exe()?.with_file_name("loupe");
    let mut incast_log: Option<PathBuf> = None;
    let mut leaves = 1usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--hosts" => hosts = value()?.parse()?,
            "--dir" => dir = value()?.into(),
            "--loupe" => loupe = value()?.into(),
            "--incast-log" => incast_log = Some(value()?.into()),
            "--leaves" => leaves = value()?.parse()?,
            other => bail!(
                "unknown argument {other}: loupe-rack-demo [--hosts N] [--leaves N] [--dir DIR] [--loupe PATH] \
                 [--incast-log FILE]"
            ),
        }
    }
    if !(2..=16).contains(&hosts) {
        bail!("--hosts {hosts}: give 2 to 16");
    }
    if leaves == 0 || leaves > hosts {
        bail!("--leaves {leaves}: give 1 (one server) to the number of hosts ({hosts})");
    }
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    std::fs::create_dir_all(&dir)?;
    let dir = dir.canonicalize()?;
    let mut rack = Rack::new("demo", hosts, &dir.join("nats"))?;
    rack.shape(0, 100)?;
    // With leaves, each is a rack of its own; else the one rack is `demo`.
    let names: Vec<String> = (1..=leaves).map(|k| format!("r{k}")).collect();
    let rack_of = |i: usize| if leaves > 1 { names[i * leaves / hosts].clone() } else { "demo".to_string() };
    if leaves > 1 {
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        rack.use_leaves(&refs, (0..hosts).map(|i| i * leaves / hosts).collect())?;
    }
    rack.start_nats()?;
    let _uplink = rack.uplink()?;
    let url = rack.nats_url();
    // Declared after the rack: dropped first, so on any way out (an error included) the agents
    // stop before the bus and the namespaces go.
    let mut agents = Agents(Vec::new());
    for (i, h) in rack.hosts.iter().enumerate() {
        let log = std::fs::File::create(dir.join(format!("agent-{}.log", h.name)))?;
        let listen = format!("10.78.0.{}:7878", i + 1);
        let mut agent = rack.agent(i, &loupe, &dir.join(&h.name), &rack_of(i), "local");
        // Plain HTTP on the rack's private management network (a lab on one machine; beyond
        // loopback the agent wants TLS otherwise), so a browser here opens it without a CA.
        agent.args(["--listen", &listen, "--insecure-plaintext"]);
        agent.args(["--no-timeline", "--intervals", "1ms,10ms", "--period", "30s"]);
        if i == 0 {
            agent.args(["--off-cpu", "--off-cpu-max-per-second", "50"]);
        }
        agents.0.push(
            agent
                .stderr(log)
                .spawn()
                .with_context(|| format!("starting {} (build it first: cargo build --release)", loupe.display()))?,
        );
    }
    let cli = loupe.display();
    let ui = "http://10.78.0.1:7878";
    let token = web_ui_access(&loupe, &dir.join(&rack.hosts[0].name), ui, &mut agents.0[0])
        .with_context(|| format!("host 0's agent; its log: {}", dir.join("agent-h0.log").display()))?;
    let (first, bus) = if leaves > 1 {
        (rack_of(0), format!("{leaves} leaf servers (racks {}) under a hub", names.join(", ")))
    } else {
        (rack_of(0), "one nats-server".to_string())
    };
    eprintln!(
        "rack-demo: {hosts} hosts (h0 … h{}) on {bus}, h0's port shaped to 100 Mbit/s, an incast at h0 every \
         second; logs in {}\n\
         the fleet view: {ui}/#/fleet (token {token})\n\
         the fleet's requests are signed: export LOUPE_FLEET_KEY={key} (the operator's key; every agent \
         trusts it from {trust})\n\
         try:\n  {cli} fleet hosts --nats {url}\n  {cli} fleet run --nats {url} --rack {first} --interval 1ms\n  \
         {cli} fleet invoke rack-contention --nats {url} --rack {first} --from -1m \\\n      \
         --wasm udf-sdk/target/wasm32-wasip2/release/rack_contention.wasm -p threshold_bps=10000000\n  \
         {cli} fleet invoke fleet-hot-functions --nats {url} --all --from -1m \\\n      \
         --wasm udf-sdk/target/wasm32-wasip2/release/fleet_hot_functions.wasm\n\
         Ctrl-C stops it.",
        hosts - 1,
        dir.display(),
        key = rack.keys().operator.display(),
        trust = rack.keys().trust.display(),
    );
    // One line for scripts (the web UI's fleet test waits for it).
    eprintln!("rack-demo ready: ui={ui} token={token}");
    let mut log = match &incast_log {
        Some(path) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("opening the incast log {}", path.display()))?,
        ),
        None => None,
    };
    traffic(&rack, log.as_mut())
}

/// The demo's agents, stopped when dropped: whether the demo ends with Ctrl-C or fails half-way,
/// it leaves no agent running (a failed start once left each try's agents behind for good).
struct Agents(Vec<Child>);

impl Drop for Agents {
    fn drop(&mut self) {
        for a in &self.0 {
            // SAFETY: kill(2) on our own children: agents leave the fleet and detach.
            unsafe { libc::kill(a.id() as i32, libc::SIGTERM) };
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        for a in &mut self.0 {
            while matches!(a.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
                thread::sleep(Duration::from_millis(50));
            }
            // One that did not stop in time is killed (its kernel programs go with it).
            if matches!(a.try_wait(), Ok(None)) {
                let _ = a.kill();
            }
            let _ = a.wait();
        }
    }
}

/// A token for host 0's API (the web UI), and the fleet's example analyses uploaded to it so
/// the fleet view can run them (when they are built: `scripts/setup` builds udf-sdk).
fn web_ui_access(loupe: &Path, h0_data: &Path, ui: &str, h0: &mut Child) -> Result<String> {
    // The web UI starts synchronized runs (`run`) and probes (`probe`) as well as reading.
    let out = Command::new(loupe)
        .args(["token", "add", "demo", "--scopes", "read,invoke,upload,run,probe,fleet", "--data-dir"])
        .arg(h0_data)
        .output()?;
    if !out.status.success() {
        bail!("loupe token add: {}", String::from_utf8_lossy(&out.stderr));
    }
    let token = String::from_utf8(out.stdout)?.trim().to_string();
    for (name, crate_name) in [("rack-contention", "rack_contention"), ("fleet-hot-functions", "fleet_hot_functions")] {
        let wasm = loupe_testbed::wasm_component(crate_name);
        if !wasm.exists() {
            eprintln!(
                "rack-demo: {} not built, so {name} is not uploaded (scripts/setup builds udf-sdk)",
                wasm.display()
            );
            continue;
        }
        // The agent's API comes up within a few seconds of its start.
        let mut tries = 0;
        loop {
            let up = Command::new(loupe)
                .args(["--server", ui, "--token", &token, "udf", "upload", name])
                .arg(&wasm)
                .stdout(Stdio::null())
                .output()?;
            if up.status.success() {
                break;
            }
            if let Some(status) = h0.try_wait()? {
                bail!("host 0's agent ended ({status}) before its API served");
            }
            tries += 1;
            // Loading the kernel programs and BTF takes seconds on a loaded 2-core machine.
            if tries == 240 {
                bail!("uploading {name} to {ui}: {}", String::from_utf8_lossy(&up.stderr));
            }
            thread::sleep(Duration::from_millis(250));
        }
    }
    Ok(token)
}

/// Datagrams each sender sends at host 0 in one incast, and their payload.
const INCAST_DATAGRAMS: usize = 80;
const INCAST_PAYLOAD: usize = 1400;

/// Until stopped: a trickle between the hosts, and every second all of them bursting at host 0
/// (each sender's instants appended to `log` when given).
fn traffic(rack: &Rack, mut log: Option<&mut std::fs::File>) -> Result<()> {
    let socket = |i: usize| -> Result<UdpSocket> {
        let addr = SocketAddr::from((rack.hosts[i].v4, 9000));
        rack.hosts[i].ns.run(|| UdpSocket::bind(addr))?.context("binding a demo socket")
    };
    let sockets: Vec<UdpSocket> = (0..rack.hosts.len()).map(socket).collect::<Result<_>>()?;
    let victim = SocketAddr::from((rack.hosts[0].v4, 9000));
    let mut tick = 0u64;
    while !STOP.load(Ordering::Relaxed) {
        thread::sleep(Duration::from_millis(100));
        tick += 1;
        for (i, s) in sockets.iter().enumerate().skip(1) {
            let next = SocketAddr::from((rack.hosts[(i + 1) % rack.hosts.len()].v4, 9000));
            let _ = s.send_to(&[0u8; 600], next);
        }
        if tick % 10 == 0 {
            let fired: Vec<(u64, u64, u64)> = thread::scope(|scope| {
                let senders: Vec<_> = sockets
                    .iter()
                    .skip(1)
                    .map(|s| {
                        scope.spawn(move || {
                            let first = unix_ns();
                            let sent: usize = (0..INCAST_DATAGRAMS)
                                .filter_map(|_| s.send_to(&[1u8; INCAST_PAYLOAD], victim).ok())
                                .sum();
                            (first, unix_ns(), sent as u64)
                        })
                    })
                    .collect();
                senders.into_iter().map(|t| t.join().expect("a sender thread does not panic")).collect()
            });
            if let Some(log) = log.as_deref_mut() {
                let mut lines = String::new();
                for (i, (first, last, bytes)) in fired.into_iter().enumerate() {
                    let host = &rack.hosts[i + 1].name;
                    lines += &serde_json::json!({ "host": host, "first_unix_ns": first, "last_unix_ns": last, "payload_bytes": bytes })
                        .to_string();
                    lines.push('\n');
                }
                log.write_all(lines.as_bytes()).context("writing the incast log")?;
            }
        }
        // Keep receive buffers from filling (nobody reads the demo's datagrams otherwise).
        let mut buf = [0u8; 2048];
        for s in &sockets {
            s.set_nonblocking(true)?;
            while s.recv_from(&mut buf).is_ok() {}
        }
    }
    Ok(())
}

/// Now, in Unix ns (`CLOCK_REALTIME`, the clock runs' starts are given in).
fn unix_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}
