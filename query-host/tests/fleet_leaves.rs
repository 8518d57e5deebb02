//! The fleet past one NATS server: a hub and three leaf servers (`loupe_testbed::rack` with
//! leaves), each leaf with JetStream in a domain of its own and two or three real `loupe agent`s
//! in network namespaces connected to it — the usual NATS layout for a rack or pod per leaf.
//! Through the real `loupe fleet` command line, with no flag beyond `--nats` (and the rack's
//! operator key, `--fleet-key`: every request is signed):
//!
//! - `fleet hosts` through the hub lists every leaf's hosts, each with its leaf;
//! - a rack-scoped request asked inside its leaf, and the agents' heartbeats, cross no leaf
//!   connection (the hub's `/leafz` message counters do not move);
//! - `fleet invoke --all` of `fleet-hot-functions` through the hub runs as a tree (one partial
//!   per leaf, each sealed by its leaf's coordinator and checked against the trust file) and
//!   equals every host's own profile;
//! - a leaf's coordinator killed: another agent of the leaf answers for it;
//! - a leaf server killed during the tree merge: its hosts are named missing, the rest merged,
//!   the answer on time;
//! - a rogue client on the bus (a plain NATS client, not Loupe's fleet code) is refused by every
//!   host, and so is each kind of bad signed request (an untrusted key, expired, replayed,
//!   relayed to another rack): every refusal is in the host's audit trail, nothing runs;
//! - every verb a host answers × a key holding each scope alone: a host acts only for the
//!   scope the verb needs (or `admin`), and refuses the others by the scope's name.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Output},
    sync::{Arc, Mutex, MutexGuard},
    thread,
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use futures_util::StreamExt;
use loupe_api::signed::FleetKey;
use loupe_fleet::{
    modules::Shipped,
    signer::{Sealed, Signer},
    subjects::Selector,
    wire::{InvokeBody, ReadBody, RunBody},
};
use loupe_store::TimeRange;
use loupe_testbed::{
    rack::{HUB_MONITOR_PORT, Rack},
    require_root,
};
use serde_json::{Value, json};

mod common;

const LOUPE: &str = env!("CARGO_BIN_EXE_loupe");
/// Leaf (and rack) of each host: r1 holds h0–h2, r2 h3–h5, r3 h6–h7.
const LEAVES: [&str; 3] = ["r1", "r2", "r3"];
const LEAF_OF: [usize; 8] = [0, 0, 0, 1, 1, 1, 2, 2];

/// One rack at a time: each makes the same NATS servers' ports and an uplink (a [`Tree`]
/// holds it).
static RACKS: Mutex<()> = Mutex::new(());

fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64
}

fn module(crate_name: &str) -> String {
    loupe_testbed::wasm_component(crate_name).display().to_string()
}

struct Tree {
    rack: Rack,
    agents: Vec<Option<Child>>,
    dir: tempfile::TempDir,
    /// Held until the rack is gone (dropped after the fields above).
    _one_rack_at_a_time: MutexGuard<'static, ()>,
}

