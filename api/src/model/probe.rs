//! Function probes as users see them: a session's functions with call counts and latency
//! percentiles and histograms, its slowest calls as small call trees (`loupe probe`, `loupe
//! probes show`, `GET /api/v1/probes/{id}`), the sessions stored and running (`loupe probes
//! list`, `GET /api/v1/probes`).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// One probe session.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ProbeView {
    pub id: u64,
    pub start_unix_ns: u64,
    pub end_unix_ns: u64,
    pub pids: Vec<u32>,
    pub binary: Option<String>,
    /// 1 in this many outermost calls was timed at the end (the budget may have raised it).
    pub sample_every: u32,
    /// Why it ended: `duration`, `stopped`, `budget`, `exited` or `shutdown`.
    pub ended: String,
    pub notes: Vec<String>,
    /// What the probes add to every timed call's duration on this host (an empty function's
    /// median), already subtracted from the percentiles below; 0 when not calibrated.
    pub bias_ns: u64,
    pub functions: Vec<ProbeFunctionView>,
    pub calls_recorded: u64,
    pub calls_lost: u64,
    /// The slowest outermost recorded calls, slowest first, each with its probed callees.
    pub slowest: Vec<CallTreeView>,
    /// Every recorded call (only when asked for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls: Option<Vec<CallView>>,
}

/// One probed function over a session.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ProbeFunctionView {
    pub name: String,
    pub symbol: String,
    pub binary: String,
    pub address: u64,
    /// Bytes past the symbol where the probe sat (4 after `endbr64`).
    pub probe_offset: u32,
    /// Every call, timed or not (exact).
    pub calls: u64,
    pub calls_per_s: f64,
    /// Calls timed: the population of the figures below.
    pub timed: u64,
    /// Percentiles within ±3.2 % (log-linear buckets), the bias subtracted.
    pub p50_ns: Option<u64>,
    pub p90_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    pub mean_ns: Option<u64>,
    /// Exact, as measured (bias included).
    pub max_ns: u64,
    /// Sum of the timed calls' durations, as measured.
    pub total_ns: u64,
    pub histogram: Vec<LatencyBucket>,
}

/// Calls whose measured duration was in `[low_ns, high_ns)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct LatencyBucket {
    pub low_ns: u64,
    pub high_ns: u64,
    pub count: u64,
}

/// One recorded call.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CallView {
    pub function: String,
    pub pid: u32,
    pub tid: u32,
    pub cpu: u32,
    pub entry_unix_ns: u64,
    pub exit_unix_ns: u64,
    pub depth: u32,
    /// Index in `calls` of the enclosing recorded call.
    pub parent: Option<u32>,
}

/// A call with its probed callees: where its time went.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CallTreeView {
    pub function: String,
    pub tid: u32,
    pub entry_unix_ns: u64,
    pub duration_ns: u64,
    /// Its duration less its recorded children's.
    pub self_ns: u64,
    #[schema(no_recursion)]
    pub children: Vec<CallTreeView>,
}

/// A session still attached on the agent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ActiveProbeView {
    /// The agent's handle for it (`loupe probes stop HANDLE`); not the stored id.
    pub handle: u64,
    pub started_unix_ns: u64,
    /// When it will end by itself, if it has a length.
    pub ends_unix_ns: Option<u64>,
    pub pids: Vec<u32>,
    pub binary: Option<String>,
    pub functions: Vec<String>,
    pub sample_every: u32,
    pub calls: bool,
    /// The team that started it: only that team (or an admin) stops it.
    #[serde(default)]
    pub team: String,
}

/// One stored session, without its calls.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ProbeListEntry {
    pub id: u64,
    pub start_unix_ns: u64,
    pub end_unix_ns: u64,
    pub pids: Vec<u32>,
    pub binary: Option<String>,
    pub functions: Vec<String>,
    pub calls: u64,
    pub recorded_calls: u64,
    pub ended: String,
}

/// `loupe probes list --json`, `GET /api/v1/probes`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ProbeList {
    pub active: Vec<ActiveProbeView>,
    pub sessions: Vec<ProbeListEntry>,
}
