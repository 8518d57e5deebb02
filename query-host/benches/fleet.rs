//! The fleet's fan-out on this machine: 1,000 simulated agents in one process, each with its own
//! NATS connection to a real `nats-server`, registered in the fleet's key-value bucket and
//! answering `invoke` on the real subjects with a partial result; the real coordinator asks them.
//!
//! 1. A whole `fleet invoke` (registry read + scatter + gather) of all 1,000: p50/p99 (goal p99
//!    ≤ 250 ms), and the gather alone; baseline: the same query to one agent.
//! 2. With 1 % of them slow (answering after 2 s) and a 250 ms deadline: when the query
//!    returns, and how many it names missing (goal: at the deadline, the 10 slow ones).
//!
//! The agents answer with a fixed 4 KiB partial: this measures the bus and the gather, not an
//! analysis (the `udf` bench measures those) and not the merge (merged here by counting).
//!
//! `cargo bench -p loupe-query-host --bench fleet` (needs `nats-server`; `LOUPE_BENCH_AGENTS`,
//! default 1000).

use std::{
    process::{Child, Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use futures_util::StreamExt;
use loupe_api::fleet::FleetInvokeOrder;
use loupe_api::model::{AnalysisOutput, FleetPlace, InvokeResponse};
use loupe_api::signed::trust::TrustFile;
use loupe_fleet::{
    Connection, Coordinator, Selector,
    coordinator::Merged,
    gate::{Gate, Trust},
    modules::Shipped,
    signer::Signer,
    subjects::agent_subjects,
    wire::{self, InvokeBody, InvokeReply, Reply, WIRE_VERSION},
};

mod common;

const PORT: u16 = 4399;

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_nats(dir: &std::path::Path) -> Server {
    let child = Command::new("nats-server")
        .args(["-js", "-a", "127.0.0.1", "-p", &PORT.to_string(), "-sd"])
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nats-server (scripts/setup installs it)");
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", PORT)).is_ok() {
            return Server(child);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("nats-server did not start");
}

/// One simulated agent: its own connection, its registration, its gate (the real one, on the
/// bench's trust file); a `slow` one answers 2 s late once `slow_now` is set.
async fn agent(
    i: usize,
    url: String,
    partial: Arc<Vec<u8>>,
    slow: bool,
    slow_now: Arc<AtomicBool>,
    trust: Arc<TrustFile>,
) {
    let place = FleetPlace { host: format!("sim{i:04}"), rack: format!("r{}", i / 40), dc: "d1".into() };
    let gate = Gate::new(Trust::File(trust), place.clone());
    let conn = Connection::plain(url, place.host.clone());
    let client = loupe_fleet::connect(&conn, false).await.unwrap();
    let js = async_nats::jetstream::new(client.clone());
    common::register(&js, &place, None).await;
    let mut subs = Vec::new();
    for s in agent_subjects(&place.host, &place.rack, &place.dc, None) {
        subs.push(client.subscribe(s).await.unwrap());
    }
    client.flush().await.unwrap();
    let mut requests = futures_util::stream::select_all(subs);
    while let Some(msg) = requests.next().await {
        let Some(reply_to) = msg.reply.clone() else { continue };
        let Ok(Some(opened)) = gate.open::<InvokeBody>(&msg.payload, 1 << 20, &msg.subject) else { continue };
        let env = opened.envelope;
        let client = client.clone();
        let partial = Arc::clone(&partial);
        let place = place.clone();
        let late = slow && slow_now.load(Ordering::Relaxed);
        tokio::spawn(async move {
            if late {
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
            let reply = Reply {
                v: WIRE_VERSION,
                query: env.query,
                place,
                leaf: None,
                result: Ok(InvokeReply { partial: partial.to_vec(), elapsed_ns: 1 }),
            };
            let _ = client.publish(reply_to, wire::encode(&reply).into()).await;
        });
    }
}

fn counting_merge(partials: Vec<(FleetPlace, Vec<u8>)>) -> Result<Merged, loupe_fleet::FleetError> {
    Ok(Merged {
        response: InvokeResponse {
            output: AnalysisOutput::Text { text: partials.len().to_string() },
            log: vec![],
            log_dropped: 0,
            elapsed_ns: 0,
            peak_memory_bytes: 0,
            output_bytes: 0,
        },
        refused: vec![],
        merge_ns: 0,
    })
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

async fn query(
    coordinator: &Coordinator,
    signer: &Signer,
    selector: Selector,
    deadline: Duration,
) -> (Duration, usize, usize) {
    let order = FleetInvokeOrder {
        name: "bench".into(),
        hosts: selector,
        range: loupe_store::TimeRange::ALL,
        params: Default::default(),
        deadline,
    };
    let t = Instant::now();
    let shipped = Shipped::sign("bench", &"0".repeat(64), 0, "bench", signer);
    let view = coordinator.invoke(&order, &shipped, signer, counting_merge).await.unwrap();
    (t.elapsed(), view.answered.len(), view.missing.len())
}

fn bench_line(name: &str, value: f64, unit: &str, baseline: Option<f64>) {
    match baseline {
        Some(b) => println!(r#"BENCH {{"name": "{name}", "value": {value:.2}, "unit": "{unit}", "baseline": {b:.2}}}"#),
        None => println!(r#"BENCH {{"name": "{name}", "value": {value:.2}, "unit": "{unit}"}}"#),
    }
}

fn main() {
    let agents: usize = std::env::var("LOUPE_BENCH_AGENTS").ok().and_then(|s| s.parse().ok()).unwrap_or(1000);
    // A connection per agent: raise the descriptor limit (nats-server inherits it).
    let limit = libc::rlimit { rlim_cur: 65_536, rlim_max: 65_536 };
    // SAFETY: a valid rlimit; raising needs root, and failing only means fewer descriptors.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) };
    let dir = tempfile::tempdir().unwrap();
    let _server = start_nats(dir.path());
    let url = format!("nats://127.0.0.1:{PORT}");
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let partial = Arc::new(vec![7u8; 4096]);
    let slow = agents / 100;
    let slow_now = Arc::new(AtomicBool::new(false));
    let (signer, trust, _keys) = common::fleet_keys();
    rt.block_on(async {
        let started = Instant::now();
        for i in 0..agents {
            // Every hundredth agent turns slow for part 2.
            let trust = Arc::clone(&trust);
            tokio::spawn(agent(i, url.clone(), Arc::clone(&partial), i % 100 == 99, Arc::clone(&slow_now), trust));
        }
        let conn = Connection::plain(url.clone(), "bench");
        let coordinator = Coordinator::connect(&conn, "bench").await.unwrap();
        loop {
            let view = coordinator.hosts(&Selector::default(), &signer).await.unwrap();
            if view.up as usize == agents {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        println!("{agents} agents connected and registered in {:.1} s", started.elapsed().as_secs_f64());

        let one = Selector { host: Some("sim0000".into()), ..Default::default() };
        let mut single = Vec::new();
        for _ in 0..20 {
            single.push(query(&coordinator, &signer, one.clone(), Duration::from_secs(5)).await.0.as_secs_f64() * 1e3);
        }
        single.sort_by(f64::total_cmp);
        let mut whole = Vec::new();
        let mut answered = 0;
        for _ in 0..30 {
            let (t, a, _) = query(&coordinator, &signer, Selector::default(), Duration::from_secs(5)).await;
            whole.push(t.as_secs_f64() * 1e3);
            answered = a;
        }
        whole.sort_by(f64::total_cmp);
        println!(
            "fan-out to {answered} agents: p50 {:.1} ms, p99 {:.1} ms (one agent: p50 {:.2} ms)",
            quantile(&whole, 0.5),
            quantile(&whole, 0.99),
            quantile(&single, 0.5)
        );
        bench_line("fleet_fanout_p50", quantile(&whole, 0.5), "ms", Some(quantile(&single, 0.5)));
        bench_line("fleet_fanout_p99", quantile(&whole, 0.99), "ms", Some(quantile(&single, 0.99)));

        slow_now.store(true, Ordering::Relaxed);
        // The whole fleet with 1 % slow and a 250 ms deadline.
        let mut returned = Vec::new();
        let mut missing = 0;
        let mut got = 0;
        for _ in 0..10 {
            let (t, a, m) = query(&coordinator, &signer, Selector::default(), Duration::from_millis(250)).await;
            returned.push(t.as_secs_f64() * 1e3);
            missing = m;
            got = a;
        }
        returned.sort_by(f64::total_cmp);
        println!(
            "whole fleet, {slow} slow, 250 ms deadline: returned at p50 {:.1} ms, p99 {:.1} ms with {got} answered, {missing} named missing",
            quantile(&returned, 0.5),
            quantile(&returned, 0.99)
        );
        bench_line("fleet_deadline_return_p50", quantile(&returned, 0.5), "ms", Some(250.0));
        bench_line("fleet_deadline_missing", missing as f64, "hosts", Some(slow as f64));
    });
    rt.shutdown_timeout(Duration::from_secs(1));
}
