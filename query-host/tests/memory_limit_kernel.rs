//! The agent under the memory limit an operator's unit sets (`MemoryMax=64M`), on a busy host:
//! 300 processes of 40 distinct binaries, whose unwind tables it parses and whose frames it
//! names. For 60 s (`LOUPE_TEST_SECONDS`) it keeps sampling at 10 Hz inside a memory cgroup
//! limited to 64 MiB: the cgroup records no OOM and no kill, the agent exits cleanly when asked,
//! and every sample it took was stored (the kernel's count of samples lost is 0, and the stored
//! count is what the sampler's ticks give). The 10-minute version: `LOUPE_TEST_SECONDS=600 cargo
//! test --release -p loupe-query-host --test memory_limit_kernel -- --nocapture`.

use std::{
    process::{Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use loupe_testbed::{cgroup::MemoryCgroup, programs::Programs, require_root};

const LOUPE: &str = env!("CARGO_BIN_EXE_loupe");
const LIMIT: u64 = 64 << 20;
const HZ: f64 = 10.0;

#[test]
fn the_agent_holds_under_memory_max_64m_beside_300_processes() {
    require_root!();
    let Some(cgroup) = MemoryCgroup::make(&format!("loupe-test-{}", std::process::id())) else {
        assert!(std::env::var_os("CI").is_none(), "CI must offer a memory cgroup (v2 or v1's memory hierarchy)");
        eprintln!("SKIP the_agent_holds_under_memory_max_64m: no memory cgroup controller to make a cgroup in");
        return;
    };
    cgroup.limit(LIMIT).expect("setting the cgroup's limit");
    let dir = tempfile::tempdir().unwrap();
    let programs = Programs::build(dir.path(), 40).expect("cc builds the 40 programs");
    let running = programs.run(300);
    let data = dir.path().join("data");
    let log = dir.path().join("agent.log");
    let seconds: u64 = std::env::var("LOUPE_TEST_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(60);
    let mut command = Command::new(LOUPE);
    command
        .args(["agent", "--frequency", "10", "--no-http", "--data-dir"])
        .arg(&data)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    cgroup.join_on_spawn(&mut command);
    let began = Instant::now();
    let mut agent = command.spawn().expect("loupe agent starts");
    let mut most = 0u64;
    while began.elapsed() < Duration::from_secs(seconds) {
        thread::sleep(Duration::from_millis(250));
        if let Some(status) = agent.try_wait().unwrap() {
            panic!(
                "the agent exited under the limit ({status}); cgroup {:?}; its log:\n{}",
                cgroup.ooms(),
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        most = most.max(cgroup.usage());
    }
    let wall = began.elapsed().as_secs_f64();
    let (anon, file, kernel) = cgroup.split();
    // SAFETY: kill(2) on the child we spawned.
    unsafe { libc::kill(agent.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = agent.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the agent did not exit within 60 s of SIGTERM");
        thread::sleep(Duration::from_millis(50));
    };
    drop(running);
    let (oom, oom_kill) = cgroup.ooms();
    let log_text = std::fs::read_to_string(&log).unwrap_or_default();
    eprintln!(
        "under {} MiB ({}): most seen {:.1} MiB (the cgroup's own mark {:?}), before the stop anon {:.1} file {:.1} kernel {:.1} MiB; oom {oom:?}, oom_kill {oom_kill}",
        LIMIT >> 20,
        if cgroup.v2() { "cgroup v2" } else { "cgroup v1" },
        most as f64 / 1048576.0,
        cgroup.peak().map(|p| format!("{:.1} MiB", p as f64 / 1048576.0)),
        anon as f64 / 1048576.0,
        file as f64 / 1048576.0,
        kernel as f64 / 1048576.0,
    );
    assert!(status.success(), "the agent exited with {status}; its log:\n{log_text}");
    assert_eq!(oom_kill, 0, "the kernel killed in the agent's cgroup; its log:\n{log_text}");
    assert!(oom.unwrap_or(0) == 0, "the agent's cgroup ran out of memory {oom:?} times");

    // Every sample taken was stored: none lost, and as many as the ticks give.
    let out = Command::new(LOUPE).args(["profile", "--json", "--idle", "--data-dir"]).arg(&data).output().unwrap();
    assert!(out.status.success(), "loupe profile: {}", String::from_utf8_lossy(&out.stderr));
    let all: serde_json::Value = loupe_api::formats::deep_json::from_slice(&out.stdout).unwrap();
    let cpus = thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let ticks = HZ * cpus * wall;
    let (samples, lost) = (all["samples"].as_u64().unwrap(), all["lost"].as_u64().unwrap());
    eprintln!("{samples} samples stored, {lost} lost, of ~{ticks:.0} ticks");
    assert_eq!(lost, 0, "samples lost under the limit; the agent's log:\n{log_text}");
    assert!(!log_text.contains("lost"), "the agent logged a loss:\n{log_text}");
    // The lower bound only: start-up and the last tick's edge take a few; a sampler that stalled
    // for a third of the window, or missed a CPU, falls below.
    assert!(samples as f64 >= 0.6 * ticks, "{samples} samples stored of ~{ticks:.0} ticks");
    // And the busy host's programs were among them, their stacks unwound.
    let out = Command::new(LOUPE)
        .args(["profile", "--json", "--comm", loupe_testbed::programs::COMM, "--data-dir"])
        .arg(&data)
        .output()
        .unwrap();
    let programs_view: serde_json::Value = loupe_api::formats::deep_json::from_slice(&out.stdout).unwrap();
    let stacks = &programs_view["user_stacks"];
    eprintln!("the programs' user stacks: {stacks}");
    assert!(stacks["samples"].as_u64().unwrap() > 0, "no sample of the 300 processes: {stacks}");
    assert!(stacks["whole"].as_u64().unwrap() > 0, "no whole stack of the 300 processes: {stacks}");
}
