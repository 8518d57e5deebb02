//! Python functions named as Python's own profilers name them, end to end on a real kernel:
//! `loupe sample` beside `testbed/fixtures/pyhot.py` (ceo_leaf under ten ceo_mid, ceo_side
//! beside them) run by every Python on the machine — Debian's `python3.11` and pyenv's 3.8–3.13
//! — and py-spy (PyPI) over the same seconds; then `loupe profile`. For each: the share of
//! samples whose innermost Python function is ceo_leaf agrees with py-spy's within 3 points, and
//! at least 95 % of Loupe's samples hold the workload's whole Python call chain, in order.

mod sampling;

use std::{
    path::PathBuf,
    process::{Command, Stdio},
};

use loupe_testbed::{pythons, require_root};
use sampling::*;
use serde_json::Value;

/// Seconds and samples a second each tool takes: ~4,000 samples, so that two honest shares of
/// ~75 % differ by 0.9 points (one standard deviation) and 3 points is 3.2 of them.
const SECONDS: f64 = 4.0;
const RATE: &str = "999";

/// The workload's Python functions (the only Python frames its main thread runs).
const WORKLOAD: [&str; 4] = ["<module>", "ceo_mid", "ceo_leaf", "ceo_side"];

/// py-spy: `$LOUPE_PY_SPY`, the virtualenv `scripts/setup` installs it into, or the `PATH`.
fn py_spy() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("LOUPE_PY_SPY") {
        return Some(PathBuf::from(p));
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/root"));
    let cache = std::env::var_os("XDG_CACHE_HOME").map(PathBuf::from).unwrap_or_else(|| home.join(".cache"));
    let venv = cache.join("loupe/py-spy-venv/bin/py-spy");
    if venv.exists() {
        return Some(venv);
    }
    let which = Command::new("which").arg("py-spy").output().ok()?;
    which.status.success().then(|| PathBuf::from(String::from_utf8_lossy(&which.stdout).trim()))
}

/// A flame graph's samples by path, root first: (the names on the path of the nodes `keep`
/// keeps, the samples that end there).
fn sample_paths(
    node: &Value,
    keep: &dyn Fn(&Value) -> bool,
    path: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, u64)>,
) {
    let kept = keep(node);
    if kept {
        path.push(node["name"].as_str().unwrap_or("").to_string());
    }
    let children = node["children"].as_array().cloned().unwrap_or_default();
    let below: u64 = children.iter().map(|c| c["value"].as_u64().unwrap()).sum();
    let own = node["value"].as_u64().unwrap().saturating_sub(below);
    if own > 0 {
        out.push((path.clone(), own));
    }
    for child in &children {
        sample_paths(child, keep, path, out);
    }
    if kept {
        path.pop();
    }
}

/// Keeps the workload's Python frames, and checks the API says exactly those are Python's.
fn workload_frame(node: &Value) -> bool {
    let name = node["name"].as_str().unwrap_or("");
    let python = WORKLOAD.contains(&name);
    assert_eq!(python, node["kind"] == "python", "{name}: kind {}", node["kind"]);
    python
}

/// py-spy's raw output: innermost function name → samples.
fn py_spy_innermost(raw: &str) -> (u64, u64) {
    let (mut leaf, mut all) = (0, 0);
    for line in raw.lines() {
        let Some((stack, n)) = line.rsplit_once(' ') else { continue };
        let n: u64 = n.parse().unwrap_or(0);
        let innermost = stack.rsplit(';').next().unwrap_or("");
        let function = innermost.split(" (").next().unwrap_or("");
        if WORKLOAD.contains(&function) {
            all += n;
            leaf += u64::from(function == "ceo_leaf") * n;
        }
    }
    (leaf, all)
}

