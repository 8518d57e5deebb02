//! The stack sampler's kernel side on its own: samples at the asked rate, who ran, raw frames,
//! and the in-kernel deny list (by PID and by cgroup subtree), before any symbolization.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
    time::{Duration, Instant},
};

use loupe_bpf::{DenyList, RawStack, StackSampler, StackSamplerOptions, UserEnd};
use loupe_testbed::{
    require_root,
    sampling::{Stolen, count_tolerance, process_cpu_seconds, spawn_with_pid},
    waits::{self, Functions},
};

fn build_busy(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/busy.c");
    let out = dir.join("busy");
    let ok = Command::new("cc").args(["-O2", "-fno-omit-frame-pointer", "-pthread", "-o"]).arg(&out).arg(&src).status();
    assert!(ok.expect("running cc").success());
    out
}

/// The tests spin CPUs, and the rate test's band is tightest when each spinning thread has a
/// CPU to itself (run alongside the deny-list test's spinners, its threads got half a CPU each).
/// So they take turns.
static SPINNING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Drains until `until`, waiting up to `every` for samples between drains.
fn collect(sampler: &mut StackSampler, until: Instant, every: Duration) -> Vec<RawStack> {
    collect_while(sampler, every, || Instant::now() < until)
}

/// Drains while `more()` says so, waiting up to `every` for samples between drains, then takes
/// what is left.
fn collect_while(sampler: &mut StackSampler, every: Duration, mut more: impl FnMut() -> bool) -> Vec<RawStack> {
    let mut all = Vec::new();
    while more() {
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
    let hz = 50;
    let mut sampler = StackSampler::start(&StackSamplerOptions { frequency_hz: hz, ..Default::default() }).unwrap();
    let (sampled_from, stolen) = (Instant::now(), Stolen::now());
    // One spinning thread per CPU, for 2 s; drained until it has exited, so every sample of it is in.
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let mut child = Command::new(&busy).args(["spin", "2", &cpus.to_string()]).stdout(Stdio::piped()).spawn().unwrap();
    let pid = child.id();
    let samples = collect_while(&mut sampler, Duration::from_millis(100), || child.try_wait().unwrap().is_none());
    let threads = thread_cpu_seconds(&child.wait_with_output().unwrap());
    let mine: Vec<&RawStack> = samples.iter().filter(|s| s.pid == pid).collect();
    let mut tids: Vec<u32> = mine.iter().map(|s| s.tid).filter(|&t| t != pid).collect();
    tids.sort();
    tids.dedup();
    assert_eq!(tids, threads.keys().copied().collect::<Vec<_>>(), "one sampled worker thread per CPU");
    // Each thread at `hz` per second of CPU it got (all of a CPU when the machine is idle),
    // give or take a tick per 1/hz the hypervisor stole (testbed::sampling).
    let (window, stolen) = (sampled_from.elapsed().as_secs_f64(), stolen.per_cpu());
    let stolen_ticks = hz as f64 * stolen.iter().sum::<f64>();
    for (tid, cpu) in &threads {
        let n = mine.iter().filter(|s| s.tid == *tid).count() as f64;
        let expected = hz as f64 * cpu;
        let band = count_tolerance(expected, cpu / 2.0) + stolen_ticks;
        assert!(
            (n - expected).abs() <= band,
            "thread {tid}: {n} samples at {hz} Hz for {cpu} CPU s (want {expected} ± {band:.0}; stolen {stolen:.2?} s)"
        );
    }
    // Every CPU's event fired at the rate, whoever it found running (on a loaded machine the
    // scheduler may keep both spinners on one CPU and the load on the other).
    let on_cpu: Vec<usize> = (0..cpus as u32).map(|c| samples.iter().filter(|s| s.cpu == c).count()).collect();
    assert!(
        on_cpu.iter().enumerate().all(|(c, &n)| n as f64 >= 0.7 * hz as f64 * (window - stolen.get(c).unwrap_or(&0.0))),
        "samples per CPU in {window:.1} s at {hz} Hz: {on_cpu:?} (stolen {stolen:.2?} s)"
    );
    assert!(mine.iter().all(|s| s.comm == "busy" && !s.idle));
    assert!(mine.iter().filter(|s| s.user.len() >= 3).count() * 10 >= mine.len() * 9, "user stacks unwound");
    assert!(mine.iter().all(|s| s.time_unix_ns > 0));
    assert_eq!(sampler.lost().unwrap(), 0);
}

/// `busy` prints, after its own line, "thread TID CPU_SECONDS" per worker.
fn thread_cpu_seconds(out: &Output) -> BTreeMap<u32, f64> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("thread "))
        .map(|l| {
            let (tid, cpu) = l.split_once(' ').expect("thread TID CPU");
            (tid.parse().unwrap(), cpu.trim().parse().unwrap())
        })
        .collect()
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
    assert_eq!(slow.ring_size().unwrap(), loupe_bpf::ring_bytes(cpus, 10, 0));
    drop(slow);
    let hz = loupe_bpf::MAX_FREQUENCY;
    let mut sampler = StackSampler::start(&StackSamplerOptions { frequency_hz: hz, ..Default::default() }).unwrap();
    assert_eq!(sampler.ring_size().unwrap(), loupe_bpf::ring_bytes(cpus, hz, 0));
    let (start, stolen) = (Instant::now(), Stolen::now());
    let child = Command::new(&busy).args(["spin", "3", &cpus.to_string()]).stdout(Stdio::null()).spawn().unwrap();
    let all = collect(&mut sampler, start + Duration::from_millis(3500), Duration::from_millis(500));
    let stolen = stolen.total();
    let _ = child.wait_with_output();
    assert_eq!(sampler.lost().unwrap(), 0, "{} samples taken", all.len());
    // Ticks due while the hypervisor held a vCPU arrive as one (testbed::sampling).
    let want = hz as f64 * (3.5 * cpus as f64 - stolen);
    assert!(
        all.len() as f64 >= 0.8 * want,
        "{} samples in 3.5 s at {hz} Hz on {cpus} CPUs (want ~{want:.0}; {stolen:.2} s stolen)",
        all.len()
    );
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
    // They spin longer than the window below and are stopped after it.
    let in_cgroup = Command::new(&busy).args(["spin", "10", "1", "caged"]).spawn().unwrap();
    if have_cgroup2 {
        std::fs::write(inner.join("cgroup.procs"), in_cgroup.id().to_string()).unwrap();
    }
    let by_pid = Command::new(&busy).args(["spin", "10", "1", "by-pid"]).spawn().unwrap();
    let free = Command::new(&busy).args(["spin", "10", "1", "free"]).spawn().unwrap();
    let deny = DenyList {
        comms: vec![],
        pids: vec![by_pid.id()],
        cgroups: if have_cgroup2 { vec![parent.clone()] } else { vec![] },
    };
    let mut sampler =
        StackSampler::start(&StackSamplerOptions { frequency_hz: 50, deny, ..Default::default() }).unwrap();
    let (used_before, began) = (process_cpu_seconds(free.id()).unwrap(), Instant::now());
    let samples = collect(&mut sampler, began + Duration::from_millis(1500), Duration::from_millis(100));
    // Read after the last drain: the CPU it credits covers every sample counted (a bound only
    // stricter than reading it before).
    let (used, took) = (process_cpu_seconds(free.id()).unwrap() - used_before, began.elapsed().as_secs_f64());
    let count = |pid: u32| samples.iter().filter(|s| s.pid == pid).count();
    assert_eq!(count(by_pid.id()), 0, "a deny-listed PID was sampled");
    // The sibling is sampled as usual: at least 50 a second of the CPU it used in the window
    // (three spinners share the CPUs, with whatever else the machine runs).
    let expected = 50.0 * used;
    assert!(expected >= 10.0, "the sibling ran only {used} CPU s in {took:.1} s");
    let floor = expected - count_tolerance(expected, used / took);
    assert!(
        count(free.id()) as f64 >= floor,
        "the sibling was sampled {} times for {used} CPU s (want ≥ {floor:.0})",
        count(free.id())
    );
    if have_cgroup2 {
        assert_eq!(count(in_cgroup.id()), 0, "a process under a deny-listed cgroup was sampled");
    } else {
        assert!(std::env::var_os("CI").is_none(), "CI machines have cgroup v2");
        eprintln!("SKIP cgroup part: no cgroup v2 hierarchy found");
    }
    for mut c in [in_cgroup, by_pid, free] {
        let _ = c.kill();
        let _ = c.wait();
    }
    let _ = std::fs::remove_dir(&inner);
    let _ = std::fs::remove_dir(&parent);
}

