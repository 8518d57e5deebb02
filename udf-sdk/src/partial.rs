//! Partials as a columnar analysis merges them: [`Partial`], a view of one partial whether it
//! crossed into the sandbox alone (`merge-columns`: a [`Columns`]) or inside a batch of a whole
//! group (`merge-batch`: a [`ColumnBatch`]). An analysis writes its merge once, over
//! `&[Partial]` ([`crate::ColumnarAnalysis::merge_columns`]).
//!
//! Why batches: every list and string of every partial costs the host a call into the
//! guest's allocator as it is lowered, about fifty per `rack-contention` partial, so a merge
//! of 1,000 partials spent about as long bringing them in as merging them (`benches/merge.rs`).
//! A batch is the same partials as a few lists in all — each column's values of every partial
//! one after another — and this module cuts it back into per-partial views without copying.
//! A batch is checked whole before any view is made: a bad one is an error, never a panic.

use crate::types::{BatchValues, CodedText, ColumnBatch, ColumnValues, Columns, SeriesColumn};

/// One partial being merged: its columns by name, and its series.
#[derive(Clone, Debug)]
pub struct Partial<'a> {
    columns: Vec<(&'a str, Values<'a>)>,
    series: Vec<&'a SeriesColumn>,
}

/// One column of a [`Partial`].
#[derive(Clone, Copy, Debug)]
pub enum Values<'a> {
    Unsigned(&'a [u64]),
    Signed(&'a [i64]),
    Float(&'a [f64]),
    Text(Text<'a>),
}

/// A column of strings: one code per row into the partial's dictionary.
#[derive(Clone, Copy, Debug)]
pub struct Text<'a> {
    pub dictionary: Dictionary<'a>,
    pub codes: &'a [u32],
}

/// A partial's distinct strings, as it came: its own list, or its share of a batch's one
/// string (checked: every entry lies within it, on character boundaries).
#[derive(Clone, Copy, Debug)]
pub struct Dictionary<'a>(Entries<'a>);

#[derive(Clone, Copy, Debug)]
enum Entries<'a> {
    Strings(&'a [String]),
    /// Entry `i` is `text[start..ends[0]]` for the first, `text[ends[i-1]..ends[i]]` after.
    Packed {
        text: &'a str,
        start: u32,
        ends: &'a [u32],
    },
}

impl<'a> Partial<'a> {
    /// A partial that came alone.
    pub fn of(c: &'a Columns) -> Partial<'a> {
        let columns = c.columns.iter().map(|col| (col.name.as_str(), Values::from(&col.values))).collect();
        Partial { columns, series: c.series.iter().collect() }
    }

    /// The partials of a batch, in order, after checking that its lengths and offsets agree.
    pub fn split(batch: &'a ColumnBatch) -> Result<Vec<Partial<'a>>, String> {
        let parts = batch.rows.len();
        let total: u64 = batch.rows.iter().map(|&r| u64::from(r)).sum();
        for col in &batch.columns {
            let len = match &col.values {
                BatchValues::Unsigned(v) => v.len(),
                BatchValues::Signed(v) => v.len(),
                BatchValues::Float(v) => v.len(),
                BatchValues::Text(t) => {
                    check_text(&t.text, &t.ends, &t.entries, parts)
                        .map_err(|e| format!("column {:?}: {e}", col.name))?;
                    t.codes.len()
                }
            };
            if len as u64 != total {
                return Err(format!("a batch's column {:?} has {len} rows, its partials {total}", col.name));
            }
        }
        if let Some(s) = batch.series.iter().find(|s| s.partial as usize >= parts) {
            return Err(format!("a batch's series names partial {} of {parts}", s.partial));
        }
        let mut out: Vec<Partial<'a>> = batch
            .rows
            .iter()
            .map(|_| Partial { columns: Vec::with_capacity(batch.columns.len()), series: Vec::new() })
            .collect();
        for col in &batch.columns {
            // Rows and dictionary entries start where the previous partial's end.
            let (mut row, mut entry) = (0usize, 0usize);
            for (i, (part, &rows)) in out.iter_mut().zip(&batch.rows).enumerate() {
                let rows = row..row + rows as usize;
                let values = match &col.values {
                    BatchValues::Unsigned(v) => Values::Unsigned(&v[rows.clone()]),
                    BatchValues::Signed(v) => Values::Signed(&v[rows.clone()]),
                    BatchValues::Float(v) => Values::Float(&v[rows.clone()]),
                    BatchValues::Text(t) => {
                        let n = t.entries[i] as usize;
                        let start = if entry == 0 { 0 } else { t.ends[entry - 1] };
                        let dictionary =
                            Dictionary(Entries::Packed { text: &t.text, start, ends: &t.ends[entry..entry + n] });
                        entry += n;
                        Values::Text(Text { dictionary, codes: &t.codes[rows.clone()] })
                    }
                };
                row = rows.end;
                part.columns.push((col.name.as_str(), values));
            }
        }
        for s in &batch.series {
            out[s.partial as usize].series.push(&s.series);
        }
        Ok(out)
    }

    /// The column named `name`.
    pub fn get(&self, name: &str) -> Option<Values<'a>> {
        self.columns.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }

    /// The column named `name`, which must be there: an error naming it otherwise (a partial
    /// made by another version of the analysis, or by something else).
    pub fn require(&self, name: &str) -> Result<Values<'a>, String> {
        self.get(name).ok_or_else(|| format!("a partial without the column {name:?}"))
    }

    /// Rows: the length of the first column (0 without columns).
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |(_, v)| v.len())
    }

    pub fn series(&self) -> &[&'a SeriesColumn] {
        &self.series
    }
}

