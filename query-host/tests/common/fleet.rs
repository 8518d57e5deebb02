//! What the fleet tests (`fleet_rack`, `fleet_leaves`) share: whether `nats-server` is there,
//! a host's own profile read in its namespace, the agents' logs and their stop, and the check
//! that fleet hot functions equal a host's own profile.

use std::{
    collections::BTreeMap,
    path::Path,
    process::{Child, Command},
};

use loupe_api::formats::deep_json;
use serde_json::Value;

/// `nats-server` is installed by scripts/setup; without it a fleet test cannot run (in CI that
/// is a failure, elsewhere a skip that says so).
pub fn nats_available(test: &str) -> bool {
    let found = Command::new("nats-server").arg("--version").output().is_ok_and(|o| o.status.success());
    if !found {
        assert!(std::env::var_os("CI").is_none(), "nats-server missing in CI: scripts/setup installs it");
        eprintln!("SKIP {test}: nats-server not installed (scripts/setup installs it)");
    }
    found
}

/// `loupe profile --json` of `[from, to)` (`kind`: `--off-cpu` or nothing) in namespace `ns`,
/// from `data_dir` (through its agent's control socket).
pub fn own_profile(loupe: &str, ns: &str, data_dir: &Path, from: &str, to: &str, kind: &[&str]) -> Value {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, loupe, "profile", "--json", "--from", from])
        .args(kind)
        .args(["--to", to, "--data-dir"])
        .arg(data_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{ns}: {}", String::from_utf8_lossy(&out.stderr));
    // A flame graph nests two JSON levels per frame, past serde_json's default cap of 128.
    deep_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{ns}: loupe profile --json printed no JSON ({e}): stdout {:?}, stderr {:?}",
            String::from_utf8_lossy(&out.stdout[..out.stdout.len().min(400)]),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The last lines of each agent's log (`agent-h<i>.log` in `dir`), for failure messages.
pub fn agent_logs(dir: &Path, hosts: usize) -> String {
    let mut out = String::new();
    for i in 0..hosts {
        let text = std::fs::read_to_string(dir.join(format!("agent-h{i}.log"))).unwrap_or_default();
        let lines: Vec<&str> = text.lines().filter(|l| !l.contains("run stored")).collect();
        out.push_str(&format!("--- h{i}\n{}\n", lines[lines.len().saturating_sub(6)..].join("\n")));
    }
    out
}

/// Kills an agent outright (as if its host died).
pub fn kill(agent: &mut Option<Child>) {
    if let Some(mut child) = agent.take() {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Stops the agents still running with SIGTERM: they leave the fleet and detach their filters.
pub fn stop(agents: &mut [Option<Child>]) {
    for child in agents.iter_mut().flatten() {
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    }
    for child in agents.iter_mut().flatten() {
        let _ = child.wait();
    }
}

/// `fleet-hot-functions`' function rows of `host`, summed by function, against its own
/// profile's self counts.
pub fn assert_hot_functions_are_own_profile(hot: &Value, host: &str, own: &Value) {
    let mut mine = BTreeMap::<String, u64>::new();
    for r in hot["rows"].as_array().unwrap().iter().filter(|r| r[0] == "function" && r[3] == host) {
        *mine.entry(r[1].as_str().unwrap().to_string()).or_default() += r[4].as_u64().unwrap();
    }
    let theirs: BTreeMap<String, u64> = own["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["self"].as_u64().unwrap() > 0)
        .map(|f| (f["name"].as_str().unwrap().to_string(), f["self"].as_u64().unwrap()))
        .collect();
    assert_eq!(mine, theirs, "{host}: the fleet's functions against its own profile");
}
