//! Self-metrics for Prometheus (`GET /metrics`): what the agent collected and stored, and how
//! analyses fare. Store figures are the store's running totals, read at scrape time (no scan);
//! invocation counters are bumped by the API as invocations finish. The body is the OpenMetrics
//! text format (what `prometheus-client` writes: HELP and TYPE per family, `_total` counters,
//! `# EOF`), served with its own content type.

use std::sync::Arc;

use axum::{
    extract::State,
    response::{IntoResponse, Response},
};
use loupe_store::Store;
use prometheus_client::{
    encoding::{EncodeLabelSet, text::encode},
    metrics::{counter::Counter, family::Family, gauge::Gauge},
    registry::Registry,
};

use super::{AppState, blocking};
use loupe_core::CoreError;

/// What `/metrics` answers with.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AnalysisLabels {
    pub analysis: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FailureLabels {
    pub analysis: String,
    /// The error code (`time_limit`, `memory_limit`, `trap`, …).
    pub cause: String,
}

/// An action of the audit trail and how it ended (`ok` or the error's code).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AuditLabels {
    pub action: String,
    pub outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub status: String,
}

pub struct ServerMetrics {
    registry: Registry,
    runs: Gauge,
    samples: Gauge,
    sample_batches: Gauge,
    lost_samples: Gauge,
    store_bytes: Gauge,
    disk_bytes: Gauge,
    pub invocations: Family<AnalysisLabels, Counter>,
    pub failures: Family<FailureLabels, Counter>,
    pub uploads: Counter,
    pub requests: Family<RequestLabels, Counter>,
    /// Actions recorded in the audit trail since start, by action and outcome.
    pub audited: Family<AuditLabels, Counter>,
}

impl Default for ServerMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl ServerMetrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("loupe");
        let m = ServerMetrics {
            runs: Gauge::default(),
            samples: Gauge::default(),
            sample_batches: Gauge::default(),
            lost_samples: Gauge::default(),
            store_bytes: Gauge::default(),
            disk_bytes: Gauge::default(),
            invocations: Family::default(),
            failures: Family::default(),
            uploads: Counter::default(),
            requests: Family::default(),
            audited: Family::default(),
            registry: Registry::default(),
        };
        registry.register("runs", "Millisampler runs retained in the store", m.runs.clone());
        registry.register(
            "stack_samples",
            "Stack samples retained in the store: CPU samples and waits off the CPU",
            m.samples.clone(),
        );
        registry.register("stack_sample_batches", "Stack-sample batches retained", m.sample_batches.clone());
        registry.register(
            "lost_stack_samples",
            "Samples the kernel dropped, since the store was created",
            m.lost_samples.clone(),
        );
        registry.register(
            "store_bytes",
            "Bytes of runs, samples and dictionary (what the cap applies to)",
            m.store_bytes.clone(),
        );
        registry.register("store_disk_bytes", "Bytes the store's files occupy on disk", m.disk_bytes.clone());
        registry.register("analysis_invocations", "Analysis invocations, by analysis", m.invocations.clone());
        registry.register(
            "analysis_failures",
            "Failed analysis invocations, by analysis and cause",
            m.failures.clone(),
        );
        registry.register("analysis_uploads", "Analyses uploaded (new or replaced)", m.uploads.clone());
        registry.register("http_requests", "HTTP requests answered, by status", m.requests.clone());
        registry.register(
            "audited_actions",
            "Actions that change the host or its store, recorded in the audit trail, by action and outcome",
            m.audited.clone(),
        );
        ServerMetrics { registry, ..m }
    }

    /// The exposition, with store figures read now (running totals: O(1)).
    pub fn render(&self, store: &Store) -> Result<String, CoreError> {
        let stats = store.stats()?;
        self.runs.set(stats.runs as i64);
        self.samples.set(stats.samples as i64);
        self.sample_batches.set(stats.sample_batches as i64);
        self.lost_samples.set(stats.lost_samples as i64);
        self.store_bytes.set(stats.total_bytes as i64);
        self.disk_bytes.set(stats.disk_bytes as i64);
        let mut out = String::new();
        encode(&mut out, &self.registry).map_err(|e| CoreError::Internal(format!("encoding metrics: {e}")))?;
        Ok(out)
    }
}

/// Self-metrics in the OpenMetrics text format. Needs no token.
#[utoipa::path(get, path = "/metrics", tag = "host", security(()), responses((status = 200, content_type = "application/openmetrics-text", body = String)))]
pub async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    let s = Arc::clone(&state);
    match blocking(&state, move |host| s.metrics.render(host.store())).await {
        Ok(text) => ([(axum::http::header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response(),
        Err(e) => e.into_response(),
    }
}
