//! The function probes' test program, `testbed/fixtures/nf.c` (a packet loop `handle` ->
//! `parse`, `lookup` x k, `forward` that counts and times its own calls), for their kernel tests
//! and benchmark: building it in its three builds, and driving its start protocol: ready file,
//! SIGUSR1, stats JSON, SIGTERM.
//!
//! Per thread and packet number i (0-based), `handle` calls `parse` once, `lookup`
//! k = 1 + i % 3 times and `forward` once; `forward` does 10x its work when i % 100 == 99.
//! `NfStats` is what the program measured itself; [`NfStats::assert_exact_counts`] checks the
//! call counts against that shape.

use std::{
    collections::BTreeMap,
    ffi::OsString,
    fs,
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    sync::atomic::{AtomicUsize, Ordering},
    thread,
    time::{Duration, Instant},
};

/// The probed functions, callers first.
pub const FUNCS: [&str; 4] = ["handle", "parse", "lookup", "forward"];

/// How long [`Nf::start`] waits for the ready file.
pub const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// Which build of `nf.c`; all are `-O2 -fno-omit-frame-pointer`, so each probed function
/// starts with `push %rbp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Build {
    /// One executable, `-fcf-protection=none`: functions start `push %rbp`.
    Plain,
    /// One executable, `-fcf-protection=full`: functions start `endbr64; push %rbp`.
    Cet,
    /// The functions in `libnf.so` (`-DNF_LIBRARY`), the program in an executable linked to it
    /// with an rpath (`-DNF_USE_LIBRARY`); both `-fcf-protection=none`.
    Shared,
}

impl Build {
    /// The executable's file name in the build directory.
    pub fn exe_name(self) -> &'static str {
        match self {
            Build::Plain => "nf",
            Build::Cet => "nf_cet",
            Build::Shared => "nf_shared",
        }
    }
}

fn nf_source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/nf.c")
}

