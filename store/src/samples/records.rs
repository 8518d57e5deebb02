//! A sample batch's records by key: listing batches, reading a table or a block, deleting a
//! batch.
//!
//! A batch's blocks are in its table record (`h`); batches written before that have one `b`
//! record per CPU, and still read: [`Inner::read_block`] takes either.
//!
//! *Why apart:* every reader (profiles, raw samples, cursors, days, verify) and the writer's
//! retention reach the `B`, `h` and `b` records through these few functions, which turn a
//! missing or undecodable record into [`StoreError::Corrupt`] naming the batch.

use crate::keys;
use crate::{Inner, Store, StoreError, TimeRange};

use super::codec::{self, BatchRow, Table, Vocabulary};
use super::model::{SampleBatchMeta, SampleKind};

impl SampleKind {
    /// The key kind of its batches' metadata records.
    pub(crate) fn meta_prefix(self) -> u8 {
        match self {
            SampleKind::OnCpu => keys::BATCH,
            SampleKind::OffCpu => keys::OFF_BATCH,
        }
    }

    /// The key kind of its batches' table records (the blocks are in them).
    pub(crate) fn table_prefix(self) -> u8 {
        match self {
            SampleKind::OnCpu => keys::TABLE,
            SampleKind::OffCpu => keys::OFF_TABLE,
        }
    }

    /// What its batches are called in errors.
    pub(crate) fn batch_name(self) -> &'static str {
        match self {
            SampleKind::OnCpu => "sample batch",
            SampleKind::OffCpu => "off-CPU batch",
        }
    }
}

impl Store {
    /// Metadata of the sample batches whose time (earliest sample) lies in `range`, in time
    /// order.
    pub fn sample_batches(&self, range: TimeRange) -> Result<Vec<SampleBatchMeta>, StoreError> {
        self.batches_of(SampleKind::OnCpu, range)
    }

    /// Metadata of the off-CPU batches ([`Store::put_off_cpu`]) whose time (earliest wait)
    /// lies in `range`, in time order.
    pub fn off_cpu_batches(&self, range: TimeRange) -> Result<Vec<SampleBatchMeta>, StoreError> {
        self.batches_of(SampleKind::OffCpu, range)
    }

    fn batches_of(&self, kind: SampleKind, range: TimeRange) -> Result<Vec<SampleBatchMeta>, StoreError> {
        range.check()?;
        let _r = self.inner.read_lock();
        let mut out = Vec::new();
        self.inner.for_each_batch_of(kind, range.from_unix_ns, range.to_unix_ns, |start, id, row| {
            out.push(meta_of(start, id, row));
            Ok(())
        })?;
        Ok(out)
    }
}

/// A batch's table, and its blocks' directory when they are in the batch's record (see
/// [`Inner::read_batch`]).
pub(crate) struct BatchSamples {
    pub kind: SampleKind,
    pub start: u64,
    pub id: u64,
    pub table: Table,
    pub blocks: Option<codec::BlockDir>,
    record: sled::IVec,
}

pub(crate) fn meta_of(start: u64, id: u64, row: &BatchRow) -> SampleBatchMeta {
    SampleBatchMeta {
        id,
        start_unix_ns: start,
        end_unix_ns: row.end,
        samples: row.samples,
        lost: row.lost,
        cpus: row.cpus.clone(),
        stored_bytes: row.stored_bytes,
    }
}

impl Inner {
    /// Calls `each(start, id, row)` for every CPU-sample batch whose start lies in
    /// `[from, to)`, in order.
    pub(crate) fn for_each_batch(
        &self,
        from: u64,
        to: u64,
        each: impl FnMut(u64, u64, &BatchRow) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.for_each_batch_of(SampleKind::OnCpu, from, to, each)
    }

    /// Calls `each(start, id, row)` for every batch of `kind` whose start lies in
    /// `[from, to)`, in order.
    pub(crate) fn for_each_batch_of(
        &self,
        kind: SampleKind,
        from: u64,
        to: u64,
        mut each: impl FnMut(u64, u64, &BatchRow) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        if from >= to {
            return Ok(());
        }
        let lo = keys::batch_bound(kind.meta_prefix(), from);
        let hi = keys::batch_bound(kind.meta_prefix(), to);
        for item in self.runs.range(lo..hi) {
            let (k, v) = item.map_err(|e| self.storage("list sample batches", e))?;
            let (start, id) = self.decode_batch_key(&k)?;
            let row =
                codec::decode_batch(&v).map_err(|d| self.corrupt(format!("{} {id} metadata", kind.batch_name()), d))?;
            each(start, id, &row)?;
        }
        Ok(())
    }

    pub(crate) fn decode_batch_key(&self, k: &[u8]) -> Result<(u64, u64), StoreError> {
        keys::parse_batch_key(k).ok_or_else(|| self.corrupt("sample batch key".into(), format!("{k:?}")))
    }

    /// A batch's table record (`h`) and the table in it; `vocab` (the dictionary cache) names
    /// the stacks of a format-3 table.
    fn table_record(
        &self,
        kind: SampleKind,
        start: u64,
        id: u64,
        vocab: &dyn Vocabulary,
    ) -> Result<(sled::IVec, Table), StoreError> {
        let what = || format!("{} {id} table", kind.batch_name());
        let record = self
            .runs
            .get(keys::batch_key(kind.table_prefix(), start, id))
            .map_err(|e| self.storage("read a sample batch table", e))?
            .ok_or_else(|| self.corrupt(what(), "missing".into()))?;
        let table = codec::decode_table(&record, vocab).map_err(|d| self.corrupt(what(), d))?;
        Ok((record, table))
    }

