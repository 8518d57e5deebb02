//! What can go wrong with an analysis (a team's WebAssembly component): uploading it,
//! invoking it, or the result it returns. The sandbox (`loupe_sandbox`) raises
//! these; every door shows them with the same kind and code.

use std::time::Duration;

use crate::model::{ErrorKind, LogLine};

/// Everything that can go wrong with an upload or an invocation. Each names the limit or
/// fault (and its value), and maps to an HTTP status and a stable `code`.
#[derive(Debug, thiserror::Error)]
pub enum UdfError {
    #[error("no analysis named '{0}'")]
    NotFound(String),
    #[error("bad analysis name '{0}': use 1-64 of a-z, 0-9, '-', '_', starting with a letter or digit")]
    BadName(String),
    #[error("analysis '{name}' belongs to team '{owner}'; only that team may change it")]
    NotOwner { name: String, owner: String },
    #[error("component of {size} bytes exceeds the module size limit of {limit} bytes")]
    ModuleTooLarge { size: usize, limit: usize },
    #[error("malformed WebAssembly: {0}")]
    Malformed(String),
    #[error(
        "this is a core WebAssembly module, not a component: build with `--target wasm32-wasip2` (see the loupe-udf guide)"
    )]
    CoreModule,
    #[error("the component imports {imports:?}, which analyses are not granted (no filesystem, sockets or clocks)")]
    ForbiddenImport { imports: Vec<String> },
    #[error("the component does not fit the loupe:udf analysis world: {0}")]
    Incompatible(String),
    #[error("bad parameters: {0}")]
    BadParams(String),
    #[error("time limit of {} exceeded", humantime::format_duration(*limit))]
    TimeLimit { limit: Duration },
    #[error("memory limit of {limit} bytes exceeded (the analysis asked for {desired} bytes)")]
    MemoryLimit { limit: usize, desired: usize },
    #[error("table limit of {limit} elements exceeded (the analysis asked for {desired})")]
    TableLimit { limit: usize, desired: usize },
    #[error("wasm stack limit of {limit} bytes exceeded (unbounded recursion?)")]
    StackLimit { limit: usize },
    #[error("result of {size} bytes exceeds the output limit of {limit} bytes")]
    OutputTooLarge { size: usize, limit: usize },
    #[error("the result breaks the {} limit of {limit}: {}", .what.name(), .what.says(*got))]
    OutputShape { what: Bound, limit: usize, got: usize },
    #[error("more than {limit} cursors open at once: drop cursors the analysis is done with")]
    CursorLimit { limit: usize },
    #[error(
        "the analysis handed the host more than {limit} bytes in one call (its result or an argument): return less"
    )]
    CopyLimit { limit: usize },
    #[error("the analysis trapped during {during}: {trap}{}", tail(log))]
    Trap { during: String, trap: String, log: Vec<String> },
    #[error("the analysis returned an error: {message}")]
    AnalysisFailed { message: String, log: Vec<LogLine> },
    #[error("team '{team}' already runs {limit} analyses at once (its concurrency limit); retry when one finishes")]
    TeamBusy { team: String, limit: usize },
    #[error("the server already runs {limit} analyses at once; retry shortly")]
    ServerBusy { limit: usize },
    #[error("the server already compiles {limit} uploads at once; retry shortly")]
    CompilesBusy { limit: usize },
    #[error(
        "team '{team}' would hold {analyses} analyses of {bytes} bytes; at most {max_analyses} and {max_bytes} bytes \
         per team: delete one it no longer needs (`loupe udf delete NAME`)"
    )]
    TeamFull { team: String, analyses: usize, bytes: u64, max_analyses: usize, max_bytes: u64 },
    #[error(
        "analysis '{0}' does not export merge, so it cannot run fleet-wide: build it with loupe_udf::export_fleet_analysis! (the fleet-analysis world) or loupe_udf::export_fleet_columns! (fleet-columns)"
    )]
    NotMergeable(String),
    #[error(
        "partial result of {size} bytes exceeds the fleet's limit of {limit} bytes: narrow the range, or aggregate more in run()"
    )]
    PartialTooLarge { size: usize, limit: usize },
    #[error("bad partial result: {0}")]
    BadPartial(String),
    #[error("the analysis' columnar result is malformed: {0}")]
    BadColumns(String),
    #[error("no space left on the data dir: {0}")]
    NoSpace(String),
    #[error("internal error: {0}")]
    Internal(String),
}

/// The last lines the guest wrote (a panic message), appended to a trap's error.
fn tail(log: &[String]) -> String {
    match log.len() {
        0 => String::new(),
        n => format!("; its output: {}", log[n.saturating_sub(3)..].join(" | ")),
    }
}

