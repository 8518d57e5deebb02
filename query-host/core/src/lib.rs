//! The core: one transport-free service every door calls — the CLI on a local store, the
//! agent's control socket, the HTTP API. [`Host`] owns the store handle, the agent's run
//! scheduler (when it collects) and the analyses (when it serves them), and offers typed
//! operations: runs ([`runs`]), profiles ([`profiles`]), function probes ([`probes`]),
//! application timelines ([`timeline`]), analyses ([`analyses`]), days and stats (here), each
//! returning a [`CoreError`] that says what went wrong. Rules live here once: one time-range
//! parser with one set of defaults ([`time`]), one check of a run order, one pprof period.
//!
//! [`loupe_api::ops::HostApi`] is these operations as every door and the CLI call them, on
//! behalf of a caller whose scopes each is checked against ([`ActingFor`]); what changes the host
//! is recorded in the [`audit`] trail.
//!
//! [`ingest`] brings each data source from the kernel into the store (runs, stacks, probes,
//! timelines); it knows nothing of the [`Host`] above it (`query-host/tests/layers.rs` checks).
//! As a crate, the core can name only what is below it: `loupe-sandbox` (analyses),
//! `loupe-api`, the store and the kernel crates — never a door, the app or the CLI.

mod acting;
pub mod analyses;
pub mod audit;
pub mod ingest;
pub mod probes;
pub mod profiles;
pub mod runs;
pub mod timeline;
pub mod tokens;
pub mod window;

use std::time::Instant;

use loupe_store::Store;

pub use acting::ActingFor;
pub use analyses::Analyses;
pub use loupe_api::{
    error::{self, CoreError, CoreResult},
    time,
};
pub use probes::{ProbeManager, ProbeOrder};
pub use runs::{ImportOutcome, RunFilter, RunOrder, RunScheduler};

use loupe_api::{
    clock::{format_unix_ns, hostname},
    model::{DayView, Health, StatsView},
};

/// One host's data and what collects it.
pub struct Host {
    store: Store,
    /// The agent's interfaces; `None` when only serving a store.
    runs: Option<RunScheduler>,
    /// The analysis runtime; `None` where analyses are not served (the CLI, `--no-http`).
    analyses: Option<Analyses>,
    /// The agent's function probes; `None` when only serving a store.
    probes: Option<ProbeManager>,
    /// Runs attach in this process (the CLI where no agent holds the store), with these local
    /// prefixes; `None` on an agent or a store-only server.
    runs_here: Option<Vec<ipnet::IpNet>>,
    /// `<data-dir>/audit.log`: who changed what.
    audit: audit::AuditLog,
    started: Instant,
}

impl Host {
    pub fn new(store: Store) -> Host {
        let audit = audit::AuditLog::new(store.path());
        Host { store, runs: None, analyses: None, probes: None, runs_here: None, audit, started: Instant::now() }
    }

    /// The CLI's host where no agent holds the store: runs and probe sessions attach in this
    /// process, for as long as the command lasts (a run samples with `local_prefixes`).
    pub fn collecting_here(mut self, local_prefixes: Vec<ipnet::IpNet>) -> Host {
        // Its own shutdown flag, never set: the CLI ends a session by stopping it.
        self.probes = Some(ProbeManager::new(self.store.clone(), Default::default()));
        self.runs_here = Some(local_prefixes);
        self
    }

    /// An agent's host: it collects runs on these interfaces.
    pub fn with_runs(mut self, runs: RunScheduler) -> Host {
        self.runs = Some(runs);
        self
    }

    /// An agent's host: it owns function probe sessions.
    pub fn with_probes(mut self, probes: ProbeManager) -> Host {
        self.probes = Some(probes);
        self
    }

    pub fn probe_manager_ref(&self) -> Option<&ProbeManager> {
        self.probes.as_ref()
    }

    pub fn with_analyses(mut self, analyses: Analyses) -> Host {
        self.analyses = Some(analyses);
        self
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Keeps `files` files of the audit trail (see [`audit::AuditLog::keeping`]).
    pub fn keeping_audit_files(mut self, files: usize) -> Host {
        self.audit = audit::AuditLog::new(self.store.path()).keeping(files);
        self
    }

    /// The audit trail of what changed the host or its store.
    pub fn audit(&self) -> &audit::AuditLog {
        &self.audit
    }

    pub fn scheduler(&self) -> Option<&RunScheduler> {
        self.runs.as_ref()
    }

    /// The analyses, or an error saying this host serves none.
    pub fn analyses(&self) -> CoreResult<&Analyses> {
        self.analyses.as_ref().ok_or(CoreError::NoAnalyses)
    }

    /// What this server is; `fleet`: where it is in a fleet, when it is in one.
    /// `fleet`: its place and whose requests it takes (`Health::fleet_trust`), in a fleet.
    pub fn health(&self, auth: bool, fleet: Option<(loupe_api::model::FleetPlace, &str)>) -> Health {
        let (fleet, fleet_trust) = fleet.map(|(place, trust)| (place, trust.to_string())).unzip();
        Health {
            status: "ok".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            mode: if self.runs.is_some() { "agent" } else { "serve" }.into(),
            hostname: hostname(),
            uptime_s: self.started.elapsed().as_secs(),
            ifaces: self.runs.as_ref().map(RunScheduler::ifaces).unwrap_or_default(),
            auth,
            fleet,
            fleet_trust,
        }
    }

    /// Retained UTC days: runs by interval, stack samples, bytes.
    pub fn days(&self) -> CoreResult<Vec<DayView>> {
        Ok(self
            .store
            .days()?
            .into_iter()
            .map(|d| DayView {
                date: format_unix_ns(d.day_start_unix_ns)[..10].to_string(),
                day_start_unix_ns: d.day_start_unix_ns,
                runs: d.runs_by_interval.values().sum(),
                runs_by_interval: d.runs_by_interval,
                run_bytes: d.stored_bytes,
                sample_batches: d.sample_batches,
                samples: d.samples,
                sample_bytes: d.sample_bytes,
            })
            .collect())
    }

    /// Store totals (running counters, no scan) and the retention cap.
    pub fn stats(&self) -> CoreResult<StatsView> {
        let s = self.store.stats()?;
        let retention = self.store.retention();
        Ok(StatsView {
            runs: s.runs,
            stored_bytes: s.stored_bytes,
            disk_bytes: s.disk_bytes,
            sample_batches: s.sample_batches,
            samples: s.samples,
            sample_bytes: s.sample_bytes,
            total_bytes: s.total_bytes,
            max_bytes: retention.max_bytes,
            max_age_s: retention.max_age.as_secs(),
        })
    }
}
