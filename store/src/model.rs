//! The public data model: what a Millisampler run is, as callers see it.
//!
//! These types are what the agent hands to the store and what readers get back. They are
//! deliberately plain (vectors of integers, strings) so they serialize naturally to JSON or
//! MessagePack in the HTTP API; the compact on-disk form lives in `codec`.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::StoreError;

/// Identifier of a stored run, unique within one store (never reused).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RunId(pub u64);

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for RunId {
    type Err = std::num::ParseIntError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.trim().parse().map(RunId)
    }
}

/// One of the nine per-slot, per-CPU counters of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Counter {
    InBytes,
    OutBytes,
    InPackets,
    OutPackets,
    InCeBytes,
    InRetxBytes,
    OutRetxBytes,
    InCrossRegionBytes,
    OutCrossRegionBytes,
}

impl Counter {
    /// Every counter, in column order: `CpuColumns::counters[c.index()]` holds counter `c`.
    pub const ALL: [Counter; 9] = [
        Counter::InBytes,
        Counter::OutBytes,
        Counter::InPackets,
        Counter::OutPackets,
        Counter::InCeBytes,
        Counter::InRetxBytes,
        Counter::OutRetxBytes,
        Counter::InCrossRegionBytes,
        Counter::OutCrossRegionBytes,
    ];

    /// The snake_case name used in APIs and error messages (`"in_ce_bytes"`).
    pub fn name(self) -> &'static str {
        match self {
            Counter::InBytes => "in_bytes",
            Counter::OutBytes => "out_bytes",
            Counter::InPackets => "in_packets",
            Counter::OutPackets => "out_packets",
            Counter::InCeBytes => "in_ce_bytes",
            Counter::InRetxBytes => "in_retx_bytes",
            Counter::OutRetxBytes => "out_retx_bytes",
            Counter::InCrossRegionBytes => "in_cross_region_bytes",
            Counter::OutCrossRegionBytes => "out_cross_region_bytes",
        }
    }

    /// Position of this counter in [`Counter::ALL`] and in `CpuColumns::counters`.
    pub fn index(self) -> usize {
        self as usize
    }

    /// Inverse of [`Counter::name`].
    pub fn from_name(name: &str) -> Option<Counter> {
        Counter::ALL.into_iter().find(|c| c.name() == name)
    }
}

impl fmt::Display for Counter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// All columns of one CPU for one run. Every vector has exactly `samples` entries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuColumns {
    pub cpu: u32,
    /// Indexed by [`Counter::index`].
    pub counters: [Vec<u64>; 9],
    /// Ingress connection sketch (128-bit bitmap) per slot.
    pub in_conns: Vec<u128>,
    /// Egress connection sketch (128-bit bitmap) per slot.
    pub out_conns: Vec<u128>,
}

impl CpuColumns {
    /// A CPU whose every slot is zero: the starting point for filling columns.
    pub fn zeroed(cpu: u32, samples: u32) -> CpuColumns {
        let n = samples as usize;
        CpuColumns { cpu, counters: std::array::from_fn(|_| vec![0; n]), in_conns: vec![0; n], out_conns: vec![0; n] }
    }

    /// The column of one counter.
    pub fn counter(&self, c: Counter) -> &[u64] {
        &self.counters[c.index()]
    }

    /// The column of one counter, mutable.
    pub fn counter_mut(&mut self, c: Counter) -> &mut Vec<u64> {
        &mut self.counters[c.index()]
    }
}

/// Where a run came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RunSource {
    /// Collected by the local agent through the eBPF sampler.
    Agent,
    /// Imported from an external dataset (`format` names it, e.g. `"millisampler-csv"`).
    Imported { format: String },
}

/// Exact per-slot connection counts, for imported runs whose dataset carries counts
/// rather than sketches. Each vector has `samples` entries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnCounts {
    pub in_conns: Vec<u64>,
    pub out_conns: Vec<u64>,
}

/// Everything about a run except its columns. Cheap to list: stored under its own key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunMeta {
    pub id: RunId,
    pub iface: String,
    pub host: String,
    pub rack: Option<String>,
    pub start_unix_ns: u64,
    pub interval_ns: u64,
    pub samples: u32,
    /// CPUs that have columns, ascending.
    pub cpus: Vec<u32>,
    pub local_prefixes: Vec<String>,
    pub source: RunSource,
    /// Key + value bytes this run occupies in the store (all its records).
    pub stored_bytes: u64,
    /// The collecting host's clock when the run started (runs stored before this field, and
    /// imported ones, have none). Last, with a default, so older records still decode.
    #[serde(default)]
    pub clock: Option<RunClock>,
}

