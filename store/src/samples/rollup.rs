//! Hour rollups: the batch tables of each clock hour summed into one table, so a profile over
//! a day reads 24 records instead of 8,640 batch tables.
//!
//! *Why:* a batch table is already its batch's histogram, but a day has 8,640 of them (one per
//! 10-s batch) and reading them all — ~100 µs each to decode, scattered across the store's
//! file between the per-CPU blocks — was what a whole-day profile cost (1.1–1.4 s warm, 3.7 s
//! cold on the benchmark's 96-CPU day). Over an hour the same `(thread, idle, stack)` entries
//! recur batch after batch, so the hour's sum is much smaller than its 360 tables. The threads
//! of one `(pid, comm)` count as one in it (see [`one_thread_per_process_name`]): queries
//! filter by pid and comm, never by thread.
//!
//! # What a rollup covers, and when it is trusted
//! The rollup of hour `H` (`H ++ H` key) sums *every* batch whose start lies in
//! `[H, H + 1 h)`, and records how many there were, the earliest start, the latest end, the
//! samples and the lost counts. A query uses it only when all those batches lie wholly inside
//! its range (`from ≤ first` and `end < to`), and then skips the hour's batches; anything else
//! (a range cutting the hour, a CPU filter, raw samples) reads batches as before.
//!
//! The rule that keeps it exact: **whatever changes the set of batches of a sealed hour deletes
//! its rollup in the same atomic sled batch** — a batch written late into the hour, and every
//! batch deletion (retention takes the oldest hour's batches one by one: from its first
//! deletion on, that hour is read batch by batch). A rollup is thus either absent or exactly
//! the sum of its hour's stored batches, whatever the crash.
//!
//! # When an hour is sealed
//! After a batch is written, under the writer lock: the hour of the latest batch *before* the
//! new batch's hour is complete (batches arrive in time order from the agent) and is sealed if
//! it has no rollup; so is the new batch's own hour when a later hour already has batches (a
//! late batch re-seals the hour whose rollup it dropped). Sealing reads the hour's tables
//! (~360, ~40 ms on the benchmark's host) once an hour, in its own atomic batch with the
//! totals; a crash before it leaves the hour unsealed, which costs speed, not correctness.
//! An hour whose sum would exceed a column's limit ([`super::MAX_BATCH_SAMPLES`] distinct
//! entries) is left unsealed.

use crate::keys;
use crate::{Inner, StoreError, TimeRange};

use super::codec::{self, Entry, RollupRow, Table};
use super::dict::{Dict, FxMap};
use super::model::SampleKind;

/// One hour, in nanoseconds.
pub const HOUR_NS: u64 = 3_600 * 1_000_000_000;

/// The start of the hour holding `t`.
pub fn hour_of(t: u64) -> u64 {
    t - t % HOUR_NS
}

impl Inner {
    /// Calls `each(row, table)` for every rollup whose batches all lie wholly inside `range`,
    /// in time order, and returns their hours: the hours whose batches the caller then skips
    /// (see `overlapping`).
    pub(super) fn for_each_rollup_inside(
        &self,
        range: TimeRange,
        dict: &Dict,
        mut each: impl FnMut(&RollupRow, &Table),
    ) -> Result<Vec<u64>, StoreError> {
        let TimeRange { from_unix_ns: from, to_unix_ns: to } = range;
        let mut covered = Vec::new();
        let lo = keys::rollup_key(hour_of(from));
        let hi = keys::rollup_key(to);
        for item in self.runs.range(lo..hi) {
            let (k, v) = item.map_err(|e| self.storage("list sample hour rollups", e))?;
            let hour = self.parse_rollup_key(&k)?;
            // The header decides; the table is decoded only for a rollup that serves.
            let row = codec::decode_rollup_row(&v).map_err(|d| self.corrupt(rollup_name(hour), d))?;
            self.check_hour(hour, &row)?;
            if from <= row.first && row.end < to {
                let (row, table) = self.decode_rollup(hour, &v, dict)?;
                each(&row, &table);
                covered.push(hour);
            }
        }
        Ok(covered)
    }

    /// A rollup's header and table.
    pub(super) fn read_rollup(&self, hour: u64, dict: &Dict) -> Result<(RollupRow, Table), StoreError> {
        let v = self
            .runs
            .get(keys::rollup_key(hour))
            .map_err(|e| self.storage("read a sample hour rollup", e))?
            .ok_or_else(|| self.corrupt(rollup_name(hour), "missing".into()))?;
        self.decode_rollup(hour, &v, dict)
    }

