//! Who is calling and what they may do, as one layer over every route: a bearer token names a
//! team and its scopes (`loupe token add TEAM --scopes …`); each route needs the scope the
//! operation lists name for its operation ([`route_scope`]) — for the fleet's, `fleet` and then
//! the operation's own, which the fleet door's guard also checks for `POST /api/v1/call` — or
//! the one written here for the routes on neither list (the store's totals). The server does
//! not start with a route that has no scope ([`check_every_route`]: fail closed), and the
//! OpenAPI document says each route's scope (`x-scope`), which the scope-matrix test reads.
//! `POST /api/v1/call` only needs a valid token here: the operation inside it is checked, like
//! every operation, by the core ([`loupe_core::ActingFor`]) or the fleet door's guard.
//!
//! Without a token, a `--no-auth` server (loopback only) serves every scope but `admin`: any
//! local process may then read, invoke, upload, run, probe and ask the fleet — a laptop's or a
//! demo's setting.

use std::{collections::HashMap, sync::Arc, sync::OnceLock};

use axum::{
    extract::{FromRequestParts, MatchedPath, Request, State},
    http::{HeaderMap, Method, StatusCode, header, request::Parts},
    middleware::Next,
    response::{IntoResponse, Response},
};

use super::{AppState, error::ApiError};
pub use loupe_api::access::LOCAL_TEAM;
use loupe_api::{
    access::{self, Scope, Scopes},
    model::ErrorKind,
    ops::{FleetOp, Op},
};
use loupe_core::CoreError;

/// What a route needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RouteScope {
    /// No token: liveness, the OpenAPI document, `/metrics`.
    Public,
    Needs(Scope),
    /// A fleet operation: `fleet`, then the operation's own scope, which every target checks
    /// again against the signed request.
    Fleet(Scope),
    /// A valid token; the operation in the body is checked on its own (`POST /api/v1/call`).
    PerOperation,
}

impl RouteScope {
    /// As the OpenAPI document's `x-scope` says it: the scopes a token needs, in the order they
    /// are checked, comma-separated.
    pub fn name(self) -> String {
        match self {
            RouteScope::Public => "none".into(),
            RouteScope::Needs(s) => s.name().into(),
            RouteScope::Fleet(s) => format!("{},{s}", Scope::Fleet),
            RouteScope::PerOperation => "per-operation".into(),
        }
    }

    /// The scopes it needs, in the order they are checked.
    fn needs(self) -> impl Iterator<Item = Scope> {
        let needs = match self {
            RouteScope::Needs(s) => [Some(s), None],
            RouteScope::Fleet(s) => [Some(Scope::Fleet), Some(s)],
            RouteScope::Public | RouteScope::PerOperation => [None, None],
        };
        needs.into_iter().flatten()
    }
}

/// Routes on neither operation list, and what each needs.
const OTHER_ROUTES: &[(&str, &str, RouteScope)] = &[
    ("get", "/api/v1/health", RouteScope::Public),
    ("get", "/api/v1/openapi.json", RouteScope::Public),
    ("get", "/metrics", RouteScope::Public),
    ("get", "/api/v1/stats", RouteScope::Needs(Scope::Read)),
    ("post", "/api/v1/call", RouteScope::PerOperation),
];

/// A route's scope, and the action the audit trail records it as (if it changes a host).
type Table = HashMap<(&'static str, &'static str), (RouteScope, Option<&'static str>)>;

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t: Table = OTHER_ROUTES.iter().map(|&(m, p, s)| ((m, p), (s, None))).collect();
        let mut add = |route: Option<(&'static str, &'static str)>, scope, action| {
            if let Some((method, path)) = route {
                let clash = t.insert((method, path), (scope, action));
                assert!(clash.is_none(), "{method} {path} is named twice");
            }
        };
        for &op in Op::ALL {
            add(op.http().route(), RouteScope::Needs(op.scope()), op.changes_host().then(|| op.name()));
        }
        for &op in FleetOp::ALL {
            add(op.http().route(), RouteScope::Fleet(op.scope()), op.recorded().then(|| op.name()));
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
        Err(e) => {
            // Folded with every other 401 of the minute (the audit trail's `unauthenticated`).
            if e.status == StatusCode::UNAUTHORIZED {
                let nobody = access::Caller {
                    team: "-".into(),
                    token_id: loupe_core::audit::UNAUTHENTICATED.into(),
                    scopes: Scopes::of(&[]),
                };
                let action = audited.unwrap_or("read");
                state.host.audit().record_outcome(&nobody, action, request.uri().path(), &e.body.code);
            }
            return e.into_response();
        }
    };
    if let Some(refused) = scope.needs().find_map(|needed| caller.require(needed).err()) {
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

/// What a request without a token may do on a `--no-auth` server (the fleet too: the demo's
/// fleet view asks through it, and its targets grant the host key no more than its trust line).
pub const NO_AUTH_SCOPES: Scopes =
    Scopes::of(&[Scope::Read, Scope::Invoke, Scope::Upload, Scope::Run, Scope::Probe, Scope::Fleet]);

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
