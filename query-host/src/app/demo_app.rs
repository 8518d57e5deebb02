//! The demo's application: with `loupe agent --demo`, a small request loop (`loupe demo-app`,
//! this binary again as a child process) that logs an application timeline through the
//! `timeline/` library and serves "requests" in a function the agent probes — so a fresh demo
//! shows all four kinds of data (traffic, stacks, timeline events, probe calls) within two
//! minutes, not only traffic and stacks.
//!
//! The loop: per iteration (about 50 a second), 1 to 6 requests, each `request` (level 1:
//! `id`, `bytes`) then `parse` (level 2: `fields`) inside [`loupe_demo_handle`], and
//! `loop_end` (level 0: `requests`) whose lag is the iteration; every 200th iteration one
//! request is ten times the work, so the slowest calls and iterations stand out. The agent
//! probes `loupe_demo_handle` with call records for [`PROBE_SECONDS`] every [`PROBE_EVERY`],
//! the first [`FIRST_PROBE`] after it starts.

use std::{
    hint::black_box,
    path::Path,
    process::{Child, Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    thread,
    time::{Duration, Instant},
};

use anyhow::{Context, Result};
use loupe_api::{access::Caller, ops::HostApi, orders::ProbeOrder};
use loupe_core::Host;
use loupe_timeline as tl;
use tracing::{info, warn};

/// The demo application's command name.
pub const COMM: &str = "loupe-demo-app";
/// The probed function's symbol.
pub const PROBED: &str = "loupe_demo_handle";
/// When the first probe session starts, after the agent does.
pub const FIRST_PROBE: Duration = Duration::from_secs(15);
/// How long each session lasts.
pub const PROBE_SECONDS: f64 = 20.0;
/// How often one starts.
pub const PROBE_EVERY: Duration = Duration::from_secs(180);

/// A request's work: hashes `bytes` bytes' worth of rounds (a few µs for a typical request)
/// and logs the parse step. `no_mangle` so the agent finds it by name; never inlined so every
/// request is one call.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn loupe_demo_handle(id: u64, bytes: u64, parse: u32) -> u64 {
    let mut h = id ^ 0x9e37_79b9_7f4a_7c15;
    for i in 0..bytes {
        h = (h ^ i).wrapping_mul(0x100_0000_01b3).rotate_left(7);
    }
    let fields = 1 + h % 16;
    tl::Event::from_raw(parse).log(fields, 0, 0, 0);
    black_box(h)
}

/// `loupe demo-app`: the loop, until killed (or its parent, the agent, exits).
pub fn main() -> Result<()> {
    // SAFETY: prctl(PR_SET_PDEATHSIG) only asks the kernel to signal this process when its
    // parent exits; it touches no memory of ours.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) };
    // Named for what it is in every list (its comm), before its ring file is made.
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes, which this is.
    unsafe { libc::prctl(libc::PR_SET_NAME, c"loupe-demo-app".as_ptr()) };
    let request = tl::define("request", 1, 9, &["id", "bytes"])?;
    let parse = tl::define("parse", 2, 9, &["fields"])?;
    let loop_end = tl::define("loop_end", 0, 9, &["requests"])?;
    let (mut id, mut x) = (0u64, 0x2545_f491_4f6c_dd1du64);
    for iteration in 0u64.. {
        tl::breath();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let requests = 1 + x % 6;
        for r in 0..requests {
            id += 1;
            let heavy = iteration % 200 == 199 && r == 0;
            let bytes = (2_000 + (x >> 20) % 6_000) * if heavy { 10 } else { 1 };
            request.log(id, bytes, 0, 0);
            loupe_demo_handle(id, bytes, parse.raw());
        }
        loop_end.log(requests, 0, 0, 0);
        thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// The running demo application and the thread that probes it.
pub struct DemoApp {
    child: Child,
    prober: Option<thread::JoinHandle<()>>,
}

impl DemoApp {
    /// Starts `loupe demo-app` logging into `timeline_dir`, and the periodic probe sessions on it.
    pub fn start(timeline_dir: &Path, host: Arc<Host>, shutdown: Arc<AtomicBool>) -> Result<DemoApp> {
        let exe = std::env::current_exe().context("finding this binary to start the demo's application")?;
        let child = Command::new(exe)
            .arg("demo-app")
            .env("LOUPE_TIMELINE_DIR", timeline_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .context("starting the demo's application (loupe demo-app)")?;
        let pid = child.id();
        info!(pid, "demo application: logs a timeline, probed every {} s", PROBE_EVERY.as_secs());
        let prober = thread::Builder::new().name("loupe-demo-probe".into()).spawn(move || {
            let mut next = Instant::now() + FIRST_PROBE;
            while !shutdown.load(Ordering::Relaxed) {
                if Instant::now() >= next {
                    probe(&host, pid);
                    next += PROBE_EVERY;
                }
                thread::sleep(Duration::from_millis(200));
            }
        })?;
        Ok(DemoApp { child, prober: Some(prober) })
    }
}

/// One probe session on the demo application, with call records.
fn probe(host: &Host, pid: u32) {
    let order = ProbeOrder {
        pids: vec![pid],
        binary: None,
        functions: vec![PROBED.into()],
        seconds: Some(PROBE_SECONDS),
        sample_every: None,
        calls: true,
        budget_percent: None,
        allow_single_step: true,
    };
    match host.acting_for(Caller::operator()).start_probe(order) {
        Ok(s) => info!(handle = s.handle, "demo application probed for {PROBE_SECONDS} s"),
        Err(e) => warn!("demo application: probing {PROBED} failed: {e}"),
    }
}

impl Drop for DemoApp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(p) = self.prober.take() {
            let _ = p.join();
        }
    }
}
