//! Write Loupe analyses (UDFs) in Rust.
//!
//! An analysis is a WebAssembly component targeting the `analysis` world of `wit/loupe.wit`: it
//! says what it is ([`Analysis::describe`]) and answers one invocation over a time range
//! ([`Analysis::run`]). The query host owns the data; the analysis reads it through the host's
//! cursors and returns one typed [`Output`] (a table, series, a flame graph or text) that the web
//! UI knows how to draw.
//!
//! ```no_run
//! use loupe_udf::{Analysis, Context, Description, Output, Param, ResultKind};
//!
//! struct BusyRuns;
//!
//! impl Analysis for BusyRuns {
//!     fn describe() -> Description {
//!         Description::new("busy-runs", ResultKind::Text)
//!             .summary("How many runs carried more than `min_bytes` of ingress")
//!             .param(Param::unsigned("min_bytes", "ingress bytes over the whole run").default(1_000_000u64))
//!     }
//!
//!     fn run(ctx: &Context) -> Result<Output, String> {
//!         let min = ctx.params.u64("min_bytes")?;
//!         let mut busy = 0;
//!         for run in ctx.runs().open()? {
//!             if run.metrics.in_bytes.iter().sum::<u64>() > min {
//!                 busy += 1;
//!             }
//!         }
//!         loupe_udf::info!("{busy} busy runs");
//!         Ok(Output::text(busy.to_string()))
//!     }
//! }
//!
//! loupe_udf::export_analysis!(BusyRuns);
//! ```
//!
//! # Why it looks like this
//!
//! - **Batches, not rows.** Every call across the sandbox boundary costs far more than reading a
//!   number, so the host hands out runs and samples a batch at a time. [`Runs`] and [`Samples`]
//!   are plain iterators over those batches (both a [`Batched`] cursor): one host call per batch
//!   (a few runs, or about ten seconds of samples of every CPU), never one per item. Probe
//!   sessions ([`ProbeSessions`]) come one per call, each followed by its calls in batches
//!   ([`ProbeCalls`], a [`Batched`] cursor too).
//! - **Ids, resolved once.** A sample carries a stack id and a comm id, not strings: a day holds
//!   millions of samples but only thousands of distinct stacks. Count per id while streaming,
//!   then resolve the distinct ids with [`Stacks`] / [`Comms`] (both an [`IdCache`]), which ask
//!   the host once per batch of unknown ids and cache the answers.
//! - **Typed parameters.** The host checks each parameter against [`Analysis::describe`] and fills
//!   in defaults before `run` is called, so [`Params`] lookups only fail on a programming error
//!   (a name or type that the description does not declare) and say which.
//! - **Nothing but the host's data.** The sandbox has no filesystem, network or clock: don't use
//!   `std::fs`, `std::net` or `std::time` (a component importing them is refused at upload).
//!   `println!`/`eprintln!` and panic messages go to the invocation's log; prefer [`info!`] and
//!   friends, which carry a level.
//!
//! Build with `cargo build --release --target wasm32-wasip2`; the component is
//! `target/wasm32-wasip2/release/<crate_name>.wasm`.

mod columns;
mod data;
mod intern;
pub mod log;
mod output;
mod params;
pub mod partial;
mod probes;

/// The raw bindings generated from `wit/loupe.wit`. [`export_analysis!`] uses them; analyses
/// rarely need to.
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "analysis",
        pub_export_macro: true,
        export_macro_name: "export",
        default_bindings_module: "loupe_udf::bindings",
        additional_derives: [PartialEq],
        generate_all,
    });
}

/// The raw bindings of the `fleet-analysis` world (`analysis` plus `merge`), sharing every type
/// and resource with [`bindings`]. [`export_fleet_analysis!`] uses them.
pub mod fleet_bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "fleet-analysis",
        pub_export_macro: true,
        export_macro_name: "export",
        default_bindings_module: "loupe_udf::fleet_bindings",
        with: {
            "loupe:udf/types@0.1.0": crate::bindings::loupe::udf::types,
            "loupe:udf/data@0.1.0": crate::bindings::loupe::udf::data,
        },
    });
}

