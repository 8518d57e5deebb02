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
    /// The analysis names that have a label of their own (at most [`MAX_ANALYSIS_LABELS`]).
    labelled: std::sync::Mutex<std::collections::HashSet<String>>,
}

/// Analyses with a label of their own in `/metrics`; invocations of others are counted under
/// [`OTHER_ANALYSES`]. Without a bound, every name a client makes up was a label set for ever.
pub const MAX_ANALYSIS_LABELS: usize = 256;
/// The label of an invocation refused before any analysis ran (a name that is not stored, or
/// not the caller's): counted, never named.
pub const UNKNOWN_ANALYSIS: &str = "(unknown)";
/// The label of the analyses past [`MAX_ANALYSIS_LABELS`].
pub const OTHER_ANALYSES: &str = "(other)";
/// Error codes of an invocation that never found an analysis to run.
const NOT_RUN: &[&str] = &["not_found", "no_analyses", "bad_name", "not_owner", "unauthorized"];

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
            labelled: Default::default(),
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

    /// Counts one invocation of `name` that succeeded (`failed` is `None`) or failed with that
    /// error code. Names refused before they ran count as [`UNKNOWN_ANALYSIS`], and are not
    /// counted as invocations.
    pub fn invoked(&self, name: &str, failed: Option<&str>) {
        let ran = !failed.is_some_and(|code| NOT_RUN.contains(&code) || code.starts_with("missing_scope"));
        let analysis = if ran { self.label_of(name) } else { UNKNOWN_ANALYSIS.to_string() };
        if ran {
            self.invocations.get_or_create(&AnalysisLabels { analysis: analysis.clone() }).inc();
        }
        if let Some(cause) = failed {
            self.failures.get_or_create(&FailureLabels { analysis, cause: cause.to_string() }).inc();
        }
    }

    /// `name`, or [`OTHER_ANALYSES`] once [`MAX_ANALYSIS_LABELS`] other names have labels.
    fn label_of(&self, name: &str) -> String {
        let mut labelled = self.labelled.lock().expect("metric labels");
        if labelled.contains(name) || (labelled.len() < MAX_ANALYSIS_LABELS && labelled.insert(name.to_string())) {
            name.to_string()
        } else {
            OTHER_ANALYSES.to_string()
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn exposition(m: &ServerMetrics) -> String {
        let mut out = String::new();
        encode(&mut out, &m.registry).unwrap();
        out
    }

    #[test]
    fn made_up_names_share_one_label_and_names_past_the_bound_another() {
        let m = ServerMetrics::new();
        m.invoked("hot", None);
        m.invoked("hot", Some("time_limit"));
        for i in 0..1_000 {
            m.invoked(&format!("made-up-{i}"), Some("not_found"));
            m.invoked(&format!("theirs-{i}"), Some("not_owner"));
        }
        for i in 0..MAX_ANALYSIS_LABELS + 10 {
            m.invoked(&format!("stored-{i}"), None);
        }
        let text = exposition(&m);
        assert!(text.contains(r#"loupe_analysis_invocations_total{analysis="hot"} 2"#), "{text}");
        assert!(text.contains(r#"loupe_analysis_failures_total{analysis="hot",cause="time_limit"} 1"#), "{text}");
        assert!(
            text.contains(r#"loupe_analysis_failures_total{analysis="(unknown)",cause="not_found"} 1000"#),
            "{text}"
        );
        assert!(!text.contains("made-up-") && !text.contains("theirs-"));
        // `hot` took one of the labels: 255 stored names have their own, 11 are `(other)`.
        assert_eq!(text.matches("analysis=\"stored-").count(), MAX_ANALYSIS_LABELS - 1);
        assert!(text.contains(r#"loupe_analysis_invocations_total{analysis="(other)"} 11"#), "{text}");
    }
}
