//! Where frame names come from, on a real kernel, through the `loupe` command line, with the
//! fixture `testbed/fixtures/names.c`:
//! - a libc function that only libc's separate debug file names (libc6-dbg), agreeing with
//!   `perf report` on the same process in the same test;
//! - a stripped program: named from a `--debug-dir`; without it kept as `module+address` with its
//!   build ID and named by `loupe symbolize --debug-dir` after the process is gone;
//! - JIT code named from the process's perf map;
//! - a damaged debug file and one of another build are ignored with a log line, never used.

mod sampling;

use std::{
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
};

use loupe_testbed::require_root;
use sampling::*;
use serde_json::Value;

/// Tools the set-up installs (`scripts/setup`): missing here is a skip, missing in CI a failure.
fn require(test: &str, what: &str, present: bool) -> bool {
    if present {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!("{test}: needs {what}, which scripts/setup installs");
    }
    eprintln!("SKIP {test}: needs {what} (scripts/setup installs it)");
    false
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// `names` prints "pid N" first.
fn pid_of(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.starts_with("pid ")).expect("names printed its PID");
    line["pid ".len()..].trim().to_string()
}

fn top(view: &Value) -> (String, u64) {
    let f = &view["functions"][0];
    (f["name"].as_str().unwrap().to_string(), f["self"].as_u64().unwrap())
}

fn all_names(view: &Value) -> Vec<String> {
    view["functions"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap().to_string()).collect()
}

fn module_self(view: &Value, module: &str) -> u64 {
    view["modules"].as_array().unwrap().iter().find(|m| m["name"] == module).map_or(0, |m| m["self"].as_u64().unwrap())
}

/// A stripped copy of the `static` fixture (`HOT` names its hot function) and its debug file.
fn stripped(dir: &Path, name: &str, hot: &str) -> (PathBuf, PathBuf) {
    let define = format!("-DHOT={hot}");
    std::fs::create_dir_all(dir).unwrap();
    let bin = build_fixture(dir, "names", name, &["-Wl,--build-id", &define]);
    let debug = dir.join(format!("{name}.debug.src"));
    run(Command::new("objcopy").arg("--only-keep-debug").arg(&bin).arg(&debug));
    run(Command::new("strip").arg("--strip-all").arg(&bin));
    (bin, debug)
}

/// Runs `program` (a `names` fixture, or perf running one) while `loupe sample EXTRA` samples;
/// returns the fixture's PID and the sampler's output.
fn sample_while(data: &Path, extra: &[&str], program: &mut Command) -> (String, Output) {
    let sampler = start_sampling(data, 4.5, extra);
    let out = run(program.stdout(Stdio::piped()));
    (pid_of(&out), finish(sampler))
}

#[test]
fn libc_local_function_named_from_its_debug_file_like_perf() {
    require_root!();
    let libc = Path::new("/lib/x86_64-linux-gnu/libc.so.6");
    let id = build_id(libc);
    let debug = PathBuf::from(format!("/usr/lib/debug/.build-id/{}/{}.debug", &id[..2], &id[2..]));
    if !require(module_path!(), "libc6-dbg", debug.is_file())
        || !require(module_path!(), "perf (linux-perf)", Command::new("perf").arg("--version").output().is_ok())
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let names = build_fixture(dir.path(), "names", "names", &[]);
    let data = dir.path().join("data");
    let perf_data = dir.path().join("perf.data");
    // perf records the same process loupe samples.
    let (pid, _) = sample_while(
        &data,
        &[],
        Command::new("perf")
            .args(["record", "-q", "-e", "cpu-clock", "-F", "499", "-g", "-o"])
            .arg(&perf_data)
            .arg("--")
            .arg(&names)
            .args(["libc", "2.5"]),
    );
    let report = run(Command::new("perf")
        .args(["report", "--stdio", "--no-children", "--sort", "sym", "-q", "-g", "none", "-i"])
        .arg(&perf_data));
    let text = String::from_utf8_lossy(&report.stdout);
    // "    99.90%  [.] __strpbrk_sse42"
    let perf_top = text
        .lines()
        .find_map(|l| l.split_once("[.] ").map(|(_, sym)| sym.trim().to_string()))
        .unwrap_or_else(|| panic!("no user symbol in perf report:\n{text}"));

    let view = profile(&data, &["--pid", &pid]);
    let (loupe_top, self_samples) = top(&view);
    assert_eq!(loupe_top, perf_top, "loupe's and perf's top function differ");
    assert!(self_samples >= 10, "{self_samples} samples in {loupe_top}");
    // The premise: the name is not in libc's dynamic symbol table, only in the debug file.
    let dynsyms = run(Command::new("readelf").args(["--dyn-syms", "-W"]).arg(libc));
    let dynsyms = String::from_utf8_lossy(&dynsyms.stdout);
    assert!(
        !dynsyms.split_whitespace().any(|w| w == loupe_top || w.starts_with(&format!("{loupe_top}@"))),
        "{loupe_top} is in libc's dynamic symbols: this test would not prove anything"
    );
    assert!(module_self(&view, "libc.so.6") * 10 >= self_samples * 9, "libc's share: {}", view["modules"]);
    eprintln!("perf and loupe agree: {perf_top} ({self_samples} samples)");
}

