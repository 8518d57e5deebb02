//! The sample totals record (`x`): counts, bytes, lost samples and dictionary id counters.
//!
//! *Why a running record:* [`Store::stats`], [`Store::sample_stats`] and
//! [`Store::lost_samples`] are asked on every `/metrics` scrape and by retention, and must not
//! scan ~9k batch records per retained day. The record is rewritten in the same atomic batch as
//! every batch write, batch delete and dictionary sweep, so it always equals the sums over the
//! stored records (checked by [`Store::verify`]).
//!
//! **Lost samples** (`lost`) are the sum of the *retained* batches' lost counts: a batch adds
//! its `lost` in the batch that stores it, and retention subtracts it in the batch that deletes
//! it — the same number a scan of the batch records gives (which is what
//! [`Store::lost_samples`] did before the counter existed). A store written before the field
//! existed has an `x` record without it; [`Store::open`] recomputes it once from the batch
//! records (one scan of the `B` records, ~9k per retained day) and writes it back, so every
//! later read is a counter read.

use crate::keys::{self, SampleTotals};
use crate::{Inner, Store, StoreError};

use super::model::SampleStats;

impl Store {
    /// Samples the kernel dropped, summed over the retained batches, from the running counter
    /// (no scan; also in [`crate::StoreStats::lost_samples`]).
    pub fn lost_samples(&self) -> Result<u64, StoreError> {
        Ok(self.inner.sample_totals()?.lost.unwrap_or(0))
    }

    /// Sample totals, from the running counters (no scan).
    pub fn sample_stats(&self) -> Result<SampleStats, StoreError> {
        let t = self.inner.sample_totals()?;
        Ok(SampleStats {
            samples: t.samples,
            batches: t.batches,
            stored_bytes: t.batch_bytes + t.dict_bytes + t.rollup_bytes,
            stacks: t.stacks,
            frames: t.frames,
            comms: t.comms,
            threads: t.threads,
            vocabulary: t.vocab,
            dictionary_bytes: t.dict_bytes,
            rollup_bytes: t.rollup_bytes,
        })
    }
}

impl Inner {
    pub(crate) fn sample_totals(&self) -> Result<SampleTotals, StoreError> {
        match self.runs.get(keys::SAMPLE_TOTALS).map_err(|e| self.storage("read sample totals", e))? {
            // No record: no batch was ever stored, so nothing was lost either.
            None => Ok(SampleTotals { lost: Some(0), ..SampleTotals::default() }),
            Some(v) => SampleTotals::decode(&v)
                .ok_or_else(|| self.corrupt("sample totals record".into(), format!("{} bytes", v.len()))),
        }
    }

    /// Lost samples summed over the stored batch records (a scan of the `B` records).
    pub(crate) fn scan_lost(&self) -> Result<u64, StoreError> {
        let mut lost = 0u64;
        self.for_each_batch(0, u64::MAX, |_, _, row| {
            lost = lost.saturating_add(row.lost);
            Ok(())
        })?;
        Ok(lost)
    }

    /// Fills in `lost` in a totals record written before the field existed (see the module
    /// docs). Called once by `open`, before the handle is shared; a no-op on current stores.
    pub(crate) fn upgrade_sample_totals(&self) -> Result<(), StoreError> {
        let _w = self.lock_writer();
        let Some(v) = self.runs.get(keys::SAMPLE_TOTALS).map_err(|e| self.storage("read sample totals", e))? else {
            return Ok(());
        };
        let mut t = SampleTotals::decode(&v)
            .ok_or_else(|| self.corrupt("sample totals record".into(), format!("{} bytes", v.len())))?;
        if t.lost.is_some() {
            return Ok(());
        }
        t.lost = Some(self.scan_lost()?);
        let mut batch = sled::Batch::default();
        batch.insert(keys::SAMPLE_TOTALS, t.encode());
        self.apply(batch, "record the lost-sample total")?;
        self.flush("flush the lost-sample total")
    }
}

#[cfg(test)]
mod tests {
    use crate::keys::{self, SampleTotals};
    use crate::*;

    const T0: u64 = 1_700_000_000_000_000_000;
    const SEC: u64 = 1_000_000_000;

