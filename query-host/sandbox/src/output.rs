//! An analysis' result, checked before the host builds anything from it. Everything in it is
//! chosen by the analysis — in depth as well as size — so each dimension has a bound, checked on
//! the flat values wasmtime lifted out of the guest, and the JSON the host would write is
//! estimated before it is written: a stack of 200,000 frames or a table of millions of rows is
//! refused with a 422 naming the bound, not turned into a tree the server then recurses over.
//!
//! | bound | limit | code |
//! |---|---|---|
//! | frames in one flame-graph stack | [`MAX_FLAME_DEPTH`] | `flame_depth_limit` |
//! | flame-graph nodes (after merging) | [`MAX_FLAME_NODES`] | `flame_nodes_limit` |
//! | table rows | [`MAX_TABLE_ROWS`] | `table_rows_limit` |
//! | table columns (and cells per row) | [`MAX_TABLE_COLUMNS`] | `table_columns_limit` |
//! | bytes of one text cell | [`MAX_CELL_BYTES`] | `cell_size_limit` |
//! | series | [`MAX_SERIES`] | `series_limit` |
//! | points, all series together | [`MAX_POINTS`] | `series_points_limit` |
//! | bytes of a name (column, unit, series, frame, module) | [`MAX_NAME_BYTES`] | `name_limit` |
//! | bytes of the JSON result (text included) | `Limits::output_bytes` | `output_limit` |

use loupe_store::{Frame, FrameKind, Profile};

use super::{UdfError, bindings::wit};
use loupe_api::model::{AnalysisOutput, Cell, Column, ProfileView, Series, profile::MAX_FLAME_DEPTH as MODEL_DEPTH};

/// Frames in one stack of a flame-graph result: the flame graph's own depth bound.
pub const MAX_FLAME_DEPTH: usize = MODEL_DEPTH;
/// Nodes of a flame-graph result (a whole day of a 96-CPU host makes ~320,000).
pub const MAX_FLAME_NODES: usize = 500_000;
pub const MAX_TABLE_ROWS: usize = 100_000;
pub const MAX_TABLE_COLUMNS: usize = 256;
pub const MAX_CELL_BYTES: usize = 64 << 10;
pub const MAX_SERIES: usize = 256;
pub const MAX_POINTS: usize = 1_000_000;
pub const MAX_NAME_BYTES: usize = 4 << 10;

pub use loupe_api::error::Bound;

/// The bytes of `output`'s JSON, counted as it is written rather than into a buffer (a merged
/// fleet result can be megabytes, freshly allocated only to be measured); an error over
/// `limit`.
pub fn json_bytes(output: &AnalysisOutput, limit: usize) -> Result<usize, UdfError> {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let size = serde_json::to_writer(&mut count, output).map(|()| count.0).unwrap_or(usize::MAX);
    if size > limit { Err(UdfError::OutputTooLarge { size, limit }) } else { Ok(size) }
}

fn check(what: Bound, limit: usize, got: usize) -> Result<(), UdfError> {
    if got > limit { Err(UdfError::OutputShape { what, limit, got }) } else { Ok(()) }
}

/// Roughly the JSON bytes of a string (quotes, a separator).
fn text_cost(s: &str) -> usize {
    s.len() + 3
}

