//! The HTTP API (`/api/v1/…`, `/metrics`): a door onto the core. Handlers are small — parse,
//! call the core on the blocking pool, render — and behaviour is tower layers: request
//! timeouts, body limits, load shedding beyond a concurrency limit, compression, tracing.
//!
//! - [`api`]: health, days, stats, runs (list, one, on-demand), profiles, pids.
//! - [`call`]: every operation of the list at one route, as the CLI's `--server` mode asks.
//! - [`udfs`]: upload, list, delete and invoke analyses.
//! - [`timeline`]: programs' timeline events and their lag statistics.
//! - [`probes`]: function probe sessions: start, list, stop, show.
//! - [`fleet`]: the fleet through this agent: hosts, synchronized runs, fleet-wide analyses.
//! - [`web`]: the embedded web UI at `/`.
//! - [`origin`]: the names the API answers to (DNS rebinding) and the pages that may change it.
//! - [`auth`]: bearer tokens → a team and its scopes; each route's scope. [`negotiate`]: JSON or MessagePack. [`error`]: errors.
//! - [`metrics`]: `/metrics` in the OpenMetrics text format.
//! - [`tls`]: HTTPS (rustls), certificates re-read when they change, client certificates.

pub mod api;
pub mod auth;
pub mod call;
pub mod error;
pub mod extract;
pub mod fleet;
pub mod metrics;
pub mod negotiate;
pub mod origin;
pub mod probes;
pub mod timeline;
pub mod tls;
pub mod udfs;
pub mod web;

use std::{net::SocketAddr, sync::Arc, time::Duration};

use axum::{
    Router,
    error_handling::HandleErrorLayer,
    extract::{DefaultBodyLimit, Request, State},
    middleware::{self, Next},
    response::{IntoResponse, Response},
};
use tower::ServiceBuilder;
use tower_http::{CompressionLevel, compression::CompressionLayer, trace::TraceLayer};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

use error::ApiError;
use loupe_api::model::ErrorKind;
use loupe_core::{CoreError, Host, tokens::TokenSet};
use loupe_sandbox::sandbox::Limits;
use metrics::{RequestLabels, ServerMetrics};

/// How the server is set up.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    pub listen: SocketAddr,
    /// Serve reads without a token (loopback only).
    pub no_auth: bool,
    pub limits: Limits,
    /// Requests in flight at once; more are refused with 503 rather than queued.
    pub max_in_flight: usize,
    /// Timeout of read requests (invocations have the analysis time limit plus a margin).
    pub request_timeout: Duration,
    /// Serve HTTPS with these files.
    pub tls: Option<tls::TlsFiles>,
    /// Serve plain HTTP on an address beyond loopback anyway.
    pub insecure_plaintext: bool,
    /// Names this server answers to besides address literals and `localhost`.
    pub allowed_hosts: origin::AllowedHosts,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 7878)),
            no_auth: false,
            limits: Limits::default(),
            max_in_flight: 256,
            request_timeout: Duration::from_secs(60),
            tls: None,
            insecure_plaintext: false,
            allowed_hosts: origin::AllowedHosts::default(),
        }
    }
}

pub struct AppState {
    pub host: Arc<Host>,
    pub tokens: TokenSet,
    pub no_auth: bool,
    pub metrics: ServerMetrics,
    /// How long a handler may wait for the core (an on-demand run stops waiting here).
    pub request_timeout: Duration,
    /// The fleet, when this agent is in one (`--nats`): the `/api/v1/fleet/…` routes ask it.
    pub fleet: Option<InFleet>,
}

/// This agent's membership, as its HTTP API sees it: where it is (health tells the web UI,
/// which then offers the fleet view) and its way of asking the fleet.
pub struct InFleet {
    pub place: loupe_api::model::FleetPlace,
    pub coordinator: loupe_fleet::Coordinator,
    /// This host's key: the fleet routes' requests are signed with it for their callers.
    pub key: std::sync::Arc<loupe_api::signed::FleetKey>,
    /// Whose fleet requests the agent takes (`Health::fleet_trust`).
    pub trust: &'static str,
}

