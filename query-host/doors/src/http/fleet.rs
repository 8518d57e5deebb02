//! The fleet through any agent that is in it (`loupe agent --nats URL`): who is there
//! (`GET /api/v1/fleet/hosts`), a synchronized run on a rack (`POST /api/v1/fleet/runs`), an
//! analysis on every selected host, merged (`POST /api/v1/fleet/invoke`), and one host's stored
//! run or profile (`GET /api/v1/fleet/hosts/{host}/runs/{id}`, `…/profile`) — what the web UI's
//! fleet view opens when a host's row is clicked. The agent asks the fleet over its own NATS
//! connection; an agent outside a fleet answers 409.

use std::sync::Arc;

use axum::{
    extract::{Path, State},
    response::Response,
};
use loupe_store::SampleKind;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    AppState,
    auth::{self, Caller},
    error::ApiError,
    extract::{ApiJson, ApiQuery, Range, RangeQuery},
    negotiate::Format,
};
use crate::fleet::{
    Coordinator, InvokeOrder, RunOrderFleet, Selector, merge_with,
    wire::{ReadBody, ReadReply},
};
use loupe_api::model::{ErrorBody, ErrorKind, FleetHostsView, FleetInvokeView, FleetRunView, ProfileView, RunView};
use loupe_core::time::{TimeArg, parse_interval, parse_range};

pub fn routes() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::new()
        .routes(routes!(hosts))
        .routes(routes!(run))
        .routes(routes!(invoke))
        .routes(routes!(host_run))
        .routes(routes!(host_profile))
}

/// Which hosts: a rack, a datacenter, one host; none of them means the whole fleet.
#[derive(Clone, Debug, Default, Deserialize, IntoParams, ToSchema)]
#[into_params(parameter_in = Query)]
pub struct Scope {
    pub rack: Option<String>,
    pub dc: Option<String>,
    pub host: Option<String>,
}

impl From<Scope> for Selector {
    fn from(s: Scope) -> Selector {
        Selector { dc: s.dc, rack: s.rack, host: s.host }
    }
}

fn coordinator(state: &AppState) -> Result<&Coordinator, ApiError> {
    state.fleet.as_ref().map(|f| &f.coordinator).ok_or_else(|| {
        ApiError::new(
            ErrorKind::Conflict,
            "not_in_fleet",
            "this agent is not in a fleet: start it with --nats URL (and --rack, --dc)",
        )
    })
}

/// Registered hosts of the selection, with their status (`up`, `silent`, `left`).
#[utoipa::path(get, path = "/api/v1/fleet/hosts", tag = "fleet", operation_id = "fleet_hosts", params(Scope), responses((status = 200, body = FleetHostsView), (status = 400, body = ErrorBody), (status = 409, body = ErrorBody)))]
async fn hosts(
    State(state): State<Arc<AppState>>,
    _caller: Caller,
    fmt: Format,
    ApiQuery(scope): ApiQuery<Scope>,
) -> Result<Response, ApiError> {
    let view = coordinator(&state)?.hosts(&scope.into()).await?;
    Ok(fmt.reply(&view))
}

/// A synchronized run.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FleetRunRequest {
    /// The rack (usually), a datacenter or one host; none of them: the whole fleet.
    pub rack: Option<String>,
    pub dc: Option<String>,
    pub host: Option<String>,
    /// Slot width (`100us`, `1ms`, `10ms`).
    pub interval: String,
    /// Slots (default 2000, at most 20000).
    pub samples: Option<u32>,
    pub iface: Option<String>,
    /// The common start (RFC 3339 or Unix ns); default 2 s from now.
    pub at: Option<String>,
}

/// One run on every selected host from one start instant; answers when every host stored it
/// (or at the run's end plus a margin, naming the hosts that missed it).
#[utoipa::path(post, path = "/api/v1/fleet/runs", tag = "fleet", operation_id = "fleet_run", request_body = FleetRunRequest, responses((status = 200, body = FleetRunView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
async fn run(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    fmt: Format,
    ApiJson(req): ApiJson<FleetRunRequest>,
) -> Result<Response, ApiError> {
    let target = format!(
        "rack {} dc {} host {}: {}",
        req.rack.as_deref().unwrap_or("*"),
        req.dc.as_deref().unwrap_or("*"),
        req.host.as_deref().unwrap_or("*"),
        req.interval
    );
    let outcome = fleet_run(&state, req).await;
    // Runs on other hosts, started from here: recorded as this host's action, however it ended.
    let code = outcome.as_ref().map_or_else(|e| e.body.code.as_str(), |_| "ok");
    state.host.audit().record_outcome(&caller.0, auth::FLEET_RUN, &target, code);
    Ok(fmt.reply(&outcome?))
}

async fn fleet_run(state: &Arc<AppState>, req: FleetRunRequest) -> Result<FleetRunView, ApiError> {
    let fleet = coordinator(state)?;
    let at = req.at.as_deref().map(|t| TimeArg::parse("at", t)).transpose()?.map(TimeArg::unix_ns);
    let order = RunOrderFleet {
        selector: Selector { dc: req.dc, rack: req.rack, host: req.host },
        iface: req.iface,
        interval: parse_interval(&req.interval)?,
        samples: req.samples.unwrap_or(loupe_core::runs::DEFAULT_SAMPLES),
        at_unix_ns: at,
    };
    Ok(fleet.run(&order).await?)
}

