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
//! The fleet's operations are a second list of the same form (`fleet_operations!`, the
//! [`FleetApi`] trait): the CLI holds a `&dyn FleetApi` that is NATS itself or an agent's HTTP
//! API, and an agent's HTTP API serves the list at its fleet routes and at `POST /api/v1/call`.
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

/// Calls `$then!` with the tokens after its name, `;`, then the list of operations, one per
/// line: `/// doc` `method / Variant (argument: Type, …) -> Answer => where HTTP serves it, the
/// scope a caller needs;`. Types are written as paths from this crate's root, so any module may
/// expand the list (the `Http` and `Scope` values are read only here).
macro_rules! host_operations {
    ($then:ident $($pre:tt)*) => {
        $then! { $($pre)* ;
            /// Retained days, oldest first: runs by interval, stack samples, bytes.
            /// What this host is and what it collects: health, with the features it runs without.
            status / Status () -> crate::model::Health => Http::Call, Scope::Read;
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

/// The fleet's operations, in the same form as `host_operations!`: what the CLI asks the fleet
/// (over NATS, or through an agent in it), what an agent's HTTP API serves for it, at its REST
/// routes and at `POST /api/v1/call`. Each line's scope is what every *target* host grants
/// before it acts (the request is signed with the asker's claims, `signed`); an agent asked
/// through its HTTP API also wants [`Scope::Fleet`] of the caller before it signs for it.
macro_rules! fleet_operations {
    ($then:ident $($pre:tt)*) => {
        $then! { $($pre)* ;
            /// Registered hosts of the selection, with their status (`up`, `silent`, `left`).
            fleet_hosts / FleetHosts (hosts: crate::fleet::Selector)
                -> crate::model::FleetHostsView => Http::Get("/api/v1/fleet/hosts"), Scope::Read;
            /// One run on every selected host from one start instant; answers when every host
            /// stored it (or at the run's end plus a margin, naming the hosts that missed it).
            fleet_run / FleetRun (order: crate::fleet::FleetRunOrder)
                -> crate::model::FleetRunView => Http::Post("/api/v1/fleet/runs"), Scope::Run;
            /// An analysis on every selected host next to its data (the module goes to them by
            /// its hash through the fleet's object store), the partial results merged in the
            /// sandbox: the result, who answered, who missed the deadline, who failed and why.
            fleet_invoke / FleetInvoke (order: crate::fleet::FleetInvokeOrder)
                -> crate::model::FleetInvokeView => Http::Post("/api/v1/fleet/invoke"), Scope::Invoke;
            /// A host's stored run, read over the fleet: what the fleet view opens when a host's
            /// row of a synchronized run is clicked.
            fleet_host_run / FleetHostRun (host: String, id: u64)
                -> crate::model::RunView => Http::Get("/api/v1/fleet/hosts/{host}/runs/{id}"), Scope::Read;
            /// A host's profile of a range, read over the fleet (its aggregated stacks travel, the
            /// flame graph is built by the asker); past the fleet's message limit, `too_large`.
            fleet_host_profile / FleetHostProfile (order: crate::fleet::HostProfileOrder)
                -> crate::model::ProfileView => Http::Get("/api/v1/fleet/hosts/{host}/profile"), Scope::Read;
        }
    };
}
pub(crate) use fleet_operations;

/// One list's trait (`$api`) and operation enum (`$ops`), with each operation's name, HTTP
/// route and scope.
macro_rules! define_api {
    ($(#[$api_doc:meta])* $api:ident $ops:ident ;
     $( $(#[$doc:meta])* $name:ident / $op:ident ( $($arg:ident : $ty:ty),* ) -> $answer:ty => $http:expr, $scope:expr; )*) => {
        $(#[$api_doc])*
        pub trait $api {
            $( $(#[$doc])* fn $name(&self, $($arg: $ty),*) -> CoreResult<$answer>; )*
        }

        /// Each operation of the list by name.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum $ops { $($op),* }

        impl $ops {
            pub const ALL: &[$ops] = &[$($ops::$op),*];

            /// The method's name (`list_runs`), also the call's tag on the control socket and
            /// at `POST /api/v1/call`.
            pub fn name(self) -> &'static str {
                match self { $($ops::$op => stringify!($name)),* }
            }

            /// Where the HTTP API serves it.
            pub fn http(self) -> Http {
                match self { $($ops::$op => $http),* }
            }

            /// What a caller needs to ask for it.
            pub fn scope(self) -> Scope {
                match self { $($ops::$op => $scope),* }
            }
        }
    };
}
host_operations!(define_api
    /// The host's operations with typed arguments and [`CoreError`] results, whichever way
    /// the host is reached: in this process, through a running agent's control socket, or
    /// through a remote host's HTTP API.
    HostApi Op);
fleet_operations!(define_api
    /// The fleet's operations, whichever way the fleet is reached: over NATS by the CLI, by an
    /// agent in the fleet for its HTTP API's callers, or through such an agent (`--server`).
    FleetApi FleetOp);

impl FleetOp {
    /// Whether the audit trail of the agent that asks records it: what starts work on other
    /// hosts (runs, analyses); every target records what it did itself.
    pub fn recorded(self) -> bool {
        matches!(self.scope(), Scope::Run | Scope::Invoke)
    }
}

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

    #[test]
    fn fleet_operations_are_named_apart_from_the_hosts_and_served_over_http() {
        let host: Vec<_> = Op::ALL.iter().map(|o| o.name()).collect();
        for op in FleetOp::ALL {
            assert!(op.name().starts_with("fleet_") && !host.contains(&op.name()), "{}", op.name());
            assert!(op.http().route().is_some_and(|(_, path)| path.starts_with("/api/v1/fleet/")), "{}", op.name());
        }
        let recorded: Vec<_> = FleetOp::ALL.iter().filter(|o| o.recorded()).map(|o| o.name()).collect();
        assert_eq!(recorded, ["fleet_run", "fleet_invoke"]);
    }
}
