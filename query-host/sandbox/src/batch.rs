//! A group of columnar partials as one `column-batch` (the WIT `fleet-batches` world's
//! `merge-batch`): each column's values of every partial one after another, each text
//! column's dictionaries as one string cut at offsets.
//!
//! Why: lowering a `list<columns>` calls the guest's allocator once per list and per string of
//! every partial — about fifty calls for a `rack-contention` partial, each an entry into wasm —
//! so merging 1,000 partials spent about as long bringing them in as merging them
//! (`benches/merge.rs`, perf). A batch crosses as a few lists whatever the number of partials,
//! at the price of one copy here. Only partials of one shape batch (the same columns by name,
//! unit and kind, in order, each column as long as the partial's first): the analysis'
//! `merge-columns` takes any other group, as before.
//!
//! A batch's buffers are kept for the next one ([`Spare`]): written fresh, the tens of MiB of a
//! large batch cost more in page faults than in copying (building a batch of 1,000
//! `rack-contention` partials took 17.6 ms in new memory on this VM; with kept buffers the
//! whole merge call went from about 51 to 41 ms).

use std::sync::Mutex;

use super::{bindings::wit, partial::MAX_PARTIAL_BYTES};

/// Most bytes of buffers [`Spare`] keeps: a merge call's largest share of partials.
pub const KEEP: usize = 64 * MAX_PARTIAL_BYTES;

/// The [`Spare`] buffers a runtime keeps between its merge calls. Concurrent calls each take
/// what is kept (or nothing), and whichever gives back more is kept.
#[derive(Debug, Default)]
pub struct Kept(Mutex<Spare>);

impl Kept {
    /// `group` as one batch written into the kept buffers and handed to `merge`, the buffers
    /// kept again after; `group` back, untouched, when it does not batch ([`of`]).
    pub fn with_batch<T>(
        &self,
        group: Vec<wit::Columns>,
        merge: impl FnOnce(&wit::ColumnBatch) -> T,
    ) -> Result<T, Vec<wit::Columns>> {
        let mut spare = std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()));
        let merged = of(group, &mut spare).map(|batch| {
            let merged = merge(&batch);
            spare.recycle(batch);
            merged
        });
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if kept.bytes() < spare.bytes() {
            *kept = spare;
        }
        merged
    }
}

/// Buffers of spent batches, at most [`KEEP`] bytes, for the next batch to write into.
#[derive(Debug, Default)]
pub struct Spare {
    u64s: Vec<Vec<u64>>,
    u32s: Vec<Vec<u32>>,
    strings: Vec<String>,
}

impl Spare {
    /// Bytes kept.
    pub fn bytes(&self) -> usize {
        8 * self.u64s.iter().map(Vec::capacity).sum::<usize>()
            + 4 * self.u32s.iter().map(Vec::capacity).sum::<usize>()
            + self.strings.iter().map(String::capacity).sum::<usize>()
    }

    /// Keeps the buffers of a spent batch, up to [`KEEP`] bytes in all.
    pub fn recycle(&mut self, batch: wit::ColumnBatch) {
        let mut room = KEEP.saturating_sub(self.bytes());
        let mut fits = |bytes: usize| {
            let fits = bytes <= room;
            room = room.saturating_sub(if fits { bytes } else { 0 });
            fits
        };
        let mut u32s = vec![batch.rows];
        for column in batch.columns {
            match column.values {
                wit::BatchValues::Unsigned(v) if fits(8 * v.capacity()) => self.u64s.push(v),
                wit::BatchValues::Text(t) => {
                    if fits(t.text.capacity()) {
                        self.strings.push(t.text);
                    }
                    u32s.extend([t.ends, t.entries, t.codes]);
                }
                _ => {}
            }
        }
        for v in u32s {
            if fits(4 * v.capacity()) {
                self.u32s.push(v);
            }
        }
    }

    fn u64s(&mut self, len: usize) -> Vec<u64> {
        let mut v = pick(&mut self.u64s, len, Vec::capacity).unwrap_or_default();
        v.clear();
        v.reserve(len);
        v
    }

    fn u32s(&mut self, len: usize) -> Vec<u32> {
        let mut v = pick(&mut self.u32s, len, Vec::capacity).unwrap_or_default();
        v.clear();
        v.reserve(len);
        v
    }

    fn string(&mut self, len: usize) -> String {
        let mut s = pick(&mut self.strings, len, String::capacity).unwrap_or_default();
        s.clear();
        s.reserve(len);
        s
    }
}

/// The kept buffer closest in size above `len`, else the largest.
fn pick<B>(kept: &mut Vec<B>, len: usize, capacity: fn(&B) -> usize) -> Option<B> {
    let best = (0..kept.len()).min_by_key(|&i| match capacity(&kept[i]) {
        c if c >= len => (false, c),
        c => (true, usize::MAX - c),
    })?;
    Some(kept.swap_remove(best))
}

