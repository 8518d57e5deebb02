//! The HTTP API's query strings and the bodies of its writes (JSON, or MessagePack with
//! `Content-Type: application/msgpack`): the types the routes decode, the HTTP client encodes
//! and the fuzz targets throw bytes at. Each converts both ways here, from the operations'
//! typed arguments (for the client) and back (for the routes), so the two ends cannot drift.

use loupe_store::{ProfileQuery, SampleKind, TimeRange, TimelineQuery};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};

use crate::{
    error::CoreResult,
    orders::{DEFAULT_SAMPLES, RunFilter, RunOrder, WINDOW_COLUMNS, WindowOrder},
    time::{TimeArg, parse_interval, parse_range},
};

/// The range parameters of every route that takes one.
#[derive(Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RangeQuery {
    /// Start (inclusive): RFC 3339, Unix ns, `now`, or `-1h`. Default: the beginning.
    pub from: Option<String>,
    /// End (exclusive), same forms. Default: the end of time.
    pub to: Option<String>,
}

impl RangeQuery {
    /// `[from, to)`, or a `bad_time` / `bad_range` error.
    pub fn range(&self) -> CoreResult<TimeRange> {
        parse_range(self.from.as_deref(), self.to.as_deref())
    }
}

/// `GET /api/v1/profile/diff`'s baseline, beside the selection's `from`/`to` and the profile's
/// filters (which apply to both).
#[derive(Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BaseQuery {
    /// Start of the baseline (inclusive), in the forms `from` takes: e.g. the same length just
    /// before the selection, or the same time yesterday.
    pub base_from: String,
    /// End of the baseline (exclusive).
    pub base_to: String,
}

impl BaseQuery {
    /// `[base_from, base_to)`, or a `bad_time` / `bad_range` error naming them.
    pub fn range(&self) -> CoreResult<TimeRange> {
        crate::time::range(
            Some(TimeArg::parse("base_from", &self.base_from)?),
            Some(TimeArg::parse("base_to", &self.base_to)?),
        )
    }
}

/// `GET /api/v1/runs` beside its range.
#[derive(Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Only runs of this slot width: `100us`, `1ms`, `10ms`.
    pub interval: Option<String>,
    pub iface: Option<String>,
}

impl ListQuery {
    pub fn filter(self, range: TimeRange) -> CoreResult<RunFilter> {
        let interval_ns = self.interval.as_deref().map(parse_interval).transpose()?.map(|d| d.as_nanos() as u64);
        Ok(RunFilter { range, interval_ns, iface: self.iface })
    }
}

/// `GET /api/v1/runs/{id}`.
#[derive(Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ShowQuery {
    /// Add each CPU's series (`per_cpu` in the answer).
    #[serde(default)]
    pub per_cpu: bool,
}

/// `GET /api/v1/profile` and `/api/v1/profile/pprof` beside their range.
#[derive(Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ProfileParams {
    pub pid: Option<u32>,
    /// Exact command name.
    pub comm: Option<String>,
    pub cpu: Option<u32>,
    /// Include samples of idle CPUs.
    #[serde(default)]
    pub idle: bool,
    /// `on_cpu` (default): where threads ran, in samples. `off_cpu`: where they waited off the
    /// CPU, in nanoseconds (an agent started with `--off-cpu`).
    #[serde(default)]
    #[param(value_type = Option<String>, example = "off_cpu")]
    pub kind: SampleKind,
    /// Sampling frequency the samples were taken at, in Hz (pprof's period; default 10).
    pub frequency: Option<u64>,
    /// Leave out of the flame graph the nodes with less than this share of the samples (0 to 1;
    /// e.g. 0.0001, a tenth of a pixel at 1,000 pixels wide): their samples stay in their
    /// parents' width and `pruned_nodes` says how many went. Functions and modules stay whole.
    /// Default 0: everything. (JSON only; pprof is always whole.)
    pub min_share: Option<f64>,
}

/// pprof's sampling frequency when a request names none.
pub const DEFAULT_FREQUENCY: u64 = 10;

impl ProfileParams {
    pub fn query(&self, range: TimeRange) -> ProfileQuery {
        ProfileQuery {
            range,
            pid: self.pid,
            comm: self.comm.clone(),
            cpu: self.cpu,
            include_idle: self.idle,
            kind: self.kind,
        }
    }
}

/// `GET /api/v1/window` and `/api/v1/window/trace` beside their range (both ends needed).
#[derive(Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WindowParams {
    /// The chart's width in pixels: summarized lanes have this many columns (100 to 8192;
    /// default 1000).
    pub columns: Option<u32>,
    /// Items (samples, calls, events) per lane before it is summarized (default 20,000; at most
    /// 2,000,000; the trace asks the most by default).
    pub lane_items: Option<u32>,
    /// Traffic series to send, comma-separated (default `in_bytes,out_bytes`).
    pub series: Option<String>,
}

impl WindowParams {
    /// The order, with `lane_items` defaulting to `default_items`.
    pub fn order(&self, range: TimeRange, default_items: Option<u32>) -> WindowOrder {
        WindowOrder {
            range,
            columns: self.columns.unwrap_or(WINDOW_COLUMNS),
            lane_items: self.lane_items.or(default_items),
            series: self
                .series
                .as_deref()
                .map(|s| s.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect())
                .unwrap_or_default(),
        }
    }
}