/// How a run was timed, and how far its host's clock may be off: what an analysis comparing
/// several hosts' runs needs to know how far to trust their alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunClock {
    /// Slots were counted in the kernel on `CLOCK_TAI` from an instant given in advance (a
    /// synchronized run): every host given that instant has the same slot boundaries, up to
    /// the clocks' errors. Otherwise they were counted on this host's monotonic clock.
    pub synchronized: bool,
    /// The clock discipline (NTP/PTP through `adjtimex`) reported the clock synchronized.
    pub synced: bool,
    /// The kernel's maximum error bound of the wall clock, ns.
    pub max_error_ns: u64,
    /// The kernel's estimated error of the wall clock, ns.
    pub est_error_ns: u64,
}

impl RunMeta {
    /// End of the observed window: `start + samples * interval` (saturating).
    pub fn end_unix_ns(&self) -> u64 {
        self.start_unix_ns.saturating_add((self.samples as u64).saturating_mul(self.interval_ns))
    }

    /// This run's place in listing order, to resume a [`crate::Store::runs_page`] after it.
    pub fn pos(&self) -> RunPos {
        RunPos { start_unix_ns: self.start_unix_ns, id: self.id }
    }
}

/// A place in the order runs are listed in (start time, then id): the cursor of
/// [`crate::Store::runs_page`]. Unlike a bare [`RunId`] it stays meaningful after the run it
/// came from was deleted (say by retention, between two pages of an analysis), since the
/// store cannot look up where a deleted run was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RunPos {
    pub start_unix_ns: u64,
    pub id: RunId,
}

impl From<&RunMeta> for RunPos {
    fn from(meta: &RunMeta) -> RunPos {
        meta.pos()
    }
}

/// The most samples (slots) a run may have: ten times the agent's largest run (100,000 slots),
/// far above the Millisampler dataset's 2,000. A bound, because a reader allocates `samples`
/// slots per column before it decodes the sparse stream: without one a corrupt metadata record
/// (`samples` near 2^32) would ask for ~400 GB per CPU row instead of failing.
pub const MAX_RUN_SAMPLES: u32 = 1 << 20;

/// A run as handed to [`crate::Store::put_run`]; the store assigns the id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewRun {
    pub iface: String,
    pub host: String,
    pub rack: Option<String>,
    pub start_unix_ns: u64,
    pub interval_ns: u64,
    /// 1 to [`MAX_RUN_SAMPLES`].
    pub samples: u32,
    pub local_prefixes: Vec<String>,
    pub source: RunSource,
    /// One entry per CPU, CPU numbers unique. Stored (and returned) sorted by CPU.
    pub per_cpu: Vec<CpuColumns>,
    pub conn_counts: Option<ConnCounts>,
    /// How the collecting host's clock stood (none for imported runs).
    #[serde(default)]
    pub clock: Option<RunClock>,
}

/// A complete stored run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    pub meta: RunMeta,
    /// Sorted by CPU, matching `meta.cpus`.
    pub per_cpu: Vec<CpuColumns>,
    pub conn_counts: Option<ConnCounts>,
}

/// How much the store keeps. Enforced after every put and by
/// [`crate::Store::enforce_retention`]; oldest runs go first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retention {
    /// Runs that started longer ago than this are deleted.
    pub max_age: Duration,
    /// Cap on the bytes of all runs, sample and timeline batches, probe sessions, dictionaries
    /// included
    /// ([`StoreStats::total_bytes`]).
    pub max_bytes: u64,
}

impl Default for Retention {
    /// Seven days, 10 GiB.
    fn default() -> Self {
        Retention { max_age: Duration::from_secs(7 * 24 * 3600), max_bytes: 10 << 30 }
    }
}

/// A half-open interval `[from, to)` of Unix nanoseconds, `from <= to` by construction: the
/// fields are private, [`TimeRange::new`] checks, and deserializing goes through the same check
/// (a range read from a client or a file cannot be inverted either).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawRange")]
pub struct TimeRange {
    pub(crate) from_unix_ns: u64,
    pub(crate) to_unix_ns: u64,
}

/// A range as it is written, before it is checked.
#[derive(Deserialize)]
struct RawRange {
    from_unix_ns: u64,
    to_unix_ns: u64,
}

impl TryFrom<RawRange> for TimeRange {
    type Error = StoreError;

    fn try_from(r: RawRange) -> Result<TimeRange, StoreError> {
        TimeRange::new(r.from_unix_ns, r.to_unix_ns)
    }
}

impl TimeRange {
    /// Every start time the store can hold (except `u64::MAX` itself).
    pub const ALL: TimeRange = TimeRange { from_unix_ns: 0, to_unix_ns: u64::MAX };

    /// `[from, to)`; an empty range (`from == to`) is allowed, `from > to` is not.
    pub fn new(from_unix_ns: u64, to_unix_ns: u64) -> Result<TimeRange, StoreError> {
        if from_unix_ns > to_unix_ns {
            return Err(StoreError::BadRange { from_unix_ns, to_unix_ns });
        }
        Ok(TimeRange { from_unix_ns, to_unix_ns })
    }

