//! Application timelines over HTTP: `GET /api/v1/timeline` (programs and per-event lag
//! statistics of a range) and `GET /api/v1/timeline/events` (the events, a page at a time).

use std::sync::Arc;

use axum::{extract::State, response::Response};
use loupe_store::{TimeRange, TimelineQuery};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    AppState,
    auth::Caller,
    blocking,
    error::ApiError,
    extract::{ApiQuery, Range, RangeQuery},
    negotiate::Format,
};
use crate::model::{ErrorBody, TimelineEventsPage, TimelineSummary};

pub fn routes() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::new().routes(routes!(summary)).routes(routes!(events))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TimelineParams {
    pub pid: Option<u32>,
    /// Exact command name of the program.
    pub comm: Option<String>,
    /// Exact event name.
    pub event: Option<String>,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageParams {
    /// The `next` of the previous page.
    pub after: Option<String>,
    /// Events per page (1 to 10,000; default 1,000).
    pub limit: Option<usize>,
}

fn query(range: TimeRange, p: TimelineParams) -> TimelineQuery {
    TimelineQuery { range, pid: p.pid, comm: p.comm, event: p.event }
}

/// Programs that logged timeline events in a range, and per event its count and lag percentiles
/// (`loupe timeline list --json`).
#[utoipa::path(get, path = "/api/v1/timeline", tag = "timeline", params(RangeQuery, TimelineParams), responses((status = 200, body = TimelineSummary), (status = 400, body = ErrorBody)))]
async fn summary(
    State(state): State<Arc<AppState>>,
    _caller: Caller,
    fmt: Format,
    Range(range): Range,
    ApiQuery(p): ApiQuery<TimelineParams>,
) -> Result<Response, ApiError> {
    let q = query(range, p);
    Ok(fmt.reply(&blocking(&state, move |host| host.timeline(&q)).await?))
}

/// Timeline events in time order, a page at a time (`loupe timeline show --json`).
#[utoipa::path(get, path = "/api/v1/timeline/events", tag = "timeline", params(RangeQuery, TimelineParams, PageParams), responses((status = 200, body = TimelineEventsPage), (status = 400, body = ErrorBody)))]
async fn events(
    State(state): State<Arc<AppState>>,
    _caller: Caller,
    fmt: Format,
    Range(range): Range,
    ApiQuery(p): ApiQuery<TimelineParams>,
    ApiQuery(page): ApiQuery<PageParams>,
) -> Result<Response, ApiError> {
    let q = query(range, p);
    Ok(fmt.reply(&blocking(&state, move |host| host.timeline_events(&q, page.after.as_deref(), page.limit)).await?))
}