/// Code built without frame pointers, as Debian builds its packages, is unwound whole from its
/// call-frame information: every sample of a program spending its time ten calls deep names
/// all ten levels in order, then `main`, libc's start, and `_start`, and ends at the root; the
/// same program with frame pointers gives the same chain.
#[test]
fn whole_stacks_with_and_without_frame_pointers() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    let mut chains = std::collections::BTreeSet::new();
    for frame_pointers in ["-fomit-frame-pointer", "-fno-omit-frame-pointer"] {
        let exe = dir.path().join(format!("deep{frame_pointers}"));
        // Not position-independent, so `nm`'s addresses are the running addresses.
        build_deep(&exe, &[frame_pointers, "-no-pie"]);
        let functions = Functions::of(&exe);
        let name = |pc: u64| functions.name(pc);
        let options = StackSamplerOptions { frequency_hz: 100, ..Default::default() };
        let mine = deep_samples_after_load(&options, &exe, "1.5");
        assert!(mine.len() >= 30, "{frame_pointers}: {} samples", mine.len());
        let want: Vec<String> = (1..=10).rev().map(|n| format!("loupe_deep_{n}")).chain(["main".to_string()]).collect();
        // A return address is looked up in its call, one byte back.
        let names_of = |sample: &RawStack| -> Vec<&str> {
            sample.user.iter().enumerate().map(|(i, &pc)| name(if i == 0 { pc } else { pc - 1 })).collect()
        };
        // Every sample of the spin; the few after it are the process exiting (its memory going
        // away under the walk: `exit` in libc, then the kernel).
        let (spinning, leaving): (Vec<&RawStack>, Vec<&RawStack>) =
            mine.iter().partition(|s| names_of(s).contains(&"loupe_deep_10"));
        assert!(leaving.len() <= 3, "{frame_pointers}: {} samples outside the spin", leaving.len());
        for sample in &spinning {
            let names = names_of(sample);
            let hot = names.iter().position(|n| *n == "loupe_deep_10");
            assert_eq!(sample.user_end, UserEnd::Root, "{frame_pointers}: stack ended early: {names:?}");
            let hot = hot.unwrap_or_else(|| panic!("{frame_pointers}: no loupe_deep_10 in {names:?}"));
            assert_eq!(names[hot..hot + 11], want, "{frame_pointers}: {names:?}");
            assert_eq!(names.last(), Some(&"_start"), "{frame_pointers}: {names:?}");
            assert!(names.len() >= hot + 13, "{frame_pointers}: libc's start between main and _start: {names:?}");
            // From the hot function to the root: the same in every sample and in both builds
            // (the whole stack's depth is not: a sample in `clock_gettime` adds the vDSO's frame).
            chains.insert(names.len() - hot);
        }
    }
    assert_eq!(
        chains.len(),
        1,
        "the same chain below loupe_deep_10 in every sample, with and without frame pointers: {chains:?}"
    );
}

