//! The function probes on a real kernel, below the query host: a small C program calls two
//! functions a known number of times; the probes must count every call, time the nested one
//! inside the outer one, and leave nothing attached once dropped.

use std::{
    io::{BufRead, BufReader, Write},
    path::Path,
    process::{Command, Stdio},
    time::Duration,
};

use loupe_bpf::{FunctionProbeOptions, FunctionProbes, LinkKind, ProbePoint, RawCall};

const PROGRAM: &str = r#"
#include <stdio.h>
#include <time.h>
__attribute__((noinline, used)) long inner(long x) { asm volatile("" ::: "memory"); return x * 3 + 1; }
__attribute__((noinline, used)) long outer(long x) {
    struct timespec t = {0, 20000}; nanosleep(&t, 0);
    long s = 0; for (int i = 0; i < 3; i++) s += inner(x + i); return s;
}
int main(void) {
    char line[64];
    printf("ready\n"); fflush(stdout);
    long s = 0;
    while (fgets(line, sizeof line, stdin)) { for (int i = 0; i < 1000; i++) s += outer(i); printf("done %ld\n", s); fflush(stdout); }
    return 0;
}
"#;

fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    assert!(std::env::var_os("CI").is_none(), "probes_kernel needs root, and CI must run it as root");
    eprintln!("SKIP probes_kernel: needs root (uprobes)");
    false
}

/// The file offset of a symbol: its address minus its section's address plus the section's offset.
fn file_offset(exe: &Path, symbol: &str) -> u64 {
    let out = Command::new("objdump").args(["-t", "-h"]).arg(exe).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let addr = text
        .lines()
        .find(|l| l.split_whitespace().last() == Some(symbol) && l.contains(" F "))
        .map(|l| u64::from_str_radix(l.split_whitespace().next().unwrap(), 16).unwrap())
        .unwrap();
    let text_section = text.lines().find(|l| l.split_whitespace().nth(1) == Some(".text")).unwrap();
    let f: Vec<&str> = text_section.split_whitespace().collect();
    let (vma, off) = (u64::from_str_radix(f[3], 16).unwrap(), u64::from_str_radix(f[5], 16).unwrap());
    addr - vma + off
}

#[test]
fn session_links_count_time_nest_and_detach() {
    if root() {
        count_time_nest_and_detach(LinkKind::Session);
    }
}

#[test]
fn perf_event_uprobes_count_time_nest_and_detach() {
    if root() {
        count_time_nest_and_detach(LinkKind::PerfEvent);
    }
}

/// Both tests load programs and count them in the kernel: one at a time.
static KERNEL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn count_time_nest_and_detach(kind: LinkKind) {
    let _one = KERNEL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("p.c");
    std::fs::write(&src, PROGRAM).unwrap();
    let exe = dir.path().join("p");
    let ok = Command::new("cc")
        .args(["-O2", "-fno-omit-frame-pointer", "-fcf-protection=none", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .unwrap();
    assert!(ok.success());
    let mut child = Command::new(&exe).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n");
    let pid = child.id();
    let file = std::path::PathBuf::from(format!("/proc/{pid}/exe"));
    let point = |name: &str| ProbePoint { file: file.clone(), file_offset: file_offset(&exe, name), name: name.into() };
    let mut probes = FunctionProbes::attach(&FunctionProbeOptions {
        functions: vec![point("outer"), point("inner")],
        pids: vec![pid],
        sample_every: 1,
        record_calls: true,
        links: Some(kind),
        count_only: false,
    })
    .unwrap();
    assert_eq!(probes.link_kind(), kind);
    assert_eq!(probes.attachments(), 4);
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"go\n").unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    assert!(line.starts_with("done"), "{line}");
    let mut calls: Vec<RawCall> = Vec::new();
    while probes.drain_calls(&mut calls, Duration::from_millis(100)) > 0 {}
    let totals = probes.totals().unwrap();
    assert_eq!(totals[0].calls, 1000);
    assert_eq!(totals[1].calls, 3000);
    assert_eq!(totals[0].timed, 1000);
    assert_eq!(totals[1].timed, 3000);
    assert_eq!(totals[1].buckets.iter().map(|b| b.1).sum::<u64>(), 3000);
    // outer sleeps 20 µs: its shortest call cannot be shorter.
    assert!(totals[0].total_ns / 1000 >= 20_000, "{:?}", totals[0]);
    assert_eq!(calls.len(), 4000);
    assert!(calls.iter().all(|c| c.pid == pid && (c.function == 0) == (c.depth == 0)));
    // Each inner call lies inside an outer call of its thread.
    let outers: Vec<&RawCall> = calls.iter().filter(|c| c.function == 0).collect();
    for c in calls.iter().filter(|c| c.function == 1) {
        assert!(outers.iter().any(|o| o.entry_unix_ns <= c.entry_unix_ns && c.exit_unix_ns <= o.exit_unix_ns));
    }
    // Sampling: 1 in 10 outermost calls timed, their children with them; every call counted.
    probes.set_sample_every(10).unwrap();
    stdin.write_all(b"go\n").unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    let after = probes.totals().unwrap();
    assert_eq!(after[0].calls, 2000);
    let timed = after[0].timed - 1000;
    assert!((40..=180).contains(&timed), "1 in 10 of 1000 timed: {timed}");
    assert_eq!(after[1].timed - 3000, 3 * timed);
    assert_eq!(probe_programs(), if kind == LinkKind::Session { 1 } else { 2 });
    drop(probes);
    // The kernel frees a closed program after an RCU grace period.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while probe_programs() > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(probe_programs(), 0, "programs still loaded after drop");
    drop(stdin);
    child.wait().unwrap();
}

/// How many of Loupe's probe programs the kernel holds (its list of loaded programs).
fn probe_programs() -> usize {
    aya::programs::loaded_programs()
        .filter_map(Result::ok)
        .filter(|p| p.name_as_str().is_some_and(|n| n.starts_with("loupe_fn_")))
        .count()
}
