//! The host's operations, each named once: `host_operations!` lists them — the method, its
//! arguments and answer, and where the HTTP API serves it — and everything that speaks them
//! follows from that list: the [`HostApi`] trait the CLI calls (implemented by the host itself,
//! by the control socket's client and by the HTTP client), the control socket's
//! `wire::control::Call` and its dispatch — which the HTTP API also serves, whole, at `POST
//! /api/v1/call`, the route the HTTP client speaks — and the table of REST routes ([`Op::http`])
//! a test holds against the OpenAPI document.
//!
//! Why: one operation used to be written six times (the core, a control call, its server arm,
//! a client method, an HTTP route, a hand-built remote query) and the three ways to reach a
//! host answered errors three ways. Now a command holds a `&dyn HostApi` and does not know
//! which it has; errors come back as the same [`CoreError`] from each (a remote one keeps the
//! server's kind, code and words), so output and exit code are the same.
//!
//! Each line also names the scope a caller needs (`access`): the core checks it for every door
//! and the HTTP API's one authorization layer and OpenAPI document (`x-scope`) read it here.
//!
//! Adding an operation: a line here (and its argument and answer types in `orders`/`model`),
//! its implementation in the core (`Host`, and its line in `ActingFor`), its CLI command. The control socket and `--server` reach it
//! at once; a REST route of its own (`Http::Get`/`Post`) only if the web UI or other clients
//! want one.

use crate::{
    access::Scope,
    error::{CoreError, CoreResult},
};