/// The raw bindings of the `fleet-batches` world (`describe`, `run`, `run-columns`,
/// `merge-columns`, `merge-batch`), sharing every type and resource with [`bindings`].
/// [`export_fleet_columns!`] uses them.
pub mod columns_bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "fleet-batches",
        pub_export_macro: true,
        export_macro_name: "export",
        default_bindings_module: "loupe_udf::columns_bindings",
        with: {
            "loupe:udf/types@0.1.0": crate::bindings::loupe::udf::types,
            "loupe:udf/data@0.1.0": crate::bindings::loupe::udf::data,
        },
    });
}

/// Every type of the WIT `types` interface, as generated (records, variants, enums).
pub mod types {
    pub use crate::bindings::loupe::udf::types::*;
}

pub use bindings::loupe::udf::data::{HostInfo, Level};
pub use columns::TextColumn;
pub use data::{
    Batched, CommDictionary, Comms, Dictionary, IdCache, NextBatch, OptionalText, RunQuery, Runs, SampleBatch,
    SampleQuery, Samples, StackDictionary, Stacks, TimelineDefinitions, TimelineEvents, TimelineQuery, WaitQuery,
    Waits, host_info, runs, samples, timeline, waits,
};
pub use intern::{FastMap, Interner};
pub use output::Flamegraph;
pub use params::Params;
pub use partial::Partial;
pub use probes::{CallBatches, ProbeCalls, ProbeQuery, ProbeSessions, histogram_quantile, probes};
/// A parameter's declaration (the WIT `param-spec`), built with [`Param::unsigned`],
/// [`Param::float`], [`Param::text`] or [`Param::flag`], then [`Param::default`].
pub use types::ParamSpec as Param;
pub use types::{
    Cell, CodedText, Column, ColumnValues, Columns, CpuMetrics, Description, Frame, LatencyBucket, Metrics, Output,
    ParamKind, ParamValue, Point, ProbeCall, ProbeFunction, ProbeSession, ResultKind, Run, Sample, SampleColumns,
    SampleFilter, Series, SeriesSet, Table, TimeRange, TimelineDefinition, TimelineEvent, TimelineFilter, Wait,
    WeightedStack,
};

/// One analysis: implement it on a unit struct and export it with [`export_analysis!`].
pub trait Analysis {
    /// Name, version, summary, parameters and result kind. Must not read data (the host calls
    /// it at upload, outside any invocation). A [`Description`] left without a version gets the
    /// crate's `CARGO_PKG_VERSION`.
    fn describe() -> Description;

    /// Answers one invocation over `ctx.range` with `ctx.params`. An `Err` reaches the caller as
    /// an HTTP 422 with its message; a panic traps (its message goes to the invocation log).
    fn run(ctx: &Context) -> Result<Output, String>;
}

/// An analysis that runs fleet-wide (`loupe fleet invoke`): each host answers [`Analysis::run`]
/// over its own data, and the asking host merges those partial results with [`Merge::merge`].
/// Export it with [`export_fleet_analysis!`].
///
/// The contract: `partials` are results of `run` or of earlier merges, and the result must be
/// one of the same shape — the host merges in groups, in any order, as a tree. So `merge` must
/// be commutative and associative, and merging the per-host results must equal running over all
/// hosts' data at once (group by each run's or sample's `host`). It must not read data (the
/// cursors fail inside `merge`); `ctx.range` and `ctx.params` are the invocation's.
pub trait Merge: Analysis {
    fn merge(ctx: &Context, partials: Vec<Output>) -> Result<Output, String>;
}