/// Largest JSON request body (invocation parameters, run requests).
const MAX_JSON_BODY: usize = 1 << 20;

impl AppState {
    pub fn new(host: Arc<Host>, tokens: TokenSet, options: &ServerOptions) -> AppState {
        let metrics = ServerMetrics::new();
        let audited = metrics.audited.clone();
        host.audit().observe(move |entry| {
            audited
                .get_or_create(&metrics::AuditLabels { action: entry.action.clone(), outcome: entry.outcome.clone() })
                .inc();
        });
        AppState {
            host,
            tokens,
            no_auth: options.no_auth,
            metrics,
            request_timeout: options.request_timeout,
            fleet: None,
        }
    }
}

#[derive(OpenApi)]
#[openapi(
    info(title = "Loupe query host API", description = "Runs, stack samples and team-owned WebAssembly analyses of one host."),
    components(schemas(loupe_api::model::ErrorBody)),
    modifiers(&BearerAuth),
    security(("bearer" = []))
)]
struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The errors every operation of a kind can answer, documented once rather than on each
/// handler: 401 where a token is needed, 415 and 413 where a JSON (or MessagePack) body is
/// read, 408, 421 and 503 from the layers on every route.
struct CommonErrors;

impl utoipa::Modify for CommonErrors {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
        let error = |what: &str| {
            ResponseBuilder::new()
                .description(what)
                .content(
                    "application/json",
                    ContentBuilder::new().schema(Some(Ref::from_schema_name("ErrorBody"))).build(),
                )
                .build()
        };
        for item in openapi.paths.paths.values_mut() {
            let ops = [&mut item.get, &mut item.put, &mut item.post, &mut item.delete];
            for op in ops.into_iter().flatten() {
                let r = &mut op.responses.responses;
                // `security(())` on a handler means no token; otherwise the bearer applies.
                let public = op.security.as_ref().is_some_and(|s| s.iter().all(|req| *req == Default::default()));
                if !public {
                    r.entry("401".into()).or_insert_with(|| error("missing, unknown or revoked token").into());
                    r.entry("403".into()).or_insert_with(|| {
                        error("the token lacks the route's scope (`x-scope`), or the session or analysis is another team's").into()
                    });
                }
                let json_body = op.request_body.as_ref().is_some_and(
                    |b| matches!(b, utoipa::openapi::RefOr::T(b) if b.content.contains_key("application/json")),
                );
                if json_body {
                    r.entry("413".into()).or_insert_with(|| error("body larger than 1 MiB").into());
                    r.entry("415".into()).or_insert_with(|| error("body neither JSON nor MessagePack").into());
                    r.entry("422".into()).or_insert_with(|| error("well-formed, but not this route's body").into());
                }
                r.entry("408".into()).or_insert_with(|| error("the request took too long").into());
                r.entry("421".into()).or_insert_with(|| {
                    error("the request's Host names another server (a rebinding page's?); see --allowed-host").into()
                });
                r.entry("503".into()).or_insert_with(|| error("overloaded or shutting down; retry").into());
            }
        }
    }
}

/// The routes and their OpenAPI document, generated from the handlers' annotations.
pub fn routes() -> (Router<Arc<AppState>>, utoipa::openapi::OpenApi) {
    let (router, mut doc) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(api::routes())
        .merge(call::routes())
        .merge(udfs::routes())
        .merge(timeline::routes())
        .merge(probes::routes())
        .merge(fleet::routes())
        .routes(utoipa_axum::routes!(openapi_json))
        .routes(utoipa_axum::routes!(metrics::metrics))
        .split_for_parts();
    // After the routes are in: they edit their operations.
    auth::check_every_route(&doc);
    utoipa::Modify::modify(&CommonErrors, &mut doc);
    utoipa::Modify::modify(&auth::ScopesInDocument, &mut doc);
    (router, doc)
}

