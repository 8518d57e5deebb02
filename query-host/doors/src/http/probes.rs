//! Function probes over HTTP: start a session on the agent (`POST /api/v1/probes`), list the
//! running and stored ones (`GET /api/v1/probes`), stop one (`POST
//! /api/v1/probes/active/{handle}/stop`), read one (`GET /api/v1/probes/{id}`).
//!
//! Starting probes changes how other processes on the host run (each probed call costs ~1 µs
//! more, within the session's budget) and reads their calls: it needs the `probe` scope, and a
//! session is stopped only by the team that started it.

use std::sync::Arc;

use axum::{
    extract::{Path, State},
    http::StatusCode,
    response::{IntoResponse, Response},
};
use loupe_api::wire::http::ProbeShowQuery;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    AppState, acting,
    auth::Caller,
    error::ApiError,
    extract::{ApiJson, ApiQuery, Range, RangeQuery},
    negotiate::Format,
};
use loupe_api::{
    model::{ActiveProbeView, ErrorBody, ProbeList, ProbeView},
    ops::HostApi,
};
use loupe_core::{CoreError, ProbeOrder};

pub fn routes() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::new().routes(routes!(list, start)).routes(routes!(show)).routes(routes!(stop))
}

fn number(what: &str, text: &str) -> Result<u64, CoreError> {
    text.parse()
        .map_err(|_| CoreError::Probe(format!("bad {what} '{text}': expected a number from GET /api/v1/probes")))
}

/// Sessions running on the agent and stored sessions that started in a range (`loupe probes
/// list --json`).
#[utoipa::path(get, path = "/api/v1/probes", tag = "probes", params(RangeQuery), responses((status = 200, body = ProbeList), (status = 400, body = ErrorBody)))]
async fn list(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    fmt: Format,
    Range(range): Range,
) -> Result<Response, ApiError> {
    Ok(fmt.reply(&acting(&state, caller, move |api| api.list_probes(range)).await?))
}

/// Attaches probes on the agent and answers at once with the session's handle; the session
/// ends at its length, on `stop`, over its budget, or when its processes exit, and is then
/// stored. Bad requests (unknown PID or symbol, a function with no place the kernel runs
/// without single-stepping, too many functions) attach nothing; a Go program's functions are
/// counted only. Only on a collecting agent (409 under
/// `loupe serve`).
#[utoipa::path(post, path = "/api/v1/probes", tag = "probes", request_body = ProbeOrder, responses((status = 201, body = ActiveProbeView), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
async fn start(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    fmt: Format,
    ApiJson(order): ApiJson<ProbeOrder>,
) -> Result<Response, ApiError> {
    let view = acting(&state, caller, move |api| api.start_probe(order)).await?;
    Ok((StatusCode::CREATED, fmt.reply(&view)).into_response())
}

/// Stops a running session and answers with what it stored (also collects one that ended by
/// itself in the last ten minutes).
#[utoipa::path(post, path = "/api/v1/probes/active/{handle}/stop", tag = "probes", params(("handle" = u64, Path, description = "The running session's handle")), responses((status = 200, body = ProbeView), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody, description = "another team's session: it goes on"), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
async fn stop(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    fmt: Format,
    Path(handle): Path<String>,
) -> Result<Response, ApiError> {
    let handle = number("handle", &handle)?;
    Ok(fmt.reply(&acting(&state, caller, move |api| api.stop_probe(handle)).await?))
}

/// One stored session: per function its calls, percentiles and histogram; the slowest calls as
/// call trees (`loupe probes show --json`).
#[utoipa::path(get, path = "/api/v1/probes/{id}", tag = "probes", params(("id" = u64, Path, description = "Stored session id"), ProbeShowQuery), responses((status = 200, body = ProbeView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn show(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    fmt: Format,
    Path(id): Path<String>,
    ApiQuery(q): ApiQuery<ProbeShowQuery>,
) -> Result<Response, ApiError> {
    let id = number("probe session id", &id)?;
    Ok(fmt.reply(&acting(&state, caller, move |api| api.show_probe(id, q.calls)).await?))
}