/// `GET /api/v1/timeline` and `/api/v1/timeline/events` beside their range.
#[derive(Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TimelineParams {
    pub pid: Option<u32>,
    /// Exact command name of the program.
    pub comm: Option<String>,
    /// Exact event name.
    pub event: Option<String>,
}

impl TimelineParams {
    pub fn query(self, range: TimeRange) -> TimelineQuery {
        TimelineQuery { range, pid: self.pid, comm: self.comm, event: self.event }
    }
}

/// `GET /api/v1/timeline/events`: which page.
#[derive(Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageParams {
    /// The `next` of the previous page.
    pub after: Option<String>,
    /// Events per page (1 to 10,000; default 1,000).
    pub limit: Option<usize>,
}

/// `GET /api/v1/probes/{id}`.
#[derive(Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ProbeShowQuery {
    /// Every recorded call too (large: up to a million).
    #[serde(default)]
    pub calls: bool,
}

/// `POST /api/v1/runs`.
#[derive(Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StartRun {
    /// Interface; may be left out when the agent samples exactly one.
    pub iface: Option<String>,
    /// Slot width: `100us`, `1ms` or `10ms` (any width the sampler accepts).
    pub interval: String,
    /// Slots (default 2000).
    pub samples: Option<u32>,
    /// Start at this exact instant (RFC 3339 or Unix ns) instead of now; at most 10 minutes ahead.
    pub start: Option<String>,
}

impl StartRun {
    pub fn order(self) -> CoreResult<RunOrder> {
        Ok(RunOrder {
            iface: self.iface,
            interval: parse_interval(&self.interval)?,
            samples: self.samples.unwrap_or(DEFAULT_SAMPLES),
            start_unix_ns: self
                .start
                .as_deref()
                .map(|t| TimeArg::parse("start", t).map(TimeArg::unix_ns))
                .transpose()?,
        })
    }
}

#[derive(Serialize, Deserialize, ToSchema)]
pub struct StartedRun {
    pub id: u64,
    pub iface: String,
    pub start_unix_ns: u64,
    pub interval_ns: u64,
    pub samples: u32,
}

/// `POST /api/v1/udfs/{name}/invoke`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InvokeRequest {
    /// Start (inclusive): RFC 3339, Unix ns (number or string), `now`, `-1h`. Default: the beginning.
    #[serde(default)]
    pub from: Option<TimeValue>,
    /// End (exclusive), same forms. Default: the end of time.
    #[serde(default)]
    pub to: Option<TimeValue>,
    /// Parameters by name, as the analysis declares them (`GET /api/v1/udfs/{name}`).
    #[serde(default)]
    pub params: Map<String, Value>,
}

impl InvokeRequest {
    /// `[from, to)`, each instant parsed as the query strings' are.
    pub fn range(&self) -> CoreResult<TimeRange> {
        let arg = |v: Option<&TimeValue>, name| match v {
            None => Ok(None),
            Some(TimeValue::UnixNs(ns)) => Ok(Some(TimeArg::UnixNs(*ns))),
            Some(TimeValue::Text(s)) => TimeArg::parse(name, s).map(Some),
        };
        crate::time::range(arg(self.from.as_ref(), "from")?, arg(self.to.as_ref(), "to")?)
    }
}

/// An instant in a body: a string in any form the API takes, or Unix ns as a number.
#[derive(Deserialize, ToSchema)]
#[serde(untagged)]
pub enum TimeValue {
    UnixNs(u64),
    Text(String),
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// What a client writes, the route reads as the typed value the core takes.
    #[test]
    fn each_query_and_body_reads_as_the_typed_value() {
        let open = RangeQuery { from: None, to: None };
        assert_eq!(open.range().unwrap(), TimeRange::new(0, u64::MAX).unwrap());
        let range = TimeRange::new(5, 9).unwrap();
        assert_eq!(RangeQuery { from: Some("5".into()), to: Some("9".into()) }.range().unwrap(), range);
        let list = ListQuery { interval: Some("100000ns".into()), iface: Some("eth0".into()) };
        let back = list.filter(range).unwrap();
        assert_eq!((back.interval_ns, back.iface), (Some(100_000), Some("eth0".into())));
        let start = StartRun {
            iface: None,
            interval: "100000ns".into(),
            samples: Some(7),
            start: Some("1700000000000000000".into()),
        };
        let back = start.order().unwrap();
        assert_eq!(
            (back.iface, back.interval, back.samples, back.start_unix_ns),
            (None, Duration::from_micros(100), 7, Some(1_700_000_000_000_000_000))
        );
        let params = ProfileParams {
            pid: Some(3),
            comm: Some("gzip".into()),
            cpu: Some(1),
            idle: true,
            kind: SampleKind::OffCpu,
            ..ProfileParams::default()
        };
        let query = ProfileQuery {
            range,
            pid: Some(3),
            comm: Some("gzip".into()),
            cpu: Some(1),
            include_idle: true,
            kind: SampleKind::OffCpu,
        };
        assert_eq!(params.query(range), query);
        let params = TimelineParams { pid: None, comm: Some("app".into()), event: Some("tick".into()) };
        let query = TimelineQuery { range, pid: None, comm: Some("app".into()), event: Some("tick".into()) };
        assert_eq!(params.query(range), query);
    }
}
