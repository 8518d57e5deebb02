//! Application timelines as a core service: what programs logged in a range (per event: count
//! and lag percentiles), and the events a page at a time. The agent's `ingest::timeline`
//! collects them; every door asks here.

use loupe_store::{EventPos, TimelineQuery};

use super::{
    Host,
    error::{CoreError, CoreResult},
};
use loupe_api::formats::hex;
use loupe_api::model::{
    EventDefinitionView, EventStatsView, TimelineEventView, TimelineEventsPage, TimelineSourceView, TimelineSummary,
};

/// Events per page unless asked otherwise.
pub const DEFAULT_PAGE: usize = 1000;
/// Most events per page (a page of this many is ~2 MB of JSON).
pub const MAX_PAGE: usize = 10_000;

impl Host {
    /// Programs with events in the query's range (filtered by pid and comm) and per-event
    /// statistics (filtered by event name too).
    pub fn timeline(&self, q: &TimelineQuery) -> CoreResult<TimelineSummary> {
        let sources = self
            .store
            .timeline_sources(q.range)?
            .into_iter()
            .filter(|s| q.pid.is_none_or(|p| p == s.pid) && q.comm.as_ref().is_none_or(|c| *c == s.comm))
            .map(|s| TimelineSourceView {
                pid: s.pid,
                comm: s.comm,
                first_unix_ns: s.first_unix_ns,
                last_unix_ns: s.last_unix_ns,
                events: s.events,
                lost: s.lost,
                definitions: s
                    .definitions
                    .into_iter()
                    .map(|d| EventDefinitionView { name: d.name, level: d.level, rate: d.rate, arg_names: d.arg_names })
                    .collect(),
            })
            .collect();
        let events = self
            .store
            .timeline_stats(q)?
            .into_iter()
            .map(|e| EventStatsView {
                pid: e.pid,
                comm: e.comm,
                name: e.name,
                level: e.level,
                arg_names: e.arg_names,
                count: e.count,
                lag_p50_ns: e.lag_p50_ns,
                lag_p99_ns: e.lag_p99_ns,
                lag_max_ns: e.lag_max_ns,
            })
            .collect();
        Ok(TimelineSummary { sources, events })
    }

    /// Up to `limit` events of the query after `after` (a page's `next`), in time order.
    pub fn timeline_events(
        &self,
        q: &TimelineQuery,
        after: Option<&str>,
        limit: Option<usize>,
    ) -> CoreResult<TimelineEventsPage> {
        let limit = limit.unwrap_or(DEFAULT_PAGE);
        if limit == 0 || limit > MAX_PAGE {
            return Err(CoreError::BadLimit { limit, max: MAX_PAGE });
        }
        let after = after.map(|a| from_token(a).ok_or_else(|| CoreError::BadCursor(a.into()))).transpose()?;
        let (events, next) = self.store.timeline_events(q, after, limit)?;
        Ok(TimelineEventsPage {
            events: events
                .into_iter()
                .map(|e| TimelineEventView {
                    time_unix_ns: e.time_unix_ns,
                    pid: e.pid,
                    tid: e.tid,
                    cpu: e.cpu,
                    comm: e.comm,
                    name: e.name,
                    level: e.level,
                    args: e.args,
                    arg_names: e.arg_names,
                    lag_ns: e.lag_ns,
                })
                .collect(),
            next: next.map(|p| to_token(&p)),
        })
    }
}

/// A page's resume point as an opaque token: the position's MessagePack in hex (~50 chars).
fn to_token(pos: &EventPos) -> String {
    hex::encode(&rmp_serde::to_vec(pos).expect("a position encodes"))
}

/// Longest token accepted: a position is three integers.
const MAX_TOKEN: usize = 128;

fn from_token(token: &str) -> Option<EventPos> {
    if token.len() > MAX_TOKEN {
        return None;
    }
    rmp_serde::from_slice(&hex::decode(token)?).ok()
}
