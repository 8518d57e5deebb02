//! What the always-on stack sampler costs: a `loupe agent` sampling stacks at 10 Hz on every CPU
//! (no traffic runs), measured from outside through /proc: CPU seconds per wall second after a
//! warm-up (first-time symbolization of the host's binaries is excluded), and peak RSS; and
//! per thread, CPU and how often it ran (`schedstat`), which says where the cost goes.
//!
//! Five agents in turn: on an idle host, with user stacks unwound from the binaries' tables
//! (the default), the same sampling itself too (`--sample-self`), and by frame pointers only
//! (`--no-unwind-tables`, the baseline of the first);
//! and while a process keeps one CPU busy in a libc
//! function that only libc's debug file names, with `--no-debug-files` and with debug files
//! looked up (their ratio is what naming frames from debug files costs). CPU per sample divides
//! by the samples the agent stored in the window (idle ones included).
//!
//! Then two more beside `waits naps 20` (20 threads napping 1 ms at a time, ~20,000 context
//! switches a second): with `--off-cpu` (its defaults) and without. The difference is what
//! taking waits costs the agent (draining, naming and storing them); the kernel's part, the
//! `sched_switch` program's run time on the switching CPUs, is read through `bpftool` with the
//! kernel's run-time accounting on, and the two add up to the whole cost.
//!
//! Then two beside eight Python processes: with CPython's frames walked (the default) and
//! without (`--no-python-frames`): the agent's CPU and the CPU sampler's kernel run time.
//!
//! `cargo bench -p loupe-query-host --bench agent_cost` (root; `LOUPE_BENCH_SECONDS`, default 60;
//! `LOUPE_BENCH_ONLY=idle`, `off_cpu` or `python` runs that pair alone).

use std::{
    fs,
    process::{Command, Stdio},
    thread,
    time::{Duration, Instant},
};

fn cpu_seconds(pid: u32) -> f64 {
    loupe_testbed::sampling::process_cpu_seconds(pid).expect("agent alive")
}

fn status_kb(pid: u32, key: &str) -> u64 {
    loupe_testbed::sampling::process_status_kb(pid, key).expect("agent alive")
}

/// Per thread name: CPU nanoseconds and times it ran (`/proc/PID/task/*/schedstat`: exact,
/// where `stat`'s ticks are 10 ms).
fn threads(pid: u32) -> std::collections::BTreeMap<String, (u64, u64)> {
    let mut out = std::collections::BTreeMap::new();
    for task in fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten().flatten() {
        let name = fs::read_to_string(task.path().join("comm")).unwrap_or_default().trim().to_string();
        let stat = fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
        let f: Vec<u64> = stat.split_whitespace().filter_map(|x| x.parse().ok()).collect();
        if let [ns, _, runs] = f[..] {
            let e = out.entry(name).or_insert((0, 0));
            e.0 += ns;
            e.1 += runs;
        }
    }
    out
}

/// Where an agent's resident memory is, from `/proc/PID/smaps` (KiB by kind of mapping), and
/// the kernel memory of the BPF maps it holds (their `memlock`, not part of RSS unless
/// mapped), which is the host's either way.
#[derive(Default)]
struct Resident {
    /// BPF maps mapped into the process (`anon_inode:bpf-map`: ring buffers, mmapable arrays).
    bpf_mapped_kb: u64,
    /// The `loupe` executable's own pages (code and read-only data touched so far).
    binary_kb: u64,
    /// Heap, thread stacks and anonymous mappings (malloc arenas, wasm memory, caches).
    anonymous_kb: u64,
    /// Other files (shared libraries, the store's files if mapped).
    files_kb: u64,
    /// Kernel memory of the BPF maps the agent holds.
    bpf_memlock_kb: u64,
}