    fn decode_rollup(&self, hour: u64, v: &[u8], dict: &Dict) -> Result<(RollupRow, Table), StoreError> {
        let (row, table) = codec::decode_rollup(v, dict).map_err(|d| self.corrupt(rollup_name(hour), d))?;
        self.check_hour(hour, &row)?;
        Ok((row, table))
    }

    /// A rollup names batches of its own hour only.
    fn check_hour(&self, hour: u64, row: &RollupRow) -> Result<(), StoreError> {
        if hour_of(row.first) != hour {
            return Err(self.corrupt(rollup_name(hour), format!("its first batch starts at {}", row.first)));
        }
        Ok(())
    }

    fn parse_rollup_key(&self, k: &[u8]) -> Result<u64, StoreError> {
        keys::parse_rollup_key(k).ok_or_else(|| self.corrupt("sample rollup key".into(), format!("{k:?}")))
    }

    /// Adds to `batch` (and `totals`) the deletion of the rollup of the hour holding `start`, if
    /// there is one: what every write or delete of a batch starting at `start` must carry, so
    /// the rollup goes in the same atomic batch as the change to its hour. Returns the bytes
    /// it frees.
    pub(crate) fn drop_rollup_at(
        &self,
        start: u64,
        batch: &mut sled::Batch,
        totals: &mut keys::SampleTotals,
    ) -> Result<u64, StoreError> {
        let key = keys::rollup_key(hour_of(start));
        let Some(v) = self.runs.get(key).map_err(|e| self.storage("read a sample hour rollup", e))? else {
            return Ok(0);
        };
        let bytes = (key.len() + v.len()) as u64;
        batch.remove(&key);
        totals.rollup_bytes = totals.rollup_bytes.saturating_sub(bytes);
        Ok(bytes)
    }

    /// Seals the hours a batch starting at `start` completed (see the module docs). Caller
    /// holds the writer lock.
    ///
    /// Best effort: a rollup is derived data whose absence costs speed, not correctness, so a
    /// failure (a batch table that does not decode, a full disk) leaves the hour unsealed and
    /// is not the writer's error; queries and `verify` report a corrupt table themselves, and
    /// the next write tries again.
    pub(super) fn seal_completed_hours(&self, start: u64) {
        let hour = hour_of(start);
        let before =
            self.runs.range(keys::batch_bound(keys::BATCH, 0)..keys::batch_bound(keys::BATCH, hour)).next_back();
        if let Some(Ok((k, _))) = before
            && let Ok((prev, _)) = self.decode_batch_key(&k)
        {
            let _ = self.seal_hour(hour_of(prev));
        }
        if let Some(next) = hour.checked_add(HOUR_NS) {
            let mut later =
                self.runs.range(keys::batch_bound(keys::BATCH, next)..keys::batch_bound(keys::BATCH + 1, 0));
            if later.next().is_some() {
                let _ = self.seal_hour(hour);
            }
        }
    }

    /// Seals every hour before the newest batch's that has none (a store written before
    /// rollups existed, or a crash between a write and its sealing): one key lookup per hour
    /// when all are sealed. Called by `open`; best effort, like [`Self::seal_completed_hours`].
    pub(crate) fn seal_unsealed_hours(&self) {
        let _w = self.lock_writer();
        let newest = match self.runs.scan_prefix([keys::BATCH]).next_back() {
            Some(Ok((k, _))) => match self.decode_batch_key(&k) {
                Ok((start, _)) => hour_of(start),
                Err(_) => return,
            },
            _ => return,
        };
        let mut at = 0;
        let mut sealed = false;
        while let Some(Ok((k, _))) =
            self.runs.range(keys::batch_bound(keys::BATCH, at)..keys::batch_bound(keys::BATCH, newest)).next()
        {
            let Ok((start, _)) = self.decode_batch_key(&k) else { return };
            let hour = hour_of(start);
            sealed |= self.seal_hour(hour).unwrap_or(false);
            at = hour + HOUR_NS; // below `newest`, so no overflow
        }
        if sealed {
            let _ = self.flush("flush sample hour rollups");
        }
    }

    /// Writes the rollup of `hour` unless it exists or cannot be written (see the module
    /// docs), and says whether it wrote one. Caller holds the writer lock.
    fn seal_hour(&self, hour: u64) -> Result<bool, StoreError> {
        let key = keys::rollup_key(hour);
        if self.runs.contains_key(key).map_err(|e| self.storage("read a sample hour rollup", e))? {
            return Ok(false);
        }
        self.ensure_dict()?;
        let value = {
            let dict = self.dict_read();
            let Some((row, table)) = self.sum_hour(hour, &dict)? else { return Ok(false) };
            match named_by_vocabulary(&table, &dict) {
                Some((table, locals)) => codec::encode_rollup(&row, &table, Some(&locals)),
                None => codec::encode_rollup(&row, &table, None),
            }
        };
        let mut t = self.sample_totals()?;
        t.rollup_bytes += (key.len() + value.len()) as u64;
        let mut batch = sled::Batch::default();
        batch.insert(&key, value);
        batch.insert(keys::SAMPLE_TOTALS, t.encode());
        self.apply_adding(batch, &format!("write the sample rollup of hour {hour}"))?;
        Ok(true)
    }

