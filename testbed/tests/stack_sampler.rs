//! The stack sampler's kernel side on its own: samples at the asked rate, who ran, raw frames,
//! and the in-kernel deny list (by PID and by cgroup subtree), before any symbolization.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use loupe_bpf::{DenyList, RawStack, StackSampler, StackSamplerOptions};
use loupe_testbed::require_root;

fn build_busy(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/busy.c");
    let out = dir.join("busy");
    let ok = Command::new("cc").args(["-O2", "-fno-omit-frame-pointer", "-pthread", "-o"]).arg(&out).arg(&src).status();
    assert!(ok.expect("running cc").success());
    out
}

/// The tests spin CPUs, and the rate test counts each spinning thread's samples against its
/// whole CPU: run alongside the deny-list test's spinners, its threads got half a CPU each
/// (~45 samples of 100). So they take turns.
static SPINNING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Drains until `until`, waiting up to `every` for samples between drains.
fn collect(sampler: &mut StackSampler, until: Instant, every: Duration) -> Vec<RawStack> {
    let mut all = Vec::new();
    while Instant::now() < until {
        sampler.drain(&mut all, every).unwrap();
    }
    sampler.drain(&mut all, Duration::ZERO).unwrap();
    all
}

#[test]
fn samples_each_busy_thread_at_the_asked_rate() {
    require_root!();
    let _turn = SPINNING.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let busy = build_busy(dir.path());
    let mut sampler = StackSampler::start(&StackSamplerOptions { frequency_hz: 50, ..Default::default() }).unwrap();
    let start = Instant::now();
    // One spinning thread per CPU, for 2 s.
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let child = Command::new(&busy).args(["spin", "2", &cpus.to_string()]).spawn().unwrap();
    let pid = child.id();
    let samples = collect(&mut sampler, start + Duration::from_millis(2500), Duration::from_millis(100));
    let mine: Vec<&RawStack> = samples.iter().filter(|s| s.pid == pid).collect();
    let mut tids: Vec<u32> = mine.iter().map(|s| s.tid).filter(|&t| t != pid).collect();
    tids.sort();
    tids.dedup();
    assert_eq!(tids.len(), cpus, "one sampled worker thread per CPU");
    for tid in tids {
        let n = mine.iter().filter(|s| s.tid == tid).count() as f64;
        assert!((n - 100.0).abs() <= 15.0, "thread {tid} sampled {n} times at 50 Hz for 2 s");
    }
    let on_cpu = |cpu: u32| mine.iter().filter(|s| s.cpu == cpu).count();
    assert!((0..cpus as u32).all(|c| on_cpu(c) > 50), "every CPU sampled");
    assert!(mine.iter().all(|s| s.comm == "busy" && !s.idle));
    assert!(mine.iter().filter(|s| s.user.len() >= 3).count() * 10 >= mine.len() * 9, "user stacks unwound");
    assert!(mine.iter().all(|s| s.time_unix_ns > 0));
    assert_eq!(sampler.lost().unwrap(), 0);
    let _ = child.wait_with_output();
}

/// The ring buffer is sized for the host and rate (not a fixed 4 MiB), and at the sampler's
/// highest rate, drained as the agent drains it (every 500 ms, sooner when a quarter is
/// waiting), it loses nothing.
#[test]
fn the_ring_is_sized_for_the_rate_and_loses_nothing_at_the_highest_rate() {
    require_root!();
    let _turn = SPINNING.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let busy = build_busy(dir.path());
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let slow = StackSampler::start(&StackSamplerOptions { frequency_hz: 10, ..Default::default() }).unwrap();
    assert_eq!(slow.ring_size().unwrap(), loupe_bpf::ring_bytes(cpus, 10));
    drop(slow);
    let hz = loupe_bpf::MAX_FREQUENCY;
    let mut sampler = StackSampler::start(&StackSamplerOptions { frequency_hz: hz, ..Default::default() }).unwrap();
    assert_eq!(sampler.ring_size().unwrap(), loupe_bpf::ring_bytes(cpus, hz));
    let start = Instant::now();
    let child = Command::new(&busy).args(["spin", "3", &cpus.to_string()]).spawn().unwrap();
    let all = collect(&mut sampler, start + Duration::from_millis(3500), Duration::from_millis(500));
    let _ = child.wait_with_output();
    assert_eq!(sampler.lost().unwrap(), 0, "{} samples taken", all.len());
    let want = (3.5 * hz as f64 * cpus as f64) as usize;
    assert!(all.len() * 10 >= want * 8, "{} samples in 3.5 s at {hz} Hz on {cpus} CPUs (want ~{want})", all.len());
}

#[test]
fn deny_list_by_pid_and_cgroup_subtree() {
    require_root!();
    let _turn = SPINNING.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let busy = build_busy(dir.path());
    // A cgroup subtree: loupe-deny-<pid>/inner; the busy process goes into `inner`, the parent is denied.
    let root = ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
        .map(PathBuf::from)
        .into_iter()
        .find(|p| p.join("cgroup.controllers").exists())
        .unwrap_or_else(|| PathBuf::from("/sys/fs/cgroup"));
    let parent = root.join(format!("loupe-deny-{}", std::process::id()));
    let inner = parent.join("inner");
    let have_cgroup2 = root.join("cgroup.controllers").exists() && std::fs::create_dir_all(&inner).is_ok();
    let in_cgroup = Command::new(&busy).args(["spin", "2", "1", "caged"]).spawn().unwrap();
    if have_cgroup2 {
        std::fs::write(inner.join("cgroup.procs"), in_cgroup.id().to_string()).unwrap();
    }
    let by_pid = Command::new(&busy).args(["spin", "2", "1", "by-pid"]).spawn().unwrap();
    let free = Command::new(&busy).args(["spin", "2", "1", "free"]).spawn().unwrap();
    let deny = DenyList {
        comms: vec![],
        pids: vec![by_pid.id()],
        cgroups: if have_cgroup2 { vec![parent.clone()] } else { vec![] },
    };
    let mut sampler = StackSampler::start(&StackSamplerOptions { frequency_hz: 50, deny }).unwrap();
    let samples = collect(&mut sampler, Instant::now() + Duration::from_millis(1500), Duration::from_millis(100));
    let count = |pid: u32| samples.iter().filter(|s| s.pid == pid).count();
    assert_eq!(count(by_pid.id()), 0, "a deny-listed PID was sampled");
    // Three spinning processes share two CPUs here: the sibling gets some 2/3 of one.
    assert!(count(free.id()) > 25, "the sibling was sampled {} times", count(free.id()));
    if have_cgroup2 {
        assert_eq!(count(in_cgroup.id()), 0, "a process under a deny-listed cgroup was sampled");
    } else {
        assert!(std::env::var_os("CI").is_none(), "CI machines have cgroup v2");
        eprintln!("SKIP cgroup part: no cgroup v2 hierarchy found");
    }
    for mut c in [in_cgroup, by_pid, free] {
        let _ = c.wait();
    }
    let _ = std::fs::remove_dir(&inner);
    let _ = std::fs::remove_dir(&parent);
}
