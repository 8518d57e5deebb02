//! `POST /api/v1/call`: any operation of the lists (`loupe_api::ops`: the host's and, on an
//! agent in a fleet, the fleet's) the HTTP API serves, sent
//! as the control socket's `Call` and answered as the control socket answers (`{"ok": …}` or
//! `{"err": {kind, error, code}}`), with the error's HTTP status. The CLI's `--server` mode
//! speaks only this route, so an operation added to the list reaches remote hosts with no route
//! of its own, and a remote error comes back as the very `CoreError` the host made. The REST
//! routes beside it are for the web UI and other clients.
//!
//! The body is a client's, so it is bounded like any other (1 MiB, serde_json's depth limit);
//! operations that read the host's own files (`import`, `symbolize`) are refused here as on the
//! client. An on-demand run waits the request timeout, as on `POST /api/v1/runs`.

use std::sync::Arc;

use axum::{
    extract::State,
    http::{StatusCode, header},
    response::{IntoResponse, Response},
};
use loupe_api::{
    error::CoreResult,
    wire::control::{AnyCall, Encode, answer_as, answer_fleet_as, encode},
};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    AppState,
    auth::Caller,
    error::{self, ApiError},
    extract::ApiJson,
};

pub fn routes() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::new().routes(routes!(call))
}

/// A call, for the document: the operation's name and its arguments by name, as the CLI sends
/// them (`loupe_api::ops` lists the operations and their argument types).
#[derive(ToSchema)]
#[schema(example = json!({"call": "show_run", "id": 7, "per_cpu": false}))]
#[allow(dead_code)] // documentation only: the handler decodes `Call`
pub struct CallBody {
    /// The operation's name (`show_run`, `list_runs`, `profile`, …: the method names of
    /// `loupe_api::ops::HostApi`), its arguments beside it by name.
    call: String,
}

/// The answer, for the document: `ok` with the operation's value, or `err`.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct CallAnswer {
    /// The operation's value (the same as its REST route's body).
    ok: Option<serde_json::Value>,
    /// The error: its kind, words and code, as the REST routes' `ErrorBody` plus `kind`.
    err: Option<serde_json::Value>,
}

/// Any operation of the host, as the CLI's `--server` mode calls it: one body names the
/// operation and its arguments, the answer is its value or its error (with that error's status).
#[utoipa::path(post, path = "/api/v1/call", tag = "host", request_body = CallBody, responses((status = 200, body = CallAnswer), (status = 400, body = CallAnswer), (status = 404, body = CallAnswer), (status = 409, body = CallAnswer), (status = 507, body = CallAnswer)))]
async fn call(State(state): State<Arc<AppState>>, caller: Caller, ApiJson(call): ApiJson<AnyCall>) -> Response {
    let call = match call {
        AnyCall::Host(call) => call,
        // Checked (the `fleet` scope and the operation's own) and recorded by the fleet door.
        AnyCall::Fleet(call) => {
            let answered =
                super::fleet::fleet_core(&state, caller, move |api| Ok(answer_fleet_as(api, call, AsResponse)));
            return answered.await.unwrap_or_else(|e| AsResponse.encode::<()>(Err(e)));
        }
    };
    let op = call.op();
    if !op.http().served() {
        return AsResponse.encode::<()>(Err(op.refused()));
    }
    let wait = state.request_timeout;
    let host = Arc::clone(&state.host);
    // The operation's scope is checked (and a change recorded) by the core, as on every door;
    // as on `POST /api/v1/runs`, a run longer than the request answers `run_timeout`, and goes on.
    let answered =
        tokio::task::spawn_blocking(move || answer_as(&host.acting_for(caller.0).run_wait(wait), call, AsResponse))
            .await;
    answered.unwrap_or_else(|e| ApiError::internal(e).into_response())
}

/// An answer as an HTTP response: the control socket's line, the error's status.
struct AsResponse;

impl Encode for AsResponse {
    type Out = Response;
    fn encode<T: Serialize>(self, r: CoreResult<T>) -> Response {
        let status = match &r {
            Ok(_) => StatusCode::OK,
            Err(e) => error::status(e.kind()),
        };
        (status, [(header::CONTENT_TYPE, "application/json")], encode(r)).into_response()
    }
}