/// The OpenAPI document (generated from the handlers' annotations, not hand-written).
pub fn openapi() -> utoipa::openapi::OpenApi {
    routes().1
}

/// This document.
#[utoipa::path(get, path = "/api/v1/openapi.json", tag = "host", security(()), responses((status = 200, description = "The OpenAPI 3.1 document", content_type = "application/json")))]
async fn openapi_json() -> Response {
    static DOC: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    let doc = DOC.get_or_init(|| serde_json::to_vec(&openapi()).expect("the document serializes"));
    ([(axum::http::header::CONTENT_TYPE, "application/json")], doc.clone()).into_response()
}

/// The whole application: routes, the OpenAPI document, `/metrics`, and the layers.
pub fn app(state: Arc<AppState>, options: &ServerOptions) -> Router {
    let (api, _) = routes();
    // Invocations may take the analysis' time limit; everything else the request timeout.
    let invoke_timeout = state.host.analyses().map_or(Duration::ZERO, |a| a.limits().time + Duration::from_secs(10));
    let timeout = options.request_timeout.max(invoke_timeout) + Duration::from_secs(5);
    Router::new()
        // Every route's caller and scope (the fallback, the web UI, needs none).
        .merge(api.route_layer(middleware::from_fn_with_state(Arc::clone(&state), auth::authorize)))
        // Everything else is the web UI (and a JSON 404 under /api/).
        .fallback(web::serve)
        // JSON bodies are small; uploads read their body themselves, up to the module limit.
        .layer(DefaultBodyLimit::max(MAX_JSON_BODY))
        // Before any route, the web UI included: a page of another name gets nothing.
        .layer(middleware::from_fn_with_state(Arc::new(options.allowed_hosts.clone()), origin::check))
        .layer(middleware::from_fn_with_state(Arc::clone(&state), count_requests))
        .layer(
            ServiceBuilder::new()
                .layer(TraceLayer::new_for_http())
                .layer(HandleErrorLayer::new(overloaded))
                .load_shed()
                .concurrency_limit(options.max_in_flight)
                .timeout(timeout),
        )
        .layer(CompressionLayer::new().quality(CompressionLevel::Fastest))
        .with_state(state)
}

async fn overloaded(e: tower::BoxError) -> ApiError {
    if e.is::<tower::timeout::error::Elapsed>() {
        ApiError::new(ErrorKind::Timeout, "request_timeout", "the request took too long")
    } else if e.is::<tower::load_shed::error::Overloaded>() {
        ApiError::new(ErrorKind::Unavailable, "overloaded", "too many requests in flight; retry shortly")
    } else {
        ApiError::internal(e)
    }
}

async fn count_requests(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    state.metrics.requests.get_or_create(&RequestLabels { status: response.status().as_u16().to_string() }).inc();
    response
}

/// Runs one of the host's operations for `caller` on the blocking pool: the core checks its
/// scope and records it in the audit trail if it changes the host; an on-demand run waits the
/// request's time limit.
pub async fn acting<T: Send + 'static>(
    state: &Arc<AppState>,
    caller: auth::Caller,
    f: impl FnOnce(&loupe_core::ActingFor<&Host>) -> Result<T, CoreError> + Send + 'static,
) -> Result<T, ApiError> {
    let wait = state.request_timeout;
    blocking(state, move |host| f(&host.acting_for(caller.0).run_wait(wait))).await
}

/// Runs `f` against the core on the blocking pool (store reads, runs, analyses).
pub async fn blocking<T: Send + 'static>(
    state: &Arc<AppState>,
    f: impl FnOnce(&Host) -> Result<T, CoreError> + Send + 'static,
) -> Result<T, ApiError> {
    let host = Arc::clone(&state.host);
    tokio::task::spawn_blocking(move || f(&host)).await.map_err(ApiError::internal)?.map_err(ApiError::from)
}

