//! Read routes and on-demand runs: parse, call the core, render. The JSON is the CLI's:
//! `runs list --json`, `runs show --json`, `profile --json`.

use std::{str::FromStr, sync::Arc};

use axum::{
    extract::{Path, State},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
};
use loupe_api::wire::http::{
    BaseQuery, DEFAULT_FREQUENCY, ListQuery, ProfileParams, ShowQuery, StartRun, StartedRun, WindowParams,
};
use loupe_store::RunId;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    AppState, acting,
    auth::Caller,
    blocking,
    error::ApiError,
    extract::{ApiJson, ApiQuery, Range, RangeQuery},
    negotiate::Format,
};
use loupe_api::model::{
    DayView, ErrorBody, Health, ProfileDiffView, ProfileView, RunListEntry, RunView, StatsView, WindowView,
};
use loupe_api::ops::HostApi;
use loupe_api::orders::MAX_WINDOW_LANE_ITEMS;
use loupe_core::CoreError;

pub fn routes() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::new()
        .routes(routes!(health))
        .routes(routes!(days))
        .routes(routes!(stats))
        .routes(routes!(list_runs, start_run))
        .routes(routes!(get_run))
        .routes(routes!(profile))
        .routes(routes!(profile_diff))
        .routes(routes!(profile_pprof))
        .routes(routes!(pids))
        .routes(routes!(window))
        .routes(routes!(window_trace))
}

/// Liveness and what this server is. Needs no token.
#[utoipa::path(get, path = "/api/v1/health", tag = "host", security(()), responses((status = 200, body = Health)))]
async fn health(State(state): State<Arc<AppState>>, fmt: Format) -> Response {
    fmt.reply(&state.host.health(!state.no_auth, state.fleet.as_ref().map(|f| (f.place.clone(), f.trust))))
}

/// Retained days: runs by interval, stack samples, bytes.
#[utoipa::path(get, path = "/api/v1/days", tag = "host", responses((status = 200, body = Vec<DayView>), (status = 401, body = ErrorBody)))]
async fn days(State(state): State<Arc<AppState>>, caller: Caller, fmt: Format) -> Result<Response, ApiError> {
    Ok(fmt.reply(&acting(&state, caller, |api| api.days()).await?))
}

/// Store totals (running counters, no scan) and the retention cap.
#[utoipa::path(get, path = "/api/v1/stats", tag = "host", responses((status = 200, body = StatsView), (status = 401, body = ErrorBody)))]
async fn stats(State(state): State<Arc<AppState>>, _caller: Caller, fmt: Format) -> Result<Response, ApiError> {
    Ok(fmt.reply(&blocking(&state, |host| host.stats()).await?))
}

/// Runs that started in a range, oldest first.
#[utoipa::path(get, path = "/api/v1/runs", tag = "runs", params(RangeQuery, ListQuery), responses((status = 200, body = Vec<RunListEntry>), (status = 400, body = ErrorBody)))]
async fn list_runs(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    fmt: Format,
    Range(range): Range,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<Response, ApiError> {
    let filter = q.filter(range)?;
    Ok(fmt.reply(&acting(&state, caller, move |api| api.list_runs(filter)).await?))
}

/// One run with its per-slot series: `loupe runs show --json`.
#[utoipa::path(get, path = "/api/v1/runs/{id}", tag = "runs", params(("id" = u64, Path, description = "Run id"), ShowQuery), responses((status = 200, body = RunView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn get_run(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    fmt: Format,
    Path(id): Path<String>,
    ApiQuery(q): ApiQuery<ShowQuery>,
) -> Result<Response, ApiError> {
    let id = RunId::from_str(&id).map_err(|_| CoreError::BadId(id))?;
    Ok(fmt.reply(&acting(&state, caller, move |api| api.show_run(id.0, q.per_cpu)).await?))
}

/// Starts an on-demand run on the agent and answers with its id once it is stored (a run of
/// 2000 × 10 ms takes 20 s); a run that outlasts the request timeout answers 408 and is stored
/// when it ends. Only on a collecting agent (409 under `loupe serve`).
#[utoipa::path(post, path = "/api/v1/runs", tag = "runs", request_body = StartRun, responses((status = 201, body = StartedRun), (status = 400, body = ErrorBody), (status = 408, body = ErrorBody), (status = 409, body = ErrorBody), (status = 507, body = ErrorBody)))]
async fn start_run(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    fmt: Format,
    ApiJson(body): ApiJson<StartRun>,
) -> Result<Response, ApiError> {
    let order = body.order()?;
    let view = acting(&state, caller, move |api| api.start_run(order)).await?;
    let started = StartedRun {
        id: view.id,
        iface: view.iface,
        start_unix_ns: view.start_unix_ns,
        interval_ns: view.interval_ns,
        samples: view.samples,
    };
    Ok((StatusCode::CREATED, fmt.reply(&started)).into_response())
}

