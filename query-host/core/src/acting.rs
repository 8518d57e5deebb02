//! The core's operations as [`HostApi`], on behalf of one caller: [`ActingFor`] is what the
//! control socket answers (as the host's operator), what the HTTP API answers (as the token's
//! team) and what the CLI calls on a store it opened itself. Each operation checks the scope the
//! operation list names for it, then is the [`Host`] method of the same name; what changes the
//! host or the store is recorded in the audit trail (`audit`), refusals included. The
//! waits are the control socket's (a run: its own length and [`RUN_MARGIN`]; stopping a probe:
//! [`PROBE_STOP`]); the HTTP routes give a run the request's own time limit ([`ActingFor::run_wait`]).

use std::{collections::BTreeSet, ops::Deref, path::PathBuf, time::Duration};

use loupe_api::{
    access::Caller,
    formats::{base64::Base64, trace},
    model::{InvokeResponse, UdfMeta, Uploaded, WindowView},
    ops::{HostApi, Op},
    orders::WindowOrder,
    wire::control::{PROBE_STOP, RUN_MARGIN},
};
use loupe_store::{NewRun, ProfileQuery, RunId, TimeRange, TimelineQuery};
use serde_json::{Map, Value};

use super::{CoreError, CoreResult, Host, ImportOutcome, ProbeOrder, RunFilter, RunOrder, profiles::pprof_of};
use loupe_api::model::{
    ActiveProbeView, DayView, ProbeList, ProbeView, ProfileDiffView, ProfileView, RunListEntry, RunView,
    SymbolizeReport, TimelineEventsPage, TimelineSummary,
};

/// The host, as one caller may use it: `H` is a `&Host` (a door, per call) or a host it owns
/// (`Box<Host>`: the CLI's own store).
pub struct ActingFor<H> {
    host: H,
    caller: Caller,
    /// How long an on-demand run is waited for; `None`: its own length and [`RUN_MARGIN`].
    run_wait: Option<Duration>,
    /// Record every call, reads and invocations too (a fleet caller's: another host asked).
    audit_every_call: bool,
}

impl Host {
    /// The host's operations on behalf of `caller`.
    pub fn acting_for(&self, caller: Caller) -> ActingFor<&Host> {
        ActingFor::new(self, caller)
    }
}

impl<H: Deref<Target = Host>> ActingFor<H> {
    pub fn new(host: H, caller: Caller) -> Self {
        ActingFor { host, caller, run_wait: None, audit_every_call: false }
    }

    /// Waits at most `wait` for an on-demand run (the HTTP request's limit); a longer run
    /// answers `run_timeout` and goes on.
    pub fn run_wait(mut self, wait: Duration) -> Self {
        self.run_wait = Some(wait);
        self
    }

    /// Records every call in the audit trail, reads and invocations too: what a host does for
    /// the fleet is recorded where it is done, whatever it is.
    pub fn audit_all(mut self) -> Self {
        self.audit_every_call = true;
        self
    }

    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    pub fn host(&self) -> &Host {
        &self.host
    }

    /// `f` as operation `op`, for this caller: run if the caller holds `op`'s scope, recorded
    /// with its outcome, refused or not, when `op` changes the host or every call is
    /// ([`ActingFor::audit_all`]); `target` names what it acts on. The fleet's work on a host
    /// that is not one of the list's calls (an analysis' partial result, a range's raw stacks)
    /// goes through here too.
    pub fn act<T>(&self, op: Op, target: impl FnOnce() -> String, f: impl FnOnce() -> CoreResult<T>) -> CoreResult<T> {
        self.call(op, target, f)
    }

    fn call<T>(&self, op: Op, target: impl FnOnce() -> String, f: impl FnOnce() -> CoreResult<T>) -> CoreResult<T> {
        let outcome = self.caller.require(op.scope()).map_err(CoreError::from).and_then(|()| f());
        if op.changes_host() || self.audit_every_call {
            self.host.audit().record(&self.caller, op.name(), &target(), &outcome);
        }
        outcome
    }
}

/// The target of an operation that changes nothing (and is not recorded).
fn reads() -> String {
    String::new()
}

impl<H: Deref<Target = Host>> HostApi for ActingFor<H> {
    fn status(&self) -> CoreResult<loupe_api::model::Health> {
        self.call(Op::Status, reads, || Ok(self.host.status()))
    }

    fn days(&self) -> CoreResult<Vec<DayView>> {
        self.call(Op::Days, reads, || self.host.days())
    }

    fn list_runs(&self, filter: RunFilter) -> CoreResult<Vec<RunListEntry>> {
        self.call(Op::ListRuns, reads, || self.host.list_runs(&filter))
    }

    fn show_run(&self, id: u64, per_cpu: bool) -> CoreResult<RunView> {
        self.call(Op::ShowRun, reads, || self.host.show_run(RunId(id), per_cpu))
    }