/// A batch's text column: one entry count per partial, adding up to `ends`, which rise within
/// `text` on character boundaries.
fn check_text(text: &str, ends: &[u32], entries: &[u32], parts: usize) -> Result<(), String> {
    if entries.len() != parts {
        return Err(format!("{} dictionary sizes for {parts} partials", entries.len()));
    }
    let sum: u64 = entries.iter().map(|&e| u64::from(e)).sum();
    if sum != ends.len() as u64 {
        return Err(format!("dictionaries of {sum} entries, {} ends", ends.len()));
    }
    let mut previous = 0;
    for &end in ends {
        if end < previous || end as usize > text.len() || !text.is_char_boundary(end as usize) {
            return Err(format!("a dictionary entry ending at {end}, outside its text or a character"));
        }
        previous = end;
    }
    Ok(())
}

impl<'a> From<&'a ColumnValues> for Values<'a> {
    fn from(v: &'a ColumnValues) -> Self {
        match v {
            ColumnValues::Unsigned(v) => Values::Unsigned(v),
            ColumnValues::Signed(v) => Values::Signed(v),
            ColumnValues::Float(v) => Values::Float(v),
            ColumnValues::Text(CodedText { dictionary, codes }) => {
                Values::Text(Text { dictionary: Dictionary(Entries::Strings(dictionary)), codes })
            }
        }
    }
}

impl<'a> Values<'a> {
    pub fn len(&self) -> usize {
        match self {
            Self::Unsigned(v) => v.len(),
            Self::Signed(v) => v.len(),
            Self::Float(v) => v.len(),
            Self::Text(t) => t.codes.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The numbers of an unsigned column, or an error saying what it is instead.
    pub fn u64s(self) -> Result<&'a [u64], String> {
        match self {
            Self::Unsigned(v) => Ok(v),
            other => Err(format!("expected a column of counts, got {}", other.kind())),
        }
    }

    /// The numbers of a float column, or an error saying what it is instead.
    pub fn f64s(self) -> Result<&'a [f64], String> {
        match self {
            Self::Float(v) => Ok(v),
            other => Err(format!("expected a column of floats, got {}", other.kind())),
        }
    }

    /// A column of strings, or an error saying what it is instead.
    pub fn text(self) -> Result<Text<'a>, String> {
        match self {
            Self::Text(t) => Ok(t),
            other => Err(format!("expected a column of text, got {}", other.kind())),
        }
    }

    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Unsigned(_) => "counts",
            Self::Signed(_) => "signed numbers",
            Self::Float(_) => "floats",
            Self::Text(_) => "text",
        }
    }
}

impl<'a> Text<'a> {
    /// Row `i`'s string (`None` past the end or for a code outside the dictionary).
    pub fn get(&self, i: usize) -> Option<&'a str> {
        self.dictionary.get(*self.codes.get(i)? as usize)
    }
}

