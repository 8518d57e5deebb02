//! The fleet through any agent that is in it (`loupe agent --nats URL`): the fleet's operations
//! of the one list (`loupe_api::ops::fleet_operations`) at their REST routes — who is there
//! (`GET /api/v1/fleet/hosts`), a synchronized run on a rack (`POST /api/v1/fleet/runs`), an
//! analysis on every selected host, merged (`POST /api/v1/fleet/invoke`), and one host's stored
//! run or profile (`GET /api/v1/fleet/hosts/{host}/runs/{id}`, `…/profile`), what the web UI's
//! fleet view opens when a host's row is clicked — and, through `fleet_core`, at `POST
//! /api/v1/call` too. Each route needs the `fleet` scope (the layer), then the operation's own
//! (the fleet door's guard); the agent asks over its own NATS connection, signing with its host
//! key for the caller's team. An agent outside a fleet answers 409 `not_in_fleet`.

use std::{sync::Arc, time::Duration};

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
    auth::Caller,
    error::ApiError,
    extract::{ApiJson, ApiQuery, Range, RangeQuery},
    negotiate::Format,
};
use loupe_api::{
    fleet::{FleetInvokeOrder, FleetRunOrder, HostProfileOrder, Selector},
    model::{ErrorBody, FleetHostsView, FleetInvokeView, FleetRunView, ProfileView, RunView},
    ops::FleetApi,
};
use loupe_core::{
    CoreError, CoreResult,
    time::{TimeArg, parse_interval, parse_range},
};
use loupe_fleet::{
    asker::{Asker, Guarded, Modules},
    signer::Signer,
};

pub fn routes() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::new()
        .routes(routes!(hosts))
        .routes(routes!(run))
        .routes(routes!(invoke))
        .routes(routes!(host_run))
        .routes(routes!(host_profile))
}

/// Runs `f` on the blocking pool with the fleet's operations for `caller`: this agent's
/// coordinator, its host key signing for the caller's team and scopes, its own analyses as the
/// modules, each operation checked against the caller's scopes and recorded where it starts
/// work (`fleet::asker::Guarded`). An agent outside a fleet answers `not_in_fleet` (409) once
/// the caller's scopes are checked.
pub async fn fleet_core<T: Send + 'static>(
    state: &Arc<AppState>,
    caller: Caller,
    f: impl FnOnce(&dyn FleetApi) -> CoreResult<T> + Send + 'static,
) -> CoreResult<T> {
    let state = Arc::clone(state);
    let runtime = tokio::runtime::Handle::current();
    let answered = tokio::task::spawn_blocking(move || {
        let caller = caller.0;
        let asker = state.fleet.as_ref().map(|fleet| Asker {
            coordinator: &fleet.coordinator,
            signer: Signer::acting_for(Arc::clone(&fleet.key), &caller),
            modules: Modules::Local { host: Arc::clone(&state.host), team: caller.team.clone() },
            runtime,
        });
        f(&Guarded { api: asker.as_ref().map(|a| a as &dyn FleetApi), caller, host: &state.host })
    })
    .await;
    answered.unwrap_or_else(|e| Err(CoreError::Internal(format!("a fleet request's task failed: {e}"))))
}

/// [`fleet_core`], its error as the API answers it.
async fn fleet<T: Send + 'static>(
    state: &Arc<AppState>,
    caller: Caller,
    f: impl FnOnce(&dyn FleetApi) -> CoreResult<T> + Send + 'static,
) -> Result<T, ApiError> {
    Ok(fleet_core(state, caller, f).await?)
}

/// Registered hosts of the selection, with their status (`up`, `silent`, `left`).
#[utoipa::path(get, path = "/api/v1/fleet/hosts", tag = "fleet", operation_id = "fleet_hosts", params(Selector), responses((status = 200, body = FleetHostsView), (status = 400, body = ErrorBody), (status = 409, body = ErrorBody)))]
async fn hosts(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    fmt: Format,
    ApiQuery(hosts): ApiQuery<Selector>,
) -> Result<Response, ApiError> {
    Ok(fmt.reply(&fleet(&state, caller, move |api| api.fleet_hosts(hosts)).await?))
}

/// A synchronized run, as a client writes it (`fleet_run`'s order with its times in words).
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

impl FleetRunRequest {
    fn order(self) -> CoreResult<FleetRunOrder> {
        let at = self.at.as_deref().map(|t| TimeArg::parse("at", t)).transpose()?.map(TimeArg::unix_ns);
        Ok(FleetRunOrder {
            hosts: Selector { dc: self.dc, rack: self.rack, host: self.host },
            iface: self.iface,
            interval: parse_interval(&self.interval)?,
            samples: self.samples.unwrap_or(loupe_core::runs::DEFAULT_SAMPLES),
            at_unix_ns: at,
        })
    }
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
    let order = req.order()?;
    Ok(fmt.reply(&fleet(&state, caller, move |api| api.fleet_run(order)).await?))
}

/// A fleet-wide invocation of one of this agent's analyses, as a client writes it.
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

impl FleetInvokeRequest {
    fn order(self) -> CoreResult<FleetInvokeOrder> {
        Ok(FleetInvokeOrder {
            range: parse_range(self.from.as_deref(), self.to.as_deref())?,
            deadline: match &self.deadline {
                Some(d) => parse_interval(d)?,
                None => Duration::from_secs(2),
            },
            name: self.name,
            hosts: Selector { dc: self.dc, rack: self.rack, host: self.host },
            params: self.params,
        })
    }
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
    let order = req.order()?;
    Ok(fmt.reply(&fleet(&state, caller, move |api| api.fleet_invoke(order)).await?))
}

/// A host's stored run, read over the fleet: what the fleet view opens when a host's row of a
/// synchronized run is clicked.
#[utoipa::path(get, path = "/api/v1/fleet/hosts/{host}/runs/{id}", tag = "fleet", operation_id = "fleet_host_run", params(("host" = String, Path, description = "The host's fleet name"), ("id" = u64, Path, description = "Run id on that host")), responses((status = 200, body = RunView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody), (status = 413, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn host_run(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    fmt: Format,
    Path((host, id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let id: u64 = id.parse().map_err(|_| CoreError::BadId(id))?;
    Ok(fmt.reply(&fleet(&state, caller, move |api| api.fleet_host_run(host, id)).await?))
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
    caller: Caller,
    fmt: Format,
    Path(host): Path<String>,
    Range(range): Range,
    ApiQuery(q): ApiQuery<HostProfileParams>,
) -> Result<Response, ApiError> {
    let order = HostProfileOrder { host, range, kind: q.kind };
    Ok(fmt.reply(&fleet(&state, caller, move |api| api.fleet_host_profile(order)).await?))
}
