//! Columnar results ([`Columns`]) for fleet analyses whose partials are large: every partial
//! crosses into the sandbox of whoever merges, and a table's cells cross one at a time (each
//! string a call into the guest's allocator), where a column of numbers crosses as one copy and
//! a column of strings as its distinct strings plus one index per row. Measured
//! (`benches/merge.rs`): merging 1,000 `rack-contention` partials of 300 rows took 384 ms as
//! tables, most of it lowering 3.3 million cells.
//!
//! Build one with [`Columns::new`] and [`Columns::column`] (numbers from a `Vec`, strings from
//! a [`TextColumn`] that codes them as they are pushed); read one with [`Columns::get`] and
//! [`ColumnValues::u64s`] / [`ColumnValues::text`]. A local invocation shows it as a table
//! ([`Output::from`]), as the host does a merged fleet result.

use crate::{
    intern::FastMap,
    partial::Values,
    types::{Cell, CodedText, Column, ColumnValues, Columns, NamedColumn, Output, Point, Series, SeriesColumn, Table},
};

impl Columns {
    pub fn new() -> Self {
        Self { columns: Vec::new(), series: Vec::new() }
    }

    /// Adds a column (every column of a result has one length).
    pub fn column(mut self, name: &str, unit: &str, values: impl Into<ColumnValues>) -> Self {
        self.columns.push(NamedColumn { name: name.into(), unit: unit.into(), values: values.into() });
        self
    }

    /// Adds a series of `times_ns.len()` points.
    pub fn series(mut self, name: &str, unit: &str, times_ns: Vec<u64>, values: Vec<f64>) -> Self {
        self.series.push(SeriesColumn { name: name.into(), unit: unit.into(), times_ns, values });
        self
    }

    /// The column named `name`.
    pub fn get(&self, name: &str) -> Option<&ColumnValues> {
        self.columns.iter().find(|c| c.name == name).map(|c| &c.values)
    }

    /// The column named `name`, which must be there: an error naming it otherwise (a partial
    /// made by another version of the analysis, or by something else).
    pub fn require(&self, name: &str) -> Result<&ColumnValues, String> {
        self.get(name).ok_or_else(|| format!("a partial without the column {name:?}"))
    }

    /// Rows: the length of the first column (0 without columns).
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |c| c.values.len())
    }
}

impl Default for Columns {
    fn default() -> Self {
        Self::new()
    }
}

impl ColumnValues {
    pub fn len(&self) -> usize {
        Values::from(self).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The numbers of an unsigned column, or an error saying what it is instead.
    pub fn u64s(&self) -> Result<&[u64], String> {
        Values::from(self).u64s()
    }

    /// A column of strings, or an error saying what it is instead.
    pub fn text(&self) -> Result<&CodedText, String> {
        match self {
            Self::Text(t) => Ok(t),
            other => Err(format!("expected a column of text, got {}", Values::from(other).kind())),
        }
    }

    /// Row `i` as a table cell.
    fn cell(&self, i: usize) -> Cell {
        match self {
            Self::Unsigned(v) => Cell::Unsigned(v[i]),
            Self::Signed(v) => Cell::Signed(v[i]),
            Self::Float(v) => Cell::Float(v[i]),
            Self::Text(t) => Cell::Text(t.get(i).unwrap_or_default().to_string()),
        }
    }
}

impl CodedText {
    /// Row `i`'s string (`None` past the end or for a code outside the dictionary).
    pub fn get(&self, i: usize) -> Option<&str> {
        self.dictionary.get(*self.codes.get(i)? as usize).map(String::as_str)
    }
}

impl From<Vec<u64>> for ColumnValues {
    fn from(v: Vec<u64>) -> Self {
        Self::Unsigned(v)
    }
}
impl From<Vec<i64>> for ColumnValues {
    fn from(v: Vec<i64>) -> Self {
        Self::Signed(v)
    }
}
impl From<Vec<f64>> for ColumnValues {
    fn from(v: Vec<f64>) -> Self {
        Self::Float(v)
    }
}
impl From<TextColumn> for ColumnValues {
    fn from(t: TextColumn) -> Self {
        Self::Text(CodedText { dictionary: t.dictionary, codes: t.codes })
    }
}

/// A column of strings being built: each distinct string is kept once.
#[derive(Clone, Debug, Default)]
pub struct TextColumn {
    dictionary: Vec<String>,
    codes: Vec<u32>,
    index: FastMap<String, u32>,
}

impl TextColumn {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, s: &str) {
        let code = match self.index.get(s) {
            Some(&c) => c,
            None => {
                let c = self.dictionary.len() as u32;
                self.dictionary.push(s.to_string());
                self.index.insert(s.to_string(), c);
                c
            }
        };
        self.codes.push(code);
    }

    pub fn len(&self) -> usize {
        self.codes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.codes.is_empty()
    }
}

/// A columnar result as the table (or, without columns, the series) a local invocation shows.
impl From<Columns> for Output {
    fn from(c: Columns) -> Self {
        if c.columns.is_empty() {
            return Output::Series(
                c.series
                    .into_iter()
                    .map(|s| Series {
                        name: s.name,
                        unit: s.unit,
                        points: s
                            .times_ns
                            .into_iter()
                            .zip(s.values)
                            .map(|(time_ns, value)| Point { time_ns, value })
                            .collect(),
                    })
                    .collect(),
            );
        }
        let rows = c.rows();
        Output::Table(Table {
            columns: c.columns.iter().map(|col| Column { name: col.name.clone(), unit: col.unit.clone() }).collect(),
            rows: (0..rows).map(|i| c.columns.iter().map(|col| col.values.cell(i)).collect()).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_coded_once_and_read_back() {
        let mut hosts = TextColumn::new();
        for h in ["h1", "h2", "h1", "h1"] {
            hosts.push(h);
        }
        let c = Columns::new().column("n", "", vec![1u64, 2, 3, 4]).column("host", "", hosts);
        let t = c.require("host").unwrap().text().unwrap();
        assert_eq!(t.dictionary, ["h1", "h2"]);
        assert_eq!(t.codes, [0, 1, 0, 0]);
        assert_eq!(t.get(3), Some("h1"));
        assert_eq!(c.require("n").unwrap().u64s().unwrap(), [1, 2, 3, 4]);
        assert!(c.require("host").unwrap().u64s().unwrap_err().contains("text"));
        assert!(c.require("nope").unwrap_err().contains("nope"));
        let Output::Table(table) = Output::from(c) else { panic!("a table") };
        assert_eq!(table.rows[1], [Cell::Unsigned(2), Cell::Text("h2".into())]);
    }

    #[test]
    fn without_columns_it_shows_its_series() {
        let c = Columns::new().series("rate", "bps", vec![1, 2], vec![0.5, 1.5]);
        let Output::Series(s) = Output::from(c) else { panic!("series") };
        assert_eq!(s[0].points, [Point { time_ns: 1, value: 0.5 }, Point { time_ns: 2, value: 1.5 }]);
    }
}