/// A fleet analysis with columnar partials ([`Columns`]): each host answers
/// [`ColumnarAnalysis::run_columns`], whoever asked merges with
/// [`ColumnarAnalysis::merge_columns`] — the contract of [`Merge`] — and a local invocation
/// shows `run_columns`'s result as a table. Export it with [`export_fleet_columns!`]. Worth it
/// when partials are many rows: they cross into the merging sandbox as whole lists, a merge
/// call's partials as one batch.
pub trait ColumnarAnalysis {
    /// As [`Analysis::describe`].
    fn describe() -> Description;
    /// One host's result over `ctx.range`.
    fn run_columns(ctx: &Context) -> Result<Columns, String>;
    /// Merges results of `run_columns` or of earlier merges into one of the same shape:
    /// commutative and associative, reading no data. Each partial is a view ([`Partial`]),
    /// whether it came alone or in a batch of many.
    fn merge_columns(ctx: &Context, partials: &[Partial<'_>]) -> Result<Columns, String>;
}

/// What an invocation is about: the time range and the parameters.
#[derive(Clone, Debug)]
pub struct Context {
    /// `[from_ns, to_ns)` in Unix nanoseconds.
    pub range: TimeRange,
    /// Every declared parameter, defaults filled in and types checked by the host.
    pub params: Params,
}

impl Context {
    pub fn new(range: TimeRange, params: Params) -> Self {
        Self { range, params }
    }

    /// Runs that started in the invocation's range (narrow with [`RunQuery`]'s methods).
    pub fn runs(&self) -> RunQuery {
        runs(self.range)
    }

    /// Stack samples in the invocation's range (narrow with [`SampleQuery`]'s methods).
    pub fn samples(&self) -> SampleQuery {
        samples(self.range)
    }

    /// Waits off the CPU whose thread blocked in the invocation's range (narrow with
    /// [`WaitQuery`]'s methods).
    pub fn waits(&self) -> WaitQuery {
        waits(self.range)
    }

    /// Programs' timeline events in the invocation's range (narrow with [`TimelineQuery`]'s
    /// methods).
    pub fn timeline(&self) -> TimelineQuery {
        timeline(self.range)
    }

    /// Probe sessions (`loupe probe`) that started in the invocation's range: each one's
    /// functions with their latency histograms, then its recorded calls in batches (see
    /// [`probes`]).
    pub fn probes(&self) -> ProbeQuery {
        probes(self.range)
    }
}

impl TimeRange {
    pub fn new(from_ns: u64, to_ns: u64) -> Self {
        Self { from_ns, to_ns }
    }

    /// `to_ns - from_ns` (0 for an empty or inverted range).
    pub fn duration_ns(&self) -> u64 {
        self.to_ns.saturating_sub(self.from_ns)
    }

    pub fn contains(&self, t_ns: u64) -> bool {
        self.from_ns <= t_ns && t_ns < self.to_ns
    }
}

/// Exports a type implementing [`Analysis`] as the component's `describe` and `run`.
/// Use it once, in the crate that is built as the `cdylib`.
///
/// ```ignore
/// loupe_udf::export_analysis!(MyAnalysis);
/// ```
#[macro_export]
macro_rules! export_analysis {
    ($ty:ty) => {
        const _: () = {
            struct __LoupeUdfExport;
            impl $crate::bindings::Guest for __LoupeUdfExport {
                fn describe() -> $crate::Description {
                    $crate::__private::describe::<$ty>(::core::env!("CARGO_PKG_VERSION"))
                }
                fn run(
                    range: $crate::TimeRange,
                    params: $crate::__private::Vec<$crate::types::Param>,
                ) -> ::core::result::Result<$crate::Output, $crate::__private::String> {
                    $crate::__private::run::<$ty>(range, params)
                }
            }
    $crate::bindings::export!(__LoupeUdfExport with_types_in $crate::bindings);
        };
    };
}

/// Exports a type implementing [`Merge`] as the component's `describe`, `run` and `merge`
/// (the `fleet-analysis` world): it runs on one host like any analysis, and fleet-wide.
///
/// ```ignore
/// loupe_udf::export_fleet_analysis!(MyAnalysis);
/// ```
#[macro_export]
macro_rules! export_fleet_analysis {
    ($ty:ty) => {
        const _: () = {
            struct __LoupeUdfExport;
            impl $crate::fleet_bindings::Guest for __LoupeUdfExport {
                fn describe() -> $crate::Description {
                    $crate::__private::describe::<$ty>(::core::env!("CARGO_PKG_VERSION"))
                }
                fn run(
                    range: $crate::TimeRange,
                    params: $crate::__private::Vec<$crate::types::Param>,
                ) -> ::core::result::Result<$crate::Output, $crate::__private::String> {
                    $crate::__private::run::<$ty>(range, params)
                }
                fn merge(
                    range: $crate::TimeRange,
                    params: $crate::__private::Vec<$crate::types::Param>,
                    partials: $crate::__private::Vec<$crate::Output>,
                ) -> ::core::result::Result<$crate::Output, $crate::__private::String> {
                    $crate::__private::merge::<$ty>(range, params, partials)
                }
            }
    $crate::fleet_bindings::export!(__LoupeUdfExport with_types_in $crate::fleet_bindings);
        };
    };
}

/// Exports a type implementing [`ColumnarAnalysis`] as the component's `describe`, `run`,
/// `run-columns`, `merge-columns` and `merge-batch` (the `fleet-batches` world); the last two
/// both call [`ColumnarAnalysis::merge_columns`].
///
/// ```ignore
/// loupe_udf::export_fleet_columns!(MyAnalysis);
/// ```
#[macro_export]
macro_rules! export_fleet_columns {
    ($ty:ty) => {
        const _: () = {
            struct __LoupeUdfExport;
            impl $crate::columns_bindings::Guest for __LoupeUdfExport {
                fn describe() -> $crate::Description {
                    $crate::__private::describe_columnar::<$ty>(::core::env!("CARGO_PKG_VERSION"))
                }
                fn run(
                    range: $crate::TimeRange,
                    params: $crate::__private::Vec<$crate::types::Param>,
                ) -> ::core::result::Result<$crate::Output, $crate::__private::String> {
                    $crate::__private::run_columns::<$ty>(range, params).map($crate::Output::from)
                }
                fn run_columns(
                    range: $crate::TimeRange,
                    params: $crate::__private::Vec<$crate::types::Param>,
                ) -> ::core::result::Result<$crate::Columns, $crate::__private::String> {
                    $crate::__private::run_columns::<$ty>(range, params)
                }
                fn merge_columns(
                    range: $crate::TimeRange,
                    params: $crate::__private::Vec<$crate::types::Param>,
                    partials: $crate::__private::Vec<$crate::Columns>,
                ) -> ::core::result::Result<$crate::Columns, $crate::__private::String> {
                    $crate::__private::merge_columns::<$ty>(range, params, partials)
                }
                fn merge_batch(
                    range: $crate::TimeRange,
                    params: $crate::__private::Vec<$crate::types::Param>,
                    batch: $crate::types::ColumnBatch,
                ) -> ::core::result::Result<$crate::Columns, $crate::__private::String> {
                    $crate::__private::merge_batch::<$ty>(range, params, batch)
                }
            }
    $crate::columns_bindings::export!(__LoupeUdfExport with_types_in $crate::columns_bindings);
        };
    };
}

#[doc(hidden)]
pub mod __private {
    pub use std::{string::String, vec::Vec};

    use crate::{Analysis, Context, Description, Output, Params, TimeRange, types};

    pub fn describe<A: Analysis>(crate_version: &str) -> Description {
        checked(A::describe(), crate_version)
    }

    pub fn describe_columnar<A: crate::ColumnarAnalysis>(crate_version: &str) -> Description {
        checked(A::describe(), crate_version)
    }

    pub fn run_columns<A: crate::ColumnarAnalysis>(
        range: TimeRange,
        params: Vec<types::Param>,
    ) -> Result<crate::Columns, String> {
        A::run_columns(&Context::new(range, Params::new(params)))
    }

    pub fn merge_columns<A: crate::ColumnarAnalysis>(
        range: TimeRange,
        params: Vec<types::Param>,
        partials: Vec<crate::Columns>,
    ) -> Result<crate::Columns, String> {
        let partials: Vec<crate::Partial> = partials.iter().map(crate::Partial::of).collect();
        A::merge_columns(&Context::new(range, Params::new(params)), &partials)
    }

    pub fn merge_batch<A: crate::ColumnarAnalysis>(
        range: TimeRange,
        params: Vec<types::Param>,
        batch: types::ColumnBatch,
    ) -> Result<crate::Columns, String> {
        let partials = crate::Partial::split(&batch)?;
        A::merge_columns(&Context::new(range, Params::new(params)), &partials)
    }

    fn checked(mut d: Description, crate_version: &str) -> Description {
        if d.version.is_empty() {
            d.version = crate_version.to_string();
        }
        for (i, p) in d.params.iter().enumerate() {
            assert!(
                !d.params[..i].iter().any(|q| q.name == p.name),
                "analysis `{}` declares parameter `{}` twice",
                d.name,
                p.name
            );
        }
        d
    }

    pub fn run<A: Analysis>(range: TimeRange, params: Vec<types::Param>) -> Result<Output, String> {
        A::run(&Context::new(range, Params::new(params)))
    }

    pub fn merge<A: crate::Merge>(
        range: TimeRange,
        params: Vec<types::Param>,
        partials: Vec<Output>,
    ) -> Result<Output, String> {
        A::merge(&Context::new(range, Params::new(params)), partials)
    }
}