    fn start_run(&self, order: RunOrder) -> CoreResult<RunView> {
        let target = format!("{} × {:?}", order.iface.as_deref().unwrap_or("the only interface"), order.interval);
        let wait = self.run_wait.unwrap_or(order.duration_from_now() + RUN_MARGIN);
        self.call(Op::StartRun, || target, || self.host.start_run(&order, wait))
    }

    fn import_runs(&self, runs: Vec<NewRun>) -> CoreResult<Vec<ImportOutcome>> {
        let target = format!("{} runs", runs.len());
        self.call(Op::ImportRuns, || target, || Ok(self.host.import_runs(runs)))
    }

    fn profile(&self, query: ProfileQuery, min_share: f64) -> CoreResult<ProfileView> {
        self.call(Op::Profile, reads, || self.host.profile_view(&query, min_share))
    }

    fn profile_diff(&self, query: ProfileQuery, base: TimeRange, min_share: f64) -> CoreResult<ProfileDiffView> {
        self.call(Op::ProfileDiff, reads, || self.host.profile_diff(&query, base, min_share))
    }

    fn window(&self, order: WindowOrder) -> CoreResult<WindowView> {
        self.call(Op::Window, reads, || self.host.window(&order))
    }

    fn export_trace(&self, order: WindowOrder) -> CoreResult<Vec<u8>> {
        self.call(Op::ExportTrace, reads, || Ok(trace::to_json(&self.host.window(&order)?)))
    }

    fn pprof(&self, query: ProfileQuery, frequency: u64) -> CoreResult<Vec<u8>> {
        self.call(Op::Pprof, reads, || pprof_of(&self.host.profile(&query)?, query.kind, query.range, frequency))
    }

    fn pids(&self, range: TimeRange) -> CoreResult<BTreeSet<u32>> {
        self.call(Op::Pids, reads, || self.host.pids(range))
    }

    fn symbolize(&self, range: TimeRange, debug_dirs: Vec<PathBuf>) -> CoreResult<SymbolizeReport> {
        self.call(Op::Symbolize, || format!("names from {debug_dirs:?}"), || self.host.symbolize(range, &debug_dirs))
    }

    fn timeline(&self, query: TimelineQuery) -> CoreResult<TimelineSummary> {
        self.call(Op::Timeline, reads, || self.host.timeline(&query))
    }

    fn timeline_events(
        &self,
        query: TimelineQuery,
        after: Option<String>,
        limit: Option<usize>,
    ) -> CoreResult<TimelineEventsPage> {
        self.call(Op::TimelineEvents, reads, || self.host.timeline_events(&query, after.as_deref(), limit))
    }

    fn start_probe(&self, order: ProbeOrder) -> CoreResult<ActiveProbeView> {
        let target = order.target_text();
        self.call(Op::StartProbe, || target, || self.host.start_probe(&order, &self.caller.team))
    }

    fn stop_probe(&self, handle: u64) -> CoreResult<ProbeView> {
        let target = format!("probe session {handle}");
        self.call(Op::StopProbe, || target, || self.host.stop_probe(handle, PROBE_STOP, &self.caller))
    }

    fn list_probes(&self, range: TimeRange) -> CoreResult<ProbeList> {
        self.call(Op::ListProbes, reads, || self.host.list_probes(range))
    }

    fn show_probe(&self, id: u64, calls: bool) -> CoreResult<ProbeView> {
        self.call(Op::ShowProbe, reads, || self.host.show_probe(id, calls))
    }

    fn list_udfs(&self) -> CoreResult<Vec<UdfMeta>> {
        self.call(Op::ListUdfs, reads, || Ok(self.host.analyses()?.list()))
    }

    fn show_udf(&self, name: String) -> CoreResult<UdfMeta> {
        self.call(Op::ShowUdf, reads, || self.host.analyses()?.get(&name))
    }

    fn upload_udf(&self, name: String, component: Base64) -> CoreResult<Uploaded> {
        self.call(
            Op::UploadUdf,
            || name.clone(),
            || {
                let (meta, replaced) =
                    self.host.analyses()?.put(self.host.store(), &name, &self.caller, &component.0)?;
                Ok(Uploaded { meta, replaced })
            },
        )
    }

    fn delete_udf(&self, name: String) -> CoreResult<()> {
        self.call(Op::DeleteUdf, || name.clone(), || self.host.analyses()?.delete(&name, &self.caller))
    }

    fn invoke(&self, name: String, range: TimeRange, params: Map<String, Value>) -> CoreResult<InvokeResponse> {
        self.call(Op::Invoke, reads, || {
            self.host.analyses()?.invoke(self.host.store(), &name, &self.caller.team, range, &params)
        })
    }
}