    /// What the rollup of `hour` is from the stored batches: `None` when the hour has no
    /// batch, is the last one before `u64::MAX` (which a batch key cannot bound), or would
    /// exceed a column's limit.
    pub(crate) fn sum_hour(&self, hour: u64, dict: &Dict) -> Result<Option<(RollupRow, Table)>, StoreError> {
        let Some(next) = hour.checked_add(HOUR_NS) else { return Ok(None) };
        let mut row = RollupRow { first: u64::MAX, ..RollupRow::default() };
        let mut tables = Vec::new();
        self.for_each_batch(hour, next, |start, id, b| {
            row.batches += 1;
            row.first = row.first.min(start);
            row.end = row.end.max(b.end);
            row.samples = row.samples.saturating_add(b.samples);
            row.lost = row.lost.saturating_add(b.lost);
            if b.samples > 0 {
                tables.push((start, id));
            }
            Ok(())
        })?;
        if row.batches == 0 {
            return Ok(None);
        }
        let mut sums: FxMap<Entry, u64> = FxMap::default();
        for (start, id) in tables {
            let table = self.read_table(SampleKind::OnCpu, start, id, dict)?;
            for (e, &n) in table.entries.iter().zip(&table.counts) {
                *sums.entry(*e).or_default() += n;
            }
            if sums.len() > super::MAX_BATCH_SAMPLES {
                return Ok(None);
            }
        }
        Ok(Some((row, one_thread_per_process_name(sums, dict))))
    }
}

/// The hour's entries as a rollup's table: the threads of one `(pid, comm)` counted as one,
/// the lowest-numbered of them among the entries (a thread the dictionary does not hold stays
/// as it is). Also what a rollup written before this merge is compared through (`verify`).
///
/// *Why:* a query filters by pid and comm, never by thread, and a profile has no threads, so
/// thread ids in a rollup only made it longer: a process's worker threads sampled in the same
/// stacks were one entry each. On the samples benchmark's day this halves the rollups (7.50 →
/// 3.74 MB, 5.52 → 2.66 M entries: ~0.36 of the ~17 bits a sample stored).
pub(crate) fn one_thread_per_process_name(sums: FxMap<Entry, u64>, dict: &Dict) -> Table {
    let name = |thread: u32| dict.thread(thread).map(|t| (t.pid, t.comm));
    let mut first: FxMap<(u32, u32), u32> = FxMap::default();
    for e in sums.keys() {
        if let Some(n) = name(e.thread) {
            let t = first.entry(n).or_insert(e.thread);
            *t = (*t).min(e.thread);
        }
    }
    let mut merged: FxMap<Entry, u64> = FxMap::default();
    for (e, n) in sums {
        let thread = name(e.thread).map_or(e.thread, |n| first[&n]);
        *merged.entry(Entry { thread, ..e }).or_default() += n;
    }
    let mut entries: Vec<(Entry, u64)> = merged.into_iter().collect();
    entries.sort_unstable_by_key(|(e, _)| *e);
    let (entries, counts) = entries.into_iter().unzip();
    codec::single_partition(entries, counts)
}

/// `table` (one partition) ordered as a format-3 table is, by thread, idle, then the stack's
/// name in its process's vocabulary, with those names; `None` when a stack has no name (a
/// store whose batches were written before vocabularies), and the rollup is written in
/// format 2. The names a rollup uses stay in the dictionary as long as it does: they are
/// those of its hour's batch tables, and any change to those batches deletes the rollup.
fn named_by_vocabulary(table: &Table, dict: &Dict) -> Option<(Table, Vec<u32>)> {
    let mut rows = Vec::with_capacity(table.entries.len());
    for (e, &n) in table.entries.iter().zip(&table.counts) {
        let pid = dict.thread(e.thread)?.pid;
        rows.push((*e, n, *dict.vocab_ids.get(&(pid, e.stack))?));
    }
    rows.sort_unstable_by_key(|&(e, _, local)| (e.thread, e.idle, local));
    let locals = rows.iter().map(|&(_, _, local)| local).collect();
    let (entries, counts) = rows.into_iter().map(|(e, n, _)| (e, n)).unzip();
    Some((codec::single_partition(entries, counts), locals))
}

fn rollup_name(hour: u64) -> String {
    format!("sample rollup of the hour at {hour} ns")
}
