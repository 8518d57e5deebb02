//! Read routes and on-demand runs. The JSON is the CLI's: `runs list --json`,
//! `runs show --json`, `profile --json`.

use std::{collections::BTreeMap, str::FromStr, sync::Arc, time::Duration};

use axum::{
    Json,
    extract::{FromRequest, Path, Query, Request, State},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
};
use loupe_bpf::{RunRequest, StartAt};
use loupe_store::{ProfileQuery, RunId, TimeRange};
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{AppState, auth::Caller, blocking, error::ApiError, negotiate::Format};
use crate::{
    control::{Request as AgentRequest, Response as AgentResponse, show_run},
    profile::{ProfileView, pprof},
    timearg::{TimeArg, format_unix_ns, now_unix_ns},
};

pub fn routes() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::new()
        .routes(routes!(health))
        .routes(routes!(days))
        .routes(routes!(stats))
        .routes(routes!(list_runs, start_run))
        .routes(routes!(get_run))
        .routes(routes!(profile))
        .routes(routes!(profile_pprof))
        .routes(routes!(pids))
}

/// A JSON body whose rejection is an [`ApiError`] (so bad JSON gets the usual error shape).
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(v)) => Ok(ApiJson(v)),
            Err(e) => Err(ApiError::new(e.status(), "bad_body", e.body_text())),
        }
    }
}

/// An instant in a query or body: RFC 3339, Unix ns, `now`, or an offset like `-1h`.
pub fn parse_time(name: &str, text: &str) -> Result<u64, ApiError> {
    TimeArg::from_str(text).map(TimeArg::unix_ns).map_err(|e| ApiError::bad_request("bad_time", format!("{name}: {e}")))
}

