//! An analysis' result as JSON: `{"kind": "table" | "series" | "flamegraph" | "text", …}`.
//! A flame graph comes back in exactly the shape of `loupe profile --json`, so one renderer
//! draws both.

use loupe_store::{Frame, Profile};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::host::loupe::udf::types as wit;
use crate::profile::ProfileView;

#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AnalysisOutput {
    Table {
        columns: Vec<Column>,
        /// Cells are numbers, strings or null.
        #[schema(value_type = Vec<Vec<Object>>)]
        rows: Vec<Vec<Value>>,
    },
    Series {
        series: Vec<Series>,
    },
    Flamegraph {
        #[schema(value_type = Object)]
        profile: ProfileView,
    },
    Text {
        text: String,
    },
}

#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct Column {
    pub name: String,
    pub unit: String,
}

#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct Series {
    pub name: String,
    pub unit: String,
    /// `[time_unix_ns, value]` pairs.
    pub points: Vec<(u64, f64)>,
}

impl AnalysisOutput {
    pub fn from_wit(o: wit::Output) -> AnalysisOutput {
        match o {
            wit::Output::Table(t) => AnalysisOutput::Table {
                columns: t.columns.into_iter().map(|c| Column { name: c.name, unit: c.unit }).collect(),
                rows: t.rows.into_iter().map(|r| r.into_iter().map(cell).collect()).collect(),
            },
            wit::Output::Series(s) => AnalysisOutput::Series {
                series: s
                    .into_iter()
                    .map(|s| Series {
                        name: s.name,
                        unit: s.unit,
                        points: s.points.into_iter().map(|p| (p.time_ns, p.value)).collect(),
                    })
                    .collect(),
            },
            wit::Output::Flamegraph(stacks) => {
                let stacks: Vec<(Vec<Frame>, u64)> = stacks
                    .into_iter()
                    .map(|s| {
                        let frames = s
                            .frames
                            .into_iter()
                            .map(|f| Frame { function: f.function, module: f.module, kernel: f.kernel })
                            .collect();
                        (frames, s.count)
                    })
                    .collect();
                let samples = stacks.iter().map(|(_, n)| n).sum();
                AnalysisOutput::Flamegraph { profile: ProfileView::new(&Profile { samples, lost: 0, stacks }) }
            }
            wit::Output::Text(text) => AnalysisOutput::Text { text },
        }
    }
}

fn cell(c: wit::Cell) -> Value {
    match c {
        wit::Cell::Empty => Value::Null,
        wit::Cell::Unsigned(n) => Value::from(n),
        wit::Cell::Signed(n) => Value::from(n),
        // NaN and infinities have no JSON form.
        wit::Cell::Float(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        wit::Cell::Text(s) => Value::from(s),
    }
}