    /// The first instant in the range.
    pub fn from_unix_ns(&self) -> u64 {
        self.from_unix_ns
    }

    /// The first instant after the range.
    pub fn to_unix_ns(&self) -> u64 {
        self.to_unix_ns
    }

    pub fn contains(&self, t_unix_ns: u64) -> bool {
        self.from_unix_ns <= t_unix_ns && t_unix_ns < self.to_unix_ns
    }

    /// [`StoreError::BadRange`] if `from > to` (the fields are public, so a range may not have
    /// come through [`TimeRange::new`]).
    pub(crate) fn check(self) -> Result<(), StoreError> {
        TimeRange::new(self.from_unix_ns, self.to_unix_ns).map(drop)
    }
}

/// What [`crate::Store::enforce_retention`] removed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetentionReport {
    pub deleted_runs: u64,
    /// Bytes of everything deleted.
    pub freed_bytes: u64,
    pub deleted_sample_batches: u64,
    #[serde(default)]
    pub deleted_timeline_batches: u64,
    #[serde(default)]
    pub deleted_probe_sessions: u64,
}

impl RetentionReport {
    /// Whether anything was deleted (then the caller flushes).
    pub(crate) fn deleted_anything(&self) -> bool {
        self.deleted_runs > 0
            || self.deleted_sample_batches > 0
            || self.deleted_timeline_batches > 0
            || self.deleted_probe_sessions > 0
    }
}

/// Result of [`crate::Store::verify`]: what it counted and every problem it found. Here among
/// the public types rather than in `verify`, since each kind's part of the check fills it in.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifyReport {
    /// Runs with metadata.
    pub runs: u64,
    /// Sum of their `stored_bytes`.
    pub stored_bytes: u64,
    /// Stack-sample batches with metadata, their samples and `stored_bytes`.
    pub sample_batches: u64,
    pub samples: u64,
    pub sample_bytes: u64,
    /// Timeline batches with metadata, their events and `stored_bytes`.
    #[serde(default)]
    pub timeline_batches: u64,
    #[serde(default)]
    pub timeline_events: u64,
    #[serde(default)]
    pub timeline_bytes: u64,
    /// Probe sessions with metadata, their call records and `stored_bytes`.
    #[serde(default)]
    pub probe_sessions: u64,
    #[serde(default)]
    pub probe_calls: u64,
    #[serde(default)]
    pub probe_bytes: u64,
    /// Every inconsistency found, one sentence each. Empty means the store is sound.
    pub problems: Vec<String>,
}

impl VerifyReport {
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Totals of the store, from the running counters (no scan).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreStats {
    pub runs: u64,
    /// Sum of `stored_bytes` over all runs.
    pub stored_bytes: u64,
    /// What sled occupies on disk (its files, including free space not yet reclaimed).
    pub disk_bytes: u64,
    /// Stack-sample batches and the samples in them.
    pub sample_batches: u64,
    pub samples: u64,
    /// Bytes of the sample batches and the sample dictionary (`SampleStats::stored_bytes`).
    pub sample_bytes: u64,
    /// `stored_bytes + sample_bytes + timeline_bytes + probe_bytes`: what the retention byte
    /// cap applies to.
    pub total_bytes: u64,
    /// Stack samples the kernel dropped, summed over the retained sample batches (a batch's
    /// lost count leaves the total when retention deletes the batch). A running counter,
    /// updated in the same atomic batch as the sample batches it counts; for a store written
    /// before it existed, recomputed once at open.
    pub lost_samples: u64,
    /// Timeline batches and the events in them (see `timeline`).
    #[serde(default)]
    pub timeline_batches: u64,
    #[serde(default)]
    pub timeline_events: u64,
    /// Bytes of the timeline batches and the timeline dictionary (also in `total_bytes`).
    #[serde(default)]
    pub timeline_bytes: u64,
    /// Timeline events overwritten before the agent read them, over the retained batches.
    #[serde(default)]
    pub lost_timeline_events: u64,
    /// Probe sessions (see `probes`) and the bytes of all their records (also in
    /// `total_bytes`).
    #[serde(default)]
    pub probe_sessions: u64,
    #[serde(default)]
    pub probe_bytes: u64,
}

/// Runs and stack samples of one UTC day.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DaySummary {
    /// UTC midnight starting the day.
    pub day_start_unix_ns: u64,
    /// Number of runs per sampling interval.
    pub runs_by_interval: BTreeMap<u64, u64>,
    /// Bytes of that day's runs.
    pub stored_bytes: u64,
    /// Stack-sample batches whose first sample fell on that day, their samples and bytes
    /// (the shared sample dictionary is not attributed to days).
    pub sample_batches: u64,
    pub samples: u64,
    pub sample_bytes: u64,
}
