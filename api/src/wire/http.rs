//! The bodies of the HTTP API's writes, as clients send them (JSON, or MessagePack with
//! `Content-Type: application/msgpack`): the same types the routes decode and the fuzz targets
//! throw bytes at.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

/// `POST /api/v1/runs`.
#[derive(Deserialize, ToSchema)]
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

/// An instant in a body: a string in any form the API takes, or Unix ns as a number.
#[derive(Deserialize, ToSchema)]
#[serde(untagged)]
pub enum TimeValue {
    UnixNs(u64),
    Text(String),
}
