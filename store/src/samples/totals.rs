//! The sample totals record (`x`): counts, bytes and dictionary id counters.
//!
//! *Why a running record:* [`Store::stats`], [`Store::sample_stats`] and
//! [`Store::lost_samples`] are asked on every `/metrics` scrape and by retention, and must not
//! scan ~9k batch records per retained day. The record is rewritten in the same atomic batch as
//! every batch write, batch delete and dictionary sweep, so it always equals the sums over the
//! stored records (checked by [`Store::verify`]).

use crate::keys::{self, SampleTotals};
use crate::{Inner, Store, StoreError};

use super::model::SampleStats;

impl Store {
    /// Samples the kernel dropped, summed over the retained batches (reads every batch's
    /// metadata record: ~9k per retained day of a host, not the samples).
    pub fn lost_samples(&self) -> Result<u64, StoreError> {
        let _r = self.inner.read_lock();
        let mut lost = 0;
        self.inner.for_each_batch(0, u64::MAX, |_, _, row| {
            lost += row.lost;
            Ok(())
        })?;
        Ok(lost)
    }

    /// Sample totals, from the running counters (no scan).
    pub fn sample_stats(&self) -> Result<SampleStats, StoreError> {
        let t = self.inner.sample_totals()?;
        Ok(SampleStats {
            samples: t.samples,
            batches: t.batches,
            stored_bytes: t.batch_bytes + t.dict_bytes,
            stacks: t.stacks,
            frames: t.frames,
            comms: t.comms,
            threads: t.threads,
            dictionary_bytes: t.dict_bytes,
        })
    }
}

impl Inner {
    pub(crate) fn sample_totals(&self) -> Result<SampleTotals, StoreError> {
        match self.runs.get(keys::SAMPLE_TOTALS).map_err(|e| self.storage("read sample totals", e))? {
            None => Ok(SampleTotals::default()),
            Some(v) => SampleTotals::decode(&v)
                .ok_or_else(|| self.corrupt("sample totals record".into(), format!("{} bytes", v.len()))),
        }
    }
}
