//! The fleet past one NATS server: a hub and three leaf servers (`loupe_testbed::rack` with
//! leaves), each leaf with JetStream in a domain of its own and two or three real `loupe agent`s
//! in network namespaces connected to it — the usual NATS layout for a rack or pod per leaf.
//! Through the real `loupe fleet` command line, with no flag beyond `--nats`:
//!
//! - `fleet hosts` through the hub lists every leaf's hosts, each with its leaf;
//! - a rack-scoped request asked inside its leaf, and the agents' heartbeats, cross no leaf
//!   connection (the hub's `/leafz` message counters do not move);
//! - `fleet invoke --all` of `fleet-hot-functions` through the hub runs as a tree (one partial
//!   per leaf) and equals every host's own profile;
//! - a leaf's coordinator killed: another agent of the leaf answers for it;
//! - a leaf server killed during the tree merge: its hosts are named missing, the rest merged,
//!   the answer on time.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Output},
    thread,
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use loupe_testbed::{
    rack::{HUB_MONITOR_PORT, Rack},
    require_root,
};
use serde_json::Value;

mod common;

const LOUPE: &str = env!("CARGO_BIN_EXE_loupe");
/// Leaf (and rack) of each host: r1 holds h0–h2, r2 h3–h5, r3 h6–h7.
const LEAVES: [&str; 3] = ["r1", "r2", "r3"];
const LEAF_OF: [usize; 8] = [0, 0, 0, 1, 1, 1, 2, 2];

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
}

impl Tree {
    fn start() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let mut rack = Rack::new("leaf", LEAF_OF.len(), &dir.path().join("nats")).unwrap();
        rack.use_leaves(&LEAVES, LEAF_OF.to_vec()).unwrap();
        rack.start_nats().unwrap();
        let mut tree = Tree { rack, agents: Vec::new(), dir };
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
    let mut tree = Tree::start();
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
    thread::sleep(Duration::from_secs(11).saturating_sub(Duration::from_nanos(now_ns() - sampled_from)));
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
        thread::spawn(move || {
            Command::new("ip")
                .args(["netns", "exec", &tor, LOUPE, "fleet"])
                .args(&args)
                .args(["--nats", &url, "--json"])
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