/// `group` as one batch, written into `spare`'s buffers where it has them; or `group` back when
/// its partials differ in shape (or a dictionary offset would not fit in 32 bits).
pub fn of(group: Vec<wit::Columns>, spare: &mut Spare) -> Result<wit::ColumnBatch, Vec<wit::Columns>> {
    let Some(shape) = shape_rows(&group) else { return Err(group) };
    let mut rows = spare.u32s(shape.len());
    rows.extend_from_slice(&shape);
    let Some(first) = group.first() else { return Err(group) };
    let mut columns = Vec::with_capacity(first.columns.len());
    for (k, column) in first.columns.iter().enumerate() {
        let all = || group.iter().map(|c| &c.columns[k].values);
        let values = match &column.values {
            wit::ColumnValues::Unsigned(_) => {
                let out = spare.u64s(all().map(|v| unsigned(v).len()).sum());
                wit::BatchValues::Unsigned(concat(out, all(), unsigned))
            }
            wit::ColumnValues::Signed(_) => wit::BatchValues::Signed(concat(Vec::new(), all(), |v| match v {
                wit::ColumnValues::Signed(v) => v,
                _ => &[],
            })),
            wit::ColumnValues::Float(_) => wit::BatchValues::Float(concat(Vec::new(), all(), |v| match v {
                wit::ColumnValues::Float(v) => v,
                _ => &[],
            })),
            wit::ColumnValues::Text(_) => {
                let texts: Vec<&wit::CodedText> = all()
                    .filter_map(|v| match v {
                        wit::ColumnValues::Text(t) => Some(t),
                        _ => None,
                    })
                    .collect();
                match text(&texts, spare) {
                    Some(t) => wit::BatchValues::Text(t),
                    None => return Err(group),
                }
            }
        };
        columns.push(wit::BatchColumn { name: column.name.clone(), unit: column.unit.clone(), values });
    }
    let mut series = Vec::new();
    for (i, c) in group.into_iter().enumerate() {
        series.extend(c.series.into_iter().map(|s| wit::BatchSeries { partial: i as u32, series: s }));
    }
    Ok(wit::ColumnBatch { rows, columns, series })
}

/// Each partial's rows, when every partial has the first's columns (names, units, kinds, in
/// order) and all of a partial's columns are one length.
fn shape_rows(group: &[wit::Columns]) -> Option<Vec<u32>> {
    let first = group.first()?;
    let kind = |v: &wit::ColumnValues| std::mem::discriminant(v);
    group
        .iter()
        .map(|c| {
            let same = c.columns.len() == first.columns.len()
                && c.columns
                    .iter()
                    .zip(&first.columns)
                    .all(|(a, b)| a.name == b.name && a.unit == b.unit && kind(&a.values) == kind(&b.values));
            let rows = c.columns.first().map_or(0, |col| len(&col.values));
            (same && c.columns.iter().all(|col| len(&col.values) == rows)).then(|| u32::try_from(rows).ok())?
        })
        .collect()
}

fn unsigned(v: &wit::ColumnValues) -> &[u64] {
    match v {
        wit::ColumnValues::Unsigned(v) => v,
        _ => &[],
    }
}

fn len(v: &wit::ColumnValues) -> usize {
    match v {
        wit::ColumnValues::Unsigned(v) => v.len(),
        wit::ColumnValues::Signed(v) => v.len(),
        wit::ColumnValues::Float(v) => v.len(),
        wit::ColumnValues::Text(t) => t.codes.len(),
    }
}

