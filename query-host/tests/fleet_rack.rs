//! A rack of eight hosts on one machine (`loupe_testbed::rack`): each a network namespace with
//! a real `loupe agent` joined to a real `nats-server`, a bridge as their top-of-rack switch,
//! host 0's port shaped to 100 Mbit/s. Through the real `loupe fleet` command line:
//!
//! - a synchronized run starts at the same instant with the same slot boundaries on every host:
//!   packets timed into chosen slots are counted in the same slot by sender and receiver;
//! - every host's bytes are exact against its interface's counters and its generators;
//! - an incast (six senders at once to host 0) shows in the hosts × time view, and the
//!   `rack-contention` analysis, run fleet-wide, names the victim, the senders and the slots;
//! - `fleet-hot-functions` run fleet-wide equals the union of the hosts' own profiles;
//! - a host killed, or partitioned from NATS, is reported missing at the deadline; a restarted
//!   nats-server is rejoined and the next query succeeds; an oversized partial is refused with
//!   a clear error, not a timeout.

use std::{
    net::{SocketAddr, UdpSocket},
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    thread,
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

mod common;

use common::Http;
use loupe_testbed::{
    pki::Pki,
    rack::{BusTls, NATS_ADDR, Rack},
    require_root,
    topology::LinkStats,
    traffic::udp_frame_len,
};
use serde_json::Value;

const LOUPE: &str = env!("CARGO_BIN_EXE_loupe");
const HOSTS: usize = 8;
const VICTIM: usize = 0;
/// The host whose agent also samples waits off the CPU.
const OFF_CPU_HOST: usize = 4;

fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64
}

/// Sleeps until 2 ms before `t`, then spins: a packet sent at a chosen instant lands in its
/// slot even when the scheduler wakes the thread late.
/// How many of the 20 alignment probe packets may be counted a slot after they were sent.
const MAX_CROSSED: u64 = 4;

fn sleep_until_ns(t: u64) {
    let now = now_ns();
    if t > now + 2_000_000 {
        thread::sleep(Duration::from_nanos(t - now - 2_000_000));
    }
    while now_ns() < t {
        std::hint::spin_loop();
    }
}

struct Fleet {
    rack: Rack,
    agents: Vec<Option<Child>>,
    dir: tempfile::TempDir,
    /// Agents sample stacks (the hot-functions proof) or not (exact traffic timing).
    stacks: bool,
}

/// A built analysis (udf-sdk, wasm32-wasip2), for `--wasm`.
fn module(crate_name: &str) -> String {
    loupe_testbed::wasm_component(crate_name).display().to_string()
}

impl Fleet {
    /// `tls`: the bus is a TLS nats-server that verifies clients (certificates made here).
    fn start(tag: &str, stacks: bool, tls: bool) -> Fleet {
        let dir = tempfile::tempdir().unwrap();
        let mut rack = Rack::new(tag, HOSTS, &dir.path().join("nats")).unwrap();
        rack.shape(VICTIM, 100).unwrap();
        if tls {
            let pki = Pki::new(dir.path()).unwrap();
            pki.issue("nats", "rack nats-server", &[&format!("IP:{NATS_ADDR}")]).unwrap();
            pki.issue("agent", "rack agent", &[]).unwrap();
            rack.use_bus_tls(BusTls {
                ca: pki.pem("ca"),
                server_cert: pki.pem("nats"),
                server_key: pki.key("nats"),
                client_cert: pki.pem("agent"),
                client_key: pki.key("agent"),
            });
        }
        rack.start_nats().unwrap();
        let mut fleet = Fleet { rack, agents: Vec::new(), dir, stacks };
        for i in 0..HOSTS {
            let child = fleet.agent(i);
            fleet.agents.push(Some(child));
        }
        fleet.wait_up(HOSTS);
        fleet
    }

    fn data_dir(&self, i: usize) -> PathBuf {
        self.dir.path().join(format!("h{i}"))
    }