impl UdfError {
    /// What kind of failure it is (the HTTP status follows from it).
    pub fn kind(&self) -> ErrorKind {
        use UdfError::*;
        match self {
            NotFound(_) => ErrorKind::NotFound,
            BadName(_) | Malformed(_) | BadParams(_) => ErrorKind::Invalid,
            NotOwner { .. } => ErrorKind::Forbidden,
            ModuleTooLarge { .. } => ErrorKind::TooLarge,
            TimeLimit { .. } => ErrorKind::Timeout,
            TeamBusy { .. } | ServerBusy { .. } | CompilesBusy { .. } => ErrorKind::Busy,
            TeamFull { .. } => ErrorKind::Conflict,
            CoreModule | ForbiddenImport { .. } | Incompatible(_) => ErrorKind::Refused,
            MemoryLimit { .. } | TableLimit { .. } | StackLimit { .. } | OutputTooLarge { .. } => ErrorKind::Refused,
            OutputShape { .. } | CursorLimit { .. } | CopyLimit { .. } => ErrorKind::Refused,
            Trap { .. } | AnalysisFailed { .. } => ErrorKind::Refused,
            NotMergeable(_) | PartialTooLarge { .. } | BadPartial(_) | BadColumns(_) => ErrorKind::Refused,
            NoSpace(_) => ErrorKind::NoSpace,
            Internal(_) => ErrorKind::Internal,
        }
    }

    /// The lines an analysis logged before it failed (empty for other errors).
    pub fn log_lines(&self) -> Vec<String> {
        match self {
            UdfError::AnalysisFailed { log, .. } => log.iter().map(|l| format!("{}: {}", l.level, l.message)).collect(),
            _ => Vec::new(),
        }
    }

    /// Stable machine-readable code.
    pub fn code(&self) -> &'static str {
        use UdfError::*;
        match self {
            NotFound(_) => "not_found",
            BadName(_) => "bad_name",
            NotOwner { .. } => "not_owner",
            ModuleTooLarge { .. } => "module_too_large",
            Malformed(_) => "malformed_wasm",
            CoreModule => "not_a_component",
            ForbiddenImport { .. } => "forbidden_import",
            Incompatible(_) => "incompatible_component",
            BadParams(_) => "bad_params",
            TimeLimit { .. } => "time_limit",
            MemoryLimit { .. } => "memory_limit",
            TableLimit { .. } => "table_limit",
            StackLimit { .. } => "stack_limit",
            OutputTooLarge { .. } => "output_limit",
            OutputShape { what, .. } => what.code(),
            CursorLimit { .. } => "cursor_limit",
            CopyLimit { .. } => "output_limit",
            NotMergeable(_) => "not_mergeable",
            PartialTooLarge { .. } => "too_large",
            BadPartial(_) => "bad_partial",
            BadColumns(_) => "bad_columns",
            Trap { .. } => "trap",
            AnalysisFailed { .. } => "analysis_error",
            TeamBusy { .. } => "team_concurrency_limit",
            ServerBusy { .. } => "server_concurrency_limit",
            CompilesBusy { .. } => "compile_concurrency_limit",
            TeamFull { .. } => "team_analyses_full",
            NoSpace(_) => "no_space",
            Internal(_) => "internal",
        }
    }
}

/// Which bound a result broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    FlameDepth,
    FlameNodes,
    TableRows,
    TableColumns,
    CellBytes,
    Series,
    SeriesPoints,
    NameBytes,
}

impl Bound {
    pub fn name(self) -> &'static str {
        match self {
            Bound::FlameDepth => "flame-graph depth",
            Bound::FlameNodes => "flame-graph node",
            Bound::TableRows => "table row",
            Bound::TableColumns => "table column",
            Bound::CellBytes => "cell size",
            Bound::Series => "series count",
            Bound::SeriesPoints => "series point",
            Bound::NameBytes => "name size",
        }
    }

    pub fn code(self) -> &'static str {
        match self {
            Bound::FlameDepth => "flame_depth_limit",
            Bound::FlameNodes => "flame_nodes_limit",
            Bound::TableRows => "table_rows_limit",
            Bound::TableColumns => "table_columns_limit",
            Bound::CellBytes => "cell_size_limit",
            Bound::Series => "series_limit",
            Bound::SeriesPoints => "series_points_limit",
            Bound::NameBytes => "name_limit",
        }
    }

    /// What the analysis returned, in words.
    pub fn says(self, got: usize) -> String {
        match self {
            Bound::FlameDepth => format!("a stack of {got} frames"),
            Bound::FlameNodes => format!("more than {got} nodes"),
            Bound::TableRows => format!("{got} rows"),
            Bound::TableColumns => format!("{got} columns in a row"),
            Bound::CellBytes => format!("a cell of {got} bytes"),
            Bound::Series => format!("{got} series"),
            Bound::SeriesPoints => format!("{got} points"),
            Bound::NameBytes => format!("a name of {got} bytes"),
        }
    }
}
