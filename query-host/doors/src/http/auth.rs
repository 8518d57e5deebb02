//! Who is calling and what they may do, as one layer over every route: a bearer token names a
//! team and its scopes (`loupe token add TEAM --scopes …`); each route needs the scope the
//! operation list names for its operation ([`route_scope`]), or the one written here for the
//! routes that are not host operations (the fleet's, the store's totals). The server does not
//! start with a route that has no scope ([`check_every_route`]: fail closed), and the OpenAPI
//! document says each route's scope (`x-scope`), which the scope-matrix test reads. `POST /api/v1/call` only needs a valid token here: the operation
//! inside it is checked, like every operation, by the core ([`loupe_core::ActingFor`]).
//!
//! Without a token, a `--no-auth` server (loopback only) serves every scope but `admin`: any
//! local process may then read, invoke, upload, run and probe — a laptop's or a demo's setting.

use std::{collections::HashMap, sync::Arc, sync::OnceLock};

use axum::{
    extract::{FromRequestParts, MatchedPath, Request, State},
    http::{HeaderMap, Method, header, request::Parts},
    middleware::Next,
    response::{IntoResponse, Response},
};

use super::{AppState, error::ApiError};
pub use loupe_api::access::LOCAL_TEAM;
use loupe_api::{
    access::{self, Scope, Scopes},
    model::ErrorKind,
    ops::Op,
};
use loupe_core::CoreError;

/// What a route needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RouteScope {
    /// No token: liveness, the OpenAPI document, `/metrics`.
    Public,
    Needs(Scope),
    /// A valid token; the operation in the body is checked on its own (`POST /api/v1/call`).
    PerOperation,
}

impl RouteScope {
    /// As the OpenAPI document's `x-scope` says it.
    pub fn name(self) -> &'static str {
        match self {
            RouteScope::Public => "none",
            RouteScope::Needs(s) => s.name(),
            RouteScope::PerOperation => "per-operation",
        }
    }
}

/// Routes that are not host operations, and what each needs.
const OTHER_ROUTES: &[(&str, &str, RouteScope)] = &[
    ("get", "/api/v1/health", RouteScope::Public),
    ("get", "/api/v1/openapi.json", RouteScope::Public),
    ("get", "/metrics", RouteScope::Public),
    ("get", "/api/v1/stats", RouteScope::Needs(Scope::Read)),
    ("post", "/api/v1/call", RouteScope::PerOperation),
    ("get", "/api/v1/fleet/hosts", RouteScope::Needs(Scope::Read)),
    ("post", "/api/v1/fleet/runs", RouteScope::Needs(Scope::Run)),
    ("post", "/api/v1/fleet/invoke", RouteScope::Needs(Scope::Invoke)),
    ("get", "/api/v1/fleet/hosts/{host}/runs/{id}", RouteScope::Needs(Scope::Read)),
    ("get", "/api/v1/fleet/hosts/{host}/profile", RouteScope::Needs(Scope::Read)),
];

/// The audit trail's name of a fleet run started through this agent (`POST /api/v1/fleet/runs`).
pub const FLEET_RUN: &str = "fleet_run";

/// Routes that are not host operations but change hosts: the audit trail's name of each.
const OTHER_AUDITED: &[(&str, &str, &str)] = &[("post", "/api/v1/fleet/runs", FLEET_RUN)];

/// A route's scope, and the action the audit trail records it as (if it changes a host).
type Table = HashMap<(&'static str, &'static str), (RouteScope, Option<&'static str>)>;

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let audited = |m: &str, p: &str| OTHER_AUDITED.iter().find(|a| (a.0, a.1) == (m, p)).map(|a| a.2);
        let mut t: Table = OTHER_ROUTES.iter().map(|&(m, p, s)| ((m, p), (s, audited(m, p)))).collect();
        for &op in Op::ALL {
            if let Some((method, path)) = op.http().route() {
                let action = op.changes_host().then(|| op.name());
                let clash = t.insert((method, path), (RouteScope::Needs(op.scope()), action));
                assert!(clash.is_none(), "{method} {path} is named twice");
            }
        }
        t
    })
}

/// What the route `method path` (a path template, as the router matched it) needs, and the
/// audit trail's name for it if it changes a host; `None`: a route nobody gave a scope.
pub fn route_scope(method: &str, path: &str) -> Option<(RouteScope, Option<&'static str>)> {
    table().get(&(method, path)).copied()
}

