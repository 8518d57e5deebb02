//! Self-metrics for Prometheus (`GET /metrics`): what the agent collected and stored, and
//! how analyses fare. Store figures are read from the store's running totals at scrape time
//! (no scan); invocation counters are bumped by the API as invocations finish.

use loupe_store::Store;
use prometheus_client::{
    encoding::{EncodeLabelSet, text::encode},
    metrics::{counter::Counter, family::Family, gauge::Gauge},
    registry::Registry,
};

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
            registry: Registry::default(),
        };
        registry.register("runs", "Millisampler runs retained in the store", m.runs.clone());
        registry.register("stack_samples", "Stack samples retained in the store", m.samples.clone());
        registry.register("stack_sample_batches", "Stack-sample batches retained", m.sample_batches.clone());
        registry.register("lost_stack_samples", "Samples the kernel dropped, in retained batches", m.lost_samples.clone());
        registry.register("store_bytes", "Bytes of runs, samples and dictionary (what the cap applies to)", m.store_bytes.clone());
        registry.register("store_disk_bytes", "Bytes the store's files occupy on disk", m.disk_bytes.clone());
        registry.register("analysis_invocations", "Analysis invocations, by analysis", m.invocations.clone());
        registry.register("analysis_failures", "Failed analysis invocations, by analysis and cause", m.failures.clone());
        registry.register("analysis_uploads", "Analyses uploaded (new or replaced)", m.uploads.clone());
        registry.register("http_requests", "HTTP requests answered, by status", m.requests.clone());
        ServerMetrics { registry, ..m }
    }

    /// The text exposition, with store figures read now.
    pub fn render(&self, store: &Store) -> anyhow::Result<String> {
        let stats = store.stats()?;
        self.runs.set(stats.runs as i64);
        self.samples.set(stats.samples as i64);
        self.sample_batches.set(stats.sample_batches as i64);
        self.lost_samples.set(store.lost_samples()? as i64);
        self.store_bytes.set(stats.total_bytes as i64);
        self.disk_bytes.set(stats.disk_bytes as i64);
        let mut out = String::new();
        encode(&mut out, &self.registry)?;
        Ok(out)
    }
}