enum Listening {
    Plain(tokio::net::TcpListener),
    Tls(tls::TlsListener),
}

/// Serves `app` on `listener` until `stopped`, then drains requests in flight for at most
/// [`DRAIN`] (requests still running then are dropped).
async fn serve_until<L>(listener: L, app: Router, stopped: tokio::sync::oneshot::Receiver<()>) -> anyhow::Result<()>
where
    L: axum::serve::Listener,
    L::Addr: std::fmt::Debug,
{
    use anyhow::Context;
    let (drain_tx, drain_rx) = tokio::sync::oneshot::channel::<()>();
    let serve = axum::serve(listener, app).with_graceful_shutdown(async move {
        let _ = stopped.await;
        let _ = drain_tx.send(());
    });
    tokio::select! {
        r = serve => r.context("serving HTTP"),
        _ = async { let _ = drain_rx.await; tokio::time::sleep(DRAIN).await } => Ok(()),
    }
}

/// A running server: stops when dropped or when [`Server::stop`] is called.
pub struct Server {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<anyhow::Result<()>>>,
}

/// How long shutdown waits for requests in flight before it stops anyway.
const DRAIN: Duration = Duration::from_secs(5);

impl Server {
    /// Binds and serves on a thread of its own (with its own tokio runtime), so the agent's
    /// threads stay as they are.
    pub fn start(state: AppState, options: &ServerOptions) -> anyhow::Result<Server> {
        use anyhow::Context;
        if options.no_auth && !options.listen.ip().is_loopback() {
            anyhow::bail!(
                "--no-auth is only allowed on a loopback address (got {}); create tokens with `loupe token add`",
                options.listen
            );
        }
        if options.tls.is_none() && !options.insecure_plaintext && !options.listen.ip().is_loopback() {
            anyhow::bail!(
                "--listen {} is not a loopback address, and without TLS the bearer tokens (which may start probes) \
                 would cross the network in clear text: give --tls-cert FILE --tls-key FILE, or \
                 --insecure-plaintext to serve plain HTTP anyway (behind a TLS proxy, in a lab)",
                options.listen
            );
        }
        let tls = options.tls.as_ref().map(tls::server_config).transpose()?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("loupe-http")
            .enable_all()
            .build()?;
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind(options.listen))
            .with_context(|| format!("listening on {}", options.listen))?;
        let addr = listener.local_addr()?;
        let listener = match tls {
            // The accept task must live in the server's runtime.
            Some(config) => Listening::Tls(runtime.block_on(async { tls::TlsListener::new(listener, config) })?),
            None => Listening::Plain(listener),
        };
        let app = app(Arc::new(state), options);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new().name("loupe-http".into()).spawn(move || {
            let served = runtime.block_on(async move {
                match listener {
                    Listening::Plain(l) => serve_until(l, app, stopped).await,
                    Listening::Tls(l) => serve_until(l, app, stopped).await,
                }
            });
            // Blocking-pool threads still inside the core finish on their own; don't wait.
            runtime.shutdown_timeout(Duration::from_millis(100));
            served
        })?;
        tracing::info!(%addr, tls = options.tls.is_some(), "HTTP API listening");
        Ok(Server { addr, stop: Some(stop), thread: Some(thread) })
    }

    pub fn stop(mut self) -> anyhow::Result<()> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> anyhow::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => anyhow::bail!("the HTTP thread panicked"),
            None => Ok(()),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use loupe_api::ops::Op;

    /// The HTTP client asks each operation at the route the operation list names: every such
    /// route is served, with that method.
    #[test]
    fn every_operation_route_is_served() {
        let doc = serde_json::to_value(super::openapi()).unwrap();
        for op in Op::ALL {
            let Some((method, path)) = op.http().route() else { continue };
            assert!(doc["paths"][path][method].is_object(), "{op:?}: {method} {path} is not in the OpenAPI document");
        }
    }
}