impl Tree {
    /// The hub, the leaves and an agent per host, in namespaces named after `tag`.
    fn start(tag: &str) -> Tree {
        let one_rack = RACKS.lock().unwrap_or_else(|p| p.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let mut rack = Rack::new(tag, LEAF_OF.len(), &dir.path().join("nats")).unwrap();
        rack.use_leaves(&LEAVES, LEAF_OF.to_vec()).unwrap();
        rack.start_nats().unwrap();
        let mut tree = Tree { rack, agents: Vec::new(), dir, _one_rack_at_a_time: one_rack };
        for i in 0..LEAF_OF.len() {
            let child = tree.agent(i);
            tree.agents.push(Some(child));
        }
        tree
    }

    fn data_dir(&self, i: usize) -> PathBuf {
        self.dir.path().join(format!("h{i}"))
    }

    /// Host `i`'s agent, on its leaf's server, in the rack named after its leaf.
    fn agent(&self, i: usize) -> Child {
        let log = std::fs::File::create(self.dir.path().join(format!("agent-h{i}.log"))).unwrap();
        let rack = LEAVES[LEAF_OF[i]];
        self.rack
            .agent(i, Path::new(LOUPE), &self.data_dir(i), rack, "d1")
            .args(["--no-timeline", "--no-http", "--intervals", "10ms", "--period", "600s"])
            .env("RUST_LOG", "info")
            .stderr(log)
            .spawn()
            .unwrap()
    }

    /// `loupe fleet ARGS --json` against the server at `url` (the hub, or a leaf).
    fn fleet_at(&self, url: &str, args: &[&str]) -> Output {
        Command::new("ip")
            .args(["netns", "exec", &self.rack.tor.name, LOUPE, "fleet"])
            .args(args)
            .args(["--nats", url, "--json"])
            .args(self.rack.fleet_key_args())
            // Leaves' partials merged only if sealed by a host key of the rack's trust file.
            .arg("--fleet-trust")
            .arg(&self.rack.keys().trust)
            .env("RUST_LOG", "warn")
            .output()
            .unwrap()
    }

    fn json_at(&self, url: &str, args: &[&str]) -> Value {
        let out = self.fleet_at(url, args);
        assert!(
            out.status.success(),
            "loupe fleet {args:?} at {url}: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.logs()
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn hub(&self, args: &[&str]) -> Value {
        self.json_at(&self.rack.nats_url(), args)
    }

    /// Waits until `fleet hosts` through the hub lists `n` hosts up (at most 40 s).
    fn wait_up(&self, n: usize) -> Value {
        let deadline = Instant::now() + Duration::from_secs(40);
        loop {
            let out = self.fleet_at(&self.rack.nats_url(), &["hosts"]);
            if out.status.success() {
                let v: Value = serde_json::from_slice(&out.stdout).unwrap();
                // Registered first, told their leaf by their server a moment later.
                let told = v["hosts"].as_array().unwrap().iter().all(|h| h["leaf"].is_string());
                if v["up"] == n as u64 && told {
                    return v;
                }
            }
            assert!(
                Instant::now() < deadline,
                "{n} hosts never came up through the hub: {}{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
                self.logs()
            );
            thread::sleep(Duration::from_millis(500));
        }
    }

    /// Messages that crossed the hub's leaf connections so far (in and out, every leaf).
    fn hub_leaf_messages(&self) -> u64 {
        let text = self.rack.monitor(HUB_MONITOR_PORT, "/leafz").unwrap();
        let leafz: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("/leafz: {e}: {text}"));
        leafz["leafs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["in_msgs"].as_u64().unwrap() + l["out_msgs"].as_u64().unwrap())
            .sum()
    }

    /// Host `i`'s own `loupe profile --json` of `[from, to)`.
    fn own_profile(&self, i: usize, from: &str, to: &str) -> Value {
        common::fleet::own_profile(LOUPE, &self.rack.hosts[i].ns.name, &self.data_dir(i), from, to, &[])
    }

    fn logs(&self) -> String {
        common::fleet::agent_logs(self.dir.path(), LEAF_OF.len())
    }

    fn kill_agent(&mut self, i: usize) {
        common::fleet::kill(&mut self.agents[i]);
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        common::fleet::stop(&mut self.agents);
    }
}

fn hosts_of(list: &Value, key: &str) -> Vec<String> {
    let mut hosts: Vec<String> =
        list[key].as_array().unwrap().iter().map(|h| h["host"].as_str().unwrap().into()).collect();
    hosts.sort();
    hosts
}

#[test]
fn a_hub_and_three_leaves_list_merge_as_a_tree_and_survive_losing_a_coordinator_and_a_leaf() {
    require_root!();
    if !common::fleet::nats_available("fleet_leaves") {
        return;
    }
    let mut tree = Tree::start("leaf");
    let sampled_from = now_ns();
    let listed = tree.wait_up(LEAF_OF.len());
    // Every host through the hub, each with its leaf.
    for h in listed["hosts"].as_array().unwrap() {
        let i: usize = h["host"].as_str().unwrap()[1..].parse().unwrap();
        assert_eq!(h["leaf"], LEAVES[LEAF_OF[i]], "{h}");
        assert_eq!(h["rack"], LEAVES[LEAF_OF[i]], "{h}");
    }

    // Inside a leaf nothing crosses to the hub: not the heartbeats (6 s: more than a beat of
    // every agent), not a rack's listing or invocation asked on the rack's own leaf.
    let r1 = tree.rack.leaf_url(0);
    let before = tree.hub_leaf_messages();
    thread::sleep(Duration::from_secs(6));
    let rack_hosts = tree.json_at(&r1, &["hosts", "--rack", "r1"]);
    assert_eq!(hosts_of(&rack_hosts, "hosts"), ["h0", "h1", "h2"]);
    let rack_count = tree.json_at(
        &r1,
        &[
            "invoke",
            "hostile-huge-partial",
            "--wasm",
            &module("hostile_huge_partial"),
            "--rack",
            "r1",
            "--deadline",
            "20s",
        ],
    );
    assert_eq!(hosts_of(&rack_count, "answered"), ["h0", "h1", "h2"], "{rack_count}");
    assert_eq!(rack_count["text"], "3");
    assert!(rack_count["leaves"].as_array().unwrap().is_empty(), "a rack is not a tree: {rack_count}");
    let crossed = tree.hub_leaf_messages() - before;
    assert_eq!(crossed, 0, "messages crossed the hub's leaf connections for in-leaf traffic");

    // The whole fleet through the hub: a tree of three leaves, equal to every host's own profile.
    // Asked right after the range ends, before any host's batch of it is due: each host stores
    // what it sampled up to the end before it answers (a host that answered from its store as
    // it was once came back short of its own profile read a moment later).
    thread::sleep(Duration::from_millis(10_200).saturating_sub(Duration::from_nanos(now_ns() - sampled_from)));
    let (from, to) = (sampled_from.to_string(), (sampled_from + 10_000_000_000).to_string());
    let hot = tree.hub(&[
        "invoke",
        "fleet-hot-functions",
        "--wasm",
        &module("fleet_hot_functions"),
        "--all",
        "--from",
        &from,
        "--to",
        &to,
        "-p",
        "top=100000",
        "--deadline",
        "30s",
    ]);
    assert_eq!(hosts_of(&hot, "answered").len(), LEAF_OF.len(), "{}", hot["missing"]);
    let leaves = hot["leaves"].as_array().unwrap();
    let mut leaf_names: Vec<&str> = leaves.iter().map(|l| l["leaf"].as_str().unwrap()).collect();
    leaf_names.sort();
    assert_eq!(leaf_names, LEAVES, "one partial per leaf: {leaves:?}");
    for l in leaves {
        let k = LEAVES.iter().position(|n| *n == l["leaf"]).unwrap();
        let coordinator: usize = l["coordinator"]["host"].as_str().unwrap()[1..].parse().unwrap();
        assert_eq!(LEAF_OF[coordinator], k, "a leaf is coordinated by one of its own agents: {l}");
        assert_eq!(l["hosts"], LEAF_OF.iter().filter(|&&x| x == k).count() as u64, "{l}");
    }
    let mut total = 0;
    for i in 0..LEAF_OF.len() {
        let own = tree.own_profile(i, &from, &to);
        assert!(own["samples"].as_u64().unwrap() > 0, "h{i} sampled nothing");
        common::fleet::assert_hot_functions_are_own_profile(&hot, &format!("h{i}"), &own);
        total += own["samples"].as_u64().unwrap();
    }
    let all = hot["rows"].as_array().unwrap().iter().find(|r| r[0] == "host" && r[3] == "*").unwrap();
    assert_eq!(all[4].as_u64(), Some(total), "the fleet's total is the hosts' sum");

    // Leaf r2's coordinator killed: another agent of r2 answers for the leaf; the dead one is
    // waited for by its leaf (still `up` in r2's registry) and named missing.
    let count = |tree: &Tree, deadline: &str| {
        tree.hub(&[
            "invoke",
            "hostile-huge-partial",
            "--wasm",
            &module("hostile_huge_partial"),
            "--all",
            "--deadline",
            deadline,
        ])
    };
    let first = count(&tree, "20s");
    let r2_coordinator = |answer: &Value| -> String {
        let leaf = answer["leaves"].as_array().unwrap().iter().find(|l| l["leaf"] == "r2").unwrap();
        leaf["coordinator"]["host"].as_str().unwrap().to_string()
    };
    let dead = r2_coordinator(&first);
    tree.kill_agent(dead[1..].parse().unwrap());
    let asked = Instant::now();
    let second = count(&tree, "4s");
    let took = asked.elapsed();
    assert_ne!(r2_coordinator(&second), dead, "another agent of r2 answers for it: {second}");
    assert_eq!(hosts_of(&second, "missing"), [dead.clone()], "{second}");
    assert_eq!(hosts_of(&second, "answered").len(), LEAF_OF.len() - 1);
    assert!(took < Duration::from_secs(7), "a 4 s tree took {took:?}");

    // Leaf r2's server killed while r2 still waits for its dead host: r2's hosts are named
    // missing (their leaf never answers), the other leaves merged, on time.
    let started = Instant::now();
    let asking = {
        let url = tree.rack.nats_url();
        let args: Vec<String> =
            ["invoke", "hostile-huge-partial", "--wasm", &module("hostile_huge_partial"), "--all", "--deadline", "6s"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        let tor = tree.rack.tor.name.clone();
        let key = tree.rack.fleet_key_args();
        thread::spawn(move || {
            Command::new("ip")
                .args(["netns", "exec", &tor, LOUPE, "fleet"])
                .args(&args)
                .args(["--nats", &url, "--json"])
                .args(&key)
                .output()
                .unwrap()
        })
    };
    thread::sleep(Duration::from_millis(1_500));
    tree.rack.kill_leaf(1).unwrap();
    let out = asking.join().unwrap();
    let took = started.elapsed();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let third: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut r2_hosts: Vec<String> = (0..LEAF_OF.len()).filter(|&i| LEAF_OF[i] == 1).map(|i| format!("h{i}")).collect();
    r2_hosts.sort();
    assert_eq!(hosts_of(&third, "missing"), r2_hosts, "{third}");
    assert!(third["missing"].as_array().unwrap().iter().all(|m| m["code"] == "leaf_deadline"), "{third}");
    assert_eq!(hosts_of(&third, "answered").len(), 5, "{third}");
    assert_eq!(third["text"], "5", "the other leaves' hosts merged: {third}");
    assert!(took < Duration::from_secs(9), "a 6 s tree took {took:?}");

    // And `fleet hosts` still names r2's hosts, as unreachable.
    let listed = tree.hub(&["hosts"]);
    let unreachable: Vec<&str> = listed["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["status"] == "unreachable")
        .map(|h| h["host"].as_str().unwrap())
        .collect();
    assert_eq!(unreachable, r2_hosts, "{listed}");
}

/// Publishes `payload` on `subject` with a fresh inbox and collects every reply for `wait`, each
/// decoded as JSON (a reply is `{v, query, place, leaf, result: {Ok | Err: {code, message}}}`).
async fn ask(client: &async_nats::Client, subject: &str, payload: Vec<u8>, wait: Duration) -> Vec<Value> {
    let inbox = client.new_inbox();
    let mut sub = client.subscribe(inbox.clone()).await.unwrap();
    client.publish_with_reply(subject.to_string(), inbox, payload.into()).await.unwrap();
    client.flush().await.unwrap();
    let mut replies = Vec::new();
    let until = tokio::time::Instant::now() + wait;
    while let Ok(Some(msg)) = tokio::time::timeout_at(until, sub.next()).await {
        replies.push(rmp_serde::from_slice::<Value>(&msg.payload).unwrap());
    }
    replies
}

/// The hosts that answered, and the error code each gave (`ok` for an answer).
fn codes(replies: &[Value]) -> Vec<(String, String)> {
    let mut codes: Vec<(String, String)> = replies
        .iter()
        .map(|r| {
            let code = r["result"]["Err"]["code"].as_str().unwrap_or("ok");
            (r["place"]["host"].as_str().unwrap().to_string(), code.to_string())
        })
        .collect();
    codes.sort();
    codes
}

fn every_host(code: &str) -> Vec<(String, String)> {
    (0..LEAF_OF.len()).map(|i| (format!("h{i}"), code.to_string())).collect()
}

#[test]
fn a_rogue_client_and_every_bad_request_are_refused_and_recorded_on_every_host() {
    require_root!();
    if !common::fleet::nats_available("fleet_leaves") {
        return;
    }
    let tree = Tree::start("door");
    tree.wait_up(LEAF_OF.len());
    // Runs of 100 slots: what every run request below asks for (periodic runs have 2,000).
    let asked_runs = |i: usize| -> usize {
        let out = Command::new("ip")
            .args(["netns", "exec", &tree.rack.hosts[i].ns.name, LOUPE, "runs", "list", "--json", "--data-dir"])
            .arg(tree.data_dir(i))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let runs = serde_json::from_slice::<Value>(&out.stdout).unwrap();
        runs.as_array().unwrap().iter().filter(|r| r["samples"] == 100).count()
    };
    let _uplink = tree.rack.uplink().unwrap();
    let operator = Signer::new(Arc::new(FleetKey::read(&tree.rack.keys().operator).unwrap()));
    let wait = Duration::from_secs(3);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    rt.block_on(async {
        let client = async_nats::connect(tree.rack.nats_url()).await.unwrap();
        // Valid for 10 s from when each request is made (each ask below waits 3 s).
        let soon = || now_ns() + 10_000_000_000;
        // A rogue client: requests built by hand, as any client the bus admits could send them.
        let rogue = |body: Value| {
            rmp_serde::to_vec_named(&json!({
                "v": 2, "query": "rogue", "deadline_unix_ns": soon(),
                "selector": {"dc": null, "rack": null, "host": null}, "body": body,
            }))
            .unwrap()
        };
        let run = json!({"iface": null, "interval_ns": 10_000_000u64, "samples": 100, "start_unix_ns": now_ns() + 1_000_000_000});
        let invoke = json!({"name": "x", "sha256": "0".repeat(64), "from_unix_ns": 0, "to_unix_ns": u64::MAX, "params": {}});
        for (subject, body) in
            [("loupe.v1.run.all", run), ("loupe.v1.invoke.all", invoke.clone()), ("loupe.v1.read.all", json!({"Run": {"id": 1}}))]
        {
            let replies = ask(&client, subject, rogue(body), wait).await;
            assert_eq!(codes(&replies), every_host("fleet_unsigned"), "{subject}");
        }
        // The leaves' own subject: one agent of each leaf refuses.
        let leaf_replies = ask(&client, "loupe.v1.invoke.leaf.all", rogue(invoke), wait).await;
        assert_eq!(leaf_replies.len(), LEAVES.len(), "{leaf_replies:?}");
        assert!(leaf_replies.iter().all(|r| r["result"]["Err"]["code"] == "fleet_unsigned"), "{leaf_replies:?}");

        // Signed, but by a key no host trusts.
        let body = RunBody { iface: None, interval_ns: 10_000_000, samples: 100, start_unix_ns: now_ns() + 1_000_000_000 };
        let stranger = Signer::one_off().seal("s", &Selector::default(), soon(), body.clone());
        assert_eq!(codes(&ask(&client, "loupe.v1.run.all", stranger.bytes, wait).await), every_host("fleet_untrusted_key"));
        // Signed by the operator, expired.
        let expired = operator.seal("e", &Selector::default(), now_ns() - 1_000_000_000, body);
        assert_eq!(codes(&ask(&client, "loupe.v1.run.all", expired.bytes, wait).await), every_host("fleet_expired"));
        // Answered once (no such run), then the same bytes again: a replay.
        let h0 = Selector { host: Some("h0".into()), ..Default::default() };
        let Sealed { bytes, .. } = operator.seal("r", &h0, soon(), ReadBody::Run { id: 999_999 });
        let first = ask(&client, "loupe.v1.read.host.h0", bytes.clone(), wait).await;
        assert_eq!(codes(&first), [("h0".to_string(), "not_found".to_string())]);
        let again = ask(&client, "loupe.v1.read.host.h0", bytes, wait).await;
        assert_eq!(codes(&again), [("h0".to_string(), "fleet_replayed".to_string())]);
        // Signed for rack r1, relayed to rack r2: r2's hosts refuse it.
        let r1 = Selector { rack: Some("r1".into()), ..Default::default() };
        let relayed = operator.seal("w", &r1, soon(), ReadBody::Run { id: 999_999 });
        let replies = ask(&client, "loupe.v1.read.rack.r2", relayed.bytes, wait).await;
        let r2: Vec<(String, String)> = ["h3", "h4", "h5"].iter().map(|h| (h.to_string(), "fleet_not_selected".into())).collect();
        assert_eq!(codes(&replies), r2);
    });

    // Nothing ran: the rogue's and the stranger's runs (1 s from then, 1 s long) would be stored
    // by now.
    let asked: Vec<usize> = (0..LEAF_OF.len()).map(asked_runs).collect();
    assert_eq!(asked, [0; LEAF_OF.len()]);
    // Every host recorded every refusal, with who asked.
    let operator_id = format!("fleet:{}", operator.public_key());
    for i in 0..LEAF_OF.len() {
        let trail = loupe_core::audit::read(&tree.data_dir(i), TimeRange::ALL).unwrap().entries;
        let has = |action: &str, outcome: &str, token: &str| {
            trail.iter().any(|e| e.action == action && e.outcome == outcome && e.token_id.starts_with(token))
        };
        for action in ["start_run", "invoke", "read"] {
            assert!(has(action, "fleet_unsigned", "unsigned"), "h{i}: no unsigned {action} refused: {trail:?}");
        }
        assert!(has("start_run", "fleet_untrusted_key", "fleet:U"), "h{i}: {trail:?}");
        assert!(has("start_run", "fleet_expired", &operator_id), "h{i}: {trail:?}");
        let acted =
            |e: &&loupe_core::audit::AuditEntry| e.outcome == "ok" && ["start_run", "invoke"].contains(&&*e.action);
        assert!(!trail.iter().any(|e| acted(&e)), "h{i} ran or invoked something: {trail:?}");
        if i == 0 {
            // The operator's read ran (and found nothing) as team ops, then its replay was refused.
            assert!(trail.iter().any(|e| e.action == "show_run" && e.outcome == "not_found" && e.team == "ops"));
            assert!(has("read", "fleet_replayed", &operator_id), "{trail:?}");
        }
        if (3..6).contains(&i) {
            assert!(has("read", "fleet_not_selected", &operator_id), "h{i}: {trail:?}");
        }
    }

    // The catalog rewritten by a bus client. An entry that is not a signed one: the command
    // says so and asks nobody.
    let sha = "ab".repeat(32);
    let catalog = |value: Vec<u8>| {
        rt.block_on(async {
            let js = async_nats::jetstream::new(async_nats::connect(tree.rack.nats_url()).await.unwrap());
            let config = async_nats::jetstream::kv::Config { bucket: "loupe-catalog".into(), ..Default::default() };
            let kv = match js.get_key_value("loupe-catalog").await {
                Ok(kv) => kv,
                Err(_) => js.create_key_value(config).await.unwrap(),
            };
            kv.put("rogue-hot", value.into()).await.unwrap();
        })
    };
    let plain = json!({"name": "rogue-hot", "sha256": sha, "size": 1, "shipped_unix_ns": 0, "shipped_by": "cli"});
    catalog(serde_json::to_vec(&plain).unwrap());
    let out = tree.fleet_at(&tree.rack.nats_url(), &["invoke", "rogue-hot", "--all"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && said.contains("not a signed entry"), "{said}");
    // Signed, by a key no host trusts, for a module it put into the object store: every host
    // refuses to run it, and the command says why.
    let wasm = std::fs::read(module("fleet_hot_functions")).unwrap();
    let sha = loupe_fleet::modules::sha256_hex(&wasm);
    rt.block_on(async {
        let js = async_nats::jetstream::new(async_nats::connect(tree.rack.nats_url()).await.unwrap());
        let config =
            async_nats::jetstream::object_store::Config { bucket: "loupe-analyses".into(), ..Default::default() };
        let os = match js.get_object_store("loupe-analyses").await {
            Ok(os) => os,
            Err(_) => js.create_object_store(config).await.unwrap(),
        };
        os.put(sha.as_str(), &mut wasm.as_slice()).await.unwrap();
    });
    let stranger = Signer::one_off();
    catalog(Shipped::sign("rogue-hot", &sha, wasm.len() as u64, "rogue", &stranger).signed);
    let out = tree.fleet_at(&tree.rack.nats_url(), &["invoke", "rogue-hot", "--all"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("(8 failed, 0 missing)") && said.contains("not in this host's fleet trust file"), "{said}");
    let refused_it = (0..LEAF_OF.len()).filter(|&i| {
        let trail = loupe_core::audit::read(&tree.data_dir(i), TimeRange::ALL).unwrap().entries;
        trail
            .iter()
            .any(|e| e.action == "invoke" && e.outcome == "fleet_untrusted_key" && e.target.contains("rogue-hot"))
    });
    assert_eq!(refused_it.count(), LEAVES.len(), "each leaf's coordinator refused it, recorded");

    scope_matrix_over_the_bus(&tree, &rt, &operator, &sha, &wasm);
}

/// Every verb a host answers × a key trusted with each scope alone (lines added to the rack's
/// trust file, which every agent reads again when it changes): the request is acted on only
/// for the scope the verb needs, or `admin`; any other is refused with `missing_scope_<it>`.
/// An analysis' catalog entry likewise runs only if its signer had `upload`. (The HTTP fleet
/// routes' matrix, `fleet` and each operation's scope, is `tests/api.rs`'s.)
fn scope_matrix_over_the_bus(tree: &Tree, rt: &tokio::runtime::Runtime, operator: &Signer, sha: &str, wasm: &[u8]) {
    let scopes = ["read", "invoke", "upload", "run", "probe", "admin", "fleet"];
    let keys: Vec<(&str, Signer)> = scopes.iter().map(|s| (*s, Signer::new(Arc::new(FleetKey::generate())))).collect();
    let mut lines = std::fs::read_to_string(&tree.rack.keys().trust).unwrap();
    for (scope, signer) in &keys {
        lines.push_str(&format!("{} team-{scope} {scope}\n", signer.public_key()));
    }
    // Replaced whole (written beside, then renamed): an agent never reads half of it.
    let next = tree.dir.path().join("trust.next");
    std::fs::write(&next, lines).unwrap();
    std::fs::rename(&next, &tree.rack.keys().trust).unwrap();
    let h0 = Selector { host: Some("h0".into()), ..Default::default() };
    let soon = || now_ns() + 10_000_000_000;
    // The module in h0's leaf's object store, as its leaf's coordinator would have put it.
    let entry = |signer: &Signer| Shipped::sign("fleet-hot-functions", sha, wasm.len() as u64, "m", signer).signed;
    let invoke = |module: Vec<u8>| InvokeBody {
        name: "fleet-hot-functions".into(),
        sha256: sha.into(),
        from_unix_ns: 0,
        to_unix_ns: u64::MAX,
        params: Default::default(),
        origin_domain: None,
        module,
    };
    let mut checked = 0;
    rt.block_on(async {
        let client = async_nats::connect(tree.rack.nats_url()).await.unwrap();
        let wait = Duration::from_secs(3);
        for (held, signer) in &keys {
            // 100 slots of 10 ms from half a second on: stored well inside the 3 s waited.
            let run =
                RunBody { iface: None, interval_ns: 10_000_000, samples: 100, start_unix_ns: now_ns() + 500_000_000 };
            let asked = [
                ("run", "loupe.v1.run.host.h0", signer.seal("m", &h0, soon(), run).bytes),
                ("read", "loupe.v1.read.host.h0", signer.seal("m", &h0, soon(), ReadBody::Run { id: 999_999 }).bytes),
                ("invoke", "loupe.v1.invoke.host.h0", signer.seal("m", &h0, soon(), invoke(entry(operator))).bytes),
                // The operator invokes (it has `invoke`) a module this key shipped.
                ("upload", "loupe.v1.invoke.host.h0", operator.seal("m", &h0, soon(), invoke(entry(signer))).bytes),
            ];
            for (needed, subject, bytes) in asked {
                let got = codes(&ask(&client, subject, bytes, wait).await);
                assert_eq!(got.len(), 1, "{held} asking {needed}: {got:?}");
                let code = &got[0].1;
                if *held == needed || *held == "admin" {
                    assert!(
                        !code.starts_with("missing_scope") && !code.starts_with("fleet_"),
                        "{held} asking {needed}: {code}"
                    );
                } else if needed == "upload" {
                    assert_eq!(code, "fleet_module_not_uploaded", "a module shipped by {held}");
                } else {
                    assert_eq!(code, &format!("missing_scope_{needed}"), "{held} asking {needed}");
                }
                checked += 1;
            }
            // A leaf's registry, listed by one agent of each leaf: `read`.
            let hosts =
                ask(&client, "loupe.v1.hosts.leaf.all", signer.seal("m", &Selector::default(), soon(), ()).bytes, wait)
                    .await;
            assert_eq!(hosts.len(), LEAVES.len(), "{held}: {hosts:?}");
            for reply in &hosts {
                let code = reply["result"]["Err"]["code"].as_str().unwrap_or("ok");
                let allowed = *held == "read" || *held == "admin";
                assert_eq!(code == "ok", allowed, "{held} listing a leaf: {reply}");
                if !allowed {
                    assert_eq!(code, "missing_scope_read", "{reply}");
                }
            }
            checked += 1;
        }
    });
    assert_eq!(checked, scopes.len() * 5);
}
