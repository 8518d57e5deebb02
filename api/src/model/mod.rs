//! What every door shows: the response types of the CLI's `--json`, the control socket, the
//! HTTP API (with their OpenAPI schemas, from which the web UI's types are checked) and the
//! analyses' cursors. Plain data: no I/O here, and nothing above it is imported.

pub mod analysis;
pub mod diff;
pub mod error;
pub mod fleet;
pub mod host;
pub mod probe;
pub mod profile;
pub mod run;
pub mod timeline;
pub mod window;

pub use analysis::{
    AnalysisOutput, Cell, Column, Description, InvokeResponse, LogLine, ParamKind, ParamSpec, ResultKind, Series,
    UdfMeta, Uploaded,
};
pub use diff::{DiffNode, FunctionChange, ProfileDiffView};
pub use error::{ErrorBody, ErrorKind};
pub use fleet::{
    FleetAnswered, FleetHost, FleetHostsView, FleetInvokeView, FleetLeafAnswer, FleetMiss, FleetPlace, FleetRunHost,
    FleetRunView,
};
pub use host::{DayView, FeatureOff, Health, StatsView};
pub use probe::{
    ActiveProbeView, CallTreeView, CallView, LatencyBucket, ProbeFunctionView, ProbeList, ProbeListEntry, ProbeView,
};
pub use profile::{FlameNode, FunctionCount, ModuleCount, ModuleNaming, ProfileView, SymbolizeReport};
pub use run::{ClockView, CpuView, Metrics, RunListEntry, RunView, SeriesSet};
pub use timeline::{
    EventDefinitionView, EventStatsView, TimelineEventView, TimelineEventsPage, TimelineSourceView, TimelineSummary,
};
pub use window::{
    CpuLane, NamedSeries, ProbeFunctionRef, ProgramLane, Spans, ThreadCalls, Ticks, TrafficLane, WindowFunction,
    WindowLimits, WindowProcess, WindowView,
};
