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
    /// How far the agent's stack collector has stored; `None` where no collector runs.
    stacks_stored: Option<std::sync::Arc<ingest::stacks::StoredThrough>>,
    /// Features asked for and off: the kernel refused their programs.
    off: Vec<loupe_api::model::FeatureOff>,
    /// How the agent serves (token checks, its place and trust in a fleet), for [`Host::status`].
    described: Described,
}

/// How an agent serves, as its health says.
#[derive(Clone, Debug, Default)]
struct Described {
    auth: bool,
    fleet: Option<(loupe_api::model::FleetPlace, &'static str)>,
}

impl Host {
    pub fn new(store: Store) -> Host {
        let audit = audit::AuditLog::new(store.path());
        Host {
            store,
            runs: None,
            analyses: None,
            probes: None,
            runs_here: None,
            audit,
            started: Instant::now(),
            stacks_stored: None,
            off: Vec::new(),
            described: Described::default(),
        }
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

    /// An agent that runs without these features (the kernel refused their programs): its
    /// health says `degraded` and names them.
    pub fn with_features_off(mut self, off: Vec<loupe_api::model::FeatureOff>) -> Host {
        self.off = off;
        self
    }

    /// How the agent serves, for [`Host::status`]: whether its HTTP API checks tokens, and its
    /// place in a fleet with whose requests it takes.
    pub fn describing(mut self, auth: bool, fleet: Option<(loupe_api::model::FleetPlace, &'static str)>) -> Host {
        self.described = Described { auth, fleet };
        self
    }

    /// [`Host::health`] as the agent describes itself (`loupe status`, over any door).
    pub fn status(&self) -> Health {
        let Described { auth, fleet } = &self.described;
        self.health(*auth, fleet.clone())
    }

    /// An agent's host whose stack collector stores what it samples ([`Host::wait_stored`]).
    pub fn with_stack_collector(mut self, stored: std::sync::Arc<ingest::stacks::StoredThrough>) -> Host {
        self.stacks_stored = Some(stored);
        self
    }

    /// Waits, at most `within`, until the stack samples taken before `to_unix_ns` (or before now,
    /// if that is earlier) are stored, asking the collector to store what it holds: an answer
    /// about the last seconds then holds every sample this host took in them. At once where no
    /// collector runs; [`CoreError::NotStoredYet`] if the collector did not store in time.
    pub fn wait_stored(&self, to_unix_ns: u64, within: std::time::Duration) -> CoreResult<()> {
        let Some(stored) = &self.stacks_stored else {
            return Ok(());
        };
        let target = to_unix_ns.min(loupe_api::clock::now_unix_ns());
        if stored.through_unix_ns() >= target {
            return Ok(());
        }
        let deadline = Instant::now() + within;
        while stored.through_unix_ns() < target {
            // Asked again each time: a store at a drain just after the target stores through a
            // little before it (the drain's margin), and the next drain must store again.
            stored.ask_to_store();
            if Instant::now() >= deadline {
                return Err(CoreError::NotStoredYet { to_unix_ns: target, stored_unix_ns: stored.through_unix_ns() });
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Ok(())
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
            status: if self.off.is_empty() { "ok" } else { "degraded" }.into(),
            version: env!("CARGO_PKG_VERSION").into(),
            mode: if self.runs.is_some() { "agent" } else { "serve" }.into(),
            hostname: hostname(),
            uptime_s: self.started.elapsed().as_secs(),
            ifaces: self.runs.as_ref().map(RunScheduler::ifaces).unwrap_or_default(),
            auth,
            fleet,
            fleet_trust,
            off: self.off.clone(),
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

#[cfg(test)]
mod tests {
    use std::{sync::Arc, thread, time::Duration};

    use super::*;
    use ingest::stacks::StoredThrough;

    #[test]
    fn an_agent_running_without_a_feature_says_degraded_and_why() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), loupe_store::Retention::default()).unwrap();
        assert_eq!(Host::new(store.clone()).status().status, "ok");
        let off = loupe_api::model::FeatureOff {
            feature: "off_cpu".into(),
            reason: "this kernel's verifier refused loupe_off_cpu_take: BPF program is too large".into(),
        };
        let host = Host::new(store).with_features_off(vec![off.clone()]).describing(true, None);
        let status = host.status();
        assert_eq!((status.status.as_str(), status.off, status.auth), ("degraded", vec![off], true));
    }

    #[test]
    fn an_answer_about_the_last_seconds_waits_until_they_are_stored() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), loupe_store::Retention::default()).unwrap();
        let now = loupe_api::clock::now_unix_ns();
        // No collector: nothing to wait for.
        assert!(Host::new(store.clone()).wait_stored(now, Duration::ZERO).is_ok());

        let stored = Arc::new(StoredThrough::default());
        let host = Host::new(store).with_stack_collector(Arc::clone(&stored));
        // Not stored, nobody storing: refused with both instants, and the collector was asked.
        match host.wait_stored(now, Duration::from_millis(50)) {
            Err(CoreError::NotStoredYet { to_unix_ns, stored_unix_ns }) => {
                assert_eq!((to_unix_ns, stored_unix_ns), (now, 0));
            }
            other => panic!("expected not_stored_yet, got {other:?}"),
        }
        assert!(stored.asked(), "the collector is asked to store at its next drain");
        // A collector that stores past the range's end while the host waits: answered.
        let collector = {
            let stored = Arc::clone(&stored);
            thread::spawn(move || {
                thread::sleep(Duration::from_millis(100));
                stored.stored(now + 1);
            })
        };
        host.wait_stored(now, Duration::from_secs(10)).unwrap();
        assert!(stored.through_unix_ns() > now);
        collector.join().unwrap();
        // A range ending in the future waits for now, not for the future.
        stored.stored(loupe_api::clock::now_unix_ns() + 10_000_000_000);
        host.wait_stored(u64::MAX, Duration::from_millis(50)).unwrap();
    }
}
