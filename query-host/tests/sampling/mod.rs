//! What the stack sampler's kernel tests share: building a C fixture, running `loupe sample`
//! around a workload, reading `loupe profile --json`.
#![allow(dead_code)] // each test file uses a part

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    thread,
    time::Duration,
};

use serde_json::Value;

pub const LOUPE: &str = env!("CARGO_BIN_EXE_loupe");

/// Compiles `testbed/fixtures/{fixture}.c` with frame pointers into `dir/name`.
pub fn build_fixture(dir: &Path, fixture: &str, name: &str, extra: &[&str]) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../testbed/fixtures/{fixture}.c"));
    let out = dir.join(name);
    let status = Command::new("cc")
        .args(["-O2", "-fno-omit-frame-pointer", "-pthread"])
        .args(extra)
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .status()
        .expect("running cc");
    assert!(status.success(), "compiling {}", src.display());
    out
}

pub fn loupe(args: &[&str], data: &Path) -> Command {
    let mut cmd = Command::new(LOUPE);
    cmd.args(args).arg("--data-dir").arg(data).env("RUST_LOG", "warn");
    cmd
}

/// Starts `loupe sample` for `seconds`, waits until it is sampling, and returns it.
pub fn start_sampling(data: &Path, seconds: f64, extra: &[&str]) -> Child {
    let secs = seconds.to_string();
    let mut args = vec!["sample", "--seconds", &secs];
    args.extend_from_slice(extra);
    let child = loupe(&args, data).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    thread::sleep(Duration::from_millis(700)); // load + attach on every CPU
    child
}

/// Starts `loupe sample` for `seconds` and returns it once it says it samples on every CPU
/// (its log line, not a guess at how long loading takes). Its stderr is read to the end by a
/// thread of its own; [`finish`] then sees none of it.
pub fn start_sampling_ready(data: &Path, seconds: f64, extra: &[&str]) -> Child {
    use std::io::BufRead;
    let secs = seconds.to_string();
    let mut args = vec!["sample", "--seconds", &secs];
    args.extend_from_slice(extra);
    let mut child =
        loupe(&args, data).env("RUST_LOG", "info").stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    loop {
        match lines.next() {
            Some(Ok(l)) if l.contains("stack sampler running") => break,
            Some(Ok(_)) => {}
            _ => panic!("loupe sample ended before it sampled: {:?}", child.wait_with_output()),
        }
    }
    thread::spawn(move || lines.for_each(drop));
    child
}

/// Asks `loupe sample` to stop now (as Ctrl-C does: it writes what it holds and exits).
pub fn interrupt(child: &Child) {
    let ok = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(ok.success());
}

pub fn finish(child: Child) -> Output {
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "loupe sample: {}", String::from_utf8_lossy(&out.stderr));
    out
}

pub fn profile(data: &Path, args: &[&str]) -> Value {
    let mut all = vec!["profile", "--json"];
    all.extend_from_slice(args);
    let out = loupe(&all, data).output().unwrap();
    assert!(out.status.success(), "loupe profile: {}", String::from_utf8_lossy(&out.stderr));
    loupe_api::formats::deep_json::from_slice(&out.stdout).unwrap()
}

/// A binary's GNU build ID, in hex (`readelf -n`).
pub fn build_id(binary: &Path) -> String {
    let out = Command::new("readelf").arg("-n").arg(binary).output().expect("readelf (binutils)");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.contains("Build ID:")).expect("a build ID note");
    line.split_whitespace().last().unwrap().to_string()
}
