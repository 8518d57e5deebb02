//! A host's result of a fleet-wide analysis as it travels to whoever asked: the guest's own
//! `output` (before this host turns it into a view), MessagePack, at most [`MAX_PARTIAL_BYTES`].
//!
//! The asker merges partials with the analysis' `merge`, so they travel in the guest's shape,
//! flame graphs as weighted stacks rather than trees. A partial comes from another host — one
//! that may be compromised or simply buggy — so [`decode`] checks its size first, decodes it
//! with a nesting cap (the shape nests at most four levels), and bounds every dimension with
//! the limits a local result has (`output.rs`) before anything is built from it.

use serde::{Deserialize, Serialize};

use super::{
    UdfError,
    bindings::wit,
    output::{
        MAX_CELL_BYTES, MAX_FLAME_DEPTH, MAX_NAME_BYTES, MAX_POINTS, MAX_SERIES, MAX_TABLE_COLUMNS, MAX_TABLE_ROWS,
        check_columns,
    },
};
use loupe_api::formats::msgpack;

/// Largest encoded partial: NATS's default message limit is 1 MiB, and a reply carries an
/// envelope (host, query id) around the partial.
pub const MAX_PARTIAL_BYTES: usize = 768 << 10;

/// Stacks of one flame-graph partial (each up to [`MAX_FLAME_DEPTH`] frames).
const MAX_STACKS: usize = 200_000;

/// A partial as it travels. Variants are encoded by index: new ones go last.
#[derive(Serialize, Deserialize)]
enum Partial {
    Table {
        columns: Vec<(String, String)>,
        rows: Vec<Vec<Cell>>,
    },
    Series(Vec<(String, String, Vec<(u64, f64)>)>),
    Flamegraph(Vec<(Vec<(String, String, bool)>, u64)>),
    Text(String),
    /// A `fleet-columns` analysis' partial: (name, unit, values) columns, (name, unit, times,
    /// values) series.
    Columns {
        columns: Vec<(String, String, Values)>,
        series: Vec<(String, String, Vec<u64>, Vec<f64>)>,
    },
}

#[derive(Serialize, Deserialize)]
enum Values {
    Unsigned(Vec<u64>),
    Signed(Vec<i64>),
    Float(Vec<f64>),
    /// Dictionary, codes.
    Text(Vec<String>, Vec<u32>),
}

/// A decoded partial: a result of any fleet analysis (`fleet-analysis`), or a columnar one
/// (`fleet-columns`).
#[derive(Clone, Debug, PartialEq)]
pub enum Decoded {
    Output(wit::Output),
    Columns(wit::Columns),
}

impl Decoded {
    /// About the bytes it takes in a guest's memory once lowered: what a merge call's share of
    /// partials is bounded by ([`super::merge::CALL_BYTES`]). A walk over rows and dictionary
    /// entries, never over a column of numbers.
    pub fn weight(&self) -> usize {
        const ENTRY: usize = 8;
        let text = |s: &str| ENTRY + s.len();
        match self {
            Decoded::Columns(c) => {
                let columns: usize = c
                    .columns
                    .iter()
                    .map(|col| {
                        text(&col.name)
                            + text(&col.unit)
                            + match &col.values {
                                wit::ColumnValues::Unsigned(v) => 8 * v.len(),
                                wit::ColumnValues::Signed(v) => 8 * v.len(),
                                wit::ColumnValues::Float(v) => 8 * v.len(),
                                wit::ColumnValues::Text(t) => {
                                    4 * t.codes.len() + t.dictionary.iter().map(|d| text(d)).sum::<usize>()
                                }
                            }
                    })
                    .sum();
                let series: usize = c
                    .series
                    .iter()
                    .map(|s| text(&s.name) + text(&s.unit) + 8 * (s.times_ns.len() + s.values.len()))
                    .sum();
                columns + series
            }
            Decoded::Output(wit::Output::Table(t)) => {
                let cell = |c: &wit::Cell| match c {
                    wit::Cell::Text(s) => 16 + s.len(),
                    _ => 16,
                };
                t.columns.iter().map(|c| text(&c.name) + text(&c.unit)).sum::<usize>()
                    + t.rows.iter().map(|r| ENTRY + r.iter().map(cell).sum::<usize>()).sum::<usize>()
            }
            Decoded::Output(wit::Output::Series(s)) => {
                s.iter().map(|s| text(&s.name) + text(&s.unit) + 16 * s.points.len()).sum()
            }
            Decoded::Output(wit::Output::Flamegraph(stacks)) => stacks
                .iter()
                .map(|s| ENTRY + 8 + s.frames.iter().map(|f| 1 + text(&f.function) + text(&f.module)).sum::<usize>())
                .sum(),
            Decoded::Output(wit::Output::Text(t)) => text(t),
        }
    }
}