/// The result, bounded in every dimension and in its estimated JSON size (`output_bytes`).
pub fn bounded(o: wit::Output, output_bytes: usize) -> Result<AnalysisOutput, UdfError> {
    let mut size = 0usize;
    let name = |s: &str, size: &mut usize| {
        *size = size.saturating_add(text_cost(s));
        check(Bound::NameBytes, MAX_NAME_BYTES, s.len())
    };
    let too_big = |size: usize| {
        if size > output_bytes { Err(UdfError::OutputTooLarge { size, limit: output_bytes }) } else { Ok(()) }
    };
    let output = match o {
        wit::Output::Table(t) => {
            check(Bound::TableColumns, MAX_TABLE_COLUMNS, t.columns.len())?;
            check(Bound::TableRows, MAX_TABLE_ROWS, t.rows.len())?;
            for c in &t.columns {
                name(&c.name, &mut size)?;
                name(&c.unit, &mut size)?;
            }
            for row in &t.rows {
                check(Bound::TableColumns, MAX_TABLE_COLUMNS, row.len())?;
                for c in row {
                    size = size.saturating_add(match c {
                        wit::Cell::Text(s) => {
                            check(Bound::CellBytes, MAX_CELL_BYTES, s.len())?;
                            text_cost(s)
                        }
                        _ => 21,
                    });
                }
                too_big(size)?;
            }
            AnalysisOutput::Table {
                columns: t.columns.into_iter().map(|c| Column { name: c.name, unit: c.unit }).collect(),
                rows: t.rows.into_iter().map(|r| r.into_iter().map(cell).collect()).collect(),
            }
        }
        wit::Output::Series(all) => {
            check(Bound::Series, MAX_SERIES, all.len())?;
            let points: usize = all.iter().map(|s| s.points.len()).sum();
            check(Bound::SeriesPoints, MAX_POINTS, points)?;
            for s in &all {
                name(&s.name, &mut size)?;
                name(&s.unit, &mut size)?;
            }
            too_big(size.saturating_add(points * 44))?;
            AnalysisOutput::Series {
                series: all
                    .into_iter()
                    .map(|s| Series {
                        name: s.name,
                        unit: s.unit,
                        points: s.points.into_iter().map(|p| (p.time_ns, p.value)).collect(),
                    })
                    .collect(),
            }
        }
        wit::Output::Flamegraph(stacks) => {
            for s in &stacks {
                check(Bound::FlameDepth, MAX_FLAME_DEPTH, s.frames.len())?;
                for f in &s.frames {
                    name(&f.function, &mut size)?;
                    name(&f.module, &mut size)?;
                }
            }
            let stacks: Vec<(Vec<Frame>, u64)> = stacks
                .into_iter()
                .map(|s| {
                    let frames = s
                        .frames
                        .into_iter()
                        .map(|f| {
                            // The analysis' interface carries no kind: the one the frame implies.
                            let kind = FrameKind::implied(f.kernel, &f.module);
                            Frame {
                                function: f.function.into(),
                                module: f.module.into(),
                                kernel: f.kernel,
                                location: None,
                                kind,
                            }
                        })
                        .collect();
                    (frames, s.count)
                })
                .collect();
            let samples = stacks.iter().fold(0u64, |n, (_, c)| n.saturating_add(*c));
            let profile = Profile { samples, lost: 0, stacks, span: None };
            let view = ProfileView::with_node_limit(&profile, MAX_FLAME_NODES + 1).map_err(|_| {
                UdfError::OutputShape { what: Bound::FlameNodes, limit: MAX_FLAME_NODES, got: MAX_FLAME_NODES }
            })?;
            AnalysisOutput::Flamegraph { profile: view }
        }
        wit::Output::Text(text) => {
            too_big(text_cost(&text))?;
            AnalysisOutput::Text { text }
        }
    };
    Ok(output)
}

fn cell(c: wit::Cell) -> Cell {
    match c {
        wit::Cell::Empty => Cell::Empty,
        wit::Cell::Unsigned(n) => Cell::Unsigned(n),
        wit::Cell::Signed(n) => Cell::Signed(n),
        // NaN and infinities have no JSON form.
        wit::Cell::Float(f) if f.is_finite() => Cell::Float(f),
        wit::Cell::Float(_) => Cell::Empty,
        wit::Cell::Text(s) => Cell::Text(s),
    }
}

