//! Application timelines as users see them: which programs logged events in a range, and per
//! event how many and how long their lags were (`loupe timeline list`, `GET /api/v1/timeline`);
//! the events themselves, a page at a time (`loupe timeline show`, `GET
//! /api/v1/timeline/events`).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `loupe timeline list --json`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TimelineSummary {
    /// Programs with events in the range, by first event.
    pub sources: Vec<TimelineSourceView>,
    /// Per program and event: count and lag percentiles, by program then level then name.
    pub events: Vec<EventStatsView>,
}

/// One program's events in a range.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TimelineSourceView {
    pub pid: u32,
    pub comm: String,
    pub first_unix_ns: u64,
    pub last_unix_ns: u64,
    pub events: u64,
    /// Records the program wrote that were overwritten in its ring before the agent read them.
    pub lost: u64,
    /// The events the program defined, by name.
    pub definitions: Vec<EventDefinitionView>,
}

/// One event as its program defined it: its place in the loop → phase → step hierarchy
/// (`level` 0–9), how often it is logged (`rate` 0–9, 9 every time) and its arguments' names.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct EventDefinitionView {
    pub name: String,
    pub level: u8,
    pub rate: u8,
    pub arg_names: Vec<String>,
}

/// One event of one program over a range. A lag is the time since the previous event of
/// equal or lower level on the same thread (the lag of a loop's last event is the iteration's
/// latency); percentiles are within 1.6 %, the maximum exact.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct EventStatsView {
    pub pid: u32,
    pub comm: String,
    pub name: String,
    pub level: u8,
    /// The names of its arguments (≤ 4).
    pub arg_names: Vec<String>,
    pub count: u64,
    pub lag_p50_ns: Option<u64>,
    pub lag_p99_ns: Option<u64>,
    pub lag_max_ns: Option<u64>,
}

/// `loupe timeline show --json`: events in time order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TimelineEventsPage {
    pub events: Vec<TimelineEventView>,
    /// More events follow: pass this as `after` for the next page.
    pub next: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TimelineEventView {
    pub time_unix_ns: u64,
    pub pid: u32,
    pub tid: u32,
    pub cpu: u32,
    pub comm: String,
    pub name: String,
    pub level: u8,
    /// The event's four arguments; the first `arg_names.len()` are named, the rest zero.
    pub args: [u64; 4],
    /// The names the program gave its arguments.
    pub arg_names: Vec<String>,
    pub lag_ns: Option<u64>,
}