/// Runs a `cc` command; panics with its output unless it succeeds.
fn run_cc(cmd: &mut Command) {
    let out = cmd.output().expect("running cc");
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn cc(cf_protection: &str) -> Command {
    let mut cmd = Command::new("cc");
    cmd.args(["-O2", "-fno-omit-frame-pointer", cf_protection]);
    cmd
}

/// The shared build's library, `dir/libnf.so` (exists once [`build_nf`] built [`Build::Shared`]
/// in `dir`); the functions' symbols are in it, not in the executable.
pub fn nf_library(dir: &Path) -> PathBuf {
    dir.join("libnf.so")
}

/// Compiles `testbed/fixtures/nf.c` into `dir` as `build` and returns the executable
/// (`dir/nf`, `dir/nf_cet` or `dir/nf_shared`; the latter also makes [`nf_library`]`(dir)` and
/// finds it through an rpath, so keep `dir` alive as long as the executable runs).
/// Panics, with cc's messages, if a compile fails.
pub fn build_nf(dir: &Path, build: Build) -> PathBuf {
    let src = nf_source();
    // The rpath must not depend on the tests' working directory.
    let dir = dir.canonicalize().unwrap_or_else(|e| panic!("build dir {}: {e}", dir.display()));
    let exe = dir.join(build.exe_name());
    match build {
        Build::Plain | Build::Cet => {
            let cf = if build == Build::Cet { "-fcf-protection=full" } else { "-fcf-protection=none" };
            run_cc(cc(cf).arg("-pthread").arg("-o").arg(&exe).arg(&src));
        }
        Build::Shared => {
            let lib = nf_library(&dir);
            run_cc(cc("-fcf-protection=none").args(["-shared", "-fPIC", "-DNF_LIBRARY", "-o"]).arg(&lib).arg(&src));
            let mut lib_dir = OsString::from("-L");
            lib_dir.push(&dir);
            // -Xlinker rather than -Wl,-rpath,DIR: a comma in DIR would split it.
            run_cc(
                cc("-fcf-protection=none")
                    .args(["-pthread", "-DNF_USE_LIBRARY", "-o"])
                    .arg(&exe)
                    .arg(&src)
                    .arg(lib_dir)
                    .args(["-lnf", "-Xlinker", "-rpath", "-Xlinker"])
                    .arg(&dir),
            );
        }
    }
    exe
}

/// `objdump -d --no-show-raw-insn --disassemble=FUNC` of `file` (an executable or `libnf.so`):
/// the first (up to 8) instructions of `func`, whitespace collapsed and comments dropped, e.g.
/// `["endbr64", "push %rbp", "mov %rsp,%rbp", ...]`. Panics if objdump fails or `func` is not
/// a symbol of `file`.
pub fn objdump_first_instructions(file: &Path, func: &str) -> Vec<String> {
    let out = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(format!("--disassemble={func}"))
        .arg(file)
        .output()
        .expect("running objdump");
    assert!(out.status.success(), "objdump {}: {}", file.display(), String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let header = format!("<{func}>:");
    let mut lines = text.lines().skip_while(|l| !l.trim_end().ends_with(&header));
    assert!(lines.next().is_some(), "no function {func} in {}:\n{text}", file.display());
    let instructions: Vec<String> = lines
        .take_while(|l| !l.trim().is_empty())
        // "    2a60:\tpush   %rbp        # comment"
        .filter_map(|l| l.split_once(':').map(|(_, insn)| insn))
        .map(|insn| insn.split('#').next().unwrap_or("").split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|insn| !insn.is_empty())
        .take(8)
        .collect();
    assert!(!instructions.is_empty(), "no instructions for {func} in {}:\n{text}", file.display());
    instructions
}

/// One function's calls, as the program measured them itself (each call's time between the
/// clock reads at the top and just before the return of its body, so without the call, the
/// return or its own probes' traps; a caller's time includes its callees and their probes).
#[derive(Clone, Debug, serde::Deserialize)]
pub struct FnStats {
    /// Calls, summed over threads.
    pub calls: u64,
    /// Nearest-rank percentiles over all threads' calls.
    pub median_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub mean_ns: f64,
    pub min_ns: u64,
    pub max_ns: u64,
}

/// The stats JSON `nf` writes after its packets.
#[derive(Clone, Debug, serde::Deserialize)]
pub struct NfStats {
    pub threads: u64,
    /// Packets per thread.
    pub packets: u64,
    /// Wall time of the packet loop, all threads.
    pub elapsed_ns: u64,
    /// By function name: `handle`, `parse`, `lookup`, `forward`.
    pub functions: BTreeMap<String, FnStats>,
    /// `forward` calls that did 10x the work (packets 99, 199, ... of each thread).
    pub slow_forward_calls: u64,
}

impl NfStats {
    /// The stats of `name`; panics if there are none.
    pub fn func(&self, name: &str) -> &FnStats {
        self.functions.get(name).unwrap_or_else(|| panic!("no stats for {name}: {self:?}"))
    }

    /// Asserts every call count is what the packet loop's shape says it must be.
    pub fn assert_exact_counts(&self) {
        for f in FUNCS {
            assert_eq!(
                self.func(f).calls,
                expected_calls(f, self.packets, self.threads),
                "{f}: calls for {} packets x {} threads",
                self.packets,
                self.threads
            );
        }
        assert_eq!(self.slow_forward_calls, expected_slow_forwards(self.packets, self.threads));
    }
}

/// `lookup` calls of one thread for `packets` packets: the sum over i < packets of 1 + i % 3.
pub fn expected_lookups(packets: u64) -> u64 {
    let (cycles, rest) = (packets / 3, packets % 3);
    // Each full cycle of 3 packets makes 1 + 2 + 3 = 6 calls; the rest makes 1 (i%3 = 0) then 2.
    cycles * 6 + [0, 1, 3][rest as usize]
}

/// Calls of `func` (one of [`FUNCS`]) for `packets` packets on each of `threads` threads.
pub fn expected_calls(func: &str, packets: u64, threads: u64) -> u64 {
    match func {
        "handle" | "parse" | "forward" => packets * threads,
        "lookup" => expected_lookups(packets) * threads,
        _ => panic!("nf has no function {func}"),
    }
}

/// Slow `forward` calls (packet numbers 99, 199, ...) for `packets` on each of `threads`.
pub fn expected_slow_forwards(packets: u64, threads: u64) -> u64 {
    packets / 100 * threads
}

/// A running `nf`, between its ready file and its exit. Dropping it sends SIGTERM and waits
/// (SIGKILL after 2 s), so a failing test leaves no process behind.
pub struct Nf {
    pub child: Child,
    pub pid: u32,
    stats: PathBuf,
    ready: PathBuf,
    stdout: PathBuf,
    stderr: PathBuf,
}

/// Tells the files of several `Nf`s in one directory apart.
static NEXT_NF: AtomicUsize = AtomicUsize::new(0);

impl Nf {
    /// Spawns `exe args... --ready DIR/nfN.ready --stats DIR/nfN.json` (stdout and stderr to
    /// `DIR/nfN.stdout`, `DIR/nfN.stderr`) and returns once it wrote its ready file (at most
    /// [`READY_TIMEOUT`]): set up, its packet threads waiting for [`Nf::go`]. With `--no-wait`
    /// in `args` it runs at once instead and exits after its stats.
    pub fn start(exe: &Path, dir: &Path, args: &[&str]) -> Nf {
        let n = NEXT_NF.fetch_add(1, Ordering::Relaxed);
        let file = |ext: &str| dir.join(format!("nf{n}.{ext}"));
        let (ready, stats, stdout, stderr) = (file("ready"), file("json"), file("stdout"), file("stderr"));
        for stale in [&ready, &stats] {
            let _ = fs::remove_file(stale);
        }
        fn create(path: &Path) -> fs::File {
            fs::File::create(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        }
        let child = Command::new(exe)
            .args(args)
            .arg("--ready")
            .arg(&ready)
            .arg("--stats")
            .arg(&stats)
            .stdin(Stdio::null())
            .stdout(create(&stdout))
            .stderr(create(&stderr))
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", exe.display()));
        let pid = child.id();
        // From here a panic drops the Nf, which stops the process.
        let nf = Nf { child, pid, stats, ready, stdout, stderr };
        nf.wait_ready();
        nf
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            let exited = self.exited();
            // Written to a .tmp file and renamed: present means complete.
            if let Ok(text) = fs::read_to_string(&self.ready) {
                let pid: u32 = text.trim().parse().unwrap_or_else(|_| panic!("ready file says {text:?}"));
                assert_eq!(pid, self.pid, "the ready file's pid");
                return;
            }
            assert!(!exited, "nf exited before it was ready; stderr:\n{}", self.stderr());
            assert!(Instant::now() < deadline, "nf not ready after {READY_TIMEOUT:?}; stderr:\n{}", self.stderr());
            thread::sleep(Duration::from_millis(5));
        }
    }

    /// Sends SIGUSR1: the packet threads start. (The signal stays pending if sent early.)
    pub fn go(&self) {
        let rc = unsafe { libc::kill(self.pid as libc::pid_t, libc::SIGUSR1) };
        assert_eq!(rc, 0, "kill -USR1 {}: {}", self.pid, std::io::Error::last_os_error());
    }

    /// Waits up to `timeout` for the stats file (written when all packets are done) and parses
    /// it. Panics, with nf's stderr, on a timeout, if nf exited without stats, or on bad JSON.
    pub fn wait_stats(&self, timeout: Duration) -> NfStats {
        let deadline = Instant::now() + timeout;
        loop {
            // Checked before the file: if it had exited, any stats were already written.
            let exited = self.exited();
            if let Ok(text) = fs::read_to_string(&self.stats) {
                return serde_json::from_str(&text).unwrap_or_else(|e| panic!("nf stats {text:?}: {e}"));
            }
            assert!(!exited, "nf exited without stats; stderr:\n{}", self.stderr());
            assert!(Instant::now() < deadline, "no nf stats after {timeout:?}; stderr:\n{}", self.stderr());
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Whether the process has exited (a zombie: nobody reaped it but `child`). Works on `&self`,
    /// unlike `Child::try_wait`.
    fn exited(&self) -> bool {
        match fs::read_to_string(format!("/proc/{}/stat", self.pid)) {
            // "PID (COMM) STATE ...": COMM may hold spaces and parentheses, STATE follows the last ')'.
            Ok(stat) => stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next()) == Some("Z"),
            Err(_) => true,
        }
    }

    /// What nf printed on stdout so far (`packets_per_sec N` with `--no-wait`).
    pub fn stdout(&self) -> String {
        fs::read_to_string(&self.stdout).unwrap_or_default()
    }

    /// What nf printed on stderr so far (its error messages).
    pub fn stderr(&self) -> String {
        fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Waits up to `timeout` for nf to exit by itself (`--no-wait`) and returns its status.
    pub fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("waiting for nf") {
                return status;
            }
            assert!(Instant::now() < deadline, "nf still running after {timeout:?}; stderr:\n{}", self.stderr());
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Sends SIGTERM, waits for the exit and returns its status (success is expected whether
    /// nf was waiting for [`Nf::go`] or done). SIGKILL after 2 s.
    pub fn stop(mut self) -> ExitStatus {
        self.terminate().expect("stopping nf")
    }

    /// The packet rate `--no-wait` printed.
    pub fn packets_per_sec(&self) -> f64 {
        let out = self.stdout();
        out.lines()
            .find_map(|l| l.strip_prefix("packets_per_sec "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no packets_per_sec in nf's stdout {out:?}"))
    }

    fn terminate(&mut self) -> std::io::Result<ExitStatus> {
        if let Some(status) = self.child.try_wait()? {
            return Ok(status);
        }
        unsafe { libc::kill(self.pid as libc::pid_t, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        self.child.wait()
    }
}

impl Drop for Nf {
    fn drop(&mut self) {
        let _ = self.terminate();
    }
}

/// Runs `exe --no-wait args...` in `dir` to the end (at most `timeout`); returns its stats and
/// packet rate. For throughput comparisons with and without probes.
pub fn run_nf_no_wait(exe: &Path, dir: &Path, args: &[&str], timeout: Duration) -> (NfStats, f64) {
    let mut all = vec!["--no-wait"];
    all.extend_from_slice(args);
    let mut nf = Nf::start(exe, dir, &all);
    let stats = nf.wait_stats(timeout);
    let status = nf.wait_exit(Duration::from_secs(5));
    assert!(status.success(), "nf exited with {status}; stderr:\n{}", nf.stderr());
    let rate = nf.packets_per_sec();
    (stats, rate)
}