/// A binary whose table finds no room in the table memory ends every stack through it, saying
/// so, rather than being stepped by frame pointers it does not keep.
#[test]
fn a_binary_without_room_for_its_table_ends_the_stack_saying_so() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("deep");
    build_deep(&exe, &["-fomit-frame-pointer"]);
    // Room for a single row: no binary's table fits.
    let options = StackSamplerOptions { frequency_hz: 100, table_rows: 1, ..Default::default() };
    let (mine, stats) = deep_samples_and_stats(&options, &exe, "1");
    assert!(mine.len() >= 20, "{} samples", mine.len());
    for sample in &mine {
        assert_eq!(sample.user_end, UserEnd::NoRoom, "{:x?}", sample.user);
        assert_eq!(sample.user.len(), 1, "only the leaf, where the stack met the table-less binary");
    }
    assert_eq!(UserEnd::NoRoom.reason(), "no room for unwind table");
    assert!(stats.without_table >= 1 && stats.rows == 0, "{stats:?}");
}

/// A binary's table is parsed once per host: a sampler started again over the same table cache
/// (an agent restarted) reads the tables it kept from disk and parses none of them again, and
/// the process's stacks are as whole as the first time.
#[test]
fn a_restarted_sampler_reads_its_tables_from_the_disk_cache() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("deep");
    build_deep(&exe, &["-fomit-frame-pointer"]);
    let cache = dir.path().join("unwind-tables");
    let options = StackSamplerOptions { frequency_hz: 100, table_cache: Some(cache.clone()), ..Default::default() };
    let (first, parsed) = deep_samples_and_stats(&options, &exe, "1");
    assert!(
        parsed.parsed >= 2 && parsed.from_cache == 0,
        "the first start parses deep's and libc's tables: {parsed:?}"
    );
    // Each table kept, with when it was written: a table parsed again is written again.
    let written = || -> BTreeMap<PathBuf, std::time::SystemTime> {
        std::fs::read_dir(&cache)
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| (p.clone(), p.metadata().unwrap().modified().unwrap()))
            .collect()
    };
    let kept = written();
    assert!(kept.len() >= 2, "{} tables on disk for {parsed:?}", kept.len());
    let (again, cached) = deep_samples_and_stats(&options, &exe, "1");
    // Other processes that exec meanwhile (a busy machine) may bring tables of their own.
    let now = written();
    for (table, at) in &kept {
        assert_eq!(now.get(table), Some(at), "{} was parsed again: {cached:?}", table.display());
    }
    assert!(cached.from_cache >= 2, "deep's and libc's tables read from disk: {cached:?}");
    for (run, samples) in [("first", &first), ("restarted", &again)] {
        assert!(samples.len() >= 20, "{run}: {} samples", samples.len());
        let whole = samples.iter().filter(|s| s.user_end == UserEnd::Root).count();
        assert!(whole * 10 >= samples.len() * 9, "{run}: {whole} of {} whole", samples.len());
    }
}

