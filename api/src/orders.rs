//! What a caller asks the host to do, as the host receives it whichever door it came through:
//! which stored runs to list, an on-demand run, a probe session. Checking an order against the
//! kernel's bounds is the core's work (`loupe_core`); these are the values.

use std::time::Duration;

use loupe_store::TimeRange;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::clock::now_unix_ns;

/// Farthest in the future an on-demand run may start: far enough to line up a rack, near
/// enough that whoever asked is still waiting.
pub const MAX_START_AHEAD: Duration = Duration::from_secs(600);

/// Samples of a run when not given.
pub const DEFAULT_SAMPLES: u32 = 2000;

/// Longest probe session.
pub const MAX_PROBE_SECONDS: f64 = 3600.0;
/// A probe session's cost budget when none is given: 1 % of one CPU.
pub const DEFAULT_BUDGET_PERCENT: f64 = 1.0;
/// The largest budget accepted, in % of one CPU: ten whole CPUs, for a deliberate debugging
/// session (a larger figure is more likely a typo than a plan).
pub const MAX_BUDGET_PERCENT: f64 = 1000.0;

/// Which stored runs to list.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunFilter {
    pub range: TimeRange,
    pub interval_ns: Option<u64>,
    pub iface: Option<String>,
}

/// What a window shows (`GET /api/v1/window`, `loupe window`, `loupe export trace`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WindowOrder {
    /// A finite range: both ends given.
    pub range: TimeRange,
    /// Columns a summarized lane is cut into: the chart's width in pixels (100 to 8192).
    pub columns: u32,
    /// Items per lane before it is summarized (default [`WINDOW_LANE_ITEMS`], at most
    /// [`MAX_WINDOW_LANE_ITEMS`]).
    pub lane_items: Option<u32>,
    /// The traffic series to send (names as in [`crate::model::SeriesSet::NAMES`]); empty:
    /// `in_bytes` and `out_bytes`.
    pub series: Vec<String>,
}

/// Columns a window is drawn in unless asked otherwise.
pub const WINDOW_COLUMNS: u32 = 1000;
/// Items (samples, calls, events) per lane before it is summarized, unless asked otherwise:
/// 10 minutes of one CPU at 10 Hz is 6,000 samples.
pub const WINDOW_LANE_ITEMS: u32 = 20_000;
/// The most items per lane a caller may ask for (what `loupe export trace` asks).
pub const MAX_WINDOW_LANE_ITEMS: u32 = 2_000_000;

/// An on-demand run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunOrder {
    /// May be left out when the agent samples exactly one interface.
    pub iface: Option<String>,
    pub interval: Duration,
    pub samples: u32,
    /// Start at this instant (Unix ns) instead of now.
    pub start_unix_ns: Option<u64>,
}

impl RunOrder {
    /// How long the run takes from now, start delay included.
    pub fn duration_from_now(&self) -> Duration {
        let delay = self.start_unix_ns.map_or(0, |t| t.saturating_sub(now_unix_ns()));
        Duration::from_nanos(delay).saturating_add(self.interval.saturating_mul(self.samples))
    }
}

/// What one file or run of an import became: its id, or why it was not stored.
pub type ImportOutcome = Result<u64, String>;

/// A probe session to start.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct ProbeOrder {
    /// Processes to probe (or give `binary`).
    #[serde(default)]
    pub pids: Vec<u32>,
    /// A binary to probe in every process that runs or maps it.
    pub binary: Option<String>,
    /// `SYMBOL` or `LIBRARY:SYMBOL`; demangled names accepted.
    pub functions: Vec<String>,
    /// Length; without one, until stopped (at most an hour).
    pub seconds: Option<f64>,
    /// Time 1 outermost call in N (default 1: every call).
    pub sample_every: Option<u32>,
    /// Keep per-call records (for call trees).
    #[serde(default)]
    pub calls: bool,
    /// Most CPU the probes may cost the probed programs, in % of one CPU (default 1; above 0,
    /// at most 1,000: 100 is a whole CPU).
    pub budget_percent: Option<f64>,
    /// Probe functions whose first instruction the kernel must single-step (~10× the cost).
    #[serde(default)]
    pub allow_single_step: bool,
}

impl ProbeOrder {
    /// What it probes, in a line (`pids 7,8: parse, libnf.so:handle`): the audit trail's target.
    pub fn target_text(&self) -> String {
        let whom = match &self.binary {
            Some(b) => format!("binary {b}"),
            None => format!("pids {}", self.pids.iter().map(u32::to_string).collect::<Vec<_>>().join(",")),
        };
        format!("{whom}: {}", self.functions.join(", "))
    }
}