    /// `loupe agent` in host `i`'s namespace, sampling its data interface, in rack `r1` of
    /// dc `d1`; host 0 also serves HTTP (on its own loopback) for the `--server` path.
    fn agent(&self, i: usize) -> Child {
        let log = std::fs::File::create(self.dir.path().join(format!("agent-h{i}.log"))).unwrap();
        let mut cmd = self.rack.agent(i, Path::new(LOUPE), &self.data_dir(i), "r1", "d1");
        cmd.args(["--no-timeline", "--intervals", "10ms", "--period", "600s"])
            .args(if self.stacks { &[][..] } else { &["--no-stacks"][..] })
            // h4 also takes waits off the CPU (of the whole machine: few, so its profile of a
            // range stays well inside the fleet's message limit).
            .args(if self.stacks && i == OFF_CPU_HOST {
                &["--off-cpu", "--off-cpu-max-per-second", "50"][..]
            } else {
                &[][..]
            })
            .env("RUST_LOG", "info")
            .stderr(log);
        if i == 0 {
            cmd.args(["--listen", "127.0.0.1:7878", "--no-auth"]);
        } else {
            cmd.arg("--no-http");
        }
        cmd.spawn().unwrap()
    }

    /// Host `i`'s own `loupe profile --json` of `[from, to)` (`kind`: `--off-cpu` or nothing),
    /// from its data dir (through its agent's control socket).
    fn own_profile(&self, i: usize, from: &str, to: &str, kind: &[&str]) -> Value {
        common::fleet::own_profile(LOUPE, &self.rack.hosts[i].ns.name, &self.data_dir(i), from, to, kind)
    }

    /// `loupe fleet ARGS --nats URL --json` from the switch's namespace (where NATS is).
    fn fleet(&self, args: &[&str]) -> Output {
        Command::new("ip")
            .args(["netns", "exec", &self.rack.tor.name, LOUPE, "fleet"])
            .args(args)
            .args(self.rack.bus_args())
            .args(self.rack.fleet_key_args())
            .arg("--json")
            .env("RUST_LOG", "warn")
            .output()
            .unwrap()
    }