#[test]
fn stripped_program_named_from_debug_dir_now_or_by_symbolize_later() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    let (bin, debug) = stripped(dir.path(), "names", "names_static_hot");
    let id = build_id(&bin);

    // 1. Its debug file under a --debug-dir, by build ID: named as it is sampled.
    let by_id = dir.path().join("by-id");
    std::fs::create_dir_all(by_id.join(".build-id").join(&id[..2])).unwrap();
    std::fs::copy(&debug, by_id.join(".build-id").join(&id[..2]).join(format!("{}.debug", &id[2..]))).unwrap();
    let data = dir.path().join("data-named");
    let dir_arg = by_id.to_str().unwrap();
    let (pid, _) = sample_while(&data, &["--debug-dir", dir_arg], Command::new(&bin).args(["static", "2.5"]));
    let view = profile(&data, &["--pid", &pid]);
    assert_eq!(top(&view).0, "names_static_hot", "{:?}", all_names(&view));

    // 2. Without it: `names+0x…`, with the build ID kept.
    let data = dir.path().join("data-later");
    let (pid, _) = sample_while(&data, &[], Command::new(&bin).args(["static", "2.5"]));
    let before = profile(&data, &["--pid", &pid]);
    let (unnamed, samples) = top(&before);
    assert!(unnamed.starts_with("names+0x"), "{unnamed}");
    assert!(!all_names(&before).iter().any(|n| n == "names_static_hot"));

    // 3. The process is long gone; the debug file appears (here under its module's name).
    let later = dir.path().join("later");
    std::fs::create_dir_all(&later).unwrap();
    std::fs::copy(&debug, later.join("names.debug")).unwrap();
    let out = run(&mut loupe(&["symbolize", "--json", "--debug-dir", later.to_str().unwrap()], &data));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let module =
        report["modules"].as_array().unwrap().iter().find(|m| m["module"] == "names").expect("names in the report");
    assert_eq!(module["build_id"], id.as_str(), "the frames kept the program's build ID");
    assert!(module["named"].as_u64().unwrap() >= 1 && module["named"] == module["frames"], "{report}");
    let after = profile(&data, &["--pid", &pid]);
    let (name, after_samples) = top(&after);
    assert_eq!(name, "names_static_hot");
    assert!(after_samples >= samples, "the addresses of one function merge under its name");
    assert_eq!(after["samples"], before["samples"]);
    // A second pass finds nothing left to name.
    let again: Value = serde_json::from_slice(&run(&mut loupe(&["symbolize", "--json"], &data)).stdout).unwrap();
    assert!(again["modules"].as_array().unwrap().iter().all(|m| m["module"] != "names"), "{again}");
}

#[test]
fn damaged_or_foreign_debug_files_are_ignored_never_used() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    let (bin, _) = stripped(dir.path(), "names", "names_static_hot");
    // Another build of the same program, whose hot function has another name and address.
    let (_, foreign) = stripped(&dir.path().join("other"), "names", "wrong_build_function");
    let id = build_id(&bin);
    let bad = dir.path().join("bad");
    std::fs::create_dir_all(bad.join(".build-id").join(&id[..2])).unwrap();
    // At the right build-ID path: garbage. Under the module's name: the other build's file.
    std::fs::write(bad.join(".build-id").join(&id[..2]).join(format!("{}.debug", &id[2..])), b"\x7fELF garbage")
        .unwrap();
    std::fs::copy(&foreign, bad.join("names.debug")).unwrap();

    let data = dir.path().join("data");
    let bad_arg = bad.to_str().unwrap();
    let (pid, sampler) = sample_while(&data, &["--debug-dir", bad_arg], Command::new(&bin).args(["static", "2.5"]));
    let log = String::from_utf8_lossy(&sampler.stderr);
    assert!(log.contains("ignored") && log.contains("not a readable ELF"), "no log line for the damaged file:\n{log}");
    assert!(log.contains("has build ID"), "no log line for the foreign build:\n{log}");
    let view = profile(&data, &["--pid", &pid]);
    assert!(top(&view).0.starts_with("names+0x"), "{:?}", all_names(&view));
    assert!(!all_names(&view).iter().any(|n| n.contains("wrong_build_function")));

    let out = run(&mut loupe(&["symbolize", "--json", "--debug-dir", bad_arg], &data));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["named"], 0, "{report}");
    assert!(top(&profile(&data, &["--pid", &pid])).0.starts_with("names+0x"));
}

#[test]
fn jit_frames_named_from_the_perf_map() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    let names = build_fixture(dir.path(), "names", "names", &[]);
    let data = dir.path().join("data");
    let (pid, _) = sample_while(&data, &[], Command::new(&names).args(["jit", "2.5"]));
    let view = profile(&data, &["--pid", &pid]);
    let (name, samples) = top(&view);
    assert_eq!(name, "names_jit_hot", "{:?}", all_names(&view));
    assert!(samples >= 10);
    assert_eq!(module_self(&view, "[jit]"), samples, "{}", view["modules"]);
}