/// The layer: authenticates, checks the route's scope, and hands the caller to the handler.
/// A refused operation that would have changed the host is recorded in the audit trail.
pub async fn authorize(
    State(state): State<Arc<AppState>>,
    matched: Option<MatchedPath>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(matched) = matched else { return next.run(request).await };
    let method = method_name(request.method());
    // Every handler has a scope (`check_every_route`, at start); a method no handler takes is
    // the router's 405 to answer.
    let Some((scope, audited)) = route_scope(method, matched.as_str()) else { return next.run(request).await };
    if scope == RouteScope::Public {
        return next.run(request).await;
    }
    let caller = match authenticate(request.headers(), &state) {
        Ok(caller) => caller,
        Err(e) => return e.into_response(),
    };
    if let RouteScope::Needs(needed) = scope
        && let Err(refused) = caller.require(needed)
    {
        let refused = CoreError::from(refused);
        if let Some(action) = audited {
            state.host.audit().record_outcome(&caller, action, request.uri().path(), refused.code());
        }
        return ApiError::from(refused).into_response();
    }
    request.extensions_mut().insert(caller);
    next.run(request).await
}

/// A method as the table names it; HEAD is answered by the GET handler, so it needs GET's scope.
fn method_name(method: &Method) -> &'static str {
    match *method {
        Method::GET | Method::HEAD => "get",
        Method::POST => "post",
        Method::PUT => "put",
        Method::DELETE => "delete",
        _ => "other",
    }
}

/// The caller of a request's token (or the `--no-auth` caller of one without).
fn authenticate(headers: &HeaderMap, state: &AppState) -> Result<access::Caller, ApiError> {
    let Some(header) = headers.get(header::AUTHORIZATION) else {
        if state.no_auth {
            return Ok(access::Caller { team: LOCAL_TEAM.into(), token_id: "no-auth".into(), scopes: NO_AUTH_SCOPES });
        }
        return Err(unauthorized("missing bearer token: send `Authorization: Bearer <token>` (see `loupe token add`)"));
    };
    let token = header
        .to_str()
        .ok()
        .and_then(|h| h.strip_prefix("Bearer ").or_else(|| h.strip_prefix("bearer ")))
        .map(str::trim)
        .ok_or_else(|| unauthorized("malformed Authorization header: expected `Bearer <token>`"))?;
    match state.tokens.caller_of(token) {
        Ok(Some(caller)) => Ok(caller),
        Ok(None) => Err(unauthorized("unknown or revoked token")),
        Err(e) => Err(ApiError::internal(format!("{e:#}"))),
    }
}

/// What a request without a token may do on a `--no-auth` server.
pub const NO_AUTH_SCOPES: Scopes = Scopes::of(&[Scope::Read, Scope::Invoke, Scope::Upload, Scope::Run, Scope::Probe]);

/// A handler's caller: the one the [`authorize`] layer found (every route is behind it).
#[derive(Clone, Debug)]
pub struct Caller(pub access::Caller);

impl FromRequestParts<Arc<AppState>> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &Arc<AppState>) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<access::Caller>()
            .cloned()
            .map(Caller)
            .ok_or_else(|| ApiError::internal("a route asked for its caller without the authorize layer"))
    }
}

fn unauthorized(msg: &str) -> ApiError {
    ApiError::new(ErrorKind::Unauthorized, "unauthorized", msg)
}

/// Panics, naming them, if any route of the document (which lists every handler: they are all
/// registered through it) has no scope: the server does not start with a route nobody decided
/// who may use.
pub fn check_every_route(doc: &utoipa::openapi::OpenApi) {
    let mut missing = Vec::new();
    for (path, item) in &doc.paths.paths {
        let ops = [("get", &item.get), ("put", &item.put), ("post", &item.post), ("delete", &item.delete)];
        for (method, op) in ops {
            if op.is_some() && route_scope(method, path).is_none() {
                missing.push(format!("{method} {path}"));
            }
        }
        let others = [&item.patch, &item.head, &item.options, &item.trace];
        assert!(others.iter().all(|o| o.is_none()), "{path}: a method the scope table does not name");
    }
    assert!(
        missing.is_empty(),
        "routes without a scope (give them one in http/auth.rs or api/src/ops.rs): {missing:?}"
    );
}

/// Writes each route's scope into the OpenAPI document (`x-scope`), and the audit trail's name
/// for it where it changes a host (`x-audited`), from the same table the layer reads; a route
/// without a scope is left without, for the scope-matrix test to name.
pub struct ScopesInDocument;

impl utoipa::Modify for ScopesInDocument {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for (path, item) in openapi.paths.paths.iter_mut() {
            let ops = [
                ("get", &mut item.get),
                ("put", &mut item.put),
                ("post", &mut item.post),
                ("delete", &mut item.delete),
            ];
            for (method, op) in ops {
                let (Some(op), Some((scope, audited))) = (op.as_mut(), route_scope(method, path)) else { continue };
                let ext = op.extensions.get_or_insert_with(Default::default);
                ext.insert("x-scope".into(), scope.name().into());
                if let Some(action) = audited {
                    ext.insert("x-audited".into(), action.into());
                }
            }
        }
    }
}