/// A columnar result (`fleet-columns`) checked: the table bounds on its columns (every column
/// one length, every code inside its dictionary, each distinct string a cell's size at most),
/// the series bounds on its series (times and values of one length). What it breaks is
/// returned as words, for the caller's error: a guest's output (`bad_columns`) or another
/// host's partial (`bad_partial`).
pub fn check_columns(c: &wit::Columns) -> Result<(), String> {
    let bound = |what: Bound, limit: usize, got: usize| match check(what, limit, got) {
        Ok(()) => Ok(()),
        Err(_) => Err(format!("{}, over the {} limit of {limit}", what.says(got), what.name())),
    };
    bound(Bound::TableColumns, MAX_TABLE_COLUMNS, c.columns.len())?;
    let rows = c.columns.first().map_or(0, |col| column_len(&col.values));
    bound(Bound::TableRows, MAX_TABLE_ROWS, rows)?;
    for col in &c.columns {
        bound(Bound::NameBytes, MAX_NAME_BYTES, col.name.len().max(col.unit.len()))?;
        if column_len(&col.values) != rows {
            return Err(format!("column {:?} has {} rows, the first {rows}", col.name, column_len(&col.values)));
        }
        if let wit::ColumnValues::Text(t) = &col.values {
            bound(Bound::TableRows, MAX_TABLE_ROWS, t.dictionary.len())?;
            if let Some(s) = t.dictionary.iter().find(|s| s.len() > MAX_CELL_BYTES) {
                bound(Bound::CellBytes, MAX_CELL_BYTES, s.len())?;
            }
            if let Some(code) = t.codes.iter().find(|&&code| code as usize >= t.dictionary.len()) {
                return Err(format!(
                    "column {:?} codes {code}, past its dictionary of {}",
                    col.name,
                    t.dictionary.len()
                ));
            }
        }
    }
    bound(Bound::Series, MAX_SERIES, c.series.len())?;
    bound(Bound::SeriesPoints, MAX_POINTS, c.series.iter().map(|s| s.times_ns.len()).sum())?;
    for s in &c.series {
        bound(Bound::NameBytes, MAX_NAME_BYTES, s.name.len().max(s.unit.len()))?;
        if s.times_ns.len() != s.values.len() {
            return Err(format!("series {:?} has {} times and {} values", s.name, s.times_ns.len(), s.values.len()));
        }
    }
    Ok(())
}

fn column_len(v: &wit::ColumnValues) -> usize {
    match v {
        wit::ColumnValues::Unsigned(v) => v.len(),
        wit::ColumnValues::Signed(v) => v.len(),
        wit::ColumnValues::Float(v) => v.len(),
        wit::ColumnValues::Text(t) => t.codes.len(),
    }
}

/// A checked columnar result as the output it is shown as: a table when it has columns, else
/// its series (then bounded like any output by [`bounded`]).
pub fn columns_output(c: wit::Columns) -> wit::Output {
    if c.columns.is_empty() {
        return wit::Output::Series(
            c.series
                .into_iter()
                .map(|s| wit::Series {
                    name: s.name,
                    unit: s.unit,
                    points: s
                        .times_ns
                        .into_iter()
                        .zip(s.values)
                        .map(|(time_ns, value)| wit::Point { time_ns, value })
                        .collect(),
                })
                .collect(),
        );
    }
    let rows = column_len(&c.columns[0].values);
    let columns = c.columns.iter().map(|col| wit::Column { name: col.name.clone(), unit: col.unit.clone() }).collect();
    let rows = (0..rows)
        .map(|i| {
            c.columns
                .iter()
                .map(|col| match &col.values {
                    wit::ColumnValues::Unsigned(v) => wit::Cell::Unsigned(v[i]),
                    wit::ColumnValues::Signed(v) => wit::Cell::Signed(v[i]),
                    wit::ColumnValues::Float(v) => wit::Cell::Float(v[i]),
                    wit::ColumnValues::Text(t) => {
                        wit::Cell::Text(t.dictionary.get(t.codes[i] as usize).cloned().unwrap_or_default())
                    }
                })
                .collect()
        })
        .collect();
    wit::Output::Table(wit::Table { columns, rows })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_bytes_counts_what_would_be_written_and_refuses_past_the_limit() {
        let output = AnalysisOutput::Text { text: "ÿ \"quoted\"\n".repeat(1000) };
        let written = serde_json::to_vec(&output).unwrap().len();
        assert_eq!(json_bytes(&output, written).unwrap(), written);
        match json_bytes(&output, written - 1) {
            Err(UdfError::OutputTooLarge { size, limit }) => assert_eq!((size, limit), (written, written - 1)),
            other => panic!("{other:?}"),
        }
    }
}
