//! The public types of probe sessions: what `loupe probe` measured on named functions of
//! running processes (see `query-host/core/src/ingest/probes/`, `session.rs` and `target.rs`, for how
//! they are made).

use serde::{Deserialize, Serialize};

/// One probe session: entry and return probes on a set of functions, for a while, and what
/// they measured. Stored whole at the session's end.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeSession {
    /// Assigned by the store on put (any value given is replaced).
    pub id: u64,
    pub start_unix_ns: u64,
    pub end_unix_ns: u64,
    /// Processes probed (empty: every process that maps `binary`).
    pub pids: Vec<u32>,
    /// The binary probed when no PID was given.
    pub binary: Option<String>,
    /// 1 in `sample_every` outermost calls was timed (1 = every call). The value in force at
    /// the end: the cost budget may have raised it during the session.
    pub sample_every: u32,
    /// Per-call records were asked for (`--calls`).
    pub with_calls: bool,
    /// Why it ended: `duration`, `stopped`, `budget`, `exited`, `shutdown`.
    pub ended: String,
    /// A line for the user when something was raised, cut or refused on the way (budget
    /// raised the sampling, calls lost to a full ring, …); empty when nothing was.
    pub notes: Vec<String>,
    /// What the probes add to a timed call's duration on this host (an empty function's
    /// median, calibrated at the session's start); 0 when not calibrated.
    pub bias_ns: u64,
    pub functions: Vec<ProbeFunction>,
    /// Sampled calls, in entry order per thread, each naming its parent (`--calls` only).
    pub calls: Vec<ProbeCall>,
    /// Calls that happened but could not be recorded (ring buffer full, too deep, over the
    /// session's cap of [`MAX_SESSION_CALLS`]).
    pub calls_lost: u64,
}

/// One probed function and what its probes measured.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeFunction {
    /// The name the user asked for (demangled where it was given so).
    pub name: String,
    /// The ELF symbol it resolved to.
    pub symbol: String,
    /// The file holding it (the program or a shared library).
    pub binary: String,
    /// The symbol's ELF virtual address.
    pub address: u64,
    /// Bytes past the symbol where the probe sits (4 after an `endbr64`).
    pub probe_offset: u32,
    /// Every call seen, sampled or not (exact).
    pub calls: u64,
    /// Calls timed (the histogram's population).
    pub sampled: u64,
    /// Sum and maximum of the timed calls' durations.
    pub total_ns: u64,
    pub max_ns: u64,
    /// The latency histogram: (log-linear bucket index, count), buckets ascending, no zeros.
    /// Bucket math: `loupe_bpf_common::probes::bucket_of` / `bucket_low`.
    pub buckets: Vec<(u32, u64)>,
}

/// One sampled call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeCall {
    /// Index into [`ProbeSession::functions`].
    pub function: u32,
    pub pid: u32,
    pub tid: u32,
    /// The CPU it returned on.
    pub cpu: u32,
    pub entry_unix_ns: u64,
    pub exit_unix_ns: u64,
    /// 0 for a call no other probed function's call encloses.
    pub depth: u32,
    /// Index into [`ProbeSession::calls`] of the enclosing call, when it was recorded.
    pub parent: Option<u32>,
}

/// What listing sessions returns: a session without its calls and histograms.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeSessionSummary {
    pub id: u64,
    pub start_unix_ns: u64,
    pub end_unix_ns: u64,
    pub pids: Vec<u32>,
    pub binary: Option<String>,
    /// Function names, in session order.
    pub functions: Vec<String>,
    /// Every call seen, summed over the functions ([`ProbeFunction::calls`]).
    pub calls: u64,
    /// Call records stored (the length of [`ProbeSession::calls`]).
    pub recorded_calls: u64,
    pub ended: String,
    /// Key + value bytes of the session's records in the store.
    pub stored_bytes: u64,
}

/// Most functions one session may probe.
pub const MAX_SESSION_FUNCTIONS: usize = 64;
/// Most call records one session keeps.
pub const MAX_SESSION_CALLS: usize = 1_000_000;
/// Most histogram buckets per function (the kernel's bucket count).
pub const MAX_BUCKETS: usize = 1024;