    fn fleet_json(&self, args: &[&str]) -> Value {
        let out = self.fleet(args);
        assert!(out.status.success(), "loupe fleet {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// Waits until `n` hosts are up in the registry (at most 30 s).
    fn wait_up(&self, n: usize) -> Value {
        self.wait_heard_since(n, 0)
    }

    /// Waits until `n` hosts sent a heartbeat after `since_ns` (at most 30 s): the registry
    /// outlives a nats-server restart, the agents' subscriptions have to be renewed.
    fn wait_heard_since(&self, n: usize, since_ns: u64) -> Value {
        self.wait_heard(n, since_ns, Duration::from_secs(30)).0
    }

    /// [`Self::wait_heard_since`], failing if the hosts are not all heard `within` of the
    /// first listing the bus answered (30 s before that); also says how long that took.
    fn wait_heard(&self, n: usize, since_ns: u64, within: Duration) -> (Value, Duration) {
        let mut deadline = Instant::now() + Duration::from_secs(30);
        let mut answered: Option<Instant> = None;
        loop {
            let out = self.fleet(&["hosts", "--rack", "r1"]);
            if out.status.success() {
                let first = *answered.get_or_insert_with(|| {
                    deadline = deadline.min(Instant::now() + within);
                    Instant::now()
                });
                let v: Value = serde_json::from_slice(&out.stdout).unwrap();
                // Each host once, whatever the bus went through (a restart once listed every
                // heartbeat since before it).
                let names: Vec<&str> =
                    v["hosts"].as_array().unwrap().iter().map(|h| h["host"].as_str().unwrap()).collect();
                let distinct: std::collections::BTreeSet<&str> = names.iter().copied().collect();
                assert_eq!(names.len(), distinct.len(), "a host listed twice: {names:?}");
                let heard = v["hosts"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|h| h["status"] == "up" && h["heartbeat_unix_ns"].as_u64().unwrap() > since_ns)
                    .count();
                if heard == n {
                    return (v, first.elapsed());
                }
            }
            assert!(
                Instant::now() < deadline,
                "{n} hosts not all heard within {within:?} of the bus answering: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            thread::sleep(Duration::from_millis(250));
        }
    }

    /// The last lines of every agent's log, for failure messages.
    fn logs(&self) -> String {
        common::fleet::agent_logs(self.dir.path(), HOSTS)
    }

    fn kill_agent(&mut self, i: usize) {
        common::fleet::kill(&mut self.agents[i]);
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        common::fleet::stop(&mut self.agents);
    }
}

/// A UDP socket in host `i`'s namespace (receivers keep packets from being answered with ICMP).
fn socket_in(fleet: &Fleet, i: usize, port: u16) -> UdpSocket {
    let addr = SocketAddr::from((fleet.rack.hosts[i].v4, port));
    fleet.rack.hosts[i].ns.run(|| UdpSocket::bind(addr)).unwrap().unwrap()
}

fn series(host: &Value, key: &str) -> Vec<u64> {
    host[key].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect()
}

#[test]
fn a_synchronized_rack_run_is_aligned_exact_and_shows_the_incast() {
    require_root!();
    if !common::fleet::nats_available("fleet_rack") {
        return;
    }
    let fleet = Fleet::start("rack1", false, false);
    let interval_ns = 1_000_000u64;
    let samples = 1500u64;
    let start = now_ns() + 3_000_000_000;

    // Receivers everywhere traffic goes: host 2 (probe packets) and the victim (incast).
    let probe_rx = socket_in(&fleet, 2, 6000);
    let incast_rx = socket_in(&fleet, VICTIM, 7000);
    incast_rx.set_nonblocking(true).unwrap();
    let before: Vec<LinkStats> = (0..HOSTS).map(|i| fleet.rack.data_stats(i).unwrap()).collect();

    let (run, sends) = thread::scope(|s| {
        let runner = s.spawn(|| {
            fleet.fleet_json(&[
                "run",
                "--rack",
                "r1",
                "--interval",
                "1ms",
                "--samples",
                "1500",
                "--at",
                &start.to_string(),
            ])
        });
        // Alignment probe: host 1 sends one packet to host 2 a quarter into slots 100..120,
        // and notes when each send call began and returned (a loaded machine wakes it late).
        let probe = s.spawn(|| {
            let tx = socket_in(&fleet, 1, 5000);
            let dst = SocketAddr::from((fleet.rack.hosts[2].v4, 6000));
            (100..120u64)
                .map(|k| {
                    sleep_until_ns(start + k * interval_ns + interval_ns / 4);
                    let began = now_ns();
                    tx.send_to(&[0u8; 200], dst).unwrap();
                    (began, now_ns())
                })
                .collect::<Vec<_>>()
        });
        // Incast: six senders burst 60 datagrams of 1,400 bytes each at the victim at once.
        let senders: Vec<_> = (2..HOSTS)
            .map(|i| {
                let fleet = &fleet;
                s.spawn(move || {
                    let tx = socket_in(fleet, i, 7001);
                    let dst = SocketAddr::from((fleet.rack.hosts[VICTIM].v4, 7000));
                    sleep_until_ns(start + 600 * interval_ns);
                    for _ in 0..60 {
                        tx.send_to(&[1u8; 1400], dst).unwrap();
                    }
                })
            })
            .collect();
        let sends = probe.join().unwrap();
        for sender in senders {
            sender.join().unwrap();
        }
        (runner.join().unwrap(), sends)
    });
    drop(probe_rx);
    drop(incast_rx);

    // Every host ran, from the same instant, with the same slots.
    let hosts = run["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), HOSTS, "missed: {}", run["missed"]);
    assert!(run["missed"].as_array().unwrap().is_empty());
    for h in hosts {
        assert_eq!(h["start_unix_ns"].as_u64(), Some(start), "{}", h["host"]);
        assert_eq!(h["interval_ns"].as_u64(), Some(interval_ns));
        assert_eq!(h["samples"].as_u64(), Some(samples));
        assert_eq!(h["clock"]["synchronized"], true, "{}", h["host"]);
        assert!(h["configured_before_start_ns"].as_i64().unwrap() < 0, "{} configured after the start", h["host"]);
    }
    let by_name = |n: &str| hosts.iter().find(|h| h["host"] == n).unwrap();

    // 0 slots of misalignment: the hosts' slot boundaries are the same instants (above), so a
    // probe packet is counted by the receiver in the sender's slot, or — when it was in flight
    // across a slot edge (a veth hop, a softirq a loaded machine ran late) — in the next one;
    // never earlier, never later. In packets, cumulatively: by the end of each slot the
    // receiver has seen at most what was sent, and at least what was sent a slot before.
    let frame = udp_frame_len(fleet.rack.hosts[1].v4.into(), 200);
    let sent = series(by_name("h1"), "out_bytes");
    let got = series(by_name("h2"), "in_bytes");
    assert_eq!(sent[..600].iter().sum::<u64>(), 20 * frame);
    assert_eq!(got[..600].iter().sum::<u64>(), 20 * frame, "the receiver's probe bytes: {:?}", &got[95..125]);
    assert!(sent[..600].iter().chain(&got[..600]).all(|b| b % frame == 0), "probe slots hold whole packets");
    let (mut sent_by, mut got_by, mut crossed) = (0, 0, 0);
    for k in 0..600 {
        let sent_before = sent_by;
        sent_by += sent[k] / frame;
        got_by += got[k] / frame;
        assert!(
            sent_before <= got_by && got_by <= sent_by,
            "slot {k}: received {got_by} probe packets by its end, sent {sent_by} (and {sent_before} a slot before): \
             sender {:?} receiver {:?}",
            &sent[95..125],
            &got[95..125]
        );
        crossed += sent_by - got_by;
    }
    println!("fleet_rack: {crossed} of 20 probe packets were in flight across a slot edge (counted a slot later)");
    // Sent a quarter into 1-ms slots, a packet crosses an edge only if its hop from the
    // sender's egress to the receiver's ingress outlasts the rest of its slot (tens of µs, so a
    // few % of packets, more when a loaded machine wakes the sender late in a slot). At most
    // a fifth may: a receiver whose slots ran one late would put all 20 there.
    assert!(
        crossed <= MAX_CROSSED,
        "{crossed} of 20 probe packets a slot late (at most {MAX_CROSSED}): receiver {:?}",
        &got[95..125]
    );
    // Each packet is in a slot its send call spanned (50 µs either side for the hosts' clocks),
    // and they are spread over several slots, so the equality above compares more than one.
    let slot_of = |t: u64| ((t.saturating_sub(start)) / interval_ns) as usize;
    let mut spanned = vec![false; sent.len()];
    for &(began, returned) in &sends {
        let last = slot_of(returned + 50_000).min(sent.len() - 1);
        spanned[slot_of(began.saturating_sub(50_000)).min(last)..=last].iter_mut().for_each(|s| *s = true);
    }
    let stray: Vec<usize> = (0..600).filter(|&i| sent[i] > 0 && !spanned[i]).collect();
    assert!(stray.is_empty(), "probe bytes in slots {stray:?}, outside their send calls: {:?}", &sent[95..125]);
    assert!(
        sent[..600].iter().filter(|&&b| b > 0).count() >= 3,
        "probe packets in too few slots: {:?}",
        &sent[95..125]
    );

    // Exact bytes: every host's run against its interface's counters and its generators.
    let big = udp_frame_len(fleet.rack.hosts[2].v4.into(), 1400);
    for (i, h) in fleet.rack.hosts.iter().enumerate() {
        let delta = fleet.rack.data_stats(i).unwrap().since(&before[i]);
        let view = by_name(&h.name);
        let (out, inb) = (series(view, "out_bytes").iter().sum::<u64>(), series(view, "in_bytes").iter().sum::<u64>());
        assert_eq!(out, delta.tx_bytes, "{}: egress bytes vs the interface", h.name);
        assert_eq!(inb, delta.rx_bytes, "{}: ingress bytes vs the interface", h.name);
        let generated = match i {
            1 => 20 * frame,
            2..HOSTS => 60 * big,
            _ => 0,
        };
        assert_eq!(out, generated, "{}: egress bytes vs what its generators sent", h.name);
    }

    // The incast: the senders' bursts in one or two slots, the victim's ingress spread behind
    // its 100 Mbit/s port, which dropped what did not fit.
    let victim = series(by_name("h0"), "in_bytes");
    let burst: u64 = victim[600..800].iter().sum();
    assert_eq!(burst, victim.iter().sum::<u64>(), "victim ingress outside the incast");
    let drops = fleet.rack.port_drops(VICTIM).unwrap();
    assert_eq!(burst / big + drops, 6 * 60, "received + dropped at the shaped port = sent");
    assert!(drops > 0, "the incast should overflow a 100 Mbit/s port");
    // The port's rate held: over the slots the incast reached the victim, at most the token
    // bucket's burst (32 KiB) plus 100 Mbit/s (12,500 B a 1-ms slot) and one frame. Counted at
    // the victim's ingress, behind a veth whose receive softirq a loaded machine can hold for a
    // few ms (a run beside nothing else once saw 70 KB in one slot), so a single slot is held
    // only to a third of the incast, where an unshaped port would have delivered it in one or
    // two slots, and the span is given 5 ms more (a stall as the first frames arrive shortens
    // it; one later only lengthens it).
    let first = victim.iter().position(|&b| b > 0).unwrap();
    let last = victim.iter().rposition(|&b| b > 0).unwrap();
    let span_ms = (last - first + 1) as u64;
    assert!(
        burst <= 32_768 + (span_ms + 5) * 12_500 + big,
        "the victim's port let {burst} B through in {span_ms} ms, over 100 Mbit/s"
    );
    let busiest = victim.iter().max().copied().unwrap();
    assert!(busiest <= 6 * 60 * big / 3, "the victim's port let {busiest} B through in 1 ms");
    assert!(victim.iter().filter(|&&b| b > 0).count() >= 20, "the incast did not queue at the victim's port");
    for name in ["h2", "h3", "h4", "h5", "h6", "h7"] {
        let out = series(by_name(name), "out_bytes");
        assert_eq!(out[598..610].iter().sum::<u64>(), 60 * big, "{name}: its burst is in the incast's slots");
    }

    // The rack-contention analysis, run on every host next to its run and merged: it names
    // the victim, the senders and the incast's slots, and its sums are the runs' sums.
    let end = start + samples * interval_ns;
    let contention = fleet.fleet_json(&[
        "invoke",
        "rack-contention",
        "--wasm",
        &module("rack_contention"),
        "--rack",
        "r1",
        "--from",
        &start.to_string(),
        "--to",
        &end.to_string(),
        "-p",
        "threshold_bps=10000000",
        "-p",
        "min_senders=3",
        "--deadline",
        "30s",
    ]);
    assert_eq!(contention["answered"].as_array().unwrap().len(), HOSTS, "{contention}");
    let rows = contention["rows"].as_array().unwrap();
    let incast: Vec<&Value> = rows.iter().filter(|r| r[5] != "").collect();
    assert!(!incast.is_empty(), "no incast found: {rows:?}");
    let mut senders = std::collections::BTreeSet::new();
    for r in &incast {
        assert_eq!(r[5], "h0", "the victim: {r}");
        let slot = (r[0].as_u64().unwrap() - start) / interval_ns;
        assert!((600..700).contains(&slot), "an incast outside the burst: slot {slot}");
        senders.extend(r[6].as_str().unwrap().split(',').map(str::to_string));
    }
    let want: std::collections::BTreeSet<String> = (2..HOSTS).map(|i| format!("h{i}")).collect();
    // On failure, the slots of the incast as the analysis saw them: who burst in and out.
    let seen: Vec<String> = rows
        .iter()
        .filter(|r| (595..640).contains(&((r[0].as_u64().unwrap() - start) / interval_ns)))
        .map(|r| {
            format!(
                "{} in={} out={} victims={} senders={}",
                (r[0].as_u64().unwrap() - start) / interval_ns,
                r[7],
                r[8],
                r[5],
                r[6]
            )
        })
        .collect();
    assert_eq!(senders, want, "the senders; slots:\n{}", seen.join("\n"));
    for r in rows {
        let slot = ((r[0].as_u64().unwrap() - start) / interval_ns) as usize;
        let summed: u64 = hosts.iter().map(|h| series(h, "in_bytes")[slot]).sum();
        assert_eq!(r[2].as_u64(), Some(summed), "rack ingress of slot {slot}");
    }
}

#[test]
fn missing_hosts_are_named_at_the_deadline_and_nats_restarts_are_survived() {
    require_root!();
    if !common::fleet::nats_available("fleet_rack") {
        return;
    }
    // This rack's bus is TLS with client certificates: everything below goes over it.
    let mut fleet = Fleet::start("rack2", true, true);
    let sampled_from = now_ns();
    let quick = ["run", "--rack", "r1", "--interval", "1ms", "--samples", "200"];
    // A client without the CA and a certificate does not get on the bus.
    let plain = Command::new("ip")
        .args(["netns", "exec", &fleet.rack.tor.name, LOUPE, "fleet", "hosts", "--json", "--nats"])
        .arg(fleet.rack.nats_url().replacen("tls://", "nats://", 1))
        .output()
        .unwrap();
    assert!(!plain.status.success(), "a plain client was served by the TLS bus: {plain:?}");
    // An agent trusting another CA does not join, and says why in one line.
    let other = Pki::new(&fleet.dir.path().join("other-ca")).unwrap();
    let log_path = fleet.dir.path().join("agent-intruder.log");
    let mut args = fleet.rack.bus_args();
    let ca_at = args.iter().position(|a| a == "--nats-ca").unwrap() + 1;
    args[ca_at] = other.pem("ca").display().to_string();
    let mut intruder = Command::new("ip")
        .args(["netns", "exec", &fleet.rack.hosts[HOSTS - 1].ns.name, LOUPE, "agent", "--no-http", "--no-timeline"])
        .args(["--host", "intruder", "--rack", "r1", "--data-dir"])
        .arg(fleet.dir.path().join("intruder"))
        .args(&args)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let said = loop {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        if let Some(line) = text.lines().find(|l| l.contains("cannot connect to NATS")) {
            break line.to_string();
        }
        assert!(Instant::now() < deadline, "the intruder said nothing of its bus: {text}");
        thread::sleep(Duration::from_millis(100));
    };
    assert!(said.contains("invalid peer certificate") && said.contains("--nats-ca"), "{said}");
    let listed = fleet.fleet_json(&["hosts"]);
    assert!(!listed.to_string().contains("intruder"), "{listed}");
    let _ = intruder.kill();
    let _ = intruder.wait();

    // Through an agent's HTTP API as well as NATS: the same registry.
    let via_http = Command::new("ip")
        .args(["netns", "exec", &fleet.rack.hosts[0].ns.name, LOUPE, "--server", "http://127.0.0.1:7878"])
        .args(["fleet", "hosts", "--rack", "r1", "--json"])
        .output()
        .unwrap();
    assert!(via_http.status.success(), "{}", String::from_utf8_lossy(&via_http.stderr));
    let listed: Value = serde_json::from_slice(&via_http.stdout).unwrap();
    assert_eq!(listed["up"], HOSTS as u64, "listed through h0's API: {listed}");

    // nats-server killed (SIGKILL) and restarted on the same store five times in a row: each
    // time every agent reconnects and registers again within two heartbeats of the bus
    // answering, no host listed twice, and the next query succeeds on every host.
    for restart in 1..=5 {
        fleet.rack.kill_nats().unwrap();
        thread::sleep(Duration::from_secs(1));
        let restarted = now_ns();
        fleet.rack.start_nats().unwrap();
        let (_, took) = fleet.wait_heard(HOSTS, restarted, 2 * loupe_fleet::registry::HEARTBEAT);
        println!("restart {restart}: every host heard again {:.1} s after the bus answered", took.as_secs_f64());
    }
    let run = fleet.fleet_json(&quick);
    assert_eq!(run["hosts"].as_array().unwrap().len(), HOSTS, "after the restart: {}\n{}", run["missed"], fleet.logs());

    // One host's partial is over the fleet's limit: refused there, with both sizes, at once;
    // the others are merged.
    let asked = Instant::now();
    let huge = fleet.fleet_json(&[
        "invoke",
        "hostile-huge-partial",
        "--wasm",
        &module("hostile_huge_partial"),
        "--rack",
        "r1",
        "-p",
        "big_host=h2",
        "--deadline",
        "30s",
    ]);
    // Refused at once, not waited for: far inside the deadline even on a loaded machine.
    assert!(asked.elapsed() < Duration::from_secs(15), "an oversized partial must not look like a timeout");
    let failed = huge["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{huge}");
    assert_eq!((failed[0]["host"].as_str(), failed[0]["code"].as_str()), (Some("h2"), Some("too_large")));
    assert!(failed[0]["why"].as_str().unwrap().contains("exceeds the fleet's limit of 786432 bytes"), "{huge}");
    assert_eq!(huge["text"], (HOSTS - 1).to_string());

    // Fleet hot functions equal the union of the hosts' own profiles over a closed range.
    let (from, to) = (sampled_from.to_string(), (sampled_from + 10_000_000_000).to_string());
    let hot = fleet.fleet_json(&[
        "invoke",
        "fleet-hot-functions",
        "--wasm",
        &module("fleet_hot_functions"),
        "--rack",
        "r1",
        "--from",
        &from,
        "--to",
        &to,
        "-p",
        "top=100000",
        "--deadline",
        "30s",
    ]);
    assert_eq!(hot["answered"].as_array().unwrap().len(), HOSTS, "{hot}");
    let mut fleet_total = 0;
    for i in 0..HOSTS {
        let profile = fleet.own_profile(i, &from, &to, &[]);
        let host = format!("h{i}");
        common::fleet::assert_hot_functions_are_own_profile(&hot, &host, &profile);
        assert!(profile["samples"].as_u64().unwrap() > 0, "{host} sampled nothing");
        fleet_total += profile["samples"].as_u64().unwrap();
    }
    let all = hot["rows"].as_array().unwrap().iter().find(|r| r[0] == "host" && r[3] == "*").unwrap();
    assert_eq!(all[4].as_u64(), Some(fleet_total), "the fleet's total is the hosts' sum");

    // One host's window read over the fleet through host 0's HTTP API (what the web UI's fleet
    // view opens): h4's profile equals its own, its run equals what the fleet run answered.
    let http = Http::new("http://127.0.0.1:7878", None);
    let on_h0 = |path: String| fleet.rack.hosts[0].ns.run(|| http.get(&path)).unwrap();
    let remote = on_h0(format!("/api/v1/fleet/hosts/h4/profile?from={from}&to={to}"));
    assert_eq!(remote.status, 200, "{}", String::from_utf8_lossy(&remote.body));
    let own = fleet.own_profile(4, &from, &to, &[]);
    let remote = remote.json();
    assert!(remote["samples"].as_u64().unwrap() > 0);
    for key in ["kind", "samples", "functions", "modules", "flamegraph"] {
        assert_eq!(remote[key], own[key], "h4's {key} read over the fleet against its own");
    }
    // Its waits off the CPU, the same way: time waited per stack, as its own profile says.
    let remote = on_h0(format!("/api/v1/fleet/hosts/h{OFF_CPU_HOST}/profile?kind=off_cpu&from={from}&to={to}"));
    assert_eq!(remote.status, 200, "{}", String::from_utf8_lossy(&remote.body));
    let own = fleet.own_profile(OFF_CPU_HOST, &from, &to, &["--off-cpu"]);
    let remote = remote.json();
    assert_eq!(remote["kind"], "off_cpu");
    assert!(remote["samples"].as_u64().unwrap() > 0, "h4 took no waits: {remote}");
    for key in ["kind", "samples", "functions", "modules", "flamegraph"] {
        assert_eq!(remote[key], own[key], "h4's off-CPU {key} read over the fleet against its own");
    }
    let h4 = run["hosts"].as_array().unwrap().iter().find(|h| h["host"] == "h4").unwrap();
    let read = on_h0(format!("/api/v1/fleet/hosts/h4/runs/{}", h4["run_id"])).json();
    assert_eq!(read["id"], h4["run_id"]);
    assert_eq!(read["start_unix_ns"], h4["start_unix_ns"]);
    assert_eq!(read["metrics"]["in_bytes"], h4["in_bytes"]);
    assert_eq!(read["metrics"]["out_bytes"], h4["out_bytes"]);
    on_h0("/api/v1/fleet/hosts/h4/runs/987654321".into()).assert_error(404, "not_found", "host h4");
    on_h0("/api/v1/fleet/hosts/h99/runs/1".into()).assert_error(404, "not_found", "no host of host h99");

    // Host 3 partitioned from NATS (its management link down): it is still `up` in the
    // registry for 10 to 15 s (its last beat up to 5 s old, silent 15 s after it), so it is
    // waited for, and named missing at the deadline — by this invocation (4 s: the live hosts
    // answer a cached module well inside it on a loaded machine) and by the run after it.
    fleet.rack.hosts[3].ns.exec(&["ip", "link", "set", "mgmt0", "down"]).unwrap();
    // Host 5 killed outright.
    fleet.kill_agent(5);
    let asked = Instant::now();
    let partial_answer = fleet.fleet_json(&[
        "invoke",
        "hostile-huge-partial",
        "--wasm",
        &module("hostile_huge_partial"),
        "--rack",
        "r1",
        "--deadline",
        "4s",
    ]);
    let took = asked.elapsed();
    let missing: Vec<&str> =
        partial_answer["missing"].as_array().unwrap().iter().map(|m| m["host"].as_str().unwrap()).collect();
    assert_eq!(missing, ["h3", "h5"], "{partial_answer}");
    assert_eq!(partial_answer["text"], (HOSTS - 2).to_string());
    assert!(took < Duration::from_secs(8), "an invocation with a 4 s deadline took {took:?}");

    let asked = Instant::now();
    let run = fleet.fleet_json(&quick);
    let took = asked.elapsed();
    let missed: Vec<&str> = run["missed"].as_array().unwrap().iter().map(|m| m["host"].as_str().unwrap()).collect();
    assert_eq!(missed, ["h3", "h5"], "{run}");
    assert!(run["missed"].as_array().unwrap().iter().all(|m| m["code"] == "deadline"));
    assert_eq!(run["hosts"].as_array().unwrap().len(), HOSTS - 2);
    // The run's deadline: 2 s lead + 0.2 s run + 15 s margin; never a hang.
    assert!(took < Duration::from_secs(25), "the query took {took:?}");

    // Silent hosts are listed as such once their heartbeats stop, and not waited for.
    thread::sleep(Duration::from_secs(16));
    let hosts = fleet.fleet_json(&["hosts", "--rack", "r1"]);
    let silent: Vec<&str> = hosts["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["status"] == "silent")
        .map(|h| h["host"].as_str().unwrap())
        .collect();
    assert_eq!(silent, ["h3", "h5"]);
    let asked = Instant::now();
    let run = fleet.fleet_json(&quick);
    // Waiting for them would take the run's 15 s margin past its 2 s lead.
    assert!(asked.elapsed() < Duration::from_secs(12), "silent hosts were waited for");
    assert!(run["missed"].as_array().unwrap().iter().all(|m| m["code"] == "silent"), "{}", run["missed"]);
}
