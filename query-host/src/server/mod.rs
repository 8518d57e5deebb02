//! The HTTP API (`/api/v1/…`, `/metrics`): axum handlers kept small, behaviour as tower
//! layers — request timeouts, body limits, load shedding beyond a concurrency limit,
//! compression, tracing — and JSON errors throughout.
//!
//! - [`api`]: read routes (health, days, runs, profiles) and on-demand runs.
//! - [`udfs`]: upload, list, delete and invoke analyses.
//! - [`web`]: the embedded web UI at `/`.
//! - [`auth`]: bearer tokens → teams. [`negotiate`]: JSON or MessagePack. [`error`]: errors.
//!
//! Store reads and analyses are blocking work: handlers move them to tokio's blocking pool.

pub mod api;
pub mod auth;
pub mod error;
pub mod negotiate;
pub mod udfs;
pub mod web;

use std::{
    net::SocketAddr,
    path::Path,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use axum::{
    Router,
    error_handling::HandleErrorLayer,
    extract::{DefaultBodyLimit, Request, State},
    http::StatusCode,
    middleware::{self, Next},
    response::{IntoResponse, Response},
};
use loupe_store::Store;
use tower::ServiceBuilder;
use tower_http::{compression::CompressionLayer, trace::TraceLayer};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

use crate::{
    control::Handler,
    metrics::{RequestLabels, ServerMetrics},
    tokens::TokenSet,
    udf::{
        host::HostInfo,
        registry::Registry,
        runtime::{Allocation, Runtime},
        sandbox::Limits,
    },
};
use error::ApiError;

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
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 7878)),
            no_auth: false,
            limits: Limits::default(),
            max_in_flight: 256,
            request_timeout: Duration::from_secs(60),
        }
    }
}

pub struct AppState {
    pub store: Store,
    /// The agent's handler (on-demand runs); `None` under `loupe serve`.
    pub agent: Option<Arc<Handler>>,
    pub runtime: Runtime,
    pub registry: Registry,
    pub tokens: TokenSet,
    pub no_auth: bool,
    pub metrics: ServerMetrics,
    pub started: Instant,
    info: Mutex<(Instant, HostInfo)>,
}

/// Largest JSON request body (invocation parameters, run requests).
const MAX_JSON_BODY: usize = 1 << 20;

/// How long the retained range in [`HostInfo`] may be stale.
const INFO_TTL: Duration = Duration::from_secs(10);

impl AppState {
    pub fn new(data_dir: &Path, store: Store, agent: Option<Arc<Handler>>, options: &ServerOptions) -> Result<Self> {
        // Pooling: measured by the `udf` bench, it halves the per-invocation overhead.
        let runtime = Runtime::new(options.limits.clone(), Allocation::Pooling)?;
        let info = host_info(&store)?;
        let registry = Registry::open(data_dir, &runtime, &store, &info)?;
        Ok(AppState {
            store,
            agent,
            runtime,
            registry,
            tokens: TokenSet::new(data_dir),
            no_auth: options.no_auth,
            metrics: ServerMetrics::new(),
            started: Instant::now(),
            info: Mutex::new((Instant::now(), info)),
        })
    }

    /// Facts about this host for analyses, the retained range refreshed every [`INFO_TTL`].
    pub fn host_info(&self) -> Result<HostInfo> {
        let mut cached = self.info.lock().unwrap_or_else(|e| e.into_inner());
        if cached.0.elapsed() > INFO_TTL {
            *cached = (Instant::now(), host_info(&self.store)?);
        }
        Ok(cached.1.clone())
    }
}

pub fn host_info(store: &Store) -> Result<HostInfo> {
    let days = store.days()?;
    let retained = match (days.first(), days.last()) {
        (Some(a), Some(b)) => crate::udf::host::loupe::udf::types::TimeRange {
            from_ns: a.day_start_unix_ns,
            to_ns: b.day_start_unix_ns + 86_400_000_000_000,
        },
        _ => crate::udf::host::loupe::udf::types::TimeRange { from_ns: 0, to_ns: 0 },
    };
    Ok(HostInfo {
        hostname: crate::view::hostname(),
        loupe_version: env!("CARGO_PKG_VERSION").into(),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        retained,
    })
}

#[derive(OpenApi)]
#[openapi(
    info(title = "Loupe query host API", description = "Runs, stack samples and team-owned WebAssembly analyses of one host."),
    components(schemas(error::ErrorBody)),
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