/// Compiles `testbed/fixtures/deep.c` at -O2 with `flags` into `exe`.
fn build_deep(exe: &Path, flags: &[&str]) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/deep.c");
    let ok = Command::new("cc").arg("-O2").args(flags).arg("-o").arg(exe).arg(&src).status();
    assert!(ok.expect("running cc").success());
}

/// `exe` (deep) spinning for `seconds` under a sampler with `options`, its tables loaded once
/// `main` runs (libc mapped): its samples taken after the load (those before were walked by
/// the kernel's frame-pointer walker).
fn deep_samples_after_load(options: &StackSamplerOptions, exe: &Path, seconds: &str) -> Vec<RawStack> {
    deep_samples_and_stats(options, exe, seconds).0
}

/// [`deep_samples_after_load`], and what the unwind tables held at the end.
fn deep_samples_and_stats(
    options: &StackSamplerOptions,
    exe: &Path,
    seconds: &str,
) -> (Vec<RawStack>, loupe_bpf::UnwindStats) {
    let mut sampler = StackSampler::start(options).unwrap();
    // It spins for `seconds` from the line it is sent once its tables are loaded: on a loaded
    // machine parsing libc's tables took longer than a 1.5-s spin (0 samples after the load).
    let (mut child, pid) = spawn_with_pid(Command::new(exe).args([seconds, "1", "wait"]).stdin(Stdio::piped()));
    sampler.load_process(pid).unwrap();
    let loaded = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    }
    let samples = collect_while(&mut sampler, Duration::from_millis(100), || child.try_wait().unwrap().is_none());
    let mine = samples.into_iter().filter(|s| s.pid == pid && s.time_unix_ns > loaded).collect();
    (mine, sampler.unwind_stats())
}