/// A fleet-wide invocation of one of this agent's analyses.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FleetInvokeRequest {
    /// An analysis uploaded to this agent that exports `merge`.
    pub name: String,
    /// The hosts: a rack, a datacenter or one host; none of them: the whole fleet.
    pub rack: Option<String>,
    pub dc: Option<String>,
    pub host: Option<String>,
    /// The range (RFC 3339, Unix ns, `now`, `-1h`); default: everything.
    pub from: Option<String>,
    pub to: Option<String>,
    #[serde(default)]
    pub params: serde_json::Map<String, serde_json::Value>,
    /// How long to wait for the hosts (`2s` when absent, at most `300s`).
    pub deadline: Option<String>,
}

/// Runs one of this agent's analyses on every selected host next to its data (the module goes
/// to them by its hash through the fleet's object store), and merges their partial results in
/// the sandbox: the merged result, who answered, who missed the deadline, who failed and why.
#[utoipa::path(post, path = "/api/v1/fleet/invoke", tag = "fleet", operation_id = "fleet_invoke", request_body = FleetInvokeRequest, responses((status = 200, body = FleetInvokeView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody), (status = 422, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn invoke(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    fmt: Format,
    ApiJson(req): ApiJson<FleetInvokeRequest>,
) -> Result<Response, ApiError> {
    let fleet = coordinator(&state)?;
    let range = parse_range(req.from.as_deref(), req.to.as_deref())?;
    let deadline = match &req.deadline {
        Some(d) => parse_interval(d)?,
        None => std::time::Duration::from_secs(2),
    };
    let host = Arc::clone(&state.host);
    let name = req.name.clone();
    let (module, bytes) = tokio::task::spawn_blocking(move || host.analyses()?.local_module(&name))
        .await
        .map_err(ApiError::internal)??;
    let sha = fleet.ship(&req.name, &bytes).await?;
    let order = InvokeOrder {
        selector: Selector { dc: req.dc, rack: req.rack, host: req.host },
        from_unix_ns: range.from_unix_ns(),
        to_unix_ns: range.to_unix_ns(),
        params: req.params.clone(),
        deadline,
    };
    let merge = merge_with(Arc::clone(&state.host), module, caller.0.team, range, req.params);
    Ok(fmt.reply(&fleet.invoke(&order, &req.name, &sha, merge).await?))
}

/// A host's stored run, read over the fleet: what the fleet view opens when a host's row of a
/// synchronized run is clicked.
#[utoipa::path(get, path = "/api/v1/fleet/hosts/{host}/runs/{id}", tag = "fleet", operation_id = "fleet_host_run", params(("host" = String, Path, description = "The host's fleet name"), ("id" = u64, Path, description = "Run id on that host")), responses((status = 200, body = RunView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody), (status = 413, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn host_run(
    State(state): State<Arc<AppState>>,
    _caller: Caller,
    fmt: Format,
    Path((host, id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let id: u64 = id.parse().map_err(|_| loupe_core::CoreError::BadId(id))?;
    match coordinator(&state)?.read(&host, ReadBody::Run { id }).await? {
        ReadReply::Run(view) => Ok(fmt.reply(&view)),
        ReadReply::Profile(_) => Err(ApiError::internal(format!("host {host} answered a run read with a profile"))),
    }
}

/// Which of the host's stored stacks.
#[derive(Clone, Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct HostProfileParams {
    /// `on_cpu` (default): where its threads ran, in samples. `off_cpu`: where they waited off
    /// the CPU, in nanoseconds (the host's agent started with `--off-cpu`).
    #[serde(default)]
    #[param(value_type = Option<String>, example = "off_cpu")]
    pub kind: SampleKind,
}

/// A host's profile of a range, read over the fleet (its stacks travel, the flame graph is
/// built here); a range whose stacks exceed the fleet's message limit answers 413 `too_large`.
#[utoipa::path(get, path = "/api/v1/fleet/hosts/{host}/profile", tag = "fleet", operation_id = "fleet_host_profile", params(("host" = String, Path, description = "The host's fleet name"), RangeQuery, HostProfileParams), responses((status = 200, body = ProfileView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody), (status = 413, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn host_profile(
    State(state): State<Arc<AppState>>,
    _caller: Caller,
    fmt: Format,
    Path(host): Path<String>,
    Range(range): Range,
    ApiQuery(q): ApiQuery<HostProfileParams>,
) -> Result<Response, ApiError> {
    let kind = q.kind;
    let body = ReadBody::Profile { from_unix_ns: range.from_unix_ns(), to_unix_ns: range.to_unix_ns(), kind };
    match coordinator(&state)?.read(&host, body).await? {
        ReadReply::Profile(profile) => {
            let view = tokio::task::spawn_blocking(move || ProfileView::new(&profile).of_kind(kind))
                .await
                .map_err(ApiError::internal)?;
            Ok(fmt.reply(&view))
        }
        ReadReply::Run(_) => Err(ApiError::internal(format!("host {host} answered a profile read with a run"))),
    }
}