    fn sample(t: u64, cpu: u32) -> StackSample {
        StackSample {
            time_unix_ns: t,
            cpu,
            pid: 42,
            tid: 43,
            comm: "worker".into(),
            cgroup_id: 1,
            idle: false,
            frames: vec![Frame::user("main", "app"), Frame::kernel("schedule")],
        }
    }

    fn batch(start: u64) -> Vec<StackSample> {
        (0..20).map(|i| sample(start + i * SEC / 10, (i % 2) as u32)).collect()
    }

    fn lost_now(store: &Store) -> (u64, u64, u64) {
        let scanned: u64 = store.sample_batches(TimeRange::ALL).unwrap().iter().map(|b| b.lost).sum();
        (store.stats().unwrap().lost_samples, store.lost_samples().unwrap(), scanned)
    }

    #[test]
    fn lost_total_follows_writes_and_retention() {
        let dir = tempfile::tempdir().unwrap();
        let retention = Retention { max_age: std::time::Duration::from_secs(3600), ..Retention::default() };
        let store = Store::open(dir.path(), retention).unwrap();
        assert_eq!(lost_now(&store), (0, 0, 0));
        store.put_samples(&batch(T0), 5, T0).unwrap();
        store.put_samples(&[], 7, T0 + 30 * SEC).unwrap(); // only lost samples
        store.put_samples(&batch(T0 + 3600 * SEC), 11, T0 + 3600 * SEC).unwrap();
        assert_eq!(lost_now(&store), (23, 23, 23));
        // Retention drops the first two batches (older than an hour at T0 + 1 h 1 min).
        let report = store.enforce_retention(T0 + 3660 * SEC).unwrap();
        assert_eq!(report.deleted_sample_batches, 2);
        assert_eq!(lost_now(&store), (11, 11, 11));
        assert!(store.verify().unwrap().is_ok());
        drop(store);
        let store = Store::open(dir.path(), Retention::default()).unwrap();
        assert_eq!(lost_now(&store), (11, 11, 11));
    }

    #[test]
    fn verify_catches_a_wrong_lost_total() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), Retention::default()).unwrap();
        store.put_samples(&batch(T0), 5, T0).unwrap();
        let mut t = store.inner.sample_totals().unwrap();
        t.lost = Some(6);
        store.inner.runs.insert(keys::SAMPLE_TOTALS, t.encode()).unwrap();
        let report = store.verify().unwrap();
        assert!(report.problems.iter().any(|p| p.contains("lost")), "{:?}", report.problems);
    }

    #[test]
    fn store_from_before_the_lost_total_is_recomputed_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), Retention::default()).unwrap();
        store.put_samples(&batch(T0), 5, T0).unwrap();
        store.put_samples(&batch(T0 + 20 * SEC), 8, T0).unwrap();
        // Rewrite the totals as the previous version stored them: 14 fields, no `lost`.
        let t = store.inner.sample_totals().unwrap();
        let old = rmp_serde::to_vec(&(
            t.batches,
            t.samples,
            t.batch_bytes,
            t.dict_bytes,
            t.stacks,
            t.frames,
            t.comms,
            t.next_stack,
            t.next_frame,
            t.next_comm,
            t.max_span_ns,
            t.deleted_since_gc,
            t.threads,
            t.next_thread,
        ))
        .unwrap();
        store.inner.runs.insert(keys::SAMPLE_TOTALS, old).unwrap();
        assert_eq!(store.inner.sample_totals().unwrap().lost, None);
        drop(store);
        let store = Store::open(dir.path(), Retention::default()).unwrap();
        let stored = SampleTotals::decode(&store.inner.runs.get(keys::SAMPLE_TOTALS).unwrap().unwrap()).unwrap();
        assert_eq!(stored.lost, Some(13), "recomputed and written back at open");
        assert_eq!(lost_now(&store), (13, 13, 13));
        // The batches were written by this version, with stack vocabularies the old record
        // cannot count; that count is the only thing verify may find wrong.
        let report = store.verify().unwrap();
        assert!(report.problems.iter().all(|p| p.contains("vocabulary")), "{:?}", report.problems);
    }
}
