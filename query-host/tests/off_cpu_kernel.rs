//! Waits off the CPU on a real kernel, through the command line: `loupe sample --off-cpu` beside a
//! program whose two threads wait known times (one sleeping, one blocked on a pipe), then
//! `loupe profile --off-cpu`: each thread's time waited must be what it measured itself, and
//! stand under the function it waited in.

mod sampling;

use std::{
    collections::BTreeSet,
    io::{BufRead, BufReader, Read, Write},
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use loupe_testbed::require_root;
use loupe_unwind::Binary;
use sampling::*;
use serde_json::Value;

/// Whether every binary PID `pid` maps has its unwind table in the sampler's disk cache.
fn tables_on_disk(data: &Path, pid: &str) -> bool {
    let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else { return false };
    let files: BTreeSet<&str> = maps
        .lines()
        .filter(|l| l.split_whitespace().nth(1).is_some_and(|perms| perms.contains('x')))
        .filter_map(|l| l.split_whitespace().nth(5).filter(|p| p.starts_with('/')))
        .collect();
    files.into_iter().all(|file| {
        let id = std::fs::read(file).ok().and_then(|bytes| Binary::read(&bytes[..]).ok()?.build_id_hex());
        id.is_some_and(|id| data.join("unwind-tables").join(format!("{id}.unwind")).exists())
    })
}

fn total_of(view: &Value, name: &str) -> u64 {
    view["functions"].as_array().unwrap().iter().find(|f| f["name"] == name).map_or(0, |f| f["total"].as_u64().unwrap())
}

#[test]
fn each_thread_gets_the_time_it_waited_under_the_function_it_waited_in() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    let exe = build_fixture(dir.path(), "waits", "waits", &[]);
    let data = dir.path().join("data");
    // A cap no test machine reaches, so every wait is kept (the 1-in-N is the sampler's test).
    let sampler = start_sampling_ready(&data, 120.0, &["--off-cpu", "--off-cpu-max-per-second", "5000"]);
    // 40 sleeps of 25 ms; 5 pipe reads, each answered 100 ms after it began.
    let mut child =
        Command::new(&exe).args(["40", "25", "5", "100"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut pid = String::new();
    stdout.read_line(&mut pid).unwrap();
    // Blocked reading its stdin, the process has asked for its unwind tables (the off-CPU
    // program asks, as the CPU sampler does); its waits start once they are loaded, so the test
    // does not rest on how fast a loaded machine loads them.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !tables_on_disk(&data, pid.trim()) {
        assert!(Instant::now() < deadline, "the unwind tables of PID {pid} were not loaded within 60 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Written to disk as each binary is parsed; entered into the kernel's maps right after.
    std::thread::sleep(Duration::from_millis(500));
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert!(child.wait().unwrap().success());
    interrupt(&sampler);
    let out = finish(sampler);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("waits off the CPU stored"), "{said}");
    // "sleeper TID NS" and "pipe TID NS": what each thread measured itself.
    let measured = |thread: &str| -> u64 {
        let line = rest.lines().find(|l| l.starts_with(thread)).unwrap_or_else(|| panic!("{rest}"));
        line.split_whitespace().nth(2).unwrap().parse().unwrap()
    };
    for (comm, thread, function, waits) in
        [("loupe-sleeper", "sleeper", "loupe_sleeper", 40), ("loupe-piper", "pipe", "loupe_pipe_waiter", 5)]
    {
        let view = profile(&data, &["--off-cpu", "--pid", pid.trim(), "--comm", comm]);
        assert_eq!(view["kind"], "off_cpu");
        let (truth, waited) = (measured(thread), view["flamegraph"]["value"].as_u64().unwrap());
        // Through the function: unwound from the tables through libc's wrapper (a frame-pointer
        // walk would skip the function that called it).
        let (under, walked) = (total_of(&view, function), total_of(&view, "[frame-pointer walk]"));
        eprintln!(
            "{comm}: {} waits, {:.1} ms waited ({:.1} under {function}, {:.1} walked by frame pointers), measured {:.1} ms",
            view["samples"],
            waited as f64 / 1e6,
            under as f64 / 1e6,
            walked as f64 / 1e6,
            truth as f64 / 1e6
        );
        // Each wait once (a page fault read from disk on the way may add one).
        let sampled = view["samples"].as_u64().unwrap();
        assert!((waits..=waits + 2).contains(&sampled), "{comm}: {sampled} waits sampled, {waits} made");
        assert!(
            (waited as f64 - truth as f64).abs() <= 0.1 * truth as f64,
            "{comm}: {waited} ns waited, measured {truth}"
        );
        assert!(under >= waited * 9 / 10, "{comm}: {under} of {waited} ns under {function}");
    }
}
