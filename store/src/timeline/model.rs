//! The public types of the timeline store: what the agent hands over and what queries return.

use serde::{Deserialize, Serialize};

use crate::TimeRange;

/// The process whose events a batch carries, with its event definitions (an event's `event`
/// field indexes `events`). Stored once in the dictionary per distinct content.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TimelineSource {
    pub pid: u32,
    /// Start time in clock ticks after boot: with `pid`, the process's identity.
    pub start_ticks: u64,
    pub comm: String,
    pub events: Vec<TimelineEventDef>,
}

/// One event definition: name, level (0–9), rate (0–9), argument names (≤ 4).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TimelineEventDef {
    pub name: String,
    pub level: u8,
    pub rate: u8,
    pub arg_names: Vec<String>,
}

/// One event as the agent hands it over.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TimelineEvent {
    pub time_unix_ns: u64,
    pub tid: u32,
    pub cpu: u32,
    /// Index into [`TimelineSource::events`].
    pub event: u32,
    pub args: [u64; 4],
    pub lag_ns: Option<u64>,
}

/// What [`crate::Store::timeline_events`] and [`crate::Store::timeline_stats`] select: events
/// whose time lies in `range`, of processes with this pid and/or comm, of this event name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineQuery {
    pub range: TimeRange,
    pub pid: Option<u32>,
    pub comm: Option<String>,
    pub event: Option<String>,
}

impl TimelineQuery {
    /// Every event in `range`.
    pub fn range(range: TimeRange) -> TimelineQuery {
        TimelineQuery { range, pid: None, comm: None, event: None }
    }
}

/// One stored event, with its source and definition resolved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredEvent {
    pub time_unix_ns: u64,
    pub pid: u32,
    pub tid: u32,
    pub cpu: u32,
    pub comm: String,
    pub name: String,
    pub level: u8,
    pub args: [u64; 4],
    /// The names the program gave the arguments (≤ 4; `args` past them are zero).
    pub arg_names: Vec<String>,
    pub lag_ns: Option<u64>,
}

/// A place in the order [`crate::Store::timeline_events`] returns events in — time, then batch
/// id, then the event's place in its batch — to resume after. It stays meaningful when the
/// batch it came from is deleted between two pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct EventPos {
    pub(crate) time_unix_ns: u64,
    pub(crate) batch: u64,
    pub(crate) seq: u32,
}

impl EventPos {
    /// The time of the event this position is at.
    pub fn time_unix_ns(&self) -> u64 {
        self.time_unix_ns
    }
}

/// Count and lag percentiles of one event of one process over a range. The percentiles come
/// from log-linear histograms (32 sub-buckets per power of two): within 1/64 (1.6 %) of the
/// exact nearest-rank value; the maximum is exact. Lags are over the events that have one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventStats {
    pub pid: u32,
    pub comm: String,
    pub name: String,
    pub level: u8,
    /// The names of its arguments, from its definition.
    pub arg_names: Vec<String>,
    pub count: u64,
    pub lag_p50_ns: Option<u64>,
    pub lag_p99_ns: Option<u64>,
    pub lag_max_ns: Option<u64>,
}

/// One process's timeline batches in a range: first and last event, events and losses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineSourceSummary {
    pub pid: u32,
    pub start_ticks: u64,
    pub comm: String,
    pub first_unix_ns: u64,
    pub last_unix_ns: u64,
    pub events: u64,
    pub lost: u64,
    /// The events the process defined (name, level, rate, argument names), by name: a
    /// process that defined more events later has one list with all of them.
    pub definitions: Vec<TimelineEventDef>,
}

/// What [`crate::Store::put_timeline`] stored.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineBatchMeta {
    pub id: u64,
    pub start_unix_ns: u64,
    pub end_unix_ns: u64,
    pub events: u64,
    pub lost: u64,
    /// Key + value bytes of the batch's records (its share of the dictionary not included).
    pub stored_bytes: u64,
}

/// Timeline totals, from the running counters (no scan).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineStats {
    pub batches: u64,
    pub events: u64,
    pub lost: u64,
    /// Batches and dictionary.
    pub stored_bytes: u64,
    pub dictionary_bytes: u64,
    pub sources: u64,
}
