//! Function probes: the entry and return programs on named functions' file offsets, in some
//! processes or every process that maps the file; reading their counters, histograms and
//! per-call records. Which functions, at which offsets, is the caller's business (the query
//! host resolves symbols and checks instructions); this module only attaches where it is told.
//!
//! Attachment is all or nothing: if one probe fails, the ones already attached are detached
//! (dropping the loaded object closes their links) and the error names the probe. Probes live as
//! long as the [`FunctionProbes`] value — and, since they hang on file descriptors, no longer
//! than the process that holds it, even after `kill -9`.
//!
//! *Session links first* (Linux 6.13+, loaded by `session_link.rs`, which aya 0.14 cannot do):
//! a call sampling skips, and every call counted only (Go), pays the entry trap alone — at 1 in
//! 64 a call costs what an entry-only probe does (`docs/probes.md`). Perf-event uprobes and
//! uretprobes, what aya offers, are the fallback: every call pays both traps.

use std::{
    collections::BTreeMap,
    num::NonZeroU32,
    os::fd::{AsFd, AsRawFd, OwnedFd},
    path::PathBuf,
    time::Duration,
};

use aya::{
    Ebpf, EbpfLoader,
    maps::{Array, MapData, PerCpuArray, RingBuf},
    programs::{UProbe, uprobe::UProbeScope},
};
use loupe_bpf_common::probes::{
    BUCKETS, CONFIG_COUNT_ONLY, CONFIG_NESTED, CONFIG_RECORD_CALLS, CONFIG_SAMPLE_EVERY, CallRecord, FunctionCounters,
    MAP_PROBE_CALLS, MAP_PROBE_CONFIG, MAP_PROBE_COUNTERS, MAP_PROBE_HISTOGRAMS, MAX_FUNCTIONS, PROG_ENTRY,
    PROG_RETURN, PROG_SESSION,
};

use crate::{SamplerError, clock::ClockPair, map_mut, session_link};

/// Most probe attachments (entry + return each count one) one [`FunctionProbes`] makes.
pub const MAX_ATTACHMENTS: usize = 512;
/// Sampling accepted: 1 (every call) to this.
pub const MAX_SAMPLE_EVERY: u32 = 1 << 20;

/// One function to probe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbePoint {
    /// The file holding it, as the kernel should open it (e.g. `/proc/PID/root/usr/lib/…` or
    /// `/proc/PID/exe`, so a file replaced on disk since the process started is still the one
    /// probed).
    pub file: PathBuf,
    /// Where the probe goes, as a file offset.
    pub file_offset: u64,
    /// A name for error messages.
    pub name: String,
}

/// What to probe and how.
#[derive(Clone, Debug)]
pub struct FunctionProbeOptions {
    /// Function `i` gets index `i` in every counter.
    pub functions: Vec<ProbePoint>,
    /// Only these processes; empty: every process that maps the files.
    pub pids: Vec<u32>,
    /// Time 1 outermost call in N.
    pub sample_every: u32,
    /// Send each timed call to userspace ([`FunctionProbes::drain_calls`]).
    pub record_calls: bool,
    /// How to attach; `None`: session links where the kernel has them, else perf-event uprobes.
    pub links: Option<LinkKind>,
    /// Count entries only: no return probe (none is attached on perf events; the session
    /// program asks for none), so nothing is timed and the probed stack is never touched.
    pub count_only: bool,
}

/// How probes are attached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkKind {
    /// Uprobe session links (Linux 6.13+): one program at entry and, only for the calls that
    /// need it, at return — a call sampling skips pays the entry trap alone.
    Session,
    /// Perf-event uprobes and uretprobes (what aya offers): both traps on every call.
    PerfEvent,
}

/// One function's counters, summed over CPUs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FunctionTotals {
    pub calls: u64,
    pub timed: u64,
    pub total_ns: u64,
    pub max_ns: u64,
    pub records_lost: u64,
    pub mismatched: u64,
    pub too_deep: u64,
    /// (bucket, count), ascending, no zeros; see `loupe_bpf_common::probes::bucket_of`.
    pub buckets: Vec<(u32, u64)>,
}

/// One timed call as the kernel recorded it, its times in Unix nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawCall {
    pub function: u32,
    pub pid: u32,
    pub tid: u32,
    pub cpu: u32,
    pub entry_unix_ns: u64,
    pub exit_unix_ns: u64,
    pub depth: u32,
}