#[test]
fn python_functions_are_named_as_py_spy_names_them_with_their_whole_call_chain() {
    require_root!();
    let Some(py_spy) = py_spy() else {
        assert!(std::env::var_os("CI").is_none(), "py-spy is missing in CI: scripts/setup installs it");
        eprintln!("SKIP: py-spy not found (scripts/setup installs it into ~/.cache/loupe/py-spy-venv)");
        return;
    };
    let script = pythons::script("pyhot.py");
    let mut failures = Vec::new();
    for python in pythons::installed() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let (mut workload, pid) = pythons::start(&python, &script, &["12"]);
        let pid = pid.to_string();
        let sampler = start_sampling_ready(&data, SECONDS, &["--frequency", RATE]);
        let raw = dir.path().join("py-spy.txt");
        let spy = Command::new(&py_spy)
            .args([
                "record",
                "--pid",
                &pid,
                "--duration",
                &SECONDS.to_string(),
                "--rate",
                RATE,
                "--format",
                "raw",
                "--nonblocking",
                "-o",
            ])
            .arg(&raw)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert!(spy.status.success(), "py-spy: {}", String::from_utf8_lossy(&spy.stderr));
        finish(sampler);
        let _ = workload.kill();
        let _ = workload.wait();
        let view = profile(&data, &["--pid", &pid]);
        let mut paths = Vec::new();
        sample_paths(&view["flamegraph"], &workload_frame, &mut Vec::new(), &mut paths);
        let python_samples: u64 = paths.iter().filter(|(p, _)| !p.is_empty()).map(|(_, n)| n).sum();
        let in_leaf: u64 =
            paths.iter().filter(|(p, _)| p.last().is_some_and(|f| f == "ceo_leaf")).map(|(_, n)| n).sum();
        let whole_leaf: Vec<String> =
            ["<module>"].into_iter().chain(["ceo_mid"; 11]).chain(["ceo_leaf"]).map(String::from).collect();
        let whole = |p: &Vec<String>| {
            *p == whole_leaf
                || *p == ["<module>", "ceo_side"]
                || (p.len() >= 2 && p[0] == "<module>" && p[1..].iter().all(|f| f == "ceo_mid"))
        };
        let whole_samples: u64 = paths.iter().filter(|(p, _)| whole(p)).map(|(_, n)| n).sum();
        let all = view["samples"].as_u64().unwrap();
        let (spy_leaf, spy_all) = py_spy_innermost(&std::fs::read_to_string(&raw).unwrap());
        let share = |a: u64, b: u64| 100.0 * a as f64 / b.max(1) as f64;
        let (ours, theirs) = (share(in_leaf, python_samples), share(spy_leaf, spy_all));
        eprintln!(
            "{}: Loupe {all} samples, {python_samples} in the workload's Python, {ours:.1} % innermost ceo_leaf, \
             {:.1} % with the whole chain; py-spy {spy_all} samples, {theirs:.1} % innermost ceo_leaf",
            python.display(),
            share(whole_samples, all)
        );
        if all < 2000 || spy_all < 2000 || (ours - theirs).abs() > 3.0 || whole_samples * 100 < all * 95 {
            failures.push(format!(
                "{}: Loupe {ours:.1} % ({all} samples, {whole_samples} whole), py-spy {theirs:.1} % ({spy_all}); \
                 paths {:?}",
                python.display(),
                paths.iter().filter(|(p, _)| !whole(p)).take(5).collect::<Vec<_>>()
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// A C extension under the Python function that called it: `pyzlib.py`'s compress_loop calls
/// `zlib.compress` (built into Debian's python3.11, a module of its own in pyenv's) and libz's
/// `deflate` under it; every sample in libz has compress_loop as its nearest Python caller.
#[test]
fn native_frames_sit_under_the_python_function_that_called_them() {
    require_root!();
    let script = pythons::script("pyzlib.py");
    let libz = |name: &str| name.contains("deflate") || name == "longest_match" || name == "compress_block";
    let mut failures = Vec::new();
    for python in pythons::installed() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let (mut workload, pid) = pythons::start(&python, &script, &["6"]);
        let pid = pid.to_string();
        let sampler = start_sampling_ready(&data, 2.0, &["--frequency", "199"]);
        finish(sampler);
        let _ = workload.kill();
        let _ = workload.wait();
        let view = profile(&data, &["--pid", &pid]);
        let mut paths = Vec::new();
        sample_paths(&view["flamegraph"], &|_| true, &mut Vec::new(), &mut paths);
        let (mut in_libz, mut under_loop) = (0, 0);
        for (path, n) in &paths {
            let Some(deepest) = path.iter().rposition(|f| libz(f)) else { continue };
            in_libz += n;
            let caller = path[..deepest].iter().rev().find(|f| *f == "compress_loop" || *f == "<module>");
            if caller.is_some_and(|f| f == "compress_loop") {
                under_loop += n;
            }
        }
        let all = view["samples"].as_u64().unwrap();
        eprintln!("{}: {all} samples, {in_libz} in libz, {under_loop} of them under compress_loop", python.display());
        if in_libz * 2 < all || under_loop * 100 < in_libz * 95 {
            let odd: Vec<&(Vec<String>, u64)> =
                paths.iter().filter(|(p, _)| p.iter().any(|f| libz(f))).take(3).collect();
            failures.push(format!(
                "{}: {all} samples, {in_libz} in libz, {under_loop} under compress_loop; {odd:?}",
                python.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
