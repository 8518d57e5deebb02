//! An analysis as every door shows it: what it says of itself ([`UdfMeta`], [`Description`])
//! and its answer, `{"kind": "table" | "series" | "flamegraph" | "text", …}`, plus what the
//! sandbox saw. A flame graph comes back in exactly the shape of
//! `loupe profile --json`, so one renderer draws both.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::profile::ProfileView;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AnalysisOutput {
    Table { columns: Vec<Column>, rows: Vec<Vec<Cell>> },
    Series { series: Vec<Series> },
    Flamegraph { profile: ProfileView },
    Text { text: String },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Column {
    pub name: String,
    pub unit: String,
}

/// A table cell: a number, a string, or null (empty, or a float with no JSON form).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Cell {
    Unsigned(u64),
    Signed(i64),
    Float(f64),
    Text(String),
    Empty,
}

/// `anyOf` number, string, null: a derived `oneOf` of the variants would make every
/// non-negative integer match three of them.
impl utoipa::PartialSchema for Cell {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{AnyOfBuilder, ObjectBuilder, Type};
        AnyOfBuilder::new()
            .item(ObjectBuilder::new().schema_type(Type::Number))
            .item(ObjectBuilder::new().schema_type(Type::String))
            .item(ObjectBuilder::new().schema_type(Type::Null))
            .description(Some("A number, a string, or null"))
            .into()
    }
}

impl ToSchema for Cell {}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Series {
    pub name: String,
    pub unit: String,
    /// `[time_unix_ns, value]` pairs.
    #[schema(value_type = Vec<Vec<f64>>)]
    pub points: Vec<(u64, f64)>,
}

/// One line an analysis logged (its log calls, stdout and stderr).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct LogLine {
    /// `debug`, `info`, `warn` or `error`; `stdout`/`stderr` for captured output.
    pub level: String,
    pub message: String,
}

/// `POST /api/v1/udfs/{name}/invoke`: the result and how the invocation went.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct InvokeResponse {
    #[serde(flatten)]
    pub output: AnalysisOutput,
    pub log: Vec<LogLine>,
    /// Log lines dropped beyond the log limit.
    pub log_dropped: u64,
    pub elapsed_ns: u64,
    pub peak_memory_bytes: u64,
    /// Bytes of the result as JSON.
    pub output_bytes: u64,
}

/// What `GET /api/v1/udfs` lists for each analysis.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct UdfMeta {
    /// The name it was uploaded under (the URL's).
    pub name: String,
    /// The team that uploaded it: only this team may replace or delete it.
    pub owner: String,
    pub version: String,
    /// Bytes of the component.
    pub size: u64,
    /// SHA-256 of the component, hex.
    pub sha256: String,
    pub uploaded_unix_ns: u64,
    pub description: Description,
}

/// An upload's answer: the analysis as listed, and whether it replaced an earlier version.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Uploaded {
    #[serde(flatten)]
    pub meta: UdfMeta,
    /// Whether an earlier version was replaced.
    pub replaced: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ParamKind {
    Unsigned,
    Float,
    Text,
    Flag,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ParamSpec {
    pub name: String,
    pub kind: ParamKind,
    /// The value used when the parameter is not given (a number, text or flag); `null`: the
    /// parameter is required.
    pub default: Option<Value>,
    pub description: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResultKind {
    Table,
    Series,
    Flamegraph,
    Text,
}

/// What `describe()` returned.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Description {
    pub name: String,
    pub version: String,
    pub summary: String,
    pub params: Vec<ParamSpec>,
    pub result_kind: ResultKind,
    /// It exports `merge` (the `fleet-analysis` world), so it can run fleet-wide.
    #[serde(default)]
    pub mergeable: bool,
}