fn resident(pid: u32) -> Resident {
    let exe = fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
    let smaps = fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap_or_default();
    let mut r = Resident::default();
    let mut kind: fn(&mut Resident) -> &mut u64 = |r| &mut r.anonymous_kb;
    for line in smaps.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // A mapping's first line: `start-end perms offset dev inode [path]`.
        if fields.first().is_some_and(|f| f.contains('-') && f.chars().all(|c| c.is_ascii_hexdigit() || c == '-')) {
            let path = fields.get(5..).map(|p| p.join(" ")).unwrap_or_default();
            kind = if path.contains("bpf-map") || path.contains("anon_inode:bpf") {
                |r| &mut r.bpf_mapped_kb
            } else if !path.is_empty() && std::path::Path::new(&path) == exe {
                |r| &mut r.binary_kb
            } else if path.is_empty() || path.starts_with('[') {
                |r| &mut r.anonymous_kb
            } else {
                |r| &mut r.files_kb
            };
        } else if fields.first() == Some(&"Rss:") {
            *kind(&mut r) += fields.get(1).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        }
    }
    // Each BPF map the agent holds is an fd whose fdinfo says its kernel memory (`memlock`);
    // a map held by two fds is counted twice (the agent holds each map once).
    for fd in fs::read_dir(format!("/proc/{pid}/fdinfo")).into_iter().flatten().flatten() {
        let info = fs::read_to_string(fd.path()).unwrap_or_default();
        if info.lines().any(|l| l.starts_with("map_type:")) {
            let memlock =
                info.lines().find_map(|l| l.strip_prefix("memlock:")).and_then(|v| v.trim().parse::<u64>().ok());
            r.bpf_memlock_kb += memlock.unwrap_or(0) / 1024;
        }
    }
    r
}

/// What one agent cost over the measured window.
struct Figures {
    cpu_share: f64,
    /// The `sched_switch` program's run time per wall second (0 unless off-CPU sampling ran).
    off_cpu_kernel_share: f64,
    /// The CPU sampler's (`loupe_stacks`, the native unwind and the Python walk) run time per
    /// wall second, with the kernel's run-time accounting on (0 otherwise).
    stacks_kernel_share: f64,
    /// Waits off the CPU the agent stored in the window.
    waits: u64,
    wall: f64,
    samples: u64,
    rss_kb: u64,
    hwm_kb: u64,
    resident: Resident,
    /// Per thread name: CPU µs per second and wakeups per second over the window.
    threads: Vec<(String, f64, f64)>,
}

