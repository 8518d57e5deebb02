//! One probe session: attach, watch, detach, and turn what the kernel counted into a
//! [`ProbeSession`] for the store.
//!
//! While attached, every 50 ms the session drains per-call records, and every 250 ms it reads
//! each function's call count and checks
//! - the **cost budget**: calls per second × the calibrated cost of a call ([`super::cost`]) as
//!   a share of one CPU. Over budget, the session first raises the sampling to what would fit
//!   (timed calls cost more than counted ones); when even counting every call costs more than
//!   the budget, it detaches and says so. The probed program pays that cost, not the agent.
//! - whether the probed processes still live (when every one has exited, the session ends).
//!
//! Dropping a [`ProbeRun`] detaches (the kernel's links are file descriptors; even `kill -9` of
//! the agent removes them).

use std::{
    sync::atomic::{AtomicBool, Ordering},
    time::{Duration, Instant},
};

use loupe_bpf::{FunctionProbeOptions, FunctionProbes, MAX_SAMPLE_EVERY, ProbePoint, RawCall, SamplerError};
use loupe_store::{MAX_SESSION_CALLS, ProbeFunction, ProbeSession};
use loupe_timeline::{
    clock::proc_start,
    reader::{WriterState, writer_state},
};

use super::{
    calls,
    cost::{Calibration, calibration},
    target::{ResolvedFunction, TargetError, TargetSpec, resolve},
};
use loupe_api::{clock::now_unix_ns, orders::MAX_BUDGET_PERCENT};

/// What a session on a Go program says.
pub const GO_COUNT_ONLY: &str = "a Go program: calls counted only, none timed (a return probe would corrupt a moved \
     goroutine stack; timing would need a probe on each `ret`, which the kernel single-steps, matched by goroutine \
     rather than thread: docs/probes.md)";

/// How often records are drained.
const DRAIN: Duration = Duration::from_millis(50);
/// How often the budget and the targets are checked.
const CHECK: Duration = Duration::from_millis(250);

/// How to probe.
#[derive(Clone, Copy, Debug)]
pub struct ProbeOptions {
    /// Time 1 outermost call in N (1: all).
    pub sample_every: u32,
    /// Keep per-call records.
    pub record_calls: bool,
    /// Most CPU the probes may cost the probed programs, in % of one CPU (1: the default; 100:
    /// a whole CPU).
    pub budget_percent: f64,
}

/// Why a session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    Duration,
    Stopped,
    Budget,
    Exited,
    Shutdown,
}

impl Ended {
    pub fn as_str(self) -> &'static str {
        match self {
            Ended::Duration => "duration",
            Ended::Stopped => "stopped",
            Ended::Budget => "budget",
            Ended::Exited => "exited",
            Ended::Shutdown => "shutdown",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error(transparent)]
    Kernel(#[from] SamplerError),
    #[error(
        "budget {0} % out of bounds: a percentage of one CPU above 0 and at most {MAX_BUDGET_PERCENT} \
         (1 for 1 %, 100 for a whole CPU)"
    )]
    Budget(f64),
}

/// Probes attached and being watched.
pub struct ProbeRun {
    probes: FunctionProbes,
    functions: Vec<ResolvedFunction>,
    pids: Vec<u32>,
    /// Each probed process with its start time (clock ticks since boot), to tell it from a
    /// later process given the same PID.
    started: Vec<(u32, u64)>,
    binary: Option<String>,
    options: ProbeOptions,
    sample_every: u32,
    /// Entries counted, nothing timed (Go).
    count_only: bool,
    calibration: Calibration,
    calibrated: bool,
    started_unix_ns: u64,
    calls: Vec<RawCall>,
    calls_lost: u64,
    notes: Vec<String>,
    /// When the probes were attached (the budget's notes say how long after it acted).
    attached: Instant,
    last_check: Instant,
    last_calls: u64,
}

