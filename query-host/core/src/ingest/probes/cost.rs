//! What a probe costs, measured rather than assumed: before a session the agent probes a
//! function of its own (an empty one shaped like a frame-pointer build's, starting with `push`)
//! and times calls to it without probes, with every call timed, and with calls counted but not
//! timed. That gives
//!
//! - the **cost per call** in each mode, which the session's cost budget multiplies by the hit
//!   rate it reads from the kernel's counters, and
//! - the **bias**: the duration the probes report for a function that does nothing — the part
//!   of the two traps that falls between the entry probe's clock read and the return probe's.
//!   Every call a probe times is that much longer than the function ran; views subtract it from
//!   percentiles (and say so), which matters only for functions of a few microseconds.
//!
//! Measured once per process (~60 ms) and remembered.

use std::{
    sync::OnceLock,
    time::{Duration, Instant},
};

use loupe_bpf::{FunctionProbeOptions, FunctionProbes, MAX_SAMPLE_EVERY, ProbePoint};
use serde::{Deserialize, Serialize};

use super::target::{TargetSpec, resolve};

/// Calls per measurement.
const CALLS: u32 = 20_000;

/// The cost of probing, as measured on this host.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Added CPU time per call of a probed function when the call is timed (entry and return).
    pub timed_call_ns: f64,
    /// … when it is counted but not timed (sampling skipped it).
    pub untimed_call_ns: f64,
    /// What the probes report for an empty function (the median).
    pub bias_ns: u64,
}

impl Calibration {
    /// Figures measured on this machine's kind of VM (`docs/probes.md`), used when calibrating
    /// is not possible (not x86-64, the binary stripped of its own symbol).
    pub const FALLBACK: Calibration = Calibration { timed_call_ns: 1_300.0, untimed_call_ns: 1_200.0, bias_ns: 0 };

    /// CPU share (of one core) that `timed` and `untimed` calls a second cost.
    pub fn share(&self, timed_per_s: f64, untimed_per_s: f64) -> f64 {
        (timed_per_s * self.timed_call_ns + untimed_per_s * self.untimed_call_ns) / 1e9
    }
}

/// The calibration target: an empty function laid out as a frame-pointer build lays one out.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub extern "C" fn loupe_probe_calibration_target() {
    core::arch::naked_asm!("push rbp", "mov rbp, rsp", "pop rbp", "ret")
}

/// This host's calibration (measured on first use), or `None` when it could not be measured
/// (the reason is logged once).
pub fn calibration() -> Option<Calibration> {
    static ONCE: OnceLock<Option<Calibration>> = OnceLock::new();
    *ONCE.get_or_init(|| match measure() {
        Ok(c) => {
            tracing::info!(
                timed_call_ns = c.timed_call_ns,
                untimed_call_ns = c.untimed_call_ns,
                bias_ns = c.bias_ns,
                "probe cost calibrated"
            );
            Some(c)
        }
        Err(e) => {
            tracing::warn!("probe cost not calibrated ({e}); using this VM's measured figures");
            None
        }
    })
}

#[cfg(not(target_arch = "x86_64"))]
fn measure() -> Result<Calibration, String> {
    Err("calibration is written for x86-64".into())
}

#[cfg(target_arch = "x86_64")]
fn measure() -> Result<Calibration, String> {
    let spec = TargetSpec {
        pids: vec![std::process::id()],
        functions: vec!["loupe_probe_calibration_target".into()],
        ..Default::default()
    };
    let target = resolve(&spec).map_err(|e| e.to_string())?.remove(0);
    let baseline = time_calls();
    let mut probes = FunctionProbes::attach(&FunctionProbeOptions {
        functions: vec![ProbePoint { file: target.attach_file, file_offset: target.file_offset, name: target.name }],
        pids: spec.pids,
        sample_every: 1,
        record_calls: false,
        links: None,
        count_only: false,
    })
    .map_err(|e| e.to_string())?;
    let timed = time_calls();
    let totals = probes.totals().map_err(|e| e.to_string())?;
    probes.set_sample_every(MAX_SAMPLE_EVERY).map_err(|e| e.to_string())?;
    let untimed = time_calls();
    drop(probes);
    let histogram = &totals.first().ok_or("no counters")?.buckets;
    let bias_ns = super::median_of(histogram).unwrap_or(0);
    let per_call = |d: Duration| (d.saturating_sub(baseline).as_nanos() as f64 / CALLS as f64).max(1.0);
    Ok(Calibration { timed_call_ns: per_call(timed), untimed_call_ns: per_call(untimed), bias_ns })
}

#[cfg(target_arch = "x86_64")]
fn time_calls() -> Duration {
    let f = std::hint::black_box(loupe_probe_calibration_target as extern "C" fn());
    let start = Instant::now();
    for _ in 0..CALLS {
        f();
    }
    start.elapsed()
}