impl From<wit::Output> for Decoded {
    fn from(o: wit::Output) -> Decoded {
        Decoded::Output(o)
    }
}

impl From<wit::Columns> for Decoded {
    fn from(c: wit::Columns) -> Decoded {
        Decoded::Columns(c)
    }
}

#[derive(Serialize, Deserialize)]
enum Cell {
    Empty,
    Unsigned(u64),
    Signed(i64),
    Float(f64),
    Text(String),
}

/// Encodes a result for the wire, refusing one over [`MAX_PARTIAL_BYTES`] with both sizes.
pub fn encode(output: &wit::Output) -> Result<Vec<u8>, UdfError> {
    let p = match output {
        wit::Output::Table(t) => Partial::Table {
            columns: t.columns.iter().map(|c| (c.name.clone(), c.unit.clone())).collect(),
            rows: t.rows.iter().map(|r| r.iter().map(cell_out).collect()).collect(),
        },
        wit::Output::Series(s) => Partial::Series(
            s.iter()
                .map(|s| (s.name.clone(), s.unit.clone(), s.points.iter().map(|p| (p.time_ns, p.value)).collect()))
                .collect(),
        ),
        wit::Output::Flamegraph(stacks) => Partial::Flamegraph(
            stacks
                .iter()
                .map(|s| (s.frames.iter().map(|f| (f.function.clone(), f.module.clone(), f.kernel)).collect(), s.count))
                .collect(),
        ),
        wit::Output::Text(t) => Partial::Text(t.clone()),
    };
    to_wire(&p)
}

/// Encodes a columnar result for the wire (checked by the caller), refusing one over
/// [`MAX_PARTIAL_BYTES`] with both sizes.
pub fn encode_columns(c: &wit::Columns) -> Result<Vec<u8>, UdfError> {
    let columns = c
        .columns
        .iter()
        .map(|col| {
            let values = match &col.values {
                wit::ColumnValues::Unsigned(v) => Values::Unsigned(v.clone()),
                wit::ColumnValues::Signed(v) => Values::Signed(v.clone()),
                wit::ColumnValues::Float(v) => Values::Float(v.clone()),
                wit::ColumnValues::Text(t) => Values::Text(t.dictionary.clone(), t.codes.clone()),
            };
            (col.name.clone(), col.unit.clone(), values)
        })
        .collect();
    let series =
        c.series.iter().map(|s| (s.name.clone(), s.unit.clone(), s.times_ns.clone(), s.values.clone())).collect();
    to_wire(&Partial::Columns { columns, series })
}

/// Either kind of partial, encoded.
pub fn encode_decoded(d: &Decoded) -> Result<Vec<u8>, UdfError> {
    match d {
        Decoded::Output(o) => encode(o),
        Decoded::Columns(c) => encode_columns(c),
    }
}

fn to_wire(p: &Partial) -> Result<Vec<u8>, UdfError> {
    let bytes = rmp_serde::to_vec(p).map_err(|e| UdfError::Internal(format!("encoding a partial: {e}")))?;
    if bytes.len() > MAX_PARTIAL_BYTES {
        return Err(UdfError::PartialTooLarge { size: bytes.len(), limit: MAX_PARTIAL_BYTES });
    }
    Ok(bytes)
}

fn cell_out(c: &wit::Cell) -> Cell {
    match c {
        wit::Cell::Empty => Cell::Empty,
        wit::Cell::Unsigned(n) => Cell::Unsigned(*n),
        wit::Cell::Signed(n) => Cell::Signed(*n),
        wit::Cell::Float(f) => Cell::Float(*f),
        wit::Cell::Text(s) => Cell::Text(s.clone()),
    }
}

fn bound(what: &str, limit: usize, got: usize) -> Result<(), UdfError> {
    if got > limit { Err(UdfError::BadPartial(format!("{got} {what}, over the limit of {limit}"))) } else { Ok(()) }
}

