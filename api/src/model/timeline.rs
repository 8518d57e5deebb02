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
    /// The event's four arguments (their names are in its definition).
    pub args: [u64; 4],
    pub lag_ns: Option<u64>,
}
