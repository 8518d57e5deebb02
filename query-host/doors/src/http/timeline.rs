//! Application timelines over HTTP: `GET /api/v1/timeline` (programs and per-event lag
//! statistics of a range) and `GET /api/v1/timeline/events` (the events, a page at a time).

use std::sync::Arc;

use axum::{extract::State, response::Response};
use loupe_api::wire::http::{PageParams, TimelineParams};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    AppState, acting,
    auth::Caller,
    error::ApiError,
    extract::{ApiQuery, Range, RangeQuery},
    negotiate::Format,
};
use loupe_api::{
    model::{ErrorBody, TimelineEventsPage, TimelineSummary},
    ops::HostApi,
};

pub fn routes() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::new().routes(routes!(summary)).routes(routes!(events))
}

/// Programs that logged timeline events in a range, and per event its count and lag percentiles
/// (`loupe timeline list --json`).
#[utoipa::path(get, path = "/api/v1/timeline", tag = "timeline", params(RangeQuery, TimelineParams), responses((status = 200, body = TimelineSummary), (status = 400, body = ErrorBody)))]
async fn summary(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    fmt: Format,
    Range(range): Range,
    ApiQuery(p): ApiQuery<TimelineParams>,
) -> Result<Response, ApiError> {
    let q = p.query(range);
    Ok(fmt.reply(&acting(&state, caller, move |api| api.timeline(q)).await?))
}

/// Timeline events in time order, a page at a time (`loupe timeline show --json`).
#[utoipa::path(get, path = "/api/v1/timeline/events", tag = "timeline", params(RangeQuery, TimelineParams, PageParams), responses((status = 200, body = TimelineEventsPage), (status = 400, body = ErrorBody)))]
async fn events(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    fmt: Format,
    Range(range): Range,
    ApiQuery(p): ApiQuery<TimelineParams>,
    ApiQuery(page): ApiQuery<PageParams>,
) -> Result<Response, ApiError> {
    let q = p.query(range);
    Ok(fmt.reply(&acting(&state, caller, move |api| api.timeline_events(q, page.after, page.limit)).await?))
}