/// Where the HTTP API serves an operation: through `POST /api/v1/call` unless `No`, and at a
/// REST route of its own if it has one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Http {
    Get(&'static str),
    Post(&'static str),
    Put(&'static str),
    Delete(&'static str),
    /// Only through `POST /api/v1/call`.
    Call,
    /// Not over HTTP, and why (what the HTTP API and its client answer when asked).
    No(&'static str),
}

impl Http {
    /// The method and path template of its REST route, if it has one.
    pub fn route(self) -> Option<(&'static str, &'static str)> {
        match self {
            Http::Get(path) => Some(("get", path)),
            Http::Post(path) => Some(("post", path)),
            Http::Put(path) => Some(("put", path)),
            Http::Delete(path) => Some(("delete", path)),
            Http::Call | Http::No(_) => None,
        }
    }

    /// Whether the HTTP API serves it at all.
    pub fn served(self) -> bool {
        !matches!(self, Http::No(_))
    }
}

/// Calls `$then!` with the list of operations, one per line:
/// `/// doc` `method / Variant (argument: Type, …) -> Answer => where HTTP serves it, the scope
/// a caller needs;`. Types are written as paths from this crate's root, so any module may expand
/// the list (the `Http` and `Scope` values are read only here).
macro_rules! host_operations {
    ($then:ident) => {
        $then! {
            /// Retained days, oldest first: runs by interval, stack samples, bytes.
            days / Days () -> Vec<crate::model::DayView> => Http::Get("/api/v1/days"), Scope::Read;
            /// Stored runs that started in the filter's range, oldest first.
            list_runs / ListRuns (filter: crate::orders::RunFilter)
                -> Vec<crate::model::RunListEntry> => Http::Get("/api/v1/runs"), Scope::Read;
            /// One stored run with every slot (and each CPU's series with `per_cpu`).
            show_run / ShowRun (id: u64, per_cpu: bool)
                -> crate::model::RunView => Http::Get("/api/v1/runs/{id}"), Scope::Read;
            /// An on-demand run: answers once it is stored, or with `run_timeout` when it outlasts
            /// the caller's wait (it then goes on and is stored when it ends).
            start_run / StartRun (order: crate::orders::RunOrder)
                -> crate::model::RunView => Http::Post("/api/v1/runs"), Scope::Run;
            /// Stores runs, one atomic put each: a bad one is reported, the others land.
            import_runs / ImportRuns (runs: Vec<loupe_store::NewRun>)
                -> Vec<crate::orders::ImportOutcome>
                => Http::No("import writes to a local data dir; run it on the host (without --server)"), Scope::Admin;
            /// A profile of a range as hot functions and flame graph, leaving out the flame-graph
            /// nodes under `min_share` of the samples.
            profile / Profile (query: loupe_store::ProfileQuery, min_share: f64)
                -> crate::model::ProfileView => Http::Get("/api/v1/profile"), Scope::Read;
            /// What changed between the query's range and a baseline range (`base`) with the same
            /// filters: the selection's flame graph with the baseline's samples on each path
            /// (nodes under `min_share` of the selection left out), functions by change of share,
            /// and those only one side has.
            profile_diff / ProfileDiff (query: loupe_store::ProfileQuery, base: loupe_store::TimeRange, min_share: f64)
                -> crate::model::ProfileDiffView => Http::Get("/api/v1/profile/diff"), Scope::Read;
            /// The same profile as gzipped pprof, of samples taken at `frequency` Hz.
            pprof / Pprof (query: loupe_store::ProfileQuery, frequency: u64)
                -> Vec<u8> => Http::Get("/api/v1/profile/pprof"), Scope::Read;
            /// PIDs with samples in a range.
            pids / Pids (range: loupe_store::TimeRange)
                -> std::collections::BTreeSet<u32> => Http::Get("/api/v1/pids"), Scope::Read;
            /// Names the stored frames of a range from debug files in these directories.
            symbolize / Symbolize (range: loupe_store::TimeRange, debug_dirs: Vec<std::path::PathBuf>)
                -> crate::model::SymbolizeReport
                => Http::No(
                    "symbolize reads debug files on the host that holds the samples: run it there (drop --server)"
                ), Scope::Admin;
            /// Programs that logged timeline events in a range, with per-event lag statistics.
            timeline / Timeline (query: loupe_store::TimelineQuery)
                -> crate::model::TimelineSummary => Http::Get("/api/v1/timeline"), Scope::Read;
            /// Timeline events in time order, a page at a time (`after`: the previous page's `next`).
            timeline_events / TimelineEvents (query: loupe_store::TimelineQuery, after: Option<String>, limit: Option<usize>)
                -> crate::model::TimelineEventsPage => Http::Get("/api/v1/timeline/events"), Scope::Read;
            /// Everything recorded in a span of time, lane by lane on one axis: each run's slots,
            /// each CPU's samples and waits, each thread's probe calls, each program's timeline
            /// events; a lane past the order's item limit as per-column summaries.
            window / Window (order: crate::orders::WindowOrder)
                -> crate::model::WindowView => Http::Get("/api/v1/window"), Scope::Read;
            /// The window as a Chrome/Perfetto trace (JSON Trace Event format): samples and timeline
            /// events as instants per thread, probe calls and iterations as slices, traffic as
            /// counter tracks.
            export_trace / ExportTrace (order: crate::orders::WindowOrder)
                -> Vec<u8> => Http::Get("/api/v1/window/trace"), Scope::Read;
            /// Attaches a probe session and answers at once with its handle.
            start_probe / StartProbe (order: crate::orders::ProbeOrder)
                -> crate::model::ActiveProbeView => Http::Post("/api/v1/probes"), Scope::Probe;
            /// Stops a running session (or collects one that ended by itself) and shows what it stored.
            stop_probe / StopProbe (handle: u64)
                -> crate::model::ProbeView => Http::Post("/api/v1/probes/active/{handle}/stop"), Scope::Probe;
            /// Running sessions and stored ones that started in a range.
            list_probes / ListProbes (range: loupe_store::TimeRange)
                -> crate::model::ProbeList => Http::Get("/api/v1/probes"), Scope::Read;
            /// One stored session (and every call with `calls`).
            show_probe / ShowProbe (id: u64, calls: bool)
                -> crate::model::ProbeView => Http::Get("/api/v1/probes/{id}"), Scope::Read;
            /// Analyses on this host: name, owner, version, size, hash, description.
            list_udfs / ListUdfs () -> Vec<crate::model::UdfMeta> => Http::Get("/api/v1/udfs"), Scope::Read;
            /// One analysis' listing, with the parameters it declares.
            show_udf / ShowUdf (name: String) -> crate::model::UdfMeta => Http::Get("/api/v1/udfs/{name}"), Scope::Read;
            /// Uploads an analysis for the caller's team, or replaces the team's own: validated,
            /// compiled and kept, precompiled, across restarts.
            upload_udf / UploadUdf (name: String, component: crate::formats::base64::Base64)
                -> crate::model::Uploaded => Http::Put("/api/v1/udfs/{name}"), Scope::Upload;
            /// Deletes an analysis of the caller's team.
            delete_udf / DeleteUdf (name: String) -> () => Http::Delete("/api/v1/udfs/{name}"), Scope::Upload;
            /// Runs an analysis next to the data, over a range, with its parameters by name.
            invoke / Invoke (name: String, range: loupe_store::TimeRange, params: serde_json::Map<String, serde_json::Value>)
                -> crate::model::InvokeResponse => Http::Post("/api/v1/udfs/{name}/invoke"), Scope::Invoke;
        }
    };
}
pub(crate) use host_operations;

macro_rules! define_api {
    ($( $(#[$doc:meta])* $name:ident / $op:ident ( $($arg:ident : $ty:ty),* ) -> $answer:ty => $http:expr, $scope:expr; )*) => {
        /// The host's operations with typed arguments and [`CoreError`] results, whichever way
        /// the host is reached: in this process, through a running agent's control socket, or
        /// through a remote host's HTTP API.
        pub trait HostApi {
            $( $(#[$doc])* fn $name(&self, $($arg: $ty),*) -> CoreResult<$answer>; )*
        }

        /// Each operation by name.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Op { $($op),* }

        impl Op {
            pub const ALL: &[Op] = &[$(Op::$op),*];

            /// The method's name (`list_runs`), also the control socket's call tag.
            pub fn name(self) -> &'static str {
                match self { $(Op::$op => stringify!($name)),* }
            }

            /// Where the HTTP API serves it.
            pub fn http(self) -> Http {
                match self { $(Op::$op => $http),* }
            }

            /// What a caller needs to ask for it.
            pub fn scope(self) -> Scope {
                match self { $(Op::$op => $scope),* }
            }
        }
    };
}
host_operations!(define_api);

impl Op {
    /// Whether it changes the host or its store (attaches, stores, deletes): what the audit
    /// trail records. Read from its scope: reading and invoking change nothing.
    pub fn changes_host(self) -> bool {
        !matches!(self.scope(), Scope::Read | Scope::Invoke)
    }

    /// The error of asking the HTTP API for an operation it does not serve.
    pub fn refused(self) -> CoreError {
        match self.http() {
            Http::No(why) => CoreError::LocalOnly(why),
            _ => CoreError::Internal(format!("{} is served over HTTP", self.name())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_is_named_once_and_local_ones_say_why() {
        let mut names: Vec<_> = Op::ALL.iter().map(|o| o.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Op::ALL.len());
        assert!(Op::ShowRun.http().served() && !Op::ImportRuns.http().served());
        let e = Op::ImportRuns.refused();
        assert_eq!(e.code(), "local_only");
        assert!(e.to_string().contains("without --server"), "{e}");
        assert_eq!(Op::ShowRun.refused().code(), "internal", "a served operation is not refused");
        let changing: Vec<_> = Op::ALL.iter().filter(|o| o.changes_host()).map(|o| o.name()).collect();
        assert_eq!(
            changing,
            ["start_run", "import_runs", "symbolize", "start_probe", "stop_probe", "upload_udf", "delete_udf"]
        );
    }
}