/// Attached probes. Detached when dropped.
pub struct FunctionProbes {
    /// Session links and their program; dropped before the maps they use.
    sessions: Vec<OwnedFd>,
    kind: LinkKind,
    ebpf: Ebpf,
    calls: RingBuf<MapData>,
    clocks: ClockPair,
    functions: u32,
    attachments: usize,
}

impl std::fmt::Debug for FunctionProbes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FunctionProbes")
            .field("functions", &self.functions)
            .field("kind", &self.kind)
            .field("session_fds", &self.sessions.len())
            .field("attachments", &self.attachments)
            .finish()
    }
}

impl FunctionProbes {
    /// Loads the programs and attaches an entry and a return probe to every function, in every
    /// listed process (or all). Nothing stays attached when this fails.
    pub fn attach(options: &FunctionProbeOptions) -> Result<Self, SamplerError> {
        crate::kernel::PROBES.check()?;
        let n = options.functions.len();
        if n == 0 || n > MAX_FUNCTIONS as usize {
            return Err(SamplerError::Probe(format!("{n} functions: probe 1 to {MAX_FUNCTIONS} at a time")));
        }
        let scopes: Vec<UProbeScope> = if options.pids.is_empty() {
            vec![UProbeScope::AllProcesses]
        } else {
            options
                .pids
                .iter()
                .map(|&pid| {
                    NonZeroU32::new(pid)
                        .map(UProbeScope::OneProcess)
                        .ok_or_else(|| SamplerError::Probe("PID 0 cannot be probed".into()))
                })
                .collect::<Result<_, _>>()?
        };
        let attachments = if options.count_only { 1 } else { 2 } * n * scopes.len();
        if attachments > MAX_ATTACHMENTS {
            return Err(SamplerError::Probe(format!(
                "{n} functions in {} processes need {attachments} probes; at most {MAX_ATTACHMENTS} \
                 (probe fewer functions or processes, or a --binary for all its processes)",
                scopes.len()
            )));
        }
        if !(1..=MAX_SAMPLE_EVERY).contains(&options.sample_every) {
            return Err(SamplerError::Probe(format!(
                "sampling 1 in {}: use 1 to {MAX_SAMPLE_EVERY}",
                options.sample_every
            )));
        }
        let mut ebpf = EbpfLoader::new()
            .verifier_log_level(crate::verifier::LOG_LEVEL)
            .load(crate::PROBES_OBJECT)
            .map_err(|e| crate::privilege::classify("load eBPF programs", &e, SamplerError::Load))?;
        {
            let mut config: Array<&mut MapData, u64> = map_mut(&mut ebpf, MAP_PROBE_CONFIG)?;
            let set = |config: &mut Array<&mut MapData, u64>, i, v| {
                config.set(i, v, 0).map_err(|e| SamplerError::Load(format!("probe config: {e}")))
            };
            set(&mut config, CONFIG_SAMPLE_EVERY, options.sample_every as u64)?;
            set(&mut config, CONFIG_RECORD_CALLS, options.record_calls as u64)?;
            set(&mut config, CONFIG_NESTED, (n > 1) as u64)?;
            set(&mut config, CONFIG_COUNT_ONLY, options.count_only as u64)?;
        }
        let mut sessions = Vec::new();
        // Below session links' first kernel the session program is not tried: such a kernel
        // does not know its attach type and verifies it as something else (6.1 refused it for
        // pointer math it would allow a session program).
        let no_sessions = crate::kernel::UPROBE_SESSION.missing_here();
        let kind = if let (Some(release), None) = (&no_sessions, options.links) {
            tracing::info!(
                "uprobe session links need Linux {}; this kernel is {release}: probing with perf-event uprobes",
                crate::kernel::UPROBE_SESSION.needs()
            );
            attach_perf_events(&mut ebpf, options, &scopes)?;
            LinkKind::PerfEvent
        } else if options.links == Some(LinkKind::PerfEvent) {
            attach_perf_events(&mut ebpf, options, &scopes)?;
            LinkKind::PerfEvent
        } else {
            match session_link::load_session_program(crate::PROBES_OBJECT, &ebpf, PROG_SESSION) {
                Ok((program, _)) => {
                    sessions = attach_sessions(&program, options)?;
                    sessions.push(program);
                    LinkKind::Session
                }
                Err(e @ (SamplerError::Privilege { .. } | SamplerError::Denied { .. })) => return Err(e),
                Err(e) if options.links == Some(LinkKind::Session) => return Err(e),
                Err(e) => {
                    tracing::info!("uprobe session links unavailable ({e}); probing with perf-event uprobes");
                    attach_perf_events(&mut ebpf, options, &scopes)?;
                    LinkKind::PerfEvent
                }
            }
        };
        let calls = ebpf
            .take_map(MAP_PROBE_CALLS)
            .ok_or_else(|| SamplerError::Load(format!("map {MAP_PROBE_CALLS} missing")))
            .and_then(|m| {
                RingBuf::try_from(m).map_err(|e| SamplerError::Load(format!("map {MAP_PROBE_CALLS}: {e}")))
            })?;
        Ok(Self { sessions, kind, ebpf, calls, clocks: ClockPair::now(), functions: n as u32, attachments })
    }

