//! The core's operations as [`HostApi`]: what the control socket answers and what the CLI
//! calls on a store it opened itself. Each is the [`Host`] method of the same name; the waits
//! are the control socket's (a run: its own length and [`RUN_MARGIN`]; stopping a probe:
//! [`PROBE_STOP`]). The HTTP routes call the same methods with the request's own time limit.

use std::{collections::BTreeSet, path::PathBuf};

use loupe_api::{
    ops::HostApi,
    wire::control::{PROBE_STOP, RUN_MARGIN},
};
use loupe_store::{NewRun, ProfileQuery, RunId, TimeRange, TimelineQuery};

use super::{CoreResult, Host, ImportOutcome, ProbeOrder, RunFilter, RunOrder, profiles::pprof_of};
use loupe_api::model::{
    ActiveProbeView, DayView, ProbeList, ProbeView, ProfileView, RunListEntry, RunView, SymbolizeReport,
    TimelineEventsPage, TimelineSummary,
};

impl HostApi for Host {
    fn days(&self) -> CoreResult<Vec<DayView>> {
        Host::days(self)
    }

    fn list_runs(&self, filter: RunFilter) -> CoreResult<Vec<RunListEntry>> {
        Host::list_runs(self, &filter)
    }

    fn show_run(&self, id: u64, per_cpu: bool) -> CoreResult<RunView> {
        Host::show_run(self, RunId(id), per_cpu)
    }

    fn start_run(&self, order: RunOrder) -> CoreResult<RunView> {
        Host::start_run(self, &order, order.duration_from_now() + RUN_MARGIN)
    }

    fn import_runs(&self, runs: Vec<NewRun>) -> CoreResult<Vec<ImportOutcome>> {
        Ok(Host::import_runs(self, runs))
    }

    fn profile(&self, query: ProfileQuery, min_share: f64) -> CoreResult<ProfileView> {
        self.profile_view(&query, min_share)
    }

    fn pprof(&self, query: ProfileQuery, frequency: u64) -> CoreResult<Vec<u8>> {
        pprof_of(&Host::profile(self, &query)?, query.kind, query.range, frequency)
    }

    fn pids(&self, range: TimeRange) -> CoreResult<BTreeSet<u32>> {
        Host::pids(self, range)
    }

    fn symbolize(&self, range: TimeRange, debug_dirs: Vec<PathBuf>) -> CoreResult<SymbolizeReport> {
        Host::symbolize(self, range, &debug_dirs)
    }

    fn timeline(&self, query: TimelineQuery) -> CoreResult<TimelineSummary> {
        Host::timeline(self, &query)
    }

    fn timeline_events(
        &self,
        query: TimelineQuery,
        after: Option<String>,
        limit: Option<usize>,
    ) -> CoreResult<TimelineEventsPage> {
        Host::timeline_events(self, &query, after.as_deref(), limit)
    }

    fn start_probe(&self, order: ProbeOrder) -> CoreResult<ActiveProbeView> {
        Host::start_probe(self, &order)
    }

    fn stop_probe(&self, handle: u64) -> CoreResult<ProbeView> {
        Host::stop_probe(self, handle, PROBE_STOP)
    }

    fn list_probes(&self, range: TimeRange) -> CoreResult<ProbeList> {
        Host::list_probes(self, range)
    }

    fn show_probe(&self, id: u64, calls: bool) -> CoreResult<ProbeView> {
        Host::show_probe(self, id, calls)
    }
}
