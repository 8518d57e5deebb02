//! The fleet past one NATS server, on this machine: a hub and 10 leaf `nats-server`s (each
//! JetStream in a domain of its own), 10,000 simulated agents in one process — 1,000 per leaf,
//! each with its own connection to its leaf, registered in its leaf's registry — answering
//! `invoke` with a real `fleet-hot-functions` partial (columnar, made by the analysis on a real
//! store, renamed per agent). Two agents of each leaf join the leaf's queue group and lead it
//! as the real agent does (`Coordinator::lead_leaf`: the leaf's registry, its hosts gathered,
//! their partials merged in the sandbox).
//!
//! 1. `fleet invoke --all` through the hub, as a tree: p50/p99 (goal p99 ≤ 500 ms), and the
//!    messages that crossed the hub's leaf connections per query (goal: one partial per leaf).
//! 2. Baseline, in the same run: a flat gather of the same 10,000 through the hub (one request
//!    to every agent, every partial back to the asker, merged there in the sandbox).
//! 3. What signing costs: one request signed and one opened by the real gate (µs), and the tree's
//!    p50/p99 with every agent checking each request through the real gate against a trust
//!    file, beside rounds of the same run in which the agents decode requests without checking
//!    them (goal: ≤ 5 % slower). Here the 10,000 agents share this machine's two cores, so
//!    every agent's check adds to every query's time; on a fleet each host checks on its own
//!    CPU, and what a query waits for is the checks on its path — signed once by the asker,
//!    opened by a leaf's coordinator, which passes the hosts' request on as signed, and opened
//!    by a host. That path's share of the unchecked p50 is printed as well
//!    (`fleet_tree_checked_path`).
//!
//! `cargo bench -p loupe-query-host --bench fleet_leaves` (needs `nats-server` and udf-sdk
//! built for wasm32-wasip2; `LOUPE_BENCH_LEAVES`, `LOUPE_BENCH_PER_LEAF`: 10 × 1,000).