/// `waits`: a thread sleeping `sleeps` × `sleep_ms` in `loupe_sleeper`, one blocked on a pipe
/// `pipe_waits` × ~`pipe_ms` in `loupe_pipe_waiter`, under an off-CPU sampler, started once the
/// process's tables are loaded. Returns the samples of that process and what it measured:
/// `(thread, tid, ns)` per waiting thread.
fn waits_under_sampler(
    options: &StackSamplerOptions,
    exe: &Path,
    args: [&str; 4],
) -> (Vec<RawStack>, Vec<(String, u32, u64)>) {
    use std::io::{BufRead, Read, Write};
    let mut sampler = StackSampler::start(options).unwrap();
    let mut child = Command::new(exe).args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let pid: u32 = line.trim().parse().unwrap_or_else(|_| panic!("a PID first, not {line:?}"));
    sampler.load_process(pid).unwrap();
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let samples = collect_while(&mut sampler, Duration::from_millis(100), || child.try_wait().unwrap().is_none());
    eprintln!("off-CPU: {:?}, {} samples lost", sampler.off_cpu_stats(), sampler.lost().unwrap());
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert!(child.wait().unwrap().success());
    let truth = rest
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[0].to_string(), f[1].parse().unwrap(), f[2].parse().unwrap())
        })
        .collect();
    (samples.into_iter().filter(|s| s.pid == pid).collect(), truth)
}

