//! What a host says about itself: health, retained days, store totals.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Health {
    pub status: String,
    pub version: String,
    /// `agent` (collecting) or `serve` (serving a store only).
    pub mode: String,
    pub hostname: String,
    pub uptime_s: u64,
    /// Interfaces the agent samples (empty under `serve`).
    pub ifaces: Vec<String>,
    pub auth: bool,
    /// Where this agent is in a fleet (`--nats`): its host, rack and dc names; absent outside
    /// one. The web UI offers its fleet view when it is present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<super::FleetPlace>,
    /// Whose fleet requests this agent takes: `trust_file` (the keys of its `--fleet-trust`
    /// file), `insecure` (`--fleet-insecure`: any key, every scope) or `none` (it refuses
    /// every request). Absent outside a fleet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet_trust: Option<String>,
    /// What this agent was asked to collect and runs without, and why (the kernel refused the
    /// program it needs); `status` is then `degraded`. Empty (and absent) when all runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub off: Vec<FeatureOff>,
}

/// A feature an agent was asked for and runs without.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FeatureOff {
    /// `stacks`, `off_cpu`, `runs` or `probes`.
    pub feature: String,
    /// The kernel's words: which program its verifier refused, and its last lines; or the
    /// kernel facility it lacks (`stacks needs Linux 5.17 (bpf_loop); this kernel is …`).
    pub reason: String,
}

/// One retained UTC day.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DayView {
    pub day_start_unix_ns: u64,
    /// `YYYY-MM-DD`.
    pub date: String,
    /// Number of runs per sampling interval (the key: the interval in ns, as a decimal string).
    #[schema(value_type = BTreeMap<String, u64>)]
    pub runs_by_interval: BTreeMap<u64, u64>,
    pub runs: u64,
    pub run_bytes: u64,
    pub sample_batches: u64,
    pub samples: u64,
    pub sample_bytes: u64,
}

/// Store totals (running counters, no scan) and the retention they are kept under.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct StatsView {
    pub runs: u64,
    /// Sum of the runs' stored bytes.
    pub stored_bytes: u64,
    /// What the store's files occupy on disk (including space not yet reclaimed).
    pub disk_bytes: u64,
    pub sample_batches: u64,
    pub samples: u64,
    /// Bytes of sample batches and the sample dictionary.
    pub sample_bytes: u64,
    /// Everything stored: runs, stack samples, timeline batches and probe sessions, their
    /// dictionaries included. What the byte cap applies to.
    pub total_bytes: u64,
    /// The byte cap `total_bytes` is kept under (oldest deleted first).
    pub max_bytes: u64,
    /// How long data is kept, in seconds.
    pub max_age_s: u64,
}