impl ProbeRun {
    /// Resolves, checks and attaches; nothing stays attached on error.
    pub fn start(spec: &TargetSpec, options: ProbeOptions) -> Result<ProbeRun, ProbeError> {
        if !(options.budget_percent > 0.0 && options.budget_percent <= MAX_BUDGET_PERCENT) {
            return Err(ProbeError::Budget(options.budget_percent));
        }
        let functions = resolve(spec)?;
        // Calibrate before attaching: the calibration probes this process, not the target.
        let measured = calibration();
        let count_only = functions.iter().any(|f| f.go);
        let probes = FunctionProbes::attach(&FunctionProbeOptions {
            functions: functions
                .iter()
                .map(|f| ProbePoint { file: f.attach_file.clone(), file_offset: f.file_offset, name: f.name.clone() })
                .collect(),
            pids: spec.pids.clone(),
            sample_every: options.sample_every,
            record_calls: options.record_calls,
            links: None,
            count_only,
        })?;
        Ok(ProbeRun {
            probes,
            functions,
            pids: spec.pids.clone(),
            started: spec.pids.iter().map(|&pid| (pid, proc_start(pid).map_or(0, |(ticks, _)| ticks))).collect(),
            binary: spec.binary.as_ref().map(|b| b.display().to_string()),
            options,
            sample_every: options.sample_every,
            count_only,
            calibration: measured.unwrap_or(Calibration::FALLBACK),
            calibrated: measured.is_some(),
            started_unix_ns: now_unix_ns(),
            calls: Vec::new(),
            calls_lost: 0,
            notes: Vec::new(),
            attached: Instant::now(),
            last_check: Instant::now(),
            last_calls: 0,
        })
    }

    pub fn functions(&self) -> &[ResolvedFunction] {
        &self.functions
    }

    pub fn started_unix_ns(&self) -> u64 {
        self.started_unix_ns
    }