/// In its first second the sampler has not counted the blocks yet and takes every block, keeping
/// a short wait `w` 1 in `⌈exact / w⌉`: beside ~20,000 blocks a second, only the kernel's burst
/// guard keeps the stacks taken near the bound (twice its share of each ~134 ms window), so the
/// ring never fills and no CPU sample is lost; the blocks it skipped are counted. Then the
/// sampling follows the waits: the short ones' scale and the takes' floor grow.
#[test]
fn a_burst_of_blocks_is_held_to_the_guard_and_loses_no_samples() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    let exe = waits::build(dir.path());
    let max = 100;
    let off_cpu = loupe_bpf::OffCpuOptions { max_stacks_per_second: max, ..Default::default() };
    let options = StackSamplerOptions { frequency_hz: 10, off_cpu: Some(off_cpu), ..Default::default() };
    let attached = std::time::Instant::now(); // no later than the program's attachment
    let mut sampler = StackSampler::start(&options).unwrap();
    let started = std::time::Instant::now();
    let mut child = Command::new(&exe).args(["naps", "20", "3"]).stdout(Stdio::null()).spawn().unwrap();
    // Before the first adjustment (1 s after the start): every block is picked.
    let mut first = Vec::new();
    while started.elapsed() < Duration::from_millis(900) {
        sampler.drain(&mut first, Duration::from_millis(50)).unwrap();
    }
    let windows = attached.elapsed().as_nanos().div_ceil(1 << 27) as usize + 1;
    let taken = first.iter().filter(|s| s.off_cpu.is_some()).count();
    // Before the first count the scale is the exact threshold, and every block is taken.
    let exact = loupe_bpf::DEFAULT_EXACT.as_nanos() as u64;
    for o in first.iter().filter_map(|s| s.off_cpu) {
        let n = if o.waited_ns >= exact { 1 } else { exact.div_ceil(o.waited_ns.max(1)) };
        assert_eq!(u64::from(o.one_in), n, "a wait of {} ns before the first count", o.waited_ns);
    }
    // Every window that began since the attachment, and each CPU racing past the limit once in
    // each.
    let cpus = std::thread::available_parallelism().unwrap().get();
    let bound = (loupe_bpf::burst_limit(max) as usize + cpus) * windows;
    let mut rest = Vec::new();
    while started.elapsed() < Duration::from_millis(2500) {
        sampler.drain(&mut rest, Duration::from_millis(100)).unwrap();
    }
    let stats = sampler.off_cpu_stats().unwrap();
    let _ = child.wait();
    eprintln!(
        "first 0.9 s: {taken} stacks taken (guard {bound}); then {:.0} blocks/s, 1 in {}, scale {:?}, floor {}, {} \
         skipped by the guard",
        stats.blocks_per_second, stats.one_in, stats.scale, stats.floor, stats.skipped
    );
    assert!(taken > 0 && taken <= bound, "{taken} stacks in the first 0.9 s, the guard allows {bound}");
    assert!(stats.skipped > 0, "at {:.0} blocks a second the guard skipped none", stats.blocks_per_second);
    // 20 s waited a second in 1-ms naps over a bound of 100: each kept nap stands for ~200 ms,
    // and a nap is taken at least 1 in 400 (20,000 over half the bound).
    assert!(stats.scale > Duration::from_millis(100), "the short waits' scale followed them: {stats:?}");
    assert!(stats.floor > 100, "the takes' floor followed the blocks: {stats:?}");
    assert_eq!(stats.one_in, 1, "no long waits to thin: {stats:?}");
    assert_eq!(sampler.lost().unwrap(), 0, "the ring filled: CPU samples were lost");
}

#[test]
fn off_cpu_time_is_weighted_by_how_long_each_thread_waited() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    let exe = waits::build(dir.path());
    let functions = Functions::of(&exe);
    let name = |pc: u64| functions.name(pc);
    // A cap no busy test machine reaches, so every block is taken (the ratio is its own test).
    let off_cpu = loupe_bpf::OffCpuOptions { max_stacks_per_second: 5000, ..Default::default() };
    let options = StackSamplerOptions { frequency_hz: 10, off_cpu: Some(off_cpu), ..Default::default() };
    // 50 sleeps of 20 ms, and 4 pipe reads each answered 100 ms after it began.
    let (samples, truth) = waits_under_sampler(&options, &exe, ["50", "20", "4", "100"]);
    for (thread, function, count) in [("sleeper", "loupe_sleeper", 50), ("pipe", "loupe_pipe_waiter", 4)] {
        let &(_, tid, measured) = truth.iter().find(|(t, _, _)| t == thread).expect("the fixture's line");
        let off: Vec<&RawStack> = samples.iter().filter(|s| s.tid == tid && s.off_cpu.is_some()).collect();
        // Below the rate cap every wait of at least the exact threshold is sent standing for
        // itself (the thread's short waits — a page fault read in, a lock — are sampled by their
        // length; an emulated CPU in the kernel matrix has more of them).
        let exact = loupe_bpf::DEFAULT_EXACT.as_nanos() as u64;
        assert!(
            off.iter().map(|s| s.off_cpu.unwrap()).all(|o| o.waited_ns < exact || o.one_in == 1),
            "{thread}: a long wait sampled at a rate this low"
        );
        let in_function = |s: &&&RawStack| {
            s.user.iter().enumerate().any(|(i, &pc)| name(if i == 0 { pc } else { pc - 1 }) == function)
        };
        let named: Vec<&&RawStack> = off.iter().filter(in_function).collect();
        let total: u64 = named.iter().map(|s| s.off_cpu.unwrap().weight_ns()).sum();
        eprintln!(
            "{thread}: {} off-CPU samples ({} through {function}), {:.1} ms blocked, measured {:.1} ms",
            off.len(),
            named.len(),
            total as f64 / 1e6,
            measured as f64 / 1e6
        );
        for s in off.iter().filter(|s| !in_function(s)) {
            let names: Vec<&str> = s.user.iter().map(|&pc| name(pc)).collect();
            eprintln!(
                "  elsewhere: {:.3} ms, {:?}, user {names:?}",
                s.off_cpu.unwrap().waited_ns as f64 / 1e6,
                s.user_end
            );
        }
        if named.len() != count {
            let t0 = named.first().map_or(0, |s| s.time_unix_ns);
            for s in &named {
                eprintln!(
                    "  at {:.3} ms waited {:.3} ms cpu {}",
                    (s.time_unix_ns - t0) as f64 / 1e6,
                    s.off_cpu.unwrap().waited_ns as f64 / 1e6,
                    s.cpu
                );
            }
        }
        // One sample per wait (a page fault read from disk on the way would add one more).
        assert!((count..=count + 2).contains(&named.len()), "{thread}: {} samples naming {function}", named.len());
        assert!(
            (total as f64 - measured as f64).abs() <= 0.1 * measured as f64,
            "{thread}: {total} ns off the CPU in {function}, measured {measured} ns"
        );
        // The kernel's side says what it waited on.
        assert!(named.iter().all(|s| !s.kernel.is_empty()), "{thread}: kernel stacks taken as it blocked");
    }
    // Without the option, no off-CPU samples at all.
    let (samples, _) = waits_under_sampler(&StackSamplerOptions::default(), &exe, ["5", "20", "1", "20"]);
    assert!(samples.iter().all(|s| s.off_cpu.is_none()), "off-CPU samples without --off-cpu");
}