    /// How the probes are attached.
    pub fn link_kind(&self) -> LinkKind {
        self.kind
    }

    /// Probes attached (entry and return, per function and process).
    pub fn attachments(&self) -> usize {
        self.attachments
    }

    /// Changes the sampling of calls that start from now on.
    pub fn set_sample_every(&mut self, every: u32) -> Result<(), SamplerError> {
        let every = every.clamp(1, MAX_SAMPLE_EVERY);
        let mut config: Array<&mut MapData, u64> = map_mut(&mut self.ebpf, MAP_PROBE_CONFIG)?;
        config.set(CONFIG_SAMPLE_EVERY, every as u64, 0).map_err(|e| SamplerError::Read(format!("probe config: {e}")))
    }

    /// Every function's call count so far (cheap: one read per function, no histograms).
    pub fn calls(&self) -> Result<Vec<u64>, SamplerError> {
        let counters = self.counters_map()?;
        (0..self.functions)
            .map(|f| {
                let per_cpu = counters.get(&f, 0).map_err(|e| SamplerError::Read(format!("probe counters: {e}")))?;
                Ok(per_cpu.iter().map(|c| c.calls).sum())
            })
            .collect()
    }

    /// Every function's counters and histogram so far, summed over CPUs.
    pub fn totals(&self) -> Result<Vec<FunctionTotals>, SamplerError> {
        let counters = self.counters_map()?;
        let histograms: PerCpuArray<&MapData, u64> = self
            .ebpf
            .map(MAP_PROBE_HISTOGRAMS)
            .ok_or_else(|| SamplerError::Load(format!("map {MAP_PROBE_HISTOGRAMS} missing")))?
            .try_into()
            .map_err(|e| SamplerError::Load(format!("map {MAP_PROBE_HISTOGRAMS}: {e}")))?;
        let mut out = Vec::with_capacity(self.functions as usize);
        for f in 0..self.functions {
            let per_cpu = counters.get(&f, 0).map_err(|e| SamplerError::Read(format!("probe counters: {e}")))?;
            let mut t = FunctionTotals::default();
            for c in per_cpu.iter() {
                t.calls += c.calls;
                t.timed += c.timed;
                t.total_ns += c.total_ns;
                t.max_ns = t.max_ns.max(c.max_ns);
                t.records_lost += c.records_lost;
                t.mismatched += c.mismatched;
                t.too_deep += c.too_deep;
            }
            // A function that timed nothing has an empty histogram: skip its 976 reads.
            if t.timed > 0 {
                for b in 0..BUCKETS {
                    let values = histograms
                        .get(&(f * BUCKETS + b), 0)
                        .map_err(|e| SamplerError::Read(format!("probe histogram: {e}")))?;
                    let count: u64 = values.iter().sum();
                    if count > 0 {
                        t.buckets.push((b, count));
                    }
                }
            }
            out.push(t);
        }
        Ok(out)
    }