fn name(s: String) -> Result<String, UdfError> {
    bound("bytes in a name", MAX_NAME_BYTES, s.len())?;
    Ok(s)
}

/// Decodes a partial from another host, every dimension bounded.
pub fn decode(bytes: &[u8]) -> Result<Decoded, UdfError> {
    bound("bytes", MAX_PARTIAL_BYTES, bytes.len())?;
    let p: Partial = msgpack::from_slice(bytes).map_err(|e| UdfError::BadPartial(format!("undecodable: {e}")))?;
    Ok(Decoded::Output(match p {
        Partial::Table { columns, rows } => {
            bound("columns", MAX_TABLE_COLUMNS, columns.len())?;
            bound("rows", MAX_TABLE_ROWS, rows.len())?;
            let columns = columns
                .into_iter()
                .map(|(n, u)| Ok(wit::Column { name: name(n)?, unit: name(u)? }))
                .collect::<Result<_, UdfError>>()?;
            let rows = rows
                .into_iter()
                .map(|r| {
                    bound("cells in a row", MAX_TABLE_COLUMNS, r.len())?;
                    r.into_iter()
                        .map(|c| {
                            Ok(match c {
                                Cell::Empty => wit::Cell::Empty,
                                Cell::Unsigned(n) => wit::Cell::Unsigned(n),
                                Cell::Signed(n) => wit::Cell::Signed(n),
                                Cell::Float(f) => wit::Cell::Float(f),
                                Cell::Text(s) => {
                                    bound("bytes in a cell", MAX_CELL_BYTES, s.len())?;
                                    wit::Cell::Text(s)
                                }
                            })
                        })
                        .collect::<Result<Vec<_>, UdfError>>()
                })
                .collect::<Result<_, UdfError>>()?;
            wit::Output::Table(wit::Table { columns, rows })
        }
        Partial::Series(series) => {
            bound("series", MAX_SERIES, series.len())?;
            bound("points", MAX_POINTS, series.iter().map(|s| s.2.len()).sum())?;
            wit::Output::Series(
                series
                    .into_iter()
                    .map(|(n, u, points)| {
                        Ok(wit::Series {
                            name: name(n)?,
                            unit: name(u)?,
                            points: points.into_iter().map(|(time_ns, value)| wit::Point { time_ns, value }).collect(),
                        })
                    })
                    .collect::<Result<_, UdfError>>()?,
            )
        }
        Partial::Flamegraph(stacks) => {
            bound("stacks", MAX_STACKS, stacks.len())?;
            wit::Output::Flamegraph(
                stacks
                    .into_iter()
                    .map(|(frames, count)| {
                        bound("frames in a stack", MAX_FLAME_DEPTH, frames.len())?;
                        let frames = frames
                            .into_iter()
                            .map(|(f, m, kernel)| Ok(wit::Frame { function: name(f)?, module: name(m)?, kernel }))
                            .collect::<Result<_, UdfError>>()?;
                        Ok(wit::WeightedStack { frames, count })
                    })
                    .collect::<Result<_, UdfError>>()?,
            )
        }
        Partial::Text(t) => wit::Output::Text(t),
        Partial::Columns { columns, series } => {
            // The sizes first: nothing below is built past them.
            bound("columns", MAX_TABLE_COLUMNS, columns.len())?;
            bound("series", MAX_SERIES, series.len())?;
            let columns = columns
                .into_iter()
                .map(|(name, unit, values)| {
                    let values = match values {
                        Values::Unsigned(v) => wit::ColumnValues::Unsigned(v),
                        Values::Signed(v) => wit::ColumnValues::Signed(v),
                        Values::Float(v) => wit::ColumnValues::Float(v),
                        Values::Text(dictionary, codes) => {
                            wit::ColumnValues::Text(wit::CodedText { dictionary, codes })
                        }
                    };
                    wit::NamedColumn { name, unit, values }
                })
                .collect();
            let series = series
                .into_iter()
                .map(|(name, unit, times_ns, values)| wit::SeriesColumn { name, unit, times_ns, values })
                .collect();
            let c = wit::Columns { columns, series };
            check_columns(&c).map_err(UdfError::BadPartial)?;
            return Ok(Decoded::Columns(c));
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(rows: usize, text: &str) -> wit::Output {
        wit::Output::Table(wit::Table {
            columns: vec![
                wit::Column { name: "a".into(), unit: "".into() },
                wit::Column { name: "b".into(), unit: "".into() },
            ],
            rows: (0..rows).map(|i| vec![wit::Cell::Unsigned(i as u64), wit::Cell::Text(text.into())]).collect(),
        })
    }

    #[test]
    fn a_partial_round_trips() {
        let t = table(3, "x");
        assert_eq!(decode(&encode(&t).unwrap()).unwrap(), Decoded::Output(t));
        let f = wit::Output::Flamegraph(vec![wit::WeightedStack {
            frames: vec![wit::Frame { function: "f".into(), module: "m".into(), kernel: false }],
            count: 3,
        }]);
        assert_eq!(decode(&encode(&f).unwrap()).unwrap(), Decoded::Output(f));
        let c = columns(&[0, 1, 0]);
        assert_eq!(decode(&encode_columns(&c).unwrap()).unwrap(), Decoded::Columns(c));
    }

    fn columns(codes: &[u32]) -> wit::Columns {
        wit::Columns {
            columns: vec![
                wit::NamedColumn {
                    name: "n".into(),
                    unit: "".into(),
                    values: wit::ColumnValues::Unsigned((0..codes.len() as u64).collect()),
                },
                wit::NamedColumn {
                    name: "host".into(),
                    unit: "".into(),
                    values: wit::ColumnValues::Text(wit::CodedText {
                        dictionary: vec!["h1".into(), "h2".into()],
                        codes: codes.to_vec(),
                    }),
                },
            ],
            series: vec![wit::SeriesColumn {
                name: "rate".into(),
                unit: "bps".into(),
                times_ns: vec![1, 2],
                values: vec![0.5, 1.0],
            }],
        }
    }

    #[test]
    fn hostile_columnar_partials_are_refused_with_what_they_broke() {
        let refused = |c: &wit::Columns| decode(&encode_columns(c).unwrap()).unwrap_err().to_string();
        assert!(refused(&columns(&[0, 2])).contains("codes 2, past its dictionary of 2"));
        let mut ragged = columns(&[0, 1]);
        ragged.columns[0].values = wit::ColumnValues::Unsigned(vec![1, 2, 3]);
        assert!(refused(&ragged).contains("column \"host\" has 2 rows, the first 3"), "{}", refused(&ragged));
        let mut series = columns(&[0]);
        series.series[0].values.pop();
        assert!(refused(&series).contains("2 times and 1 values"));
        let mut wide = columns(&[0]);
        let first = wide.columns[0].clone();
        wide.columns.extend(std::iter::repeat_n(first, MAX_TABLE_COLUMNS));
        assert!(refused(&wide).contains("columns"));
        let mut long = columns(&[]);
        long.columns.truncate(1);
        long.columns[0].values = wit::ColumnValues::Unsigned(vec![0; MAX_TABLE_ROWS + 1]);
        assert!(refused(&long).contains("rows"), "{}", refused(&long));
    }

    #[test]
    fn an_oversized_partial_is_refused_with_both_sizes() {
        let err = encode(&table(20_000, "some text that takes room")).unwrap_err();
        assert!(matches!(err, UdfError::PartialTooLarge { size, limit } if size > limit && limit == MAX_PARTIAL_BYTES));
        assert!(err.to_string().contains("narrow the range"), "{err}");
    }

    #[test]
    fn hostile_partials_are_errors_not_crashes() {
        // Truncated, garbage, deeply nested, a claimed 4-billion-row table, too many rows.
        let good = encode(&table(3, "x")).unwrap();
        assert!(decode(&good[..good.len() - 3]).is_err());
        assert!(decode(&[0xc1; 64]).is_err());
        let mut deep = vec![0x91u8; 500_000];
        deep.push(0xc0);
        assert!(decode(&deep).is_err());
        let claimed = [0x81, 0xa5, b'T', b'a', b'b', b'l', b'e', 0x92, 0x90, 0xdd, 0xff, 0xff, 0xff, 0xff];
        assert!(decode(&claimed).is_err());
        let many = rmp_serde::to_vec(&Partial::Table {
            columns: vec![],
            rows: (0..MAX_TABLE_ROWS + 1).map(|_| vec![]).collect(),
        })
        .unwrap();
        let err = decode(&many).unwrap_err().to_string();
        assert!(err.contains("rows"), "{err}");
    }
}