/// Runs `loupe agent` (stacks only, 10 Hz) with `extra` arguments for a warm-up and then
/// `seconds`, optionally while `workload` (a program and its arguments, to which the seconds it
/// is to run are added) keeps the host busy.
fn measure(extra: &[&str], workload: Option<(&std::path::Path, &[&str])>, seconds: u64) -> Figures {
    let dir = tempfile::tempdir().unwrap();
    let mut agent = Command::new(env!("CARGO_BIN_EXE_loupe"))
        .args(["agent", "--frequency", "10", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .args(extra)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let pid = agent.id();
    let warmup = Duration::from_secs(12); // one batch written, the host's binaries symbolized once
    let mut busy = workload.map(|(w, args)| {
        let secs = (warmup.as_secs() + seconds + 5).to_string();
        Command::new(w).args(args).arg(&secs).stdout(Stdio::null()).spawn().unwrap()
    });
    thread::sleep(warmup);
    let (off_cpu0, stacks0) = (program_ns("loupe_off_cpu"), program_ns("loupe_stacks"));
    let (cpu0, t0, from, threads0) = (cpu_seconds(pid), Instant::now(), now_ns(), threads(pid));
    thread::sleep(Duration::from_secs(seconds));
    let (cpu1, wall, to, threads1) = (cpu_seconds(pid), t0.elapsed().as_secs_f64(), now_ns(), threads(pid));
    let off_cpu_kernel_share = program_ns("loupe_off_cpu").saturating_sub(off_cpu0) as f64 / 1e9 / wall;
    let stacks_kernel_share = program_ns("loupe_stacks").saturating_sub(stacks0) as f64 / 1e9 / wall;
    let threads = threads1
        .iter()
        .map(|(name, &(ns, runs))| {
            let (ns0, runs0) = threads0.get(name).copied().unwrap_or((0, 0));
            (name.clone(), ns.saturating_sub(ns0) as f64 / 1e3 / wall, runs.saturating_sub(runs0) as f64 / wall)
        })
        .filter(|t| t.2 > 0.0)
        .collect();
    let rss_kb = status_kb(pid, "VmRSS:");
    let hwm_kb = status_kb(pid, "VmHWM:");
    let resident = resident(pid);
    // SAFETY: kill(2) on the child we spawned.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let _ = agent.wait();
    if let Some(b) = busy.as_mut() {
        let _ = b.kill();
        let _ = b.wait();
    }
    // Samples the agent stored in the window (idle ones too: each cost the same to take).
    let out = Command::new(env!("CARGO_BIN_EXE_loupe"))
        .args(["profile", "--json", "--idle", "--from", &from.to_string(), "--to", &to.to_string(), "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let view: serde_json::Value = loupe_api::formats::deep_json::from_slice(&out.stdout).unwrap_or_default();
    let waits = if extra.contains(&"--off-cpu") {
        let out = Command::new(env!("CARGO_BIN_EXE_loupe"))
            .args([
                "profile",
                "--json",
                "--off-cpu",
                "--from",
                &from.to_string(),
                "--to",
                &to.to_string(),
                "--data-dir",
            ])
            .arg(dir.path())
            .output()
            .unwrap();
        let view: serde_json::Value = loupe_api::formats::deep_json::from_slice(&out.stdout).unwrap_or_default();
        view["samples"].as_u64().unwrap_or(0)
    } else {
        0
    };
    Figures {
        off_cpu_kernel_share,
        stacks_kernel_share,
        waits,
        cpu_share: (cpu1 - cpu0) / wall,
        wall,
        samples: view["samples"].as_u64().unwrap_or(0),
        rss_kb,
        hwm_kb,
        resident,
        threads,
    }
}

/// The off-CPU tracepoint program's total run time so far, in ns (`bpftool prog show`, with the
/// kernel's run-time accounting on; 0 when no such program is loaded or bpftool is missing).
/// A kernel program's total run time (`bpftool`; 0 unless `kernel.bpf_stats_enabled`).
fn program_ns(name: &str) -> u64 {
    let Ok(out) = Command::new("bpftool").args(["prog", "show", "name", name, "--json"]).output() else {
        return 0;
    };
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let progs = if v.is_array() { v.as_array().cloned().unwrap_or_default() } else { vec![v] };
    progs.iter().filter_map(|p| p["run_time_ns"].as_u64()).sum()
}

fn now_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
}

fn report(name: &str, what: &str, f: &Figures) {
    let per_sample_us = if f.samples == 0 { 0.0 } else { f.cpu_share * f.wall * 1e6 / f.samples as f64 };
    println!(
        "agent_cost: {what}: {:.3} % of one core (±{:.3} %: /proc ticks are 10 ms), {} samples = {per_sample_us:.0} µs of agent CPU per sample, RSS {} KiB (peak {} KiB)",
        f.cpu_share * 100.0,
        1.0 / f.wall,
        f.samples,
        f.rss_kb,
        f.hwm_kb
    );
    for (thread, us, wakeups) in &f.threads {
        println!("agent_cost:   thread {thread:<16} {us:>7.1} µs of CPU/s, {wakeups:>5.1} runs/s");
    }
    let exact: f64 = f.threads.iter().map(|t| t.1).sum::<f64>() / 1e4;
    println!("agent_cost:   all threads (schedstat, exact): {exact:.3} % of one core");
    println!(r#"BENCH {{"name": "agent_cpu_{name}", "value": {:.5}, "unit": "% of one core"}}"#, f.cpu_share * 100.0);
    println!(r#"BENCH {{"name": "agent_cpu_exact_{name}", "value": {exact:.5}, "unit": "% of one core"}}"#);
    println!(r#"BENCH {{"name": "agent_cpu_per_sample_{name}", "value": {per_sample_us:.1}, "unit": "us"}}"#);
    let r = &f.resident;
    println!(
        "agent_cost:   resident: BPF maps mapped {} KiB, the loupe binary {} KiB, heap and anonymous {} KiB, \
         other files {} KiB; beside it, the kernel's BPF maps held {} KiB (memlock, not in RSS unless mapped)",
        r.bpf_mapped_kb, r.binary_kb, r.anonymous_kb, r.files_kb, r.bpf_memlock_kb
    );
    println!(r#"BENCH {{"name": "agent_rss_{name}", "value": {}, "unit": "KiB"}}"#, f.rss_kb);
    for (part, kb) in
        [("bpf_mapped", r.bpf_mapped_kb), ("binary", r.binary_kb), ("anonymous", r.anonymous_kb), ("files", r.files_kb)]
    {
        println!(r#"BENCH {{"name": "agent_rss_{name}_{part}", "value": {kb}, "unit": "KiB"}}"#);
    }
    println!(r#"BENCH {{"name": "agent_bpf_memlock_{name}", "value": {}, "unit": "KiB"}}"#, r.bpf_memlock_kb);
}

fn main() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("SKIP agent_cost bench: needs root");
        return;
    }
    let seconds: u64 = std::env::var("LOUPE_BENCH_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(60);
    println!(
        "agent_cost: stacks at 10 Hz on {} CPUs, {seconds} s each after a 12 s warm-up, HTTP server idle",
        num_cpus()
    );
    let only = std::env::var("LOUPE_BENCH_ONLY").unwrap_or_default();
    let dir = tempfile::tempdir().unwrap();
    if only == "idle" {
        idle(seconds);
        return;
    }
    if only.is_empty() && !stacks(&dir, seconds) {
        return;
    }
    if only.is_empty() || only == "off_cpu" {
        off_cpu(&dir, seconds);
    }
    if only.is_empty() || only == "python" {
        python(&dir, seconds);
    }
}

/// Eight Python processes (Debian's python3.11 running `pyhot.py`, 13-frame Python stacks),
/// the agent with CPython's frames walked and without (`--no-python-frames`): what walking and
/// naming them costs, the agent's part and the kernel's.
fn python(dir: &tempfile::TempDir, seconds: u64) {
    let pyhot = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testbed/fixtures/pyhot.py");
    if !std::path::Path::new("/usr/bin/python3.11").exists() {
        println!("SKIP agent_cost Python comparison: no /usr/bin/python3.11");
        return;
    }
    let eight = dir.path().join("eight-pythons.sh");
    let script = format!(
        "for i in 1 2 3 4 5 6 7 8; do /usr/bin/python3.11 {} \"$1\" >/dev/null & done; wait\n",
        pyhot.display()
    );
    fs::write(&eight, script).unwrap();
    const STATS: &str = "/proc/sys/kernel/bpf_stats_enabled";
    let stats_before = fs::read_to_string(STATS).unwrap_or_else(|_| "0".into());
    let _ = fs::write(STATS, "1");
    let sh = std::path::Path::new("/bin/sh");
    let args: [&str; 1] = [eight.to_str().unwrap()];
    let without = measure(&["--no-python-frames"], Some((sh, &args)), seconds);
    report("python_8_no_frames", "8 Python processes, --no-python-frames", &without);
    let with = measure(&[], Some((sh, &args)), seconds);
    report("python_8_frames", "8 Python processes, CPython frames walked", &with);
    let _ = fs::write(STATS, stats_before.trim());
    let agent = with.cpu_share - without.cpu_share;
    let kernel = with.stacks_kernel_share - without.stacks_kernel_share;
    println!(
        "agent_cost: CPython frames at 10 Hz beside 8 Python processes: {:+.3} % of a core in all = {:+.3} % the \
         agent (naming, interleaving) {:+.3} % the kernel program (with: {:.3} % agent + {:.3} % kernel; without: \
         {:.3} % + {:.3} %)",
        (agent + kernel) * 100.0,
        agent * 100.0,
        kernel * 100.0,
        with.cpu_share * 100.0,
        with.stacks_kernel_share * 100.0,
        without.cpu_share * 100.0,
        without.stacks_kernel_share * 100.0
    );
    println!(
        r#"BENCH {{"name": "python_frames_core_percent", "value": {:.4}, "unit": "%", "baseline": {:.4}}}"#,
        (with.cpu_share + with.stacks_kernel_share) * 100.0,
        (without.cpu_share + without.stacks_kernel_share) * 100.0
    );
}

/// The idle host as the agent sees it by default (leaving itself out) and sampling itself too
/// (`--sample-self`): on an idle host most of what there is to sample is the agent.
fn idle(seconds: u64) -> Figures {
    let idle = measure(&[], None, seconds);
    report("idle_host", "idle host", &idle);
    let with_self = measure(&["--sample-self"], None, seconds);
    report("idle_host_sample_self", "idle host, --sample-self", &with_self);
    compare("sample_self", "sampling itself too / leaving itself out, idle host", &with_self, &idle, "default");
    idle
}

/// The idle host with and without unwind tables, and debug files on and off beside a libc
/// loop; false when the loop cannot be built.
fn stacks(dir: &tempfile::TempDir, seconds: u64) -> bool {
    let idle = idle(seconds);
    // The same idle host with user stacks walked by frame pointers only: what unwinding from
    // the binaries' tables adds (loading them, the loader thread, the longer kernel walk).
    let frame_pointers = measure(&["--no-unwind-tables"], None, seconds);
    report("idle_host_frame_pointers_only", "idle host, --no-unwind-tables", &frame_pointers);
    compare(
        "unwind_tables",
        "unwinding from tables / frame pointers only, idle host",
        &idle,
        &frame_pointers,
        "--no-unwind-tables",
    );
    // A process spending its time in libc, whose hot function only libc's debug file names:
    // the agent's cost with and without looking for debug files.
    let names = dir.path().join("names");
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testbed/fixtures/names.c");
    let ok = Command::new("cc").args(["-O2", "-fno-omit-frame-pointer", "-o"]).arg(&names).arg(&src).status();
    if !ok.is_ok_and(|s| s.success()) {
        println!("SKIP agent_cost debug-file comparison: cc cannot build {}", src.display());
        return false;
    }
    let off = measure(&["--no-debug-files"], Some((&names, &["libc"])), seconds);
    report("libc_busy_no_debug_files", "one CPU busy in libc, --no-debug-files", &off);
    let on = measure(&[], Some((&names, &["libc"])), seconds);
    report("libc_busy_debug_files", "one CPU busy in libc, debug files looked up", &on);
    compare("debug_files", "debug-file lookup on / off", &on, &off, "--no-debug-files");
    true
}

/// Off-CPU sampling beside ~20,000 context switches a second: the agent's part and the
/// kernel's.
fn off_cpu(dir: &tempfile::TempDir, seconds: u64) {
    let waits = dir.path().join("waits");
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testbed/fixtures/waits.c");
    let ok = Command::new("cc").args(["-O2", "-pthread", "-o"]).arg(&waits).arg(&src).status();
    if !ok.is_ok_and(|s| s.success()) {
        println!("SKIP agent_cost off-CPU comparison: cc cannot build {}", src.display());
        return;
    }
    const STATS: &str = "/proc/sys/kernel/bpf_stats_enabled";
    let stats_before = fs::read_to_string(STATS).unwrap_or_else(|_| "0".into());
    let _ = fs::write(STATS, "1");
    let naps: &[&str] = &["naps", "20"];
    let without = measure(&[], Some((&waits, naps)), seconds);
    report("naps_no_off_cpu", "20 threads napping 1 ms, no off-CPU sampling", &without);
    let with = measure(&["--off-cpu"], Some((&waits, naps)), seconds);
    report("naps_off_cpu", "20 threads napping 1 ms, --off-cpu", &with);
    let _ = fs::write(STATS, stats_before.trim());
    let agent = (with.cpu_share - without.cpu_share).max(0.0);
    let kernel = with.off_cpu_kernel_share;
    println!(
        "agent_cost: off-CPU sampling at ~20,000 switches/s: {:.3} % of a core in all = {:.3} % the agent \
         (draining, naming and storing {} waits, {:.0} a second) + {:.3} % the kernel program",
        (agent + kernel) * 100.0,
        agent * 100.0,
        with.waits,
        with.waits as f64 / with.wall,
        kernel * 100.0
    );
    println!(
        r#"BENCH {{"name": "off_cpu_total_core_percent", "value": {:.4}, "unit": "%"}}"#,
        (agent + kernel) * 100.0
    );
    println!(r#"BENCH {{"name": "off_cpu_agent_core_percent", "value": {:.4}, "unit": "%"}}"#, agent * 100.0);
    println!(r#"BENCH {{"name": "off_cpu_kernel_core_percent", "value": {:.4}, "unit": "%"}}"#, kernel * 100.0);
}

/// Prints the CPU and RSS ratios of two agents, and the CPU ratio as a BENCH line.
fn compare(name: &str, what: &str, with: &Figures, baseline: &Figures, baseline_flag: &str) {
    let ratio = with.cpu_share / baseline.cpu_share.max(1e-9);
    println!("agent_cost: {what}: CPU {ratio:.2}x, RSS {:.2}x", with.rss_kb as f64 / baseline.rss_kb.max(1) as f64);
    println!(
        r#"BENCH {{"name": "agent_cpu_{name}_ratio", "value": {ratio:.3}, "unit": "ratio", "baseline": "{baseline_flag}"}}"#
    );
}

fn num_cpus() -> usize {
    thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}