/// `[from, to)`; open-ended where not given.
pub fn range(from: Option<&str>, to: Option<&str>) -> Result<TimeRange, ApiError> {
    let from_ns = from.map(|t| parse_time("from", t)).transpose()?.unwrap_or(0);
    let to_ns = to.map(|t| parse_time("to", t)).transpose()?.unwrap_or(u64::MAX);
    TimeRange::new(from_ns, to_ns).map_err(|_| {
        ApiError::bad_request(
            "bad_range",
            format!("bad time range: from {} is after to {}", format_unix_ns(from_ns), format_unix_ns(to_ns)),
        )
    })
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RangeQuery {
    /// Start (inclusive): RFC 3339, Unix ns, `now`, or `-1h`. Default: the beginning.
    pub from: Option<String>,
    /// End (exclusive), same forms. Default: the end of time.
    pub to: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct Health {
    pub status: &'static str,
    pub version: &'static str,
    /// `agent` (collecting) or `serve` (serving a store only).
    pub mode: &'static str,
    pub hostname: String,
    pub uptime_s: u64,
    /// Interfaces the agent samples (empty under `serve`).
    pub ifaces: Vec<String>,
    pub auth: bool,
}

/// Liveness and what this server is. Needs no token.
#[utoipa::path(get, path = "/api/v1/health", tag = "host", security(()), responses((status = 200, body = Health)))]
async fn health(State(state): State<Arc<AppState>>, fmt: Format) -> Response {
    let mut ifaces: Vec<String> = state.agent.iter().flat_map(|a| a.workers.keys().cloned()).collect();
    ifaces.sort();
    fmt.reply(&Health {
        status: "ok",
        version: env!("CARGO_PKG_VERSION"),
        mode: if state.agent.is_some() { "agent" } else { "serve" },
        hostname: crate::view::hostname(),
        uptime_s: state.started.elapsed().as_secs(),
        ifaces,
        auth: !state.no_auth,
    })
}

/// One retained UTC day.
#[derive(Serialize, ToSchema)]
pub struct DayView {
    pub day_start_unix_ns: u64,
    /// `YYYY-MM-DD`.
    pub date: String,
    /// Number of runs per sampling interval (ns).
    pub runs_by_interval: BTreeMap<u64, u64>,
    pub runs: u64,
    pub run_bytes: u64,
    pub sample_batches: u64,
    pub samples: u64,
    pub sample_bytes: u64,
}

/// Retained days: runs by interval, stack samples, bytes.
#[utoipa::path(get, path = "/api/v1/days", tag = "host", responses((status = 200, body = Vec<DayView>), (status = 401, body = super::error::ErrorBody)))]
async fn days(State(state): State<Arc<AppState>>, _caller: Caller, fmt: Format) -> Result<Response, ApiError> {
    let days = blocking(move || Ok(state.store.days()?)).await?;
    let view: Vec<DayView> = days
        .into_iter()
        .map(|d| DayView {
            date: format_unix_ns(d.day_start_unix_ns)[..10].to_string(),
            day_start_unix_ns: d.day_start_unix_ns,
            runs: d.runs_by_interval.values().sum(),
            runs_by_interval: d.runs_by_interval,
            run_bytes: d.stored_bytes,
            sample_batches: d.sample_batches,
            samples: d.samples,
            sample_bytes: d.sample_bytes,
        })
        .collect();
    Ok(fmt.reply(&view))
}

/// Store totals and the retention they are kept under.
#[derive(Serialize, ToSchema)]
pub struct StatsView {
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub stats: loupe_store::StoreStats,
    /// The byte cap `total_bytes` is kept under (oldest deleted first).
    pub max_bytes: u64,
    /// How long data is kept, in seconds.
    pub max_age_s: u64,
}

/// Store totals (running counters, no scan) and the retention cap.
#[utoipa::path(get, path = "/api/v1/stats", tag = "host", responses((status = 200, body = StatsView)))]
async fn stats(State(state): State<Arc<AppState>>, _caller: Caller, fmt: Format) -> Result<Response, ApiError> {
    let s = Arc::clone(&state);
    let stats = blocking(move || Ok(s.store.stats()?)).await?;
    let retention = state.store.retention();
    Ok(fmt.reply(&StatsView { stats, max_bytes: retention.max_bytes, max_age_s: retention.max_age.as_secs() }))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    pub from: Option<String>,
    pub to: Option<String>,
    /// Only runs of this slot width: `100us`, `1ms`, `10ms`.
    pub interval: Option<String>,
    pub iface: Option<String>,
}

/// One run in a list: `loupe runs list --json`.
#[derive(Serialize, Deserialize, ToSchema, Debug, Clone, PartialEq, Eq)]
pub struct RunListEntry {
    pub id: u64,
    pub iface: String,
    pub host: String,
    pub start_unix_ns: u64,
    pub interval_ns: u64,
    pub samples: u32,
    pub cpus: Vec<u32>,
    pub stored_bytes: u64,
}

impl From<&loupe_store::RunMeta> for RunListEntry {
    fn from(m: &loupe_store::RunMeta) -> Self {
        RunListEntry {
            id: m.id.0,
            iface: m.iface.clone(),
            host: m.host.clone(),
            start_unix_ns: m.start_unix_ns,
            interval_ns: m.interval_ns,
            samples: m.samples,
            cpus: m.cpus.clone(),
            stored_bytes: m.stored_bytes,
        }
    }
}

fn parse_interval(text: &str) -> Result<u64, ApiError> {
    humantime::parse_duration(text.trim())
        .map(|d| d.as_nanos() as u64)
        .map_err(|e| ApiError::bad_request("bad_interval", format!("bad interval '{text}': {e} (e.g. 100us, 1ms, 10ms)")))
}

/// Runs that started in a range, oldest first.
#[utoipa::path(get, path = "/api/v1/runs", tag = "runs", params(ListQuery), responses((status = 200, body = Vec<RunListEntry>), (status = 400, body = super::error::ErrorBody)))]
async fn list_runs(
    State(state): State<Arc<AppState>>,
    _caller: Caller,
    fmt: Format,
    Query(q): Query<ListQuery>,
) -> Result<Response, ApiError> {
    let range = range(q.from.as_deref(), q.to.as_deref())?;
    let interval = q.interval.as_deref().map(parse_interval).transpose()?;
    let runs = blocking(move || Ok(state.store.runs(range, interval, q.iface.as_deref())?)).await?;
    Ok(fmt.reply(&runs.iter().map(RunListEntry::from).collect::<Vec<_>>()))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ShowQuery {
    /// Add each CPU's series (`per_cpu` in the answer).
    #[serde(default)]
    pub per_cpu: bool,
}

/// One run with its per-slot series: `loupe runs show --json`.
#[utoipa::path(get, path = "/api/v1/runs/{id}", tag = "runs", params(("id" = u64, Path, description = "Run id"), ShowQuery), responses((status = 200, body = Object), (status = 404, body = super::error::ErrorBody)))]
async fn get_run(
    State(state): State<Arc<AppState>>,
    _caller: Caller,
    fmt: Format,
    Path(id): Path<String>,
    Query(q): Query<ShowQuery>,
) -> Result<Response, ApiError> {
    let id = RunId::from_str(&id)
        .map_err(|_| ApiError::bad_request("bad_id", format!("bad run id '{id}': expected a number from /api/v1/runs")))?;
    let view = blocking(move || {
        if state.store.run_meta(id)?.is_none() {
            return Err(ApiError::not_found("not_found", format!("no run with id {id}")));
        }
        Ok(show_run(&state.store, id, q.per_cpu)?)
    })
    .await?;
    Ok(fmt.reply(&view))
}

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
    /// Start at this exact instant (RFC 3339 or Unix ns) instead of now.
    pub start: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct StartedRun {
    pub id: u64,
    pub iface: String,
    pub start_unix_ns: u64,
    pub interval_ns: u64,
    pub samples: u32,
}

/// Farthest in the future an exact start may be.
const MAX_START_AHEAD: Duration = Duration::from_secs(600);

/// Starts an on-demand run on the agent and answers with its id once it is stored (a run
/// of 2000 × 10 ms takes 20 s). Only on a collecting agent.
#[utoipa::path(post, path = "/api/v1/runs", tag = "runs", request_body = StartRun, responses((status = 201, body = StartedRun), (status = 400, body = super::error::ErrorBody), (status = 409, body = super::error::ErrorBody)))]
async fn start_run(
    State(state): State<Arc<AppState>>,
    _caller: Caller,
    fmt: Format,
    ApiJson(body): ApiJson<StartRun>,
) -> Result<Response, ApiError> {
    let Some(agent) = state.agent.clone() else {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "not_collecting",
            "this server only serves a store (`loupe serve`); start runs on a `loupe agent`",
        ));
    };
    let interval_ns = parse_interval(&body.interval)?;
    let samples = body.samples.unwrap_or(2000);
    let start_unix_ns = body.start.as_deref().map(|t| parse_time("start", t)).transpose()?;
    if let Some(t) = start_unix_ns
        && t > now_unix_ns() + MAX_START_AHEAD.as_nanos() as u64
    {
        return Err(ApiError::bad_request("bad_time", "start: at most 10 minutes ahead"));
    }
    let iface = match body.iface {
        Some(i) => i,
        None => {
            let mut known: Vec<&String> = agent.workers.keys().collect();
            match known.len() {
                1 => known[0].clone(),
                _ => {
                    known.sort();
                    return Err(ApiError::bad_request("bad_iface", format!("name the interface: one of {known:?}")));
                }
            }
        }
    };
    let request = RunRequest {
        interval: Duration::from_nanos(interval_ns),
        samples,
        start: start_unix_ns.map_or(StartAt::Now, StartAt::UnixNs),
    };
    request.validate(loupe_bpf::MAX_CAPACITY).map_err(|e| ApiError::bad_request("bad_run", format!("{e:#}")))?;
    if !agent.workers.contains_key(&iface) {
        let mut known: Vec<&String> = agent.workers.keys().collect();
        known.sort();
        return Err(ApiError::bad_request("bad_iface", format!("the agent does not sample '{iface}' (it samples {known:?})")));
    }
    let call = AgentRequest::Run { iface, interval_ns, samples, start_unix_ns };
    let view = blocking(move || match agent.handle(call) {
        AgentResponse::Run(view) => Ok(view),
        AgentResponse::Error(e) => Err(ApiError::new(StatusCode::CONFLICT, "run_failed", e)),
        other => Err(ApiError::internal(format!("unexpected answer: {other:?}"))),
    })
    .await?;
    let started = StartedRun {
        id: view.id,
        iface: view.iface.clone(),
        start_unix_ns: view.start_unix_ns,
        interval_ns: view.interval_ns,
        samples: view.samples,
    };
    Ok((StatusCode::CREATED, fmt.reply(&started)).into_response())
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ProfileParams {
    pub from: Option<String>,
    pub to: Option<String>,
    pub pid: Option<u32>,
    /// Exact command name.
    pub comm: Option<String>,
    pub cpu: Option<u32>,
    /// Include samples of idle CPUs.
    #[serde(default)]
    pub idle: bool,
    /// Sampling frequency the samples were taken at (pprof period; default 10).
    pub frequency: Option<u32>,
}

fn profile_query(p: &ProfileParams) -> Result<ProfileQuery, ApiError> {
    Ok(ProfileQuery {
        range: range(p.from.as_deref(), p.to.as_deref())?,
        pid: p.pid,
        comm: p.comm.clone(),
        cpu: p.cpu,
        include_idle: p.idle,
    })
}

fn read_profile(state: &AppState, q: &ProfileQuery) -> Result<loupe_store::Profile, ApiError> {
    if let Some(pid) = q.pid
        && !state.store.pids(q.range)?.contains(&pid)
    {
        return Err(ApiError::not_found("no_samples", format!("no samples of PID {pid} in that time range")));
    }
    Ok(state.store.profile(q)?)
}

/// A profile over a range: `loupe profile --json` (functions and flame graph).
#[utoipa::path(get, path = "/api/v1/profile", tag = "profiles", params(ProfileParams), responses((status = 200, body = Object), (status = 400, body = super::error::ErrorBody)))]
async fn profile(
    State(state): State<Arc<AppState>>,
    _caller: Caller,
    fmt: Format,
    Query(p): Query<ProfileParams>,
) -> Result<Response, ApiError> {
    let q = profile_query(&p)?;
    let view = blocking(move || Ok(ProfileView::new(&read_profile(&state, &q)?))).await?;
    Ok(fmt.reply(&view))
}

/// The same profile as gzipped pprof (`go tool pprof` reads it).
#[utoipa::path(get, path = "/api/v1/profile/pprof", tag = "profiles", params(ProfileParams), responses((status = 200, content_type = "application/octet-stream", body = Vec<u8>)))]
async fn profile_pprof(
    State(state): State<Arc<AppState>>,
    _caller: Caller,
    Query(p): Query<ProfileParams>,
) -> Result<Response, ApiError> {
    let q = profile_query(&p)?;
    let frequency = p.frequency.unwrap_or(10);
    if frequency == 0 {
        return Err(ApiError::bad_request("bad_frequency", "frequency must be at least 1"));
    }
    let bytes = blocking(move || {
        let profile = read_profile(&state, &q)?;
        let end = q.range.to_unix_ns.min(now_unix_ns());
        let start = q.range.from_unix_ns;
        Ok(pprof(&profile, 1_000_000_000 / frequency as i64, start, end.saturating_sub(start)))
    })
    .await?;
    Ok((
        [
            (header::CONTENT_TYPE, "application/octet-stream"),
            (header::CONTENT_DISPOSITION, "attachment; filename=\"loupe.pb.gz\""),
        ],
        bytes,
    )
        .into_response())
}

/// PIDs with samples in a range.
#[utoipa::path(get, path = "/api/v1/pids", tag = "profiles", params(RangeQuery), responses((status = 200, body = Vec<u32>)))]
async fn pids(
    State(state): State<Arc<AppState>>,
    _caller: Caller,
    fmt: Format,
    Query(q): Query<RangeQuery>,
) -> Result<Response, ApiError> {
    let range = range(q.from.as_deref(), q.to.as_deref())?;
    let pids = blocking(move || Ok(state.store.pids(range)?)).await?;
    Ok(fmt.reply(&pids))
}