/// The routes and their OpenAPI document, generated from the handlers' annotations.
pub fn routes() -> (Router<Arc<AppState>>, utoipa::openapi::OpenApi) {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(api::routes())
        .merge(udfs::routes())
        .routes(utoipa_axum::routes!(openapi_json))
        .routes(utoipa_axum::routes!(metrics))
        .split_for_parts()
}

/// This document (generated from the handlers' annotations, not hand-written).
#[utoipa::path(get, path = "/api/v1/openapi.json", tag = "host", security(()), responses((status = 200, body = Object)))]
async fn openapi_json() -> Response {
    static DOC: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    let doc = DOC.get_or_init(|| serde_json::to_vec(&routes().1).expect("the document serializes"));
    ([(axum::http::header::CONTENT_TYPE, "application/json")], doc.clone()).into_response()
}

/// The whole application: routes, the OpenAPI document, `/metrics`, and the layers.
pub fn app(state: Arc<AppState>, options: &ServerOptions) -> Router {
    let (api, _) = routes();
    // Invocations may take the analysis' time limit; everything else the request timeout.
    let invoke_timeout = state.runtime.limits().time + Duration::from_secs(10);
    let timeout = options.request_timeout.max(invoke_timeout);
    Router::new()
        .merge(api)
        // Everything else is the web UI (and a JSON 404 under /api/).
        .fallback(web::serve)
        // JSON bodies are small; uploads read their body themselves, up to the module limit.
        .layer(DefaultBodyLimit::max(MAX_JSON_BODY))
        .layer(middleware::from_fn_with_state(Arc::clone(&state), count_requests))
        .layer(
            ServiceBuilder::new()
                .layer(TraceLayer::new_for_http())
                .layer(HandleErrorLayer::new(overloaded))
                .load_shed()
                .concurrency_limit(options.max_in_flight)
                .timeout(timeout),
        )
        .layer(CompressionLayer::new())
        .with_state(state)
}

async fn overloaded(e: tower::BoxError) -> ApiError {
    if e.is::<tower::timeout::error::Elapsed>() {
        ApiError::new(StatusCode::REQUEST_TIMEOUT, "request_timeout", "the request took too long")
    } else if e.is::<tower::load_shed::error::Overloaded>() {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "overloaded", "too many requests in flight; retry shortly")
    } else {
        ApiError::internal(e)
    }
}

async fn count_requests(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    state.metrics.requests.get_or_create(&RequestLabels { status: response.status().as_u16().to_string() }).inc();
    response
}

/// Self-metrics in the Prometheus text format. Needs no token.
#[utoipa::path(get, path = "/metrics", tag = "host", security(()), responses((status = 200, content_type = "text/plain", body = String)))]
async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    let s = Arc::clone(&state);
    match tokio::task::spawn_blocking(move || s.metrics.render(&s.store)).await {
        Ok(Ok(text)) => {
            ([(axum::http::header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], text).into_response()
        }
        Ok(Err(e)) => ApiError::internal(format!("{e:#}")).into_response(),
        Err(e) => ApiError::internal(e).into_response(),
    }
}

/// Runs `f` on the blocking pool (store reads, analyses).
pub async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T, ApiError> + Send + 'static) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f).await.map_err(ApiError::internal)?
}

/// A running server: stops when dropped or when [`Server::stop`] is called.
pub struct Server {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Result<()>>>,
}

impl Server {
    /// Binds and serves on a thread of its own (with its own tokio runtime), so the agent's
    /// threads stay as they are.
    pub fn start(state: AppState, options: &ServerOptions) -> Result<Server> {
        if options.no_auth && !options.listen.ip().is_loopback() {
            bail!("--no-auth is only allowed on a loopback address (got {}); create tokens with `loupe token add`", options.listen);
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("loupe-http")
            .enable_all()
            .build()?;
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind(options.listen))
            .with_context(|| format!("listening on {}", options.listen))?;
        let addr = listener.local_addr()?;
        let app = app(Arc::new(state), options);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new().name("loupe-http".into()).spawn(move || {
            runtime.block_on(async move {
                axum::serve(listener, app)
                    .with_graceful_shutdown(async move {
                        let _ = stopped.await;
                    })
                    .await
                    .context("serving HTTP")
            })
        })?;
        tracing::info!(%addr, "HTTP API listening");
        Ok(Server { addr, stop: Some(stop), thread: Some(thread) })
    }

    pub fn stop(mut self) -> Result<()> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => bail!("the HTTP thread panicked"),
            None => Ok(()),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}
