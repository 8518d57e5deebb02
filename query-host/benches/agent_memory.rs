//! What an idle agent is charged for memory, as its cgroup counts it: the figure `MemoryMax=`
//! enforces, which RSS is not. RSS leaves out the BPF maps' kernel memory (charged to the cgroup
//! of the process that made them, since Linux 5.11) and the page cache the agent's files fill,
//! and it falls when code pages are paged out while the cgroup's charge for them may not.
//!
//! `loupe agent --frequency 10 --no-http` (stacks at 10 Hz, the timeline on, no runs) starts
//! inside a memory cgroup of its own — cgroup v2 where its memory controller is enabled, else
//! v1's memory hierarchy (this machine's layout is hybrid: v2's unified tree has no controllers)
//! — and runs `LOUPE_BENCH_SECONDS` (default 60). Every 250 ms the cgroup's usage is read. It
//! prints the peak (the cgroup's own high-water mark), the steady charge (the mean of the last
//! 10 s) split into anonymous, file and kernel memory at the end, and beside them the process's
//! VmRSS and VmHWM, and whether the agent parsed its own binary's unwind table in the window
//! (the largest transient it has, parsed only once a sample of the agent itself arrives: with it
//! the peak was 108 MiB, without it 41). Each is also a `BENCH` line against the bound the agent
//! is to hold (32 MiB steady, 64 MiB peak: the limits a package's unit will set). Each agent
//! starts with its binary out of the page cache, as at boot, so reading it is charged to it;
//! the block device's read-ahead (`read_ahead_kb`, printed) decides how much that is. A second
//! idle agent runs with `LOUPE_KEEP_START_UP_PAGES` (no read-ahead advice, no page-out): what
//! those save, in the same run.
//!
//! `cargo bench -p loupe-query-host --bench agent_memory` (root).

