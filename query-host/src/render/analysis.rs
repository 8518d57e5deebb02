//! Analyses for a terminal: the list of `loupe udf list`, and a result of `loupe udf invoke`
//! (tables as columns, series as their points, flame graphs as their hot functions, text as is).

use std::fmt::Write as _;

use loupe_api::{
    clock::format_unix_ns,
    model::{AnalysisOutput, Cell, InvokeResponse, UdfMeta},
};

pub fn list(udfs: &[UdfMeta]) -> String {
    let mut out =
        format!("{:<24} {:<12} {:<10} {:>9}  {:<10}  summary\n", "name", "owner", "version", "bytes", "result");
    for u in udfs {
        let kind = serde_json::to_value(u.description.result_kind).ok();
        let _ = writeln!(
            out,
            "{:<24} {:<12} {:<10} {:>9}  {:<10}  {}",
            u.name,
            u.owner,
            u.version,
            u.size,
            kind.as_ref().and_then(|k| k.as_str()).unwrap_or(""),
            u.description.summary
        );
    }
    out
}

pub fn result(answer: &InvokeResponse) -> String {
    let mut out = output(&answer.output);
    for line in &answer.log {
        let _ = writeln!(out, "log {}: {}", line.level, line.message);
    }
    out
}

/// An analysis' result alone (also the merged result of a fleet invocation).
pub fn output(output: &AnalysisOutput) -> String {
    let mut out = String::new();
    match output {
        AnalysisOutput::Table { columns, rows } => {
            let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
            let _ = writeln!(out, "{}", names.join("\t"));
            for row in rows {
                let cells: Vec<String> = row
                    .iter()
                    .map(|c| match c {
                        Cell::Text(s) => s.clone(),
                        Cell::Empty => "-".into(),
                        Cell::Unsigned(n) => n.to_string(),
                        Cell::Signed(n) => n.to_string(),
                        Cell::Float(f) => f.to_string(),
                    })
                    .collect();
                let _ = writeln!(out, "{}", cells.join("\t"));
            }
        }
        AnalysisOutput::Series { series } => {
            for s in series {
                let _ = writeln!(out, "{} ({}): {} points", s.name, s.unit, s.points.len());
                for (t, v) in &s.points {
                    let _ = writeln!(out, "  {}  {v}", format_unix_ns(*t));
                }
            }
        }
        AnalysisOutput::Flamegraph { profile } => out.push_str(&super::profile::summary(profile, 25)),
        AnalysisOutput::Text { text } => {
            let _ = writeln!(out, "{text}");
        }
    }
    out
}
