//! Building results: [`Description`], [`Table`], [`Series`], [`Flamegraph`] and [`Output`].

use std::collections::BTreeMap;

use crate::types::{
    Cell, Column, Description, Frame, Output, ParamSpec, Point, ResultKind, Series, Table, WeightedStack,
};

impl Description {
    /// `name` is what the analysis is called in the UI; the version defaults to the crate's.
    pub fn new(name: &str, result_kind: ResultKind) -> Self {
        Self { name: name.to_string(), version: String::new(), summary: String::new(), params: Vec::new(), result_kind }
    }

    /// One sentence on what it answers.
    pub fn summary(mut self, summary: &str) -> Self {
        self.summary = summary.to_string();
        self
    }

    /// Overrides the crate's version.
    pub fn version(mut self, version: &str) -> Self {
        self.version = version.to_string();
        self
    }

    /// Declares a parameter (built with [`Param`](crate::Param)); order is kept.
    pub fn param(mut self, param: ParamSpec) -> Self {
        self.params.push(param);
        self
    }
}

impl Output {
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(text.into())
    }

    pub fn table(table: Table) -> Self {
        Self::Table(table)
    }

    pub fn series(series: impl IntoIterator<Item = Series>) -> Self {
        Self::Series(series.into_iter().collect())
    }

    pub fn flamegraph(flamegraph: Flamegraph) -> Self {
        Self::Flamegraph(flamegraph.into_stacks())
    }

    /// The result kind this output is (what `describe` must declare).
    pub fn kind(&self) -> ResultKind {
        match self {
            Self::Table(_) => ResultKind::Table,
            Self::Series(_) => ResultKind::Series,
            Self::Flamegraph(_) => ResultKind::Flamegraph,
            Self::Text(_) => ResultKind::Text,
        }
    }
}

impl From<Table> for Output {
    fn from(t: Table) -> Self {
        Self::Table(t)
    }
}
impl From<Vec<Series>> for Output {
    fn from(s: Vec<Series>) -> Self {
        Self::Series(s)
    }
}
impl From<Flamegraph> for Output {
    fn from(f: Flamegraph) -> Self {
        Self::flamegraph(f)
    }
}
impl From<String> for Output {
    fn from(s: String) -> Self {
        Self::Text(s)
    }
}

/// A table: declare the columns, then push rows of [`Cell`]s (the [`row!`](crate::row) macro
/// converts numbers and strings):
///
/// ```
/// use loupe_udf::{Table, row};
/// let mut t = Table::new().column("run_id", "").column("start_ns", "ns").column("bytes", "bytes");
/// t.push_row(row![7u64, 1_000u64, 1500u64]);
/// assert_eq!(t.rows.len(), 1);
/// ```
impl Table {
    pub fn new() -> Self {
        Self { columns: Vec::new(), rows: Vec::new() }
    }

    /// Adds a column; `unit` is free-form ("bytes", "ns", "samples"…) and may be empty.
    pub fn column(mut self, name: &str, unit: &str) -> Self {
        self.columns.push(Column { name: name.to_string(), unit: unit.to_string() });
        self
    }

    /// Appends a row.
    ///
    /// # Panics
    /// When the row does not have one cell per column (a bug in the analysis).
    pub fn push_row(&mut self, row: impl IntoIterator<Item = Cell>) {
        let row: Vec<Cell> = row.into_iter().collect();
        assert_eq!(
            row.len(),
            self.columns.len(),
            "a row of {} cells in a table of {} columns",
            row.len(),
            self.columns.len()
        );
        self.rows.push(row);
    }

    /// [`push_row`](Self::push_row), chained.
    pub fn row(mut self, row: impl IntoIterator<Item = Cell>) -> Self {
        self.push_row(row);
        self
    }
}

impl Default for Table {
    fn default() -> Self {
        Self::new()
    }
}

/// A row of [`Cell`]s from values that convert into cells (integers, floats, strings, `Option`s):
/// `row![run.id, start_ns, "eth0", 0.5]`.
#[macro_export]
macro_rules! row {
    ($($cell:expr),* $(,)?) => {
        [$($crate::Cell::from($cell)),*]
    };
}

macro_rules! cells_from {
    ($variant:ident: $($t:ty),*) => {
        $(impl From<$t> for Cell {
            fn from(v: $t) -> Self {
                Cell::$variant(v.into())
            }
        })*
    };
}
cells_from!(Unsigned: u64, u32, u16, u8);
cells_from!(Signed: i64, i32, i16, i8);
cells_from!(Float: f64, f32);
cells_from!(Text: String, &str, &String);