impl<'a> Dictionary<'a> {
    pub fn len(&self) -> usize {
        match self.0 {
            Entries::Strings(s) => s.len(),
            Entries::Packed { ends, .. } => ends.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entry `i`.
    pub fn get(&self, i: usize) -> Option<&'a str> {
        match self.0 {
            Entries::Strings(s) => s.get(i).map(String::as_str),
            Entries::Packed { text, start, ends } => {
                let end = *ends.get(i)? as usize;
                let from = if i == 0 { start as usize } else { ends[i - 1] as usize };
                // Checked by `split`: within `text`, rising, on character boundaries.
                text.get(from..end)
            }
        }
    }

    /// The entries in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &'a str> + 'a {
        let this = *self;
        (0..this.len()).map(move |i| this.get(i).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{BatchColumn, BatchSeries, BatchText, NamedColumn};

    fn columns(counts: Vec<u64>, names: &[&str], codes: Vec<u32>, series: bool) -> Columns {
        let text = CodedText { dictionary: names.iter().map(|s| s.to_string()).collect(), codes };
        let series = match series {
            true => vec![SeriesColumn { name: "s".into(), unit: String::new(), times_ns: vec![1], values: vec![2.0] }],
            false => vec![],
        };
        Columns {
            columns: vec![
                NamedColumn { name: "n".into(), unit: String::new(), values: ColumnValues::Unsigned(counts) },
                NamedColumn { name: "who".into(), unit: String::new(), values: ColumnValues::Text(text) },
            ],
            series,
        }
    }

    /// What a view reads: each column's numbers or strings per row, and the series' names.
    fn read(p: &Partial) -> (Vec<u64>, Vec<String>, Vec<String>, Vec<String>) {
        let text = p.require("who").unwrap().text().unwrap();
        (
            p.require("n").unwrap().u64s().unwrap().to_vec(),
            (0..p.rows()).map(|i| text.get(i).unwrap().to_string()).collect(),
            text.dictionary.iter().map(String::from).collect(),
            p.series().iter().map(|s| s.name.clone()).collect(),
        )
    }

    /// The batch the host makes of these partials (`query-host/sandbox/src/batch.rs`).
    fn batch() -> ColumnBatch {
        ColumnBatch {
            rows: vec![3, 0, 1],
            columns: vec![
                BatchColumn { name: "n".into(), unit: String::new(), values: BatchValues::Unsigned(vec![1, 2, 3, 9]) },
                BatchColumn {
                    name: "who".into(),
                    unit: String::new(),
                    values: BatchValues::Text(BatchText {
                        text: "xÿzw".into(),
                        ends: vec![1, 4, 5],
                        entries: vec![2, 0, 1],
                        codes: vec![1, 0, 1, 0],
                    }),
                },
            ],
            series: vec![BatchSeries {
                partial: 2,
                series: SeriesColumn { name: "s".into(), unit: String::new(), times_ns: vec![1], values: vec![2.0] },
            }],
        }
    }

    #[test]
    fn a_batch_reads_as_the_partials_it_was_made_of() {
        let alone = [
            columns(vec![1, 2, 3], &["x", "ÿz"], vec![1, 0, 1], false),
            columns(vec![], &[], vec![], false),
            columns(vec![9], &["w"], vec![0], true),
        ];
        let batch = batch();
        let split = Partial::split(&batch).unwrap();
        assert_eq!(split.len(), 3);
        for (from_batch, alone) in split.iter().zip(&alone) {
            assert_eq!(read(from_batch), read(&Partial::of(alone)));
        }
        assert_eq!(read(&split[0]).1, ["ÿz", "x", "ÿz"]);
        assert!(split[0].get("missing").is_none());
        assert!(split[0].require("n").unwrap().text().is_err(), "a column of counts is not text");
    }

    #[test]
    fn a_malformed_batch_is_an_error_naming_what_is_wrong_never_a_panic() {
        fn text(b: &mut ColumnBatch) -> &mut BatchText {
            match &mut b.columns[1].values {
                BatchValues::Text(t) => t,
                _ => unreachable!(),
            }
        }
        type Break = fn(&mut ColumnBatch, fn(&mut ColumnBatch) -> &mut BatchText);
        let cases: [(&str, Break); 8] = [
            ("has 4 rows, its partials 5", |b, _| b.rows[1] = 1),
            ("has 3 rows, its partials 4", |b, _| b.columns[0].values = BatchValues::Unsigned(vec![1, 2, 3])),
            ("outside its text", |b, t| t(b).ends[2] = 6),
            ("outside its text or a character", |b, t| t(b).ends[1] = 2),
            ("outside its text or a character", |b, t| t(b).ends[1] = 0),
            ("dictionaries of 4 entries, 3 ends", |b, t| t(b).entries[1] = 1),
            ("2 dictionary sizes for 3 partials", |b, t| {
                t(b).entries.pop();
            }),
            ("names partial 3 of 3", |b, _| b.series[0].partial = 3),
        ];
        for (want, break_it) in cases {
            let mut b = batch();
            break_it(&mut b, text);
            let err = Partial::split(&b).unwrap_err();
            assert!(err.contains(want), "{err:?} should say {want:?}");
        }
    }
}