    /// A batch's table alone (its blocks, if in its record, are not looked at).
    pub(crate) fn read_table(
        &self,
        kind: SampleKind,
        start: u64,
        id: u64,
        vocab: &dyn Vocabulary,
    ) -> Result<Table, StoreError> {
        Ok(self.table_record(kind, start, id, vocab)?.1)
    }

    /// A batch's table and where its blocks are: what a reader of its samples needs.
    pub(crate) fn read_batch(
        &self,
        kind: SampleKind,
        start: u64,
        id: u64,
        vocab: &dyn Vocabulary,
    ) -> Result<BatchSamples, StoreError> {
        let (record, table) = self.table_record(kind, start, id, vocab)?;
        let blocks = codec::decode_block_dir(&record)
            .map_err(|d| self.corrupt(format!("{} {id} blocks", kind.batch_name()), d))?;
        Ok(BatchSamples { kind, start, id, table, blocks, record })
    }

    /// CPU `cpu`'s block of `batch`: from the batch's record, or from its own `b` record for
    /// a batch written before blocks moved into the batch's record.
    pub(crate) fn read_block(
        &self,
        batch: &BatchSamples,
        cpu: u32,
        with_times: bool,
    ) -> Result<codec::Block, StoreError> {
        let (start, id) = (batch.start, batch.id);
        let what = || format!("{} {id} cpu {cpu} block", batch.kind.batch_name());
        if let Some(dir) = &batch.blocks {
            let at = dir.get(cpu).ok_or_else(|| self.corrupt(what(), "missing from the batch's record".into()))?;
            return dir.decode(&batch.record, at, start, &batch.table, with_times).map_err(|d| self.corrupt(what(), d));
        }
        let v = self
            .runs
            .get(keys::block_key(start, cpu, id))
            .map_err(|e| self.storage("read a sample block", e))?
            .ok_or_else(|| self.corrupt(what(), "missing".into()))?;
        codec::decode_block(&v, start, &batch.table, cpu, with_times).map_err(|d| self.corrupt(what(), d))
    }

    /// Deletes every record of a batch in one atomic batch with the totals. Caller holds the
    /// writer lock. Returns the bytes freed.
    pub(crate) fn delete_batch_locked(
        &self,
        kind: SampleKind,
        start: u64,
        id: u64,
        row: &BatchRow,
    ) -> Result<u64, StoreError> {
        let op = format!("delete {} {id}", kind.batch_name());
        let mut batch = sled::Batch::default();
        let mut t = self.sample_totals()?;
        let mut rollup_bytes = 0;
        match kind {
            SampleKind::OnCpu => {
                // Whatever blocks exist under the batch's time (not only `row.cpus`), so a
                // delete never leaves anything behind.
                for k in self.runs.scan_prefix(keys::batch_bound(keys::BLOCK, start)).keys() {
                    let k = k.map_err(|e| self.storage(&op, e))?;
                    if keys::parse_block_key(&k).is_some_and(|(_, _, b)| b == id) {
                        batch.remove(k);
                    }
                }
                // The hour's rollup summed this batch: from now on the hour is read batch by
                // batch.
                rollup_bytes = self.drop_rollup_at(start, &mut batch, &mut t)?;
            }
            SampleKind::OffCpu => batch.remove(&keys::batch_key(keys::OFF_WAITS, start, id)),
        }
        batch.remove(&keys::batch_key(kind.table_prefix(), start, id));
        batch.remove(&keys::batch_key(kind.meta_prefix(), start, id));
        t.batches = t.batches.saturating_sub(1);
        t.samples = t.samples.saturating_sub(row.samples);
        t.batch_bytes = t.batch_bytes.saturating_sub(row.stored_bytes);
        t.lost = t.lost.map(|l| l.saturating_sub(row.lost));
        t.deleted_since_gc += 1;
        batch.insert(keys::SAMPLE_TOTALS, t.encode());
        self.apply(batch, &op)?;
        Ok(row.stored_bytes + rollup_bytes)
    }

    /// The oldest batch of `kind` other than `protect`.
    pub(crate) fn oldest_batch(
        &self,
        kind: SampleKind,
        protect: Option<u64>,
    ) -> Result<Option<(u64, u64, BatchRow)>, StoreError> {
        let mut found = None;
        self.for_each_batch_until(kind, |start, id, row| {
            if Some(id) == protect {
                return true;
            }
            found = Some((start, id, row));
            false
        })?;
        Ok(found)
    }

    fn for_each_batch_until(
        &self,
        kind: SampleKind,
        mut each: impl FnMut(u64, u64, BatchRow) -> bool,
    ) -> Result<(), StoreError> {
        for item in self.runs.scan_prefix([kind.meta_prefix()]) {
            let (k, v) = item.map_err(|e| self.storage("scan sample batches", e))?;
            let (start, id) = self.decode_batch_key(&k)?;
            let row =
                codec::decode_batch(&v).map_err(|d| self.corrupt(format!("{} {id} metadata", kind.batch_name()), d))?;
            if !each(start, id, row) {
                break;
            }
        }
        Ok(())
    }
}