use std::{
    fs,
    process::{Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use loupe_testbed::{cgroup::MemoryCgroup, programs::Programs};

const MIB: f64 = 1024.0 * 1024.0;
const STEADY_BOUND_MIB: f64 = 32.0;
const PEAK_BOUND_MIB: f64 = 64.0;

fn status_kb(pid: u32, key: &str) -> u64 {
    loupe_testbed::sampling::process_status_kb(pid, key).unwrap_or(0)
}

fn bench(name: &str, mib: f64, bound: f64) {
    println!(r#"BENCH {{"name": "{name}", "value": {mib:.2}, "unit": "MiB", "baseline": {bound:.1}}}"#);
}

/// What one agent was charged.
struct Charged {
    peak: u64,
    steady: f64,
    anon: u64,
    file: u64,
    kernel: u64,
    rss_kb: u64,
    hwm_kb: u64,
    v2: bool,
    /// Whether the agent parsed its own binary's unwind table (it does once a sample of itself
    /// arrives): the largest transient it has, and what decides the peak.
    own_table: bool,
}

/// Runs an agent for `seconds` inside a memory cgroup of its own; `None` if there is no memory
/// controller to make one in.
fn measure(seconds: u64, keep_start_up_pages: bool) -> Option<Charged> {
    let cgroup = MemoryCgroup::make(&format!("loupe-bench-{}", std::process::id()))?;
    evict_from_page_cache(env!("CARGO_BIN_EXE_loupe"));
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_loupe"));
    command
        .args(["agent", "--frequency", "10", "--no-http", "--data-dir"])
        .arg(dir.path())
        .env("RUST_LOG", "error")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    if keep_start_up_pages {
        command.env("LOUPE_KEEP_START_UP_PAGES", "1");
    }
    cgroup.join_on_spawn(&mut command);
    let mut agent = command.spawn().expect("loupe agent starts");
    let pid = agent.id();
    let began = Instant::now();
    let mut series = Vec::new();
    let mut hwm_kb = 0;
    while began.elapsed() < Duration::from_secs(seconds) {
        thread::sleep(Duration::from_millis(250));
        if let Ok(Some(status)) = agent.try_wait() {
            panic!("the agent exited early: {status}");
        }
        series.push((began.elapsed(), cgroup.usage()));
        hwm_kb = hwm_kb.max(status_kb(pid, "VmHWM:"));
    }
    let (anon, file, kernel) = cgroup.split();
    let rss_kb = status_kb(pid, "VmRSS:");
    let peak = cgroup.peak().unwrap_or_else(|| series.iter().map(|s| s.1).max().unwrap_or(0));
    let tail: Vec<u64> =
        series.iter().filter(|s| s.0 + Duration::from_secs(10) >= began.elapsed()).map(|s| s.1).collect();
    let steady = tail.iter().sum::<u64>() as f64 / tail.len().max(1) as f64;
    // SAFETY: kill(2) on the child we spawned.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let _ = agent.wait();
    let own_table =
        own_build_id().is_some_and(|id| dir.path().join("unwind-tables").join(format!("{id}.unwind")).exists());
    Some(Charged { peak, steady, anon, file, kernel, rss_kb, hwm_kb, v2: cgroup.v2(), own_table })
}

/// Drops a file's cached pages (those no process maps), so that the agent reads its binary as
/// it does when it starts at boot and is charged for it: otherwise whoever read the pages first
/// (the build, an agent of an earlier measurement whose cgroup is gone) keeps the charge, and
/// the figure depends on the order benches ran in.
fn evict_from_page_cache(path: &str) {
    use std::os::fd::AsRawFd;
    let Ok(file) = fs::File::open(path) else { return };
    // SAFETY: advice on a file we opened; cached clean pages are dropped, no data changes.
    unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
}

/// The read-ahead window of the device a file lies on (`/sys/class/bdi/MAJ:MIN`), in KiB.
fn read_ahead_kb(path: &str) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    let dev = fs::metadata(path).ok()?.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    fs::read_to_string(format!("/sys/class/bdi/{major}:{minor}/read_ahead_kb")).ok()?.trim().parse().ok()
}

/// The `loupe` binary's build ID, the name its unwind table is kept under.
fn own_build_id() -> Option<String> {
    let file = fs::File::open(env!("CARGO_BIN_EXE_loupe")).ok()?;
    loupe_unwind::Binary::read(&object::ReadCache::new(file)).ok()?.build_id_hex()
}

fn report(case: &str, what: &str, seconds: u64, c: &Charged) {
    println!("agent_memory, {what} ({}), {seconds} s:", if c.v2 { "cgroup v2" } else { "cgroup v1 memory" });
    println!(
        "  charged: peak {:.1} MiB (bound {PEAK_BOUND_MIB}), steady {:.1} MiB (mean of the last 10 s; bound {STEADY_BOUND_MIB})",
        c.peak as f64 / MIB,
        c.steady / MIB
    );
    println!(
        "  at the end: anon {:.1} MiB, file {:.1} MiB, kernel {:.1} MiB (BPF maps among it)",
        c.anon as f64 / MIB,
        c.file as f64 / MIB,
        c.kernel as f64 / MIB
    );
    println!("  the process: VmRSS {:.1} MiB, VmHWM {:.1} MiB", c.rss_kb as f64 / 1024.0, c.hwm_kb as f64 / 1024.0);
    println!(
        "  its own unwind table {} (it is parsed once a sample of the agent itself arrives)",
        if c.own_table { "was parsed in the window" } else { "was not parsed" }
    );
    bench(&format!("agent_cgroup_peak_{case}"), c.peak as f64 / MIB, PEAK_BOUND_MIB);
    bench(&format!("agent_cgroup_steady_{case}"), c.steady / MIB, STEADY_BOUND_MIB);
    bench(&format!("agent_cgroup_anon_{case}"), c.anon as f64 / MIB, STEADY_BOUND_MIB);
    bench(&format!("agent_cgroup_file_{case}"), c.file as f64 / MIB, STEADY_BOUND_MIB);
    bench(&format!("agent_cgroup_kernel_{case}"), c.kernel as f64 / MIB, STEADY_BOUND_MIB);
    println!(r#"BENCH {{"name": "agent_rss_{case}", "value": {:.2}, "unit": "MiB"}}"#, c.rss_kb as f64 / 1024.0);
    println!(r#"BENCH {{"name": "agent_hwm_{case}", "value": {:.2}, "unit": "MiB"}}"#, c.hwm_kb as f64 / 1024.0);
}

fn main() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("SKIP agent_memory bench: needs root (a cgroup of its own, eBPF)");
        return;
    }
    let seconds: u64 = std::env::var("LOUPE_BENCH_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(60);
    let Some(idle) = measure(seconds, false) else {
        println!("SKIP agent_memory bench: no memory cgroup controller (v2 or v1) to make a cgroup in");
        return;
    };
    if let Some(kb) = read_ahead_kb(env!("CARGO_BIN_EXE_loupe")) {
        println!("agent_memory: the binary's device reads ahead {kb} KiB (what a fault of an uncached page reads)");
    }
    report("idle", "an idle agent (stacks at 10 Hz, timeline) in a cgroup of its own", seconds, &idle);
    // The same agent leaving its start-up pages as they are (no read-ahead advice, no page-out):
    // what those save, in this run.
    let kept = measure(seconds, true).expect("the cgroup made for the idle agent can be made again");
    report("idle_pages_kept", "the same with LOUPE_KEEP_START_UP_PAGES (start-up pages left)", seconds, &kept);
    println!(
        "agent_memory: leaving start-up pages costs the idle agent {:+.1} MiB steady ({:+.1} MiB of file pages)",
        (kept.steady - idle.steady) / MIB,
        (kept.file as f64 - idle.file as f64) / MIB
    );
    let dir = tempfile::tempdir().unwrap();
    let Some(programs) = Programs::build(dir.path(), 40) else {
        println!("SKIP agent_memory busy host: cc cannot build the 40 programs");
        return;
    };
    let running = programs.run(300);
    let charged = measure(seconds, false);
    drop(running);
    let busy_host = charged.expect("the cgroup made for the idle agent can be made again");
    report("busy_host", "the same beside 300 processes of 40 distinct binaries", seconds, &busy_host);
}