    /// Waits up to `timeout` for recorded calls, then moves every one waiting into `out`;
    /// returns how many were added.
    pub fn drain_calls(&mut self, out: &mut Vec<RawCall>, timeout: Duration) -> usize {
        let clocks = self.clocks;
        let ring = &mut self.calls;
        let mut fds = libc::pollfd { fd: ring.as_fd().as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut fds, 1, timeout.as_millis().min(i32::MAX as u128) as i32) };
        let before = out.len();
        while let Some(item) = ring.next() {
            if item.len() < size_of::<CallRecord>() {
                continue;
            }
            // SAFETY: the kernel wrote a whole CallRecord; read unaligned from the ring's bytes.
            let r: CallRecord = unsafe { std::ptr::read_unaligned(item.as_ptr().cast()) };
            if r.function as u32 >= self.functions {
                continue;
            }
            out.push(RawCall {
                function: r.function as u32,
                pid: r.pid,
                tid: r.tid,
                cpu: r.cpu,
                entry_unix_ns: clocks.mono_to_unix(r.entry_ns),
                exit_unix_ns: clocks.mono_to_unix(r.exit_ns),
                depth: r.depth as u32,
            });
        }
        out.len() - before
    }

    fn counters_map(&self) -> Result<PerCpuArray<&MapData, FunctionCounters>, SamplerError> {
        self.ebpf
            .map(MAP_PROBE_COUNTERS)
            .ok_or_else(|| SamplerError::Load(format!("map {MAP_PROBE_COUNTERS} missing")))?
            .try_into()
            .map_err(|e| SamplerError::Load(format!("map {MAP_PROBE_COUNTERS}: {e}")))
    }
}

/// Entry and return probes on perf events, one of each per function and process.
fn attach_perf_events(
    ebpf: &mut Ebpf,
    options: &FunctionProbeOptions,
    scopes: &[UProbeScope],
) -> Result<(), SamplerError> {
    let programs: &[(&str, bool)] =
        if options.count_only { &[(PROG_ENTRY, false)] } else { &[(PROG_ENTRY, false), (PROG_RETURN, true)] };
    for &(name, ret) in programs {
        let program: &mut UProbe = crate::program_mut(ebpf, name)?;
        program.load().map_err(|e| crate::verifier::load_failed(name, e))?;
        for (index, point) in options.functions.iter().enumerate() {
            for &scope in scopes {
                let at = aya::programs::uprobe::UProbeAttachPoint {
                    location: point.file_offset.into(),
                    cookie: Some(index as u64),
                };
                program.attach(at, &point.file, scope).map_err(|e| {
                    let place = format!(
                        "{}{} in {}",
                        if ret { "return of " } else { "" },
                        match scope {
                            UProbeScope::OneProcess(pid) => format!("PID {pid}"),
                            _ => "every process".into(),
                        },
                        point.file.display()
                    );
                    crate::privilege::classify("attach uprobes", &e, |reason| SamplerError::ProbeAttach {
                        function: point.name.clone(),
                        place,
                        reason,
                    })
                })?;
            }
        }
    }
    Ok(())
}

/// One session link per file and process.
fn attach_sessions(program: &OwnedFd, options: &FunctionProbeOptions) -> Result<Vec<OwnedFd>, SamplerError> {
    let pids: Vec<u32> = if options.pids.is_empty() { vec![0] } else { options.pids.clone() };
    let mut links = Vec::new();
    for (file, offsets, cookies) in by_file(&options.functions) {
        for &pid in &pids {
            let link = session_link::attach_session(program, &file, pid, &offsets, &cookies).map_err(|e| {
                let names: Vec<&str> = cookies.iter().map(|&c| options.functions[c as usize].name.as_str()).collect();
                let place = match pid {
                    0 => format!("every process, in {}", file.display()),
                    pid => format!("PID {pid}, in {}", file.display()),
                };
                crate::privilege::classify("attach uprobes", &e, |reason| SamplerError::ProbeAttach {
                    function: names.join(", "),
                    place,
                    reason,
                })
            })?;
            links.push(link);
        }
    }
    Ok(links)
}

/// Functions grouped by file, in index order: (file, offsets, cookies).
fn by_file(points: &[ProbePoint]) -> Vec<(PathBuf, Vec<u64>, Vec<u64>)> {
    let mut files: BTreeMap<PathBuf, (Vec<u64>, Vec<u64>)> = BTreeMap::new();
    for (index, p) in points.iter().enumerate() {
        let entry = files.entry(p.file.clone()).or_default();
        entry.0.push(p.file_offset);
        entry.1.push(index as u64);
    }
    files.into_iter().map(|(f, (o, c))| (f, o, c)).collect()
}
