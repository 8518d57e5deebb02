//! The waits fixture (`fixtures/waits.c`) for the off-CPU sampler's tests and bench: building it,
//! naming its functions, and its `mixed` form — three threads that wait known times beside
//! threads blocking thousands of times a second — with each function's off-CPU time as the
//! program measured it, to hold an estimate against.

use loupe_bpf::{OffCpu, RawStack};
use std::{
    io::{BufRead, BufReader, Read, Write},
    path::{Path, PathBuf},
    process::{Child, ChildStdout, Command, Stdio},
};

/// The three long waits of `mixed`: (its output line, the function it waits in).
pub const LONG_WAITS: [(&str, &str); 3] =
    [("nap", "loupe_nap"), ("pipe", "loupe_pipe_waiter"), ("cond", "loupe_cond_waiter")];
/// Where `mixed`'s nappers block, ~1,000 times a second each.
pub const SHORT_NAPS: &str = "loupe_short_naps";

/// Builds the fixture into `dir`, not position-independent (so `nm`'s addresses are the running
/// ones).
pub fn build(dir: &Path) -> PathBuf {
    let exe = dir.join("waits");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/waits.c");
    let ok = Command::new("cc").args(["-O2", "-pthread", "-no-pie", "-o"]).arg(&exe).arg(&src).status();
    assert!(ok.expect("running cc").success(), "building {}", src.display());
    exe
}

/// A binary's functions, from `nm -S`: to say which function a sampled PC is in.
pub struct Functions(Vec<(u64, u64, String)>);

impl Functions {
    pub fn of(exe: &Path) -> Self {
        let out = Command::new("nm").args(["-S", "--defined-only"]).arg(exe).output().expect("running nm");
        Self(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    let [addr, size, kind, name] = f[..] else { return None };
                    if !matches!(kind, "T" | "t") {
                        return None;
                    }
                    let start = u64::from_str_radix(addr, 16).ok()?;
                    Some((start, start + u64::from_str_radix(size, 16).ok()?, name.to_string()))
                })
                .collect(),
        )
    }

    /// The function holding `pc`, or "?".
    pub fn name(&self, pc: u64) -> &str {
        self.0.iter().find(|(start, end, _)| (*start..*end).contains(&pc)).map_or("?", |(_, _, n)| n.as_str())
    }

    /// Whether a user stack (leaf first; the others return addresses, looked up one byte back)
    /// passes through `function`.
    pub fn through(&self, user: &[u64], function: &str) -> bool {
        user.iter().enumerate().any(|(i, &pc)| self.name(if i == 0 { pc } else { pc - 1 }) == function)
    }
}

/// `waits mixed NAPPERS LEAD_MS`, started and waiting for [`Mixed::go`].
pub struct Mixed {
    child: Child,
    stdout: BufReader<ChildStdout>,
    pub pid: u32,
}

impl Mixed {
    pub fn spawn(exe: &Path, nappers: u32, lead_ms: u32) -> Self {
        let mut child = Command::new(exe)
            .args(["mixed", &nappers.to_string(), &lead_ms.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("starting the waits fixture");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("reading its PID");
        let pid = line.trim().parse().unwrap_or_else(|_| panic!("a PID first, not {line:?}"));
        Self { child, stdout, pid }
    }

    pub fn go(&mut self) {
        self.child.stdin.take().expect("piped").write_all(b"go\n").expect("starting the fixture");
    }

    pub fn running(&mut self) -> bool {
        self.child.try_wait().expect("waiting for the fixture").is_none()
    }

    /// Waits for its end and reads what it measured.
    pub fn finish(mut self) -> MixedTruth {
        let mut out = String::new();
        self.stdout.read_to_string(&mut out).expect("reading the fixture's output");
        assert!(self.child.wait().expect("waiting for the fixture").success(), "waits mixed failed: {out}");
        let fields = |l: &str| l.split_whitespace().skip(1).map(|f| f.parse::<u64>().unwrap()).collect::<Vec<_>>();
        let line = |what: &str| fields(out.lines().find(|l| l.starts_with(what)).unwrap_or_else(|| panic!("{out}")));
        let long = LONG_WAITS.map(|(what, _)| {
            let f = line(what);
            (f[0] as u32, f[1])
        });
        let window = line("window");
        let nappers =
            out.lines().filter(|l| l.starts_with("short")).map(|l| (fields(l)[0] as u32, fields(l)[1])).collect();
        MixedTruth { long, window: (window[0], window[1]), nappers }
    }
}

/// What `mixed` measured with its own clock.
pub struct MixedTruth {
    /// Per [`LONG_WAITS`]: the thread's id and its time waited in ns.
    pub long: [(u32, u64); 3],
    /// When the three waited (`CLOCK_REALTIME` ns): the nappers count only the naps begun in it.
    pub window: (u64, u64),
    /// Each napper's thread id and the time of its naps begun in the window.
    pub nappers: Vec<(u32, u64)>,
}

/// A function's time waited, estimated from samples and measured by the program.
#[derive(Debug)]
pub struct Estimate {
    pub function: &'static str,
    pub samples: usize,
    /// Samples that stand for themselves alone (kept 1 in 1).
    pub alone: usize,
    pub estimated_ns: u64,
    pub measured_ns: u64,
}

impl Estimate {
    /// (estimated − measured) / measured.
    pub fn error(&self) -> f64 {
        self.estimated_ns as f64 / self.measured_ns.max(1) as f64 - 1.0
    }
}

impl MixedTruth {
    /// Each long wait's function, then the short naps (in the window), against the off-CPU
    /// samples of process `pid`.
    pub fn estimates(&self, pid: u32, samples: &[RawStack], functions: &Functions) -> Vec<Estimate> {
        let waits: Vec<(&RawStack, OffCpu)> =
            samples.iter().filter(|s| s.pid == pid).filter_map(|s| Some((s, s.off_cpu?))).collect();
        let estimate = |function: &'static str, measured_ns: u64, of: &dyn Fn(&RawStack) -> bool| {
            let mine: Vec<&(&RawStack, OffCpu)> =
                waits.iter().filter(|(s, _)| of(s) && functions.through(&s.user, function)).collect();
            Estimate {
                function,
                samples: mine.len(),
                alone: mine.iter().filter(|(_, o)| o.one_in == 1).count(),
                estimated_ns: mine.iter().map(|(_, o)| o.weight_ns()).sum(),
                measured_ns,
            }
        };
        let mut all: Vec<Estimate> = LONG_WAITS
            .iter()
            .zip(self.long)
            .map(|(&(_, function), (tid, ns))| estimate(function, ns, &|s| s.tid == tid))
            .collect();
        let (from, to) = self.window;
        let napper = |s: &RawStack| self.nappers.iter().any(|n| n.0 == s.tid) && (from..to).contains(&s.time_unix_ns);
        all.push(estimate(SHORT_NAPS, self.nappers.iter().map(|n| n.1).sum(), &napper));
        all
    }
}