/// One column's values of every partial, in order, after `out`'s (empty).
fn concat<'a, T: Copy + 'a>(
    mut out: Vec<T>,
    all: impl Iterator<Item = &'a wit::ColumnValues> + Clone,
    pick: impl Fn(&'a wit::ColumnValues) -> &'a [T],
) -> Vec<T> {
    out.reserve(all.clone().map(|v| pick(v).len()).sum());
    for v in all {
        out.extend_from_slice(pick(v));
    }
    out
}

/// Text columns as one: dictionaries concatenated (their ends as offsets), codes as they were
/// (each indexes its own partial's dictionary). `None` past 4 GiB of text.
fn text(texts: &[&wit::CodedText], spare: &mut Spare) -> Option<wit::BatchText> {
    let bytes: usize = texts.iter().flat_map(|t| &t.dictionary).map(String::len).sum();
    u32::try_from(bytes).ok()?;
    let mut out = wit::BatchText {
        text: spare.string(bytes),
        ends: spare.u32s(texts.iter().map(|t| t.dictionary.len()).sum()),
        entries: spare.u32s(texts.len()),
        codes: spare.u32s(texts.iter().map(|t| t.codes.len()).sum()),
    };
    for t in texts {
        out.entries.push(u32::try_from(t.dictionary.len()).ok()?);
        for entry in &t.dictionary {
            out.text.push_str(entry);
            out.ends.push(out.text.len() as u32);
        }
        out.codes.extend_from_slice(&t.codes);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn partial(host: &str, counts: Vec<u64>, names: &[&str], codes: Vec<u32>) -> wit::Columns {
        wit::Columns {
            columns: vec![
                wit::NamedColumn {
                    name: "n".into(),
                    unit: "bytes".into(),
                    values: wit::ColumnValues::Unsigned(counts),
                },
                wit::NamedColumn {
                    name: "who".into(),
                    unit: String::new(),
                    values: wit::ColumnValues::Text(wit::CodedText {
                        dictionary: names.iter().map(|s| s.to_string()).collect(),
                        codes,
                    }),
                },
            ],
            series: vec![wit::SeriesColumn {
                name: host.into(),
                unit: String::new(),
                times_ns: vec![1],
                values: vec![2.0],
            }],
        }
    }

    #[test]
    fn partials_of_one_shape_become_one_batch_of_concatenated_columns() {
        let group = vec![
            partial("a", vec![1, 2, 3], &["x", "ÿz"], vec![1, 0, 1]),
            partial("b", vec![], &[], vec![]),
            partial("c", vec![9], &["w"], vec![0]),
        ];
        let b = of(group, &mut Spare::default()).unwrap();
        assert_eq!(b.rows, [3, 0, 1]);
        assert_eq!(b.columns[0].values, wit::BatchValues::Unsigned(vec![1, 2, 3, 9]));
        assert_eq!((b.columns[0].name.as_str(), b.columns[0].unit.as_str()), ("n", "bytes"));
        let wit::BatchValues::Text(t) = &b.columns[1].values else { panic!("text") };
        assert_eq!(t.text, "xÿzw");
        // "ÿ" is two bytes: the offsets are bytes, on character boundaries.
        assert_eq!(t.ends, [1, 4, 5]);
        assert_eq!(t.entries, [2, 0, 1]);
        assert_eq!(t.codes, [1, 0, 1, 0]);
        let owners: Vec<(u32, &str)> = b.series.iter().map(|s| (s.partial, s.series.name.as_str())).collect();
        assert_eq!(owners, [(0, "a"), (1, "b"), (2, "c")]);
    }

    #[test]
    fn partials_of_different_shapes_come_back_whole() {
        let mut other_unit = partial("b", vec![1], &["x"], vec![0]);
        other_unit.columns[0].unit = "packets".into();
        let group = vec![partial("a", vec![1], &["x"], vec![0]), other_unit];
        let back = of(group.clone(), &mut Spare::default()).unwrap_err();
        assert_eq!(back, group);
        let mut extra = partial("b", vec![1], &["x"], vec![0]);
        extra.columns.push(extra.columns[0].clone());
        assert!(of(vec![partial("a", vec![1], &["x"], vec![0]), extra], &mut Spare::default()).is_err());
        let mut ragged = partial("b", vec![1, 2], &["x"], vec![0]);
        ragged.series.clear();
        assert!(of(vec![ragged], &mut Spare::default()).is_err(), "a partial whose columns differ in length");
    }

    #[test]
    fn a_spent_batch_s_buffers_are_written_again_and_kept_within_the_bound() {
        let group =
            || vec![partial("a", vec![1; 1000], &["x", "y"], vec![0; 1000]), partial("b", vec![2], &["z"], vec![0])];
        let mut spare = Spare::default();
        let first = of(group(), &mut spare).unwrap();
        let wit::BatchValues::Unsigned(v) = &first.columns[0].values else { panic!("counts") };
        let counts = v.as_ptr();
        spare.recycle(first);
        assert!(spare.bytes() >= 8 * 1001, "{} bytes kept", spare.bytes());
        let again = of(group(), &mut spare).unwrap();
        let wit::BatchValues::Unsigned(v) = &again.columns[0].values else { panic!("counts") };
        assert_eq!(v.as_ptr(), counts, "the kept buffer was written again");
        assert_eq!(again, of(group(), &mut Spare::default()).unwrap(), "and holds what a fresh one does");
        // Past the bound, buffers are let go.
        let mut full = Spare { u64s: vec![Vec::with_capacity(KEEP / 8)], ..Spare::default() };
        full.recycle(again);
        assert_eq!(full.bytes(), KEEP);
    }

    #[test]
    fn kept_buffers_serve_one_merge_after_another_and_survive_a_group_that_does_not_batch() {
        let kept = Kept::default();
        let group = || vec![partial("a", vec![1; 100], &["x"], vec![0; 100]), partial("b", vec![2], &["y"], vec![0])];
        assert_eq!(kept.with_batch(group(), |b| b.rows.clone()).unwrap(), [100, 1]);
        let held = kept.0.lock().unwrap().bytes();
        assert!(held >= 8 * 101, "{held} bytes kept");
        let mut mixed = group();
        mixed[1].columns[0].unit = "packets".into();
        let back = kept.with_batch(mixed.clone(), |_| unreachable!("a group of two shapes does not batch"));
        assert_eq!(back.unwrap_err(), mixed);
        assert_eq!(kept.0.lock().unwrap().bytes(), held, "the kept buffers were given back");
    }
}