    /// Watches until `deadline`, `stop`, the budget or the targets' exit ends the session.
    pub fn watch(&mut self, deadline: Option<Instant>, stop: &AtomicBool) -> Result<Ended, ProbeError> {
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(Ended::Stopped);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(Ended::Duration);
            }
            self.drain(DRAIN);
            if self.last_check.elapsed() >= CHECK
                && let Some(ended) = self.check()?
            {
                return Ok(ended);
            }
        }
    }

    fn drain(&mut self, wait: Duration) {
        if !self.options.record_calls {
            std::thread::sleep(wait);
            return;
        }
        let before = self.calls.len();
        self.probes.drain_calls(&mut self.calls, wait);
        if self.calls.len() > MAX_SESSION_CALLS {
            self.calls_lost += (self.calls.len() - MAX_SESSION_CALLS) as u64;
            self.calls.truncate(MAX_SESSION_CALLS.max(before));
        }
    }

    /// The budget and the targets; `Some` when the session must end.
    fn check(&mut self) -> Result<Option<Ended>, ProbeError> {
        let elapsed = self.last_check.elapsed().as_secs_f64();
        self.last_check = Instant::now();
        let calls: u64 = self.probes.calls()?.iter().sum();
        let rate = calls.saturating_sub(self.last_calls) as f64 / elapsed.max(1e-3);
        self.last_calls = calls;
        let c = self.calibration;
        let every = self.sample_every as f64;
        let budget = self.options.budget_percent / 100.0;
        let after = self.attached.elapsed().as_secs_f64();
        // Outermost calls are sampled; nested ones follow their root, so 1/N of all calls is
        // the right expectation.
        let timed = if self.count_only { 0.0 } else { rate / every };
        let share = c.share(timed, rate - timed);
        if share > budget {
            let floor = c.share(0.0, rate);
            if floor > budget {
                self.notes.push(format!(
                    "detached after {after:.1} s: {rate:.0} calls/s cost {:.2} % of a CPU even untimed, over the budget of {} % \
                     (--budget raises it; 100 is a whole CPU)",
                    floor * 100.0,
                    self.options.budget_percent
                ));
                return Ok(Some(Ended::Budget));
            }
            // Smallest power-of-two sampling that fits.
            let mut next = self.sample_every.max(1);
            while next < MAX_SAMPLE_EVERY && c.share(rate / next as f64, rate - rate / next as f64) > budget {
                next = next.saturating_mul(2);
            }
            if next != self.sample_every {
                self.probes.set_sample_every(next)?;
                self.notes.push(format!(
                    "sampling raised after {after:.1} s from 1 in {} to 1 in {next}: {rate:.0} calls/s cost {:.2} % of a CPU, \
                     over the budget of {} %",
                    self.sample_every,
                    share * 100.0,
                    self.options.budget_percent
                ));
                self.sample_every = next;
            }
        }
        // Gone, a zombie, or the PID now another process's (the timeline reader's one check).
        if !self.started.is_empty()
            && self.started.iter().all(|&(pid, ticks)| matches!(writer_state(pid, ticks), WriterState::Exited))
        {
            return Ok(Some(Ended::Exited));
        }
        Ok(None)
    }

    /// Detaches and returns what was measured (the store assigns the id).
    pub fn finish(mut self, ended: Ended) -> Result<ProbeSession, ProbeError> {
        // Calls that returned just before the end are still in the ring.
        if self.options.record_calls {
            while self.probes.drain_calls(&mut self.calls, Duration::ZERO) > 0 {}
        }
        let totals = self.probes.totals()?;
        let end_unix_ns = now_unix_ns();
        drop(self.probes);
        let mut lost = self.calls_lost;
        // Where each probe went, when more than `endbr64` ran before it; what Go allows.
        let mut notes: Vec<String> = self
            .functions
            .iter()
            .filter(|f| f.placement.past_moves())
            .map(|f| {
                format!(
                    "{}: probed at +{}, after {} (register moves that cannot fault, run unprobed)",
                    f.name,
                    f.placement.offset,
                    f.placement.skipped.join("; ")
                )
            })
            .collect();
        if let Some(go) = self.functions.iter().find(|f| f.go) {
            notes.push(format!("{}: {GO_COUNT_ONLY}", go.binary));
        }
        notes.extend(self.notes);
        let functions = self
            .functions
            .iter()
            .zip(&totals)
            .map(|(f, t)| {
                lost += t.records_lost;
                if t.mismatched > 0 {
                    notes.push(format!(
                        "{}: {} returns did not match the open call (longjmp or exceptions); those threads were reset",
                        f.name, t.mismatched
                    ));
                }
                if t.too_deep > 0 {
                    notes.push(format!("{}: {} calls nested too deep to time", f.name, t.too_deep));
                }
                ProbeFunction {
                    name: f.name.clone(),
                    symbol: f.symbol.clone(),
                    binary: f.binary.clone(),
                    address: f.address,
                    probe_offset: f.placement.offset,
                    calls: t.calls,
                    sampled: t.timed,
                    total_ns: t.total_ns,
                    max_ns: t.max_ns,
                    buckets: t.buckets.clone(),
                }
            })
            .collect();
        if !self.calibrated {
            notes.push("probe cost not calibrated on this host; the budget used this VM's figures".into());
        }
        let (calls, dropped) = calls::rebuild(std::mem::take(&mut self.calls), MAX_SESSION_CALLS);
        Ok(ProbeSession {
            id: 0,
            start_unix_ns: self.started_unix_ns,
            end_unix_ns,
            pids: self.pids,
            binary: self.binary,
            sample_every: self.sample_every,
            with_calls: self.options.record_calls,
            ended: ended.as_str().into(),
            notes,
            bias_ns: if self.calibrated { self.calibration.bias_ns } else { 0 },
            functions,
            calls,
            calls_lost: lost + dropped,
        })
    }
}
