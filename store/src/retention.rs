//! Retention: by age, then by bytes, oldest first.
//!
//! Because `m` keys sort by start time, "the oldest run" is simply the first `m` key, and
//! "runs older than the cutoff" is a range scan — no index beyond the key order is needed.
//! The byte total comes from the running counter, so checking the cap costs one read. Each
//! victim is removed by [`Inner::delete_locked`] in one atomic batch (all its records plus
//! the totals), so a crash mid-retention never leaves a half-deleted run.

use crate::{Inner, RetentionReport, RunId, RunMeta, StoreError, keys};

impl Inner {
    /// Applies the retention policy. `protect` (the run just written) is never deleted.
    /// Caller holds the writer lock and flushes afterwards.
    pub(crate) fn enforce_retention(
        &self,
        now_unix_ns: u64,
        protect: Option<RunId>,
    ) -> Result<RetentionReport, StoreError> {
        let mut report = RetentionReport::default();
        let max_age_ns = u64::try_from(self.retention.max_age.as_nanos()).unwrap_or(u64::MAX);
        let cutoff = now_unix_ns.saturating_sub(max_age_ns);

        // By age: every run that started before the cutoff.
        let expired = if cutoff == 0 {
            Vec::new()
        } else {
            let range = self.runs.range(keys::meta_bound(0)..keys::meta_bound(cutoff));
            self.metas_in(range, protect, None)?
        };
        for meta in expired {
            report.freed_bytes += self.delete_locked(&meta)?;
            report.deleted_runs += 1;
        }

        // By bytes: the oldest runs until the total fits.
        while self.totals()?.stored_bytes > self.retention.max_bytes {
            let all = self.runs.scan_prefix([keys::META]);
            let Some(oldest) = self.metas_in(all, protect, Some(1))?.pop() else {
                break; // only the protected run is left (it fits alone, checked at put)
            };
            report.freed_bytes += self.delete_locked(&oldest)?;
            report.deleted_runs += 1;
        }
        Ok(report)
    }

    /// Metadata from a scan over `m` keys, skipping `protect`, at most `limit` of them.
    fn metas_in(
        &self,
        scan: sled::Iter,
        protect: Option<RunId>,
        limit: Option<usize>,
    ) -> Result<Vec<RunMeta>, StoreError> {
        let mut out = Vec::new();
        for item in scan {
            if limit.is_some_and(|l| out.len() >= l) {
                break;
            }
            let (k, v) = item.map_err(|e| self.storage("scan runs for retention", e))?;
            let meta = self.decode_meta_record(&k, &v)?;
            if Some(meta.id) != protect {
                out.push(meta);
            }
        }
        Ok(out)
    }
}
