//! Userspace half of Loupe's kernel library: load the programs built from `bpf/ebpf`, attach
//! them, run them, read what they counted. No storage and no HTTP here: a run ends as a
//! [`RunCounters`] value that the caller stores wherever it likes.
//!
//! * [`TrafficSampler`] — the Millisampler tc filter on one interface (ingress and egress).
//! * [`StackSampler`] — the CPU-clock stack sampler on every online CPU.
//! * [`FunctionProbes`] — entry and return uprobes on named functions: call counts, latency
//!   histograms, per-call records.
//! * [`clock`] — converting between the kernel's monotonic clock and wall-clock time.

pub mod clock;
mod filter_steps;
mod iface;
pub mod kernel;
mod off_cpu;
mod privilege;
mod probes;
mod program_costs;
pub mod python;
mod session_link;
mod stacks;
mod traffic;
mod unwinding;
mod verifier;

pub use filter_steps::FilterSteps;
pub use iface::Interface;
pub use loupe_bpf_common::error::SamplerError;
pub use loupe_bpf_common::{
    FILTER_STEPS, SlotCounters,
    probes::{BUCKETS, bucket_high, bucket_low, bucket_of},
    sketch,
};
pub use off_cpu::{
    DEFAULT_EXACT, DEFAULT_MAX_STACKS_PER_SECOND, OffCpu, OffCpuOptions, OffCpuPlan, OffCpuStats, burst_limit, plan,
};
pub use probes::{
    FunctionProbeOptions, FunctionProbes, FunctionTotals, LinkKind, MAX_ATTACHMENTS, MAX_SAMPLE_EVERY, ProbePoint,
    RawCall,
};
pub use program_costs::{ProgramCost, program_costs};
pub use python::{PyEnd, PyFrameRef, PythonStack};
pub use stacks::{
    DenyList, MAX_FREQUENCY, MIN_FREQUENCY, RawStack, SampleClock, StackSampler, StackSamplerOptions, UserEnd,
    cgroup_id, comm_key, ring_bytes,
};
pub use traffic::{
    CpuCounters, MAX_CAPACITY, MAX_INTERVAL, MIN_INTERVAL, PendingRun, RunCounters, RunRequest, SamplerOptions,
    StartAt, TcHook, TrafficSampler, parse_prefix,
};
pub use unwinding::{DEFAULT_TABLE_ROWS, UnwindStats};
pub use verifier::{HEADROOM, VERIFIER_LIMIT};

/// The stack sampler's compiled kernel object, embedded at build time.
pub(crate) static STACKS_OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/loupe-stacks"));

/// The function probes' compiled kernel object, embedded at build time.
pub(crate) static PROBES_OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/loupe-probes"));

/// The tc filter's compiled kernel object, embedded at build time.
pub(crate) static EBPF_OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/loupe-traffic"));

/// The tc filter cut after each step (`loupe_bpf_common::FILTER_STEPS`), for the filter bench:
/// the agent never loads it.
pub(crate) static FILTER_STEPS_OBJECT: &[u8] =
    aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/loupe-traffic-steps"));

/// One of a loaded object's programs as its type (`&mut RawTracePoint`, …), with an error that
/// names the program.
pub(crate) fn program_mut<'a, T>(ebpf: &'a mut aya::Ebpf, name: &str) -> Result<T, SamplerError>
where
    T: TryFrom<&'a mut aya::programs::Program>,
    <T as TryFrom<&'a mut aya::programs::Program>>::Error: std::fmt::Display,
{
    let program =
        ebpf.program_mut(name).ok_or_else(|| SamplerError::Load(format!("program {name} missing from object")))?;
    T::try_from(program).map_err(|e| SamplerError::Load(format!("{name}: {e}")))
}

/// Loads a raw tracepoint program and attaches it to `tracepoint`; `action` says what was
/// tried in a privilege error ("attach to sched_switch").
pub(crate) fn attach_raw_tracepoint(
    ebpf: &mut aya::Ebpf,
    program: &str,
    tracepoint: &'static str,
    action: &'static str,
) -> Result<(), SamplerError> {
    let loaded: &mut aya::programs::RawTracePoint = program_mut(ebpf, program)?;
    loaded.load().map_err(|e| verifier::load_failed(program, e))?;
    loaded.attach(tracepoint).map_err(|e| {
        privilege::classify(action, &e, |reason| SamplerError::Attach {
            iface: format!("raw tracepoint {tracepoint}"),
            reason,
        })
    })?;
    Ok(())
}

/// A typed view of one of a loaded object's maps, with an error that names the map.
pub(crate) fn map_mut<'a, T>(ebpf: &'a mut aya::Ebpf, name: &str) -> Result<T, SamplerError>
where
    T: TryFrom<&'a mut aya::maps::Map>,
    <T as TryFrom<&'a mut aya::maps::Map>>::Error: std::fmt::Display,
{
    let map = ebpf.map_mut(name).ok_or_else(|| SamplerError::Load(format!("map {name} missing")))?;
    T::try_from(map).map_err(|e| SamplerError::Load(format!("map {name}: {e}")))
}
