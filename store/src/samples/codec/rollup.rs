//! The hour rollup (`H` record): the tables of the batches that start in one clock hour,
//! summed into one table of one partition, with a header saying which batches it sums. When
//! a rollup is written and when a query may use one is decided by the samples module's
//! `rollup`; this file only turns it into bytes and back.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::table::{Entry, Part, Table, Vocabulary, decode_table, encode_table};
use crate::encoding::msgpack::{Blob, from_msgpack, to_msgpack};

/// What an hour rollup sums: the batches whose start lies in its hour (see `rollup`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RollupRow {
    /// Batches summed, those without samples included (their lost counts are in `lost`).
    pub batches: u64,
    /// The earliest start and the latest end of those batches.
    pub first: u64,
    pub end: u64,
    pub samples: u64,
    pub lost: u64,
}

#[derive(Serialize, Deserialize)]
struct RollupRecord<'a> {
    batches: u64,
    first: u64,
    end: u64,
    samples: u64,
    lost: u64,
    /// An encoded [`Table`] with one partition (CPU 0): the hour's entries and their counts.
    #[serde(borrow)]
    table: Blob<'a>,
}

/// A table of distinct entries with their counts as one partition: the shape of a rollup's
/// table. `entries` must be sorted and distinct.
pub fn single_partition(entries: Vec<Entry>, counts: Vec<u64>) -> Table {
    let parts = if entries.is_empty() { vec![] } else { vec![Part { cpu: 0, start: 0, len: entries.len() as u32 }] };
    Table { entries, counts, parts }
}

/// A rollup's record: its table in format 3 when `locals` names each entry's stack in its
/// process's vocabulary (as [`encode_table`]: entries ordered by thread, idle, then name), in
/// format 2 otherwise (a store whose batches were written before vocabularies).
///
/// *Why names:* an hour's rollup holds nearly a process's whole vocabulary in each of its
/// `(thread, idle)` groups, so names are dense small numbers where dictionary ids are
/// scattered among the store's thousands of stacks. Measured on the samples benchmark's day:
/// the stacks' columns 0.205 → 0.026 bits a sample of the day.
pub fn encode_rollup(row: &RollupRow, table: &Table, locals: Option<&[u32]>) -> Vec<u8> {
    to_msgpack(&RollupRecord {
        batches: row.batches,
        first: row.first,
        end: row.end,
        samples: row.samples,
        lost: row.lost,
        table: Blob(Cow::Owned(encode_table(table, locals))),
    })
}

fn rollup_header(r: &RollupRecord) -> Result<RollupRow, String> {
    if r.batches == 0 || r.first > r.end {
        return Err(format!("{} batches from {} to {}", r.batches, r.first, r.end));
    }
    Ok(RollupRow { batches: r.batches, first: r.first, end: r.end, samples: r.samples, lost: r.lost })
}

/// The rollup's header alone (its table stays undecoded): what a query needs to decide
/// whether the rollup serves its range.
pub fn decode_rollup_row(bytes: &[u8]) -> Result<RollupRow, String> {
    rollup_header(&from_msgpack::<RollupRecord>(bytes)?)
}

/// The rollup's header and table (a format-3 table's stacks resolved through `vocab`); the
/// table must be one partition whose counts add up to the header's samples.
pub fn decode_rollup(bytes: &[u8], vocab: &dyn Vocabulary) -> Result<(RollupRow, Table), String> {
    let r: RollupRecord = from_msgpack(bytes)?;
    let row = rollup_header(&r)?;
    let table = decode_table(&r.table.0, vocab)?;
    if table.parts.len() > 1 {
        return Err(format!("a rollup table in {} partitions", table.parts.len()));
    }
    let sum = table.counts.iter().try_fold(0u64, |a, &c| a.checked_add(c));
    if sum != Some(row.samples) {
        return Err(format!("table counts add up to {sum:?}, header says {} samples", row.samples));
    }
    Ok((row, table))
}
