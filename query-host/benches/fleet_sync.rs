//! Synchronized starts on an 8-host rack (`loupe_testbed::rack`: namespaces behind a bridge,
//! real agents, a real nats-server), through the real coordinator:
//!
//! 1. wake-up skew: per `fleet run`, how far apart the agents took the order (the spread of
//!    their `configured_before_start_ns`), p50/p99 over the runs — the scheduling noise that
//!    counting slots in the kernel from the common instant makes harmless; baseline: the lead
//!    they all had (2 s);
//! 2. slot misalignment: in every run host 1 sends host 2 one packet a quarter into each of 20
//!    chosen slots; the slots in which sender and receiver counted differently (goal 0).
//!
//! `cargo bench -p loupe-query-host --bench fleet_sync` (root, nats-server; `LOUPE_BENCH_RUNS`,
//! default 20).

use std::{
    net::{SocketAddr, UdpSocket},
    process::Child,
    sync::Arc,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use loupe_api::fleet::FleetRunOrder;
use loupe_api::signed::FleetKey;
use loupe_fleet::{Connection, Coordinator, Selector, signer::Signer};
use loupe_testbed::rack::{NATS_ADDR, NATS_PORT, Rack};

const HOSTS: usize = 8;
const LOUPE: &str = env!("CARGO_BIN_EXE_loupe");

fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64
}

fn spin_until(t: u64) {
    let now = now_ns();
    if t > now + 2_000_000 {
        std::thread::sleep(Duration::from_nanos(t - now - 2_000_000));
    }
    while now_ns() < t {
        std::hint::spin_loop();
    }
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn main() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || std::process::Command::new("nats-server").arg("--version").output().is_err() {
        println!("SKIP fleet_sync: needs root and nats-server");
        return;
    }
    let runs: usize = std::env::var("LOUPE_BENCH_RUNS").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    let dir = tempfile::tempdir().unwrap();
    let mut rack = Rack::new("sync", HOSTS, &dir.path().join("nats")).unwrap();
    rack.start_nats().unwrap();
    let _uplink = rack.uplink().unwrap();
    let loupe = std::path::Path::new(LOUPE);
    let mut agents: Vec<Child> = (0..HOSTS)
        .map(|i| {
            let log = std::fs::File::create(dir.path().join(format!("agent-{i}.log"))).unwrap();
            rack.agent(i, loupe, &dir.path().join(format!("h{i}")), "r1", "d1")
                .args(["--no-stacks", "--no-timeline", "--no-http", "--intervals", "10ms", "--period", "600s"])
                .stderr(log)
                .spawn()
                .unwrap()
        })
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let url = format!("nats://{NATS_ADDR}:{NATS_PORT}");
    let fleet = rt.block_on(Coordinator::connect(&Connection::plain(url, "bench"), "bench")).unwrap();
    let signer = Signer::new(Arc::new(FleetKey::read(&rack.keys().operator).unwrap()));
    let rack_sel = Selector { rack: Some("r1".into()), ..Default::default() };
    while rt.block_on(fleet.hosts(&rack_sel, &signer)).map(|v| v.up as usize).unwrap_or(0) < HOSTS {
        std::thread::sleep(Duration::from_millis(200));
    }
    let tx = rack.hosts[1].ns.run(|| UdpSocket::bind(SocketAddr::from((rack.hosts[1].v4, 5000)))).unwrap().unwrap();
    let rx = rack.hosts[2].ns.run(|| UdpSocket::bind(SocketAddr::from((rack.hosts[2].v4, 6000)))).unwrap().unwrap();
    rx.set_nonblocking(true).unwrap();
    let dst = SocketAddr::from((rack.hosts[2].v4, 6000));
    let mut skews = Vec::new();
    let mut misaligned = 0usize;
    let mut probes = 0usize;
    for _ in 0..runs {
        let start = now_ns() + 2_000_000_000;
        let order = FleetRunOrder {
            hosts: rack_sel.clone(),
            iface: None,
            interval: Duration::from_millis(1),
            samples: 300,
            at_unix_ns: Some(start),
        };
        let view = std::thread::scope(|s| {
            let sender = s.spawn(|| {
                for k in 100..120u64 {
                    spin_until(start + k * 1_000_000 + 250_000);
                    tx.send_to(&[0u8; 200], dst).unwrap();
                }
            });
            let view = rt.block_on(fleet.run(&order, &signer)).unwrap();
            sender.join().unwrap();
            view
        });
        let mut buf = [0u8; 512];
        while rx.recv_from(&mut buf).is_ok() {}
        assert_eq!(view.hosts.len(), HOSTS, "missed: {:?}", view.missed);
        let set: Vec<i64> = view.hosts.iter().map(|h| h.configured_before_start_ns).collect();
        let spread = set.iter().max().unwrap() - set.iter().min().unwrap();
        skews.push(spread as f64 / 1e6);
        let h1 = view.hosts.iter().find(|h| h.place.host == "h1").unwrap();
        let h2 = view.hosts.iter().find(|h| h.place.host == "h2").unwrap();
        misaligned += h1.out_bytes.iter().zip(&h2.in_bytes).filter(|(a, b)| a != b).count();
        probes += h1.out_bytes.iter().filter(|&&b| b > 0).count();
    }
    skews.sort_by(f64::total_cmp);
    println!(
        "{runs} synchronized runs on {HOSTS} hosts: the agents took the order within p50 {:.2} ms, p99 {:.2} ms of each \
         other (2 s ahead of the start); {misaligned} misaligned slots among the {probes} slots probed",
        quantile(&skews, 0.5),
        quantile(&skews, 0.99)
    );
    println!(
        r#"BENCH {{"name": "fleet_sync_wakeup_skew_p50", "value": {:.3}, "unit": "ms", "baseline": 2000}}"#,
        quantile(&skews, 0.5)
    );
    println!(
        r#"BENCH {{"name": "fleet_sync_wakeup_skew_p99", "value": {:.3}, "unit": "ms", "baseline": 2000}}"#,
        quantile(&skews, 0.99)
    );
    println!(
        r#"BENCH {{"name": "fleet_sync_misaligned_slots", "value": {misaligned}, "unit": "slots", "baseline": 0}}"#
    );
    for a in &agents {
        // SAFETY: kill(2) on our own children.
        unsafe { libc::kill(a.id() as i32, libc::SIGTERM) };
    }
    for a in &mut agents {
        let _ = a.wait();
    }
    rt.shutdown_timeout(Duration::from_secs(1));
}