/// Off-CPU time kept by length, not 1 block in N: three threads wait known times (7-ms naps,
/// 30-ms pipe reads, 40-ms condition waits) beside four threads that block ~4,000 times a second
/// in 1-ms naps from 2.5 s before to 2.5 s after (`waits mixed`), at the default bound. Each
/// function's time waited is within 5 % of the program's own clock, five runs in a row under one
/// sampler: the long waits are sent once each, weighted by themselves, whatever the naps do. The
/// naps' own time, sampled by length, is an estimate: within 25 % (its error, a few % here, is
/// printed).
#[test]
fn long_waits_are_exact_beside_thousands_of_short_blocks_a_second() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    let exe = waits::build(dir.path());
    let functions = Functions::of(&exe);
    let options = StackSamplerOptions {
        frequency_hz: 10,
        off_cpu: Some(loupe_bpf::OffCpuOptions::default()),
        ..Default::default()
    };
    let mut sampler = StackSampler::start(&options).unwrap();
    for run in 1..=5 {
        let mut mixed = waits::Mixed::spawn(&exe, 4, 2500);
        let pid = mixed.pid;
        sampler.load_process(pid).unwrap();
        mixed.go();
        let samples = collect_while(&mut sampler, Duration::from_millis(100), || mixed.running());
        let truth = mixed.finish();
        let stats = sampler.off_cpu_stats().unwrap();
        eprintln!("run {run}: {stats:?}");

        for e in truth.estimates(pid, &samples, &functions) {
            eprintln!(
                "  {}: {} samples ({} standing for themselves), {:.1} ms, measured {:.1} ms ({:+.2} %)",
                e.function,
                e.samples,
                e.alone,
                e.estimated_ns as f64 / 1e6,
                e.measured_ns as f64 / 1e6,
                e.error() * 100.0
            );
            let bound = if e.function == waits::SHORT_NAPS { 0.25 } else { 0.05 };
            assert!(e.error().abs() <= bound, "run {run}: {e:?}; {stats:?}");
        }
    }
    assert_eq!(sampler.lost().unwrap(), 0, "the ring filled: CPU samples were lost");
}
