//! One span of time on one axis (`GET /api/v1/window`, `loupe window`, the web UI's window
//! view, `loupe export trace`): the traffic of every run, what each CPU ran, every recorded
//! probe call and every timeline event of the span, in one answer.
//!
//! Why one answer: the moment is the unit of a question — *a 100 µs burst at 03:12:07.4: what
//! was every CPU doing, which calls were slow, what did the program log?* — and four requests
//! with four axes made people line them up by hand.
//!
//! Times inside lanes are nanoseconds after `from_unix_ns` (a JavaScript number holds them
//! exactly for windows up to 104 days); lanes are columns of numbers, not lists of objects, so
//! 100,000 items cost about 2 MB of JSON and parse in tens of ms. Every lane is bounded: past
//! [`WindowLimits`] it carries per-column summaries instead of its items (`summarized`), with
//! `columns` columns across the window — what a chart that many pixels wide can show anyway.

use loupe_store::FrameKind;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::timeline::EventDefinitionView;

/// Everything of `[from_unix_ns, to_unix_ns)`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct WindowView {
    pub from_unix_ns: u64,
    pub to_unix_ns: u64,
    /// Summarized lanes have this many columns, each `(to - from) / columns` ns wide.
    pub columns: u32,
    pub limits: WindowLimits,
    /// Per run overlapping the window (oldest first), its slots inside it.
    pub traffic: Vec<TrafficLane>,
    /// Runs overlapping the window past `limits.runs`, left out (the latest).
    pub runs_left_out: u32,
    /// One lane per CPU with samples or waits in the window, by CPU.
    pub cpus: Vec<CpuLane>,
    /// The processes lanes name (`process` columns index this), by pid.
    pub processes: Vec<WindowProcess>,
    /// The stacks exact samples and waits name (`stack` columns index this): function indexes
    /// into `functions`, leaf first.
    pub stacks: Vec<Vec<u32>>,
    pub functions: Vec<WindowFunction>,
    /// Per probed thread, its recorded calls in the window (sessions recorded with `--calls`).
    pub probes: Vec<ThreadCalls>,
    /// The probed functions `function` columns index, per session.
    pub probe_functions: Vec<ProbeFunctionRef>,
    /// Per program that logged timeline events in the window.
    pub programs: Vec<ProgramLane>,
    /// Anything cut short, for the user (e.g. timeline events past the most one window reads).
    pub notes: Vec<String>,
}

/// What a lane holds before it is summarized instead.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct WindowLimits {
    pub runs: u32,
    /// Stack samples (and, apart, waits) per CPU lane.
    pub samples_per_lane: u32,
    pub calls_per_lane: u32,
    pub events_per_lane: u32,
}

/// One run's slots inside the window, at their full resolution.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TrafficLane {
    pub run: u64,
    pub iface: String,
    pub host: String,
    pub interval_ns: u64,
    /// The run's index of the first slot shown.
    pub first_slot: u32,
    /// Where that slot starts, in ns after the window's start (negative: before it).
    pub offset_ns: i64,
    /// The series asked for (default `in_bytes` and `out_bytes`), one value per slot shown.
    pub series: Vec<NamedSeries>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct NamedSeries {
    pub name: String,
    pub values: Vec<u64>,
}

/// What one CPU ran: a tick per stack sample (idle left out), and the waits off the CPU that
/// began there (recorded with `--off-cpu`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CpuLane {
    pub cpu: u32,
    /// Samples in the window (all of them, summarized or not).
    pub samples: u64,
    pub ticks: Ticks,
    /// Waits that began on this CPU in the window.
    pub waits: u64,
    pub wait_spans: Spans,
}

/// Samples as columns (`summarized` false), or per window column how many and the process
/// with the most of them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Ticks {
    pub summarized: bool,
    pub t_ns: Vec<u64>,
    /// Index into the window's `processes`.
    pub process: Vec<u32>,
    pub tid: Vec<u32>,
    /// Index into the window's `stacks`.
    pub stack: Vec<u32>,
    /// Summarized: samples per column.
    pub column_count: Vec<u32>,
    /// Summarized: per column, the process with the most samples (`u32::MAX` when none).
    pub column_process: Vec<u32>,
}

/// Spans off the CPU as columns, or per window column how many began there and the longest.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Spans {
    pub summarized: bool,
    pub t_ns: Vec<u64>,
    pub dur_ns: Vec<u64>,
    pub process: Vec<u32>,
    pub tid: Vec<u32>,
    pub stack: Vec<u32>,
    pub column_count: Vec<u32>,
    pub column_max_ns: Vec<u64>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct WindowProcess {
    pub pid: u32,
    pub comm: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct WindowFunction {
    pub name: String,
    pub module: String,
    pub kernel: bool,
    /// What kind of code it is, as in a flame graph's nodes (`kernel`, `jit`, `python`; absent
    /// for native code).
    #[serde(default, skip_serializing_if = "FrameKind::is_native")]
    #[schema(value_type = Option<String>, example = "python")]
    pub kind: FrameKind,
}

/// One probed function of one session, and the duration from which its calls count as slow
/// (the session's p99, as measured).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ProbeFunctionRef {
    pub session: u64,
    pub name: String,
    pub slow_ns: u64,
}

/// One thread's probe calls that began in the window, in entry order; `depth` nests them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ThreadCalls {
    pub pid: u32,
    pub tid: u32,
    pub calls: u64,
    pub summarized: bool,
    pub t_ns: Vec<u64>,
    pub dur_ns: Vec<u64>,
    pub depth: Vec<u32>,
    /// Index into the window's `probe_functions`.
    pub function: Vec<u32>,
    pub slow: Vec<bool>,
    pub column_count: Vec<u32>,
    pub column_max_ns: Vec<u64>,
}

/// One program's timeline events in the window. A level-0 event with a lag ends an iteration
/// that began `lag` before it (breath to breath).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ProgramLane {
    pub pid: u32,
    pub comm: String,
    /// What `event` indexes: name, level, argument names.
    pub definitions: Vec<EventDefinitionView>,
    pub events: u64,
    pub summarized: bool,
    pub t_ns: Vec<u64>,
    pub tid: Vec<u32>,
    pub event: Vec<u32>,
    /// The events' arguments as four columns (`args[i][k]`: argument `i` of event `k`); a
    /// column no event of the lane sets (all zero) is sent empty.
    pub args: Vec<Vec<u64>>,
    /// The lag of each event (`null`: none).
    pub lag_ns: Vec<Option<u64>>,
    pub column_count: Vec<u32>,
    /// Summarized: per column, the longest lag of a level-0 event that ended there — an
    /// iteration, or the wait between two when the loop logs its start at level 0 too (0: none).
    pub column_max_lag_ns: Vec<u64>,
}