/// A profile over a range: `loupe profile --json` (functions and flame graph).
#[utoipa::path(get, path = "/api/v1/profile", tag = "profiles", params(RangeQuery, ProfileParams), responses((status = 200, body = ProfileView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn profile(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    fmt: Format,
    Range(range): Range,
    ApiQuery(p): ApiQuery<ProfileParams>,
) -> Result<Response, ApiError> {
    let q = p.query(range);
    let min_share = p.min_share.unwrap_or(0.0);
    Ok(fmt.reply(&acting(&state, caller, move |api| api.profile(q, min_share)).await?))
}

/// What changed between the range and a baseline range with the same filters (`loupe profile
/// --base-from … --base-to … --json`): the range's flame graph with the baseline's samples on
/// each path, functions by change of their share of each side's samples, and those only one side
/// has (`new`, `gone`).
#[utoipa::path(get, path = "/api/v1/profile/diff", tag = "profiles", params(RangeQuery, ProfileParams, BaseQuery), responses((status = 200, body = ProfileDiffView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn profile_diff(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    fmt: Format,
    Range(range): Range,
    ApiQuery(p): ApiQuery<ProfileParams>,
    ApiQuery(b): ApiQuery<BaseQuery>,
) -> Result<Response, ApiError> {
    let (q, base) = (p.query(range), b.range()?);
    let min_share = p.min_share.unwrap_or(0.0);
    Ok(fmt.reply(&acting(&state, caller, move |api| api.profile_diff(q, base, min_share)).await?))
}

/// The same profile as gzipped pprof (`go tool pprof` reads it).
#[utoipa::path(get, path = "/api/v1/profile/pprof", tag = "profiles", params(RangeQuery, ProfileParams), responses((status = 200, content_type = "application/octet-stream", body = Vec<u8>), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn profile_pprof(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Range(range): Range,
    ApiQuery(p): ApiQuery<ProfileParams>,
) -> Result<Response, ApiError> {
    let q = p.query(range);
    let frequency = p.frequency.unwrap_or(DEFAULT_FREQUENCY);
    let bytes = acting(&state, caller, move |api| api.pprof(q, frequency)).await?;
    Ok((
        [
            (header::CONTENT_TYPE, "application/octet-stream"),
            (header::CONTENT_DISPOSITION, "attachment; filename=\"loupe.pb.gz\""),
        ],
        bytes,
    )
        .into_response())
}

/// Everything recorded in a span of time on one axis (`loupe window --json`): each run's slots,
/// each CPU's samples and waits, each thread's probe calls, each program's timeline events;
/// lanes past `lane_items` as per-column summaries. Times in lanes are ns after `from_unix_ns`.
/// MessagePack with `Accept: application/msgpack`.
#[utoipa::path(get, path = "/api/v1/window", tag = "window", params(RangeQuery, WindowParams), responses((status = 200, body = WindowView), (status = 400, body = ErrorBody)))]
async fn window(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    fmt: Format,
    Range(range): Range,
    ApiQuery(p): ApiQuery<WindowParams>,
) -> Result<Response, ApiError> {
    let order = p.order(range, None);
    Ok(fmt.reply(&acting(&state, caller, move |api| api.window(order)).await?))
}

/// The window as a Chrome/Perfetto trace (JSON Trace Event format; `loupe export trace`): open it
/// in the Perfetto UI or `chrome://tracing`.
#[utoipa::path(get, path = "/api/v1/window/trace", tag = "window", params(RangeQuery, WindowParams), responses((status = 200, content_type = "application/json", body = loupe_api::formats::trace::Trace), (status = 400, body = ErrorBody)))]
async fn window_trace(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Range(range): Range,
    ApiQuery(p): ApiQuery<WindowParams>,
) -> Result<Response, ApiError> {
    let order = p.order(range, Some(MAX_WINDOW_LANE_ITEMS));
    let bytes = acting(&state, caller, move |api| api.export_trace(order)).await?;
    Ok((
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CONTENT_DISPOSITION, "attachment; filename=\"loupe-trace.json\""),
        ],
        bytes,
    )
        .into_response())
}

/// PIDs with samples in a range.
#[utoipa::path(get, path = "/api/v1/pids", tag = "profiles", params(RangeQuery), responses((status = 200, body = Vec<u32>), (status = 400, body = ErrorBody)))]
async fn pids(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    fmt: Format,
    Range(range): Range,
) -> Result<Response, ApiError> {
    Ok(fmt.reply(&acting(&state, caller, move |api| api.pids(range)).await?))
}