use std::{
    collections::BTreeSet,
    process::{Child, Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

mod common;

use futures_util::StreamExt;
use loupe_api::model::{FleetPlace, InvokeResponse};
use loupe_api::signed::{Signed, trust::TrustFile};
use loupe_core::analyses::host_info;
use loupe_fleet::{
    Connection, Coordinator, FleetError, Selector,
    coordinator::Merged,
    gate::{Gate, Trust},
    gather::{Gathered, gather},
    leaves,
    live_registry::LiveRegistry,
    modules::Shipped,
    subjects::{Verb, agent_subjects, leaf_queue, leaf_subjects, route_of},
    wire::{self, Envelope, InvokeBody, InvokeReply, LeafInvokeBody, Reply, WIRE_VERSION},
};
use loupe_sandbox::{
    bindings::HostInfo,
    partial::{self, Decoded},
    runtime::{Allocation, Compiled, Runtime},
    sandbox::Limits,
};
use loupe_store::{Retention, Store, TimeRange};
use rand::{SeedableRng, rngs::StdRng};
use serde_json::{Map, Value, json};

const HUB_PORT: u16 = 4500;
const HUB_MONITOR: u16 = 8500;
const LEAF_LISTEN: u16 = 7500;
const SEEDS: usize = 8;
/// Agents of each leaf that join its queue group (any of them may lead it).
const LEADERS: usize = 2;

struct Servers(Vec<Child>);

impl Drop for Servers {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn server(dir: &std::path::Path, name: &str, conf: String, port: u16) -> Child {
    let path = dir.join(format!("{name}.conf"));
    std::fs::write(&path, conf).unwrap();
    let child = Command::new("nats-server")
        .arg("-c")
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nats-server (scripts/setup installs it)");
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return child;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("nats-server {name} did not start");
}

fn start(dir: &std::path::Path, leaves: usize) -> Servers {
    let store = |name: &str| dir.join(name).display().to_string();
    let mut all = vec![server(
        dir,
        "hub",
        format!(
            "listen: 127.0.0.1:{HUB_PORT}\nhttp: 127.0.0.1:{HUB_MONITOR}\nserver_name: hub\n\
             jetstream {{ store_dir: {:?}, domain: hub }}\nleafnodes {{ listen: 127.0.0.1:{LEAF_LISTEN} }}\n",
            store("hub")
        ),
        HUB_PORT,
    )];
    for k in 0..leaves {
        let port = HUB_PORT + 1 + k as u16;
        all.push(server(
            dir,
            &format!("l{k}"),
            format!(
                "listen: 127.0.0.1:{port}\nserver_name: l{k}\nmax_connections: 65536\n\
                 jetstream {{ store_dir: {:?}, domain: l{k} }}\n\
                 leafnodes {{ remotes: [ {{ url: \"nats://127.0.0.1:{LEAF_LISTEN}\" }} ] }}\n",
                store(&format!("l{k}"))
            ),
            port,
        ));
    }
    Servers(all)
}

/// Messages that crossed the hub's leaf connections so far (in from the leaves, out to them).
fn hub_leaf_messages() -> (u64, u64) {
    use std::io::{Read, Write};
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", HUB_MONITOR)).unwrap();
    write!(conn, "GET /leafz HTTP/1.0\r\n\r\n").unwrap();
    let mut text = String::new();
    conn.read_to_string(&mut text).unwrap();
    let body = text.split_once("\r\n\r\n").unwrap().1;
    let v: Value = serde_json::from_str(body).unwrap();
    v["leafs"]
        .as_array()
        .unwrap()
        .iter()
        .fold((0, 0), |(i, o), l| (i + l["in_msgs"].as_u64().unwrap(), o + l["out_msgs"].as_u64().unwrap()))
}

/// The sandbox that merges, as an agent's and the asker's: the compiled analysis and the facts
/// it is told.
struct Merger {
    runtime: Runtime,
    compiled: Compiled,
    store: Store,
    info: HostInfo,
    params: Map<String, Value>,
    _dir: tempfile::TempDir,
}

impl Merger {
    fn decode(partials: &[Vec<u8>]) -> Vec<Decoded> {
        partials.iter().map(|p| partial::decode(p).unwrap()).collect()
    }

    fn to_partial(&self, partials: Vec<Vec<u8>>) -> Result<(Vec<u8>, Vec<(usize, String)>), FleetError> {
        let (bytes, _log) = self
            .runtime
            .merge_to_partial(
                &self.compiled,
                "fleet",
                &self.store,
                &self.info,
                TimeRange::ALL,
                &self.params,
                Self::decode(&partials),
            )
            .unwrap();
        Ok((bytes, Vec::new()))
    }

    fn merged(&self, partials: Vec<(FleetPlace, Vec<u8>)>) -> Result<Merged, FleetError> {
        let started = Instant::now();
        let bytes: Vec<Vec<u8>> = partials.into_iter().map(|(_, b)| b).collect();
        let report = self
            .runtime
            .merge(&self.compiled, "asker", &self.store, &self.info, TimeRange::ALL, &self.params, Self::decode(&bytes))
            .unwrap();
        Ok(Merged {
            response: InvokeResponse {
                output: report.output,
                log: vec![],
                log_dropped: 0,
                elapsed_ns: report.elapsed_ns,
                peak_memory_bytes: report.peak_memory_bytes as u64,
                output_bytes: report.output_bytes as u64,
            },
            refused: vec![],
            merge_ns: started.elapsed().as_nanos() as u64,
        })
    }
}

/// Real `fleet-hot-functions` partials of SEEDS hosts, as the analysis makes them.
fn seeds(merger: &Merger) -> Vec<Decoded> {
    let mut rng = StdRng::seed_from_u64(5);
    let pool = common::leaf_pool();
    (0..SEEDS)
        .map(|h| {
            let (_dir, s) = common::store();
            s.put_samples(&common::samples(&mut rng, &pool), 0, common::T0).unwrap();
            let mut info = host_info(&s).unwrap();
            info.hostname = format!("seed{h}");
            let (bytes, _) = merger
                .runtime
                .invoke_partial(&merger.compiled, "b", &s, &info, TimeRange::ALL, &merger.params)
                .unwrap();
            partial::decode(&bytes).unwrap()
        })
        .collect()
}

/// A seed's partial as host `to`'s, encoded.
fn renamed(seed: &Decoded, from: &str, to: &str) -> Vec<u8> {
    let Decoded::Columns(c) = common::rename(seed, from, to) else { unreachable!("rename keeps columns") };
    partial::encode_columns(&c).unwrap()
}

/// Whether the simulated agents check requests through the gate (else they only decode them).
static CHECKED: AtomicBool = AtomicBool::new(true);

/// A request's envelope: through `gate` while [`CHECKED`], else decoded without a check.
fn open<B: wire::Body>(gate: &Gate, msg: &async_nats::Message) -> Option<Envelope<B>> {
    if CHECKED.load(Ordering::Relaxed) {
        return gate.open(&msg.payload, 1 << 20, &msg.subject).ok().flatten().map(|o| o.envelope);
    }
    let signed: Signed = wire::decode(&msg.payload, 1 << 20).ok()?;
    wire::decode(&signed.payload, 1 << 20).ok()
}

/// One simulated agent on leaf `leaf`: registered there, answering `invoke` with `partial`; a
/// leader also answers for the leaf (its registry, and the tree's leaf level). Requests pass
/// the real gate, on the bench's trust file.
async fn agent(
    place: FleetPlace,
    url: String,
    leaf: String,
    partial: Vec<u8>,
    leader: bool,
    merger: Arc<Merger>,
    trust: Arc<TrustFile>,
) {
    let gate = Arc::new(Gate::new(Trust::File(trust), place.clone()));
    let conn = Connection::plain(url, place.host.clone());
    let client = loupe_fleet::connect(&conn, false).await.unwrap();
    let js = async_nats::jetstream::new(client.clone());
    common::register(&js, &place, Some(leaf.clone())).await;
    let mut subs = Vec::new();
    for s in agent_subjects(&place.host, &place.rack, &place.dc, Some(&leaf)) {
        subs.push(client.subscribe(s).await.unwrap());
    }
    if leader {
        for s in leaf_subjects(&leaf) {
            subs.push(client.queue_subscribe(s, leaf_queue(&leaf)).await.unwrap());
        }
    }
    client.flush().await.unwrap();
    let partial = Arc::new(partial);
    // As the agent does: its leaf's registry watched once it leads the leaf.
    let live = LiveRegistry::new();
    let mut requests = futures_util::stream::select_all(subs);
    while let Some(msg) = requests.next().await {
        let Some(reply_to) = msg.reply.clone() else { continue };
        let (client, js, place, leaf, partial, merger, live, gate) = (
            client.clone(),
            js.clone(),
            place.clone(),
            leaf.clone(),
            Arc::clone(&partial),
            Arc::clone(&merger),
            live.clone(),
            Arc::clone(&gate),
        );
        tokio::spawn(async move {
            let bytes = match route_of(&msg.subject) {
                Some((Verb::Invoke, false)) => {
                    let Some(env) = open::<InvokeBody>(&gate, &msg) else { return };
                    let result = Ok(InvokeReply { partial: partial.to_vec(), elapsed_ns: 1 });
                    wire::encode(&Reply { v: WIRE_VERSION, query: env.query, place, leaf: Some(leaf), result })
                }
                Some((Verb::Invoke, true)) => {
                    let Some(env) = open::<LeafInvokeBody>(&gate, &msg) else { return };
                    let coordinator = Coordinator::with_client(client.clone(), &place.host)
                        .with_domain(Some(leaf.clone()))
                        .with_leaf_registry(live);
                    let m = Arc::clone(&merger);
                    let result =
                        coordinator.lead_leaf(&env, move |partials| m.to_partial(partials)).await.map_err(|e| {
                            wire::WireError::new(loupe_api::model::ErrorKind::Internal, "leaf", e.to_string())
                        });
                    wire::encode(&Reply { v: WIRE_VERSION, query: env.query, place, leaf: Some(leaf), result })
                }
                Some((Verb::Hosts, true)) => {
                    let Some(env) = open::<()>(&gate, &msg) else { return };
                    let result = leaves::list_leaf(&js, &live).await.map_err(|e| {
                        wire::WireError::new(loupe_api::model::ErrorKind::Internal, "leaf", e.to_string())
                    });
                    wire::encode(&Reply { v: WIRE_VERSION, query: env.query, place, leaf: Some(leaf), result })
                }
                _ => return,
            };
            let _ = client.publish(reply_to, bytes.into()).await;
        });
    }
}

/// Signing one leaf-level invocation as the asker does, and opening it as a leaf's coordinator
/// does (signature, claims, nonce): µs each, beside decoding the same bytes unchecked.
/// Returns both, µs.
fn sign_and_open(signer: &loupe_fleet::signer::Signer, trust: &Arc<TrustFile>) -> (f64, f64) {
    const N: u32 = 5_000;
    let place = FleetPlace { host: "h".into(), rack: "r".into(), dc: "d".into() };
    let gate = Gate::new(Trust::File(Arc::clone(trust)), place);
    let params = json!({"top": 200, "per_host_functions": false}).as_object().unwrap().clone();
    let body = || InvokeBody {
        name: "fleet-hot-functions".into(),
        sha256: "0".repeat(64),
        from_unix_ns: 0,
        to_unix_ns: u64::MAX,
        params: params.clone(),
        origin_domain: None,
        module: Vec::new(),
    };
    let deadline = loupe_api::clock::now_unix_ns() + 60_000_000_000;
    let subject = "loupe.v1.invoke.all";
    let t = Instant::now();
    let sealed: Vec<_> =
        (0..N).map(|i| signer.seal(&format!("q{i}"), &Selector::default(), deadline, body())).collect();
    let sign_us = t.elapsed().as_secs_f64() * 1e6 / N as f64;
    let t = Instant::now();
    for s in &sealed {
        gate.open::<InvokeBody>(&s.bytes, 1 << 20, subject).unwrap().unwrap();
    }
    let open_us = t.elapsed().as_secs_f64() * 1e6 / N as f64;
    let t = Instant::now();
    for s in &sealed {
        let signed: Signed = wire::decode(&s.bytes, 1 << 20).unwrap();
        let _: Envelope<InvokeBody> = wire::decode(&signed.payload, 1 << 20).unwrap();
    }
    let decode_us = t.elapsed().as_secs_f64() * 1e6 / N as f64;
    println!(
        "one request ({} bytes): signed in {sign_us:.1} µs, opened by the gate in {open_us:.1} µs \
         (decoding it alone: {decode_us:.1} µs)",
        sealed[0].bytes.len()
    );
    bench_line("fleet_sign_request", sign_us, "us", decode_us);
    bench_line("fleet_open_request", open_us, "us", decode_us);
    (sign_us, open_us)
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn bench_line(name: &str, value: f64, unit: &str, baseline: f64) {
    println!(r#"BENCH {{"name": "{name}", "value": {value:.2}, "unit": "{unit}", "baseline": {baseline:.2}}}"#);
}

fn main() {
    let env = |k: &str, d: usize| std::env::var(k).ok().and_then(|s| s.parse().ok()).unwrap_or(d);
    let (leaf_count, per_leaf) = (env("LOUPE_BENCH_LEAVES", 10), env("LOUPE_BENCH_PER_LEAF", 1000));
    let agents = leaf_count * per_leaf;
    // A connection per agent: raise the descriptor limit (the servers inherit it).
    let limit = libc::rlimit { rlim_cur: 65_536, rlim_max: 65_536 };
    // SAFETY: a valid rlimit; raising needs root, and failing only means fewer descriptors.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) };
    let dir = tempfile::tempdir().unwrap();
    let _servers = start(dir.path(), leaf_count);

    // One sandbox stands for every leaf's coordinator (each its own machine in a real fleet):
    // room for all of them at once.
    let limits =
        Limits { per_team_invocations: 2 * leaf_count, total_invocations: 4 * leaf_count, ..Limits::default() };
    let runtime = Runtime::new(limits, Allocation::Pooling).unwrap();
    let store_dir = tempfile::tempdir().unwrap();
    let store = Store::open(store_dir.path(), Retention::default()).unwrap();
    let info = host_info(&store).unwrap();
    let wasm = std::fs::read(loupe_testbed::wasm_component("fleet_hot_functions")).unwrap();
    let compiled = runtime.compile(&wasm, &store, &info).unwrap().0;
    // A datacenter-wide question: functions over all hosts, libraries and totals per host.
    let params = json!({"top": 200, "per_host_functions": false}).as_object().unwrap().clone();
    let merger = Arc::new(Merger { runtime, compiled, store, info, params: params.clone(), _dir: store_dir });
    let seeds = seeds(&merger);

    let (signer, trust, _keys) = common::fleet_keys();
    let (sign_us, open_us) = sign_and_open(&signer, &trust);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let started = Instant::now();
        for i in 0..agents {
            let k = i / per_leaf;
            let place = FleetPlace { host: format!("sim{i:05}"), rack: format!("r{}", i / 40), dc: "d1".into() };
            let partial = renamed(&seeds[i % SEEDS], &format!("seed{}", i % SEEDS), &place.host);
            let url = format!("nats://127.0.0.1:{}", HUB_PORT + 1 + k as u16);
            let leader = i % per_leaf < LEADERS;
            let trust = Arc::clone(&trust);
            tokio::spawn(agent(place, url, format!("l{k}"), partial, leader, Arc::clone(&merger), trust));
            if i % 500 == 499 {
                // Let connections settle rather than storm the servers.
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        let hub = Connection::plain(format!("nats://127.0.0.1:{HUB_PORT}"), "bench");
        let coordinator = Coordinator::connect(&hub, "bench").await.unwrap();
        loop {
            let view = coordinator.hosts(&Selector::default(), &signer).await.unwrap();
            if view.up as usize == agents {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(600), "only {} of {agents} agents up", view.up);
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        println!(
            "{agents} agents on {leaf_count} leaves connected and registered in {:.1} s",
            started.elapsed().as_secs_f64()
        );

        let sha = "0".repeat(64);
        let shipped = Shipped::sign("fleet-hot-functions", &sha, 0, "bench", &signer);
        let order = loupe_api::fleet::FleetInvokeOrder {
            name: "fleet-hot-functions".into(),
            hosts: Selector::default(),
            range: loupe_store::TimeRange::ALL,
            params: params.clone(),
            deadline: Duration::from_secs(10),
        };
        let mut tree = Vec::new();
        // The same queries, the agents decoding them without a check (every other round).
        let mut unchecked = Vec::new();
        let mut crossed = Vec::new();
        // The slowest leaf's answer and its own merge, per query.
        let mut slowest_leaf = Vec::new();
        let mut leaf_merge = Vec::new();
        let mut top_merge = Vec::new();
        let mut answered = 0;
        for round in 0..42 {
            let checked = round % 2 == 0;
            CHECKED.store(checked, Ordering::Relaxed);
            let before = hub_leaf_messages();
            let t = Instant::now();
            let m = Arc::clone(&merger);
            let view = coordinator.invoke(&order, &shipped, &signer, move |p| m.merged(p)).await.unwrap();
            let took = t.elapsed().as_secs_f64() * 1e3;
            let after = hub_leaf_messages();
            assert_eq!(view.leaves.len(), leaf_count, "every leaf answered: {:?}", view.missing.len());
            answered = view.answered.len();
            if !checked {
                if round >= 2 {
                    unchecked.push(took);
                }
                continue;
            }
            // The first two warm the directory and the compiled module's caches.
            if round >= 2 {
                tree.push(took);
                crossed.push((after.0 - before.0) as f64);
                let ms = |ns: u64| ns as f64 / 1e6;
                slowest_leaf.push(view.leaves.iter().map(|l| ms(l.elapsed_ns)).fold(0.0, f64::max));
                leaf_merge.push(view.leaves.iter().map(|l| ms(l.merge_ns)).fold(0.0, f64::max));
                top_merge.push(ms(view.merge_ns));
            }
        }
        CHECKED.store(true, Ordering::Relaxed);
        for v in [&mut tree, &mut unchecked, &mut crossed, &mut slowest_leaf, &mut leaf_merge, &mut top_merge] {
            v.sort_by(f64::total_cmp);
        }
        assert_eq!(answered, agents);
        println!(
            "per tree query (p50): the slowest leaf answered after {:.0} ms, the slowest leaf merge {:.0} ms, \
             the top merge {:.1} ms",
            quantile(&slowest_leaf, 0.5),
            quantile(&leaf_merge, 0.5),
            quantile(&top_merge, 0.5)
        );

        // Baseline: a flat gather of the same agents through the hub, merged by the asker.
        let expected: BTreeSet<String> = (0..agents).map(|i| format!("sim{i:05}")).collect();
        let hub_client = loupe_fleet::connect(&hub, false).await.unwrap();
        let mut flat = Vec::new();
        let mut flat_crossed = Vec::new();
        for _ in 0..5 {
            let before = hub_leaf_messages();
            let t = Instant::now();
            let body = InvokeBody {
                name: "fleet-hot-functions".into(),
                sha256: sha.clone(),
                from_unix_ns: 0,
                to_unix_ns: u64::MAX,
                params: params.clone(),
                origin_domain: None,
                module: shipped.signed.clone(),
            };
            let deadline = loupe_api::clock::now_unix_ns() + 30_000_000_000;
            let request = signer.seal(&hub_client.new_inbox(), &Selector::default(), deadline, body);
            let gathered: Gathered<InvokeReply> = gather(
                &hub_client,
                "loupe.v1.invoke.all".into(),
                &request,
                expected.clone(),
                Instant::now() + Duration::from_secs(30),
            )
            .await
            .unwrap();
            let partials: Vec<(FleetPlace, Vec<u8>)> =
                gathered.answers.into_iter().map(|a| (a.place, a.result.unwrap().partial)).collect();
            assert_eq!(partials.len(), agents, "the flat gather heard every agent");
            let m = Arc::clone(&merger);
            tokio::task::spawn_blocking(move || m.merged(partials)).await.unwrap().unwrap();
            flat.push(t.elapsed().as_secs_f64() * 1e3);
            flat_crossed.push((hub_leaf_messages().0 - before.0) as f64);
        }
        flat.sort_by(f64::total_cmp);
        println!(
            "--all of fleet-hot-functions to {agents} agents behind {leaf_count} leaves, as a tree: p50 {:.0} ms, \
             p99 {:.0} ms, {:.0} messages from the leaves through the hub per query; \
             flat gather through the hub: p50 {:.0} ms, p99 {:.0} ms, {:.0} messages",
            quantile(&tree, 0.5),
            quantile(&tree, 0.99),
            quantile(&crossed, 0.5),
            quantile(&flat, 0.5),
            quantile(&flat, 0.99),
            flat_crossed[0]
        );
        bench_line("fleet_tree_10k_p50", quantile(&tree, 0.5), "ms", quantile(&flat, 0.5));
        bench_line("fleet_tree_10k_p99", quantile(&tree, 0.99), "ms", quantile(&flat, 0.99));
        bench_line("fleet_tree_10k_hub_messages", quantile(&crossed, 0.5), "messages", flat_crossed[0]);
        println!(
            "signed, every request checked by every agent's gate: p50 {:.0} ms, p99 {:.0} ms; the same run's \
             rounds decoding without a check: p50 {:.0} ms, p99 {:.0} ms ({:+.1} % and {:+.1} %)",
            quantile(&tree, 0.5),
            quantile(&tree, 0.99),
            quantile(&unchecked, 0.5),
            quantile(&unchecked, 0.99),
            100.0 * (quantile(&tree, 0.5) / quantile(&unchecked, 0.5) - 1.0),
            100.0 * (quantile(&tree, 0.99) / quantile(&unchecked, 0.99) - 1.0),
        );
        bench_line("fleet_tree_10k_checked_p50", quantile(&tree, 0.5), "ms", quantile(&unchecked, 0.5));
        bench_line("fleet_tree_10k_checked_p99", quantile(&tree, 0.99), "ms", quantile(&unchecked, 0.99));
        // On a fleet, the checks a query waits for: two signatures made by the asker (the
        // leaves' request and, inside it, the hosts'), a leaf coordinator's open, a host's.
        let path_ms = (2.0 * sign_us + 2.0 * open_us) / 1e3;
        let share = 100.0 * path_ms / quantile(&unchecked, 0.5);
        println!(
            "on a fleet, each host checking on its own CPU: the checks on a query's path take {path_ms:.2} ms, \
             {share:.3} % of the unchecked p50"
        );
        bench_line("fleet_tree_checked_path", share, "%", 5.0);
    });
    rt.shutdown_timeout(Duration::from_secs(1));
}