impl From<usize> for Cell {
    fn from(v: usize) -> Self {
        Cell::Unsigned(v as u64)
    }
}
impl From<()> for Cell {
    fn from(_: ()) -> Self {
        Cell::Empty
    }
}
impl<T: Into<Cell>> From<Option<T>> for Cell {
    fn from(v: Option<T>) -> Self {
        v.map_or(Cell::Empty, Into::into)
    }
}

impl Series {
    pub fn new(name: &str, unit: &str) -> Self {
        Self { name: name.to_string(), unit: unit.to_string(), points: Vec::new() }
    }

    pub fn push(&mut self, time_ns: u64, value: f64) {
        self.points.push(Point { time_ns, value });
    }

    /// [`push`](Self::push), chained.
    pub fn point(mut self, time_ns: u64, value: f64) -> Self {
        self.push(time_ns, value);
        self
    }
}

impl Frame {
    pub fn new(function: &str, module: &str, kernel: bool) -> Self {
        Self { function: function.to_string(), module: module.to_string(), kernel }
    }
}

/// A flame graph being accumulated: weighted stacks (frames leaf first), identical stacks
/// merged. Add the resolved frames of each distinct stack id with its count, then turn it into
/// an [`Output`]; the host merges the stacks into its flame-graph tree.
#[derive(Clone, Debug, Default)]
pub struct Flamegraph {
    stacks: BTreeMap<Vec<(String, String, bool)>, u64>,
}

impl Flamegraph {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `count` samples of a stack (leaf first); identical stacks add up.
    pub fn add(&mut self, frames: &[Frame], count: u64) {
        if count == 0 {
            return;
        }
        let key = frames.iter().map(|f| (f.function.clone(), f.module.clone(), f.kernel)).collect();
        *self.stacks.entry(key).or_default() += count;
    }

    /// Distinct stacks so far.
    pub fn len(&self) -> usize {
        self.stacks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.stacks.is_empty()
    }

    /// Samples so far.
    pub fn total(&self) -> u64 {
        self.stacks.values().sum()
    }

    /// The weighted stacks, heaviest first (ties in frame order).
    pub fn into_stacks(self) -> Vec<WeightedStack> {
        let mut out: Vec<WeightedStack> = self
            .stacks
            .into_iter()
            .map(|(frames, count)| WeightedStack {
                frames: frames
                    .into_iter()
                    .map(|(function, module, kernel)| Frame { function, module, kernel })
                    .collect(),
                count,
            })
            .collect();
        // Stable: equal counts keep the map's (frame) order.
        out.sort_by_key(|s| std::cmp::Reverse(s.count));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_rows() {
        let mut t = Table::new().column("a", "").column("b", "ns").column("c", "");
        t.push_row(row![1u64, -2i64, "x"]);
        t.push_row(row![None::<u64>, 0.5, String::from("y")]);
        assert_eq!(t.rows[0], vec![Cell::Unsigned(1), Cell::Signed(-2), Cell::Text("x".into())]);
        assert_eq!(t.rows[1], vec![Cell::Empty, Cell::Float(0.5), Cell::Text("y".into())]);
    }

    #[test]
    #[should_panic(expected = "a row of 1 cells in a table of 2 columns")]
    fn short_row() {
        Table::new().column("a", "").column("b", "").push_row(row![1u64]);
    }

    #[test]
    fn flamegraph_merges_identical_stacks() {
        let a = [Frame::new("leaf", "m", false), Frame::new("main", "m", false)];
        let b = [Frame::new("other", "m", true)];
        let mut f = Flamegraph::new();
        f.add(&a, 2);
        f.add(&b, 1);
        f.add(&a, 3);
        f.add(&b, 0);
        assert_eq!((f.len(), f.total()), (2, 6));
        let stacks = f.into_stacks();
        assert_eq!(stacks[0].count, 5);
        assert_eq!(stacks[0].frames, a.to_vec());
        assert_eq!(stacks[1].count, 1);
    }

    #[test]
    fn description() {
        let d = Description::new("x", ResultKind::Table).summary("s").param(crate::Param::flag("f", "d").default(true));
        assert_eq!((d.name.as_str(), d.summary.as_str(), d.params.len()), ("x", "s", 1));
        assert!(d.version.is_empty());
    }
}
