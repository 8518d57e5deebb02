//! Retention: by age, then by bytes, oldest first — runs, stack-sample batches, timeline
//! batches and probe sessions alike.
//!
//! Because `m` keys sort by start time, "the oldest run" is simply the first `m` key, and
//! "runs older than the cutoff" is a range scan — no index beyond the key order is needed.
//! Sample batches (`B` keys, and `O` for waits off the CPU) sort the same way by their first
//! sample, so they are handled as one more kind of run, and so are timeline batches (`E` keys, by their first event) and probe
//! sessions (`P` keys, by their start): by age, every run, batch and session that started
//! before the cutoff goes; by bytes, the oldest of the oldest run, sample batch, timeline
//! batch and probe session goes until the total (all of them and both dictionaries) fits the
//! cap. The byte totals come from the running counters, so checking the cap costs four
//! reads. Each victim is removed in one atomic batch (all its
//! records plus the totals), so a crash mid-retention never leaves a half-deleted run or batch.
//! When enough batches went, the unreferenced part of each dictionary is swept.
//!
//! No writer calls this module: retention deletes every kind of record, so it sits above the
//! kinds, and the put methods (`put`, above both) run a pass after each write, with a
//! [`Protect`] for what the write stored.

use crate::samples::model::SampleKind;
use crate::{Inner, RetentionReport, RunId, RunMeta, Store, StoreError, keys};

/// What the write that triggered retention stored; never deleted by that pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Protect {
    Run(RunId),
    Batch(u64),
    Timeline(u64),
    Probe(u64),
}

impl Store {
    /// Deletes runs, sample batches, timeline batches and probe sessions that started before
    /// `now - max_age`, then the oldest of any until the stored bytes (dictionaries included)
    /// fit the cap. Each run, batch and session goes in one atomic batch.
    pub fn enforce_retention(&self, now_unix_ns: u64) -> Result<RetentionReport, StoreError> {
        let _w = self.inner.lock_writer();
        let report = self.inner.enforce_retention(now_unix_ns, None)?;
        if report.deleted_anything() {
            self.inner.flush("flush retention deletes")?;
        }
        Ok(report)
    }
}

impl Inner {
    /// Applies the retention policy. `protect` (the run or batch just written) is never
    /// deleted. Caller holds the writer lock and flushes afterwards.
    pub(crate) fn enforce_retention(
        &self,
        now_unix_ns: u64,
        protect: Option<Protect>,
    ) -> Result<RetentionReport, StoreError> {
        let mut report = RetentionReport::default();
        let max_age_ns = u64::try_from(self.retention.max_age.as_nanos()).unwrap_or(u64::MAX);
        let cutoff = now_unix_ns.saturating_sub(max_age_ns);
        let protect_run = match protect {
            Some(Protect::Run(id)) => Some(id),
            _ => None,
        };
        let protect_batch = match protect {
            Some(Protect::Batch(id)) => Some(id),
            _ => None,
        };
        let protect_tl = match protect {
            Some(Protect::Timeline(id)) => Some(id),
            _ => None,
        };
        let protect_probe = match protect {
            Some(Protect::Probe(id)) => Some(id),
            _ => None,
        };

        // By age: every run and batch that started before the cutoff.
        if cutoff > 0 {
            let range = self.runs.range(keys::meta_bound(0)..keys::meta_bound(cutoff));
            for meta in self.metas_in(range, protect_run, None)? {
                report.freed_bytes += self.delete_locked(&meta)?;
                report.deleted_runs += 1;
            }
            let mut expired = Vec::new();
            for kind in [SampleKind::OnCpu, SampleKind::OffCpu] {
                self.for_each_batch_of(kind, 0, cutoff, |start, id, row| {
                    if Some(id) != protect_batch {
                        expired.push((kind, start, id, row.clone()));
                    }
                    Ok(())
                })?;
            }
            for (kind, start, id, row) in expired {
                report.freed_bytes += self.delete_batch_locked(kind, start, id, &row)?;
                report.deleted_sample_batches += 1;
            }
            if report.deleted_sample_batches > 0 {
                self.maybe_sweep_dictionary()?;
            }
            let mut expired = Vec::new();
            self.for_each_tl_batch(0, cutoff, |start, id, row| {
                if Some(id) != protect_tl {
                    expired.push((start, id, row.into_owned()));
                }
                Ok(true)
            })?;
            for (start, id, row) in &expired {
                report.freed_bytes += self.delete_tl_batch_locked(*start, *id, row)?;
                report.deleted_timeline_batches += 1;
            }
            if !expired.is_empty() {
                self.maybe_sweep_tl_dict()?;
            }
            let mut expired = Vec::new();
            self.for_each_probe(0, cutoff, |start, id, row| {
                if Some(id) != protect_probe {
                    expired.push((start, id, row.into_owned()));
                }
                Ok(true)
            })?;
            for (start, id, row) in &expired {
                report.freed_bytes += self.delete_probe_locked(*start, *id, row)?;
                report.deleted_probe_sessions += 1;
            }
        }

        // By bytes: the oldest run or batch until the total fits.
        while self.total_bytes()? > self.retention.max_bytes {
            let all = self.runs.scan_prefix([keys::META]);
            let run = self.metas_in(all, protect_run, Some(1))?.pop();
            // The older of the oldest CPU-sample and off-CPU batch (ties: CPU samples).
            let batch = match (
                self.oldest_batch(SampleKind::OnCpu, protect_batch)?,
                self.oldest_batch(SampleKind::OffCpu, protect_batch)?,
            ) {
                (Some(on), Some(off)) if off.0 < on.0 => Some((SampleKind::OffCpu, off)),
                (Some(on), _) => Some((SampleKind::OnCpu, on)),
                (None, off) => off.map(|b| (SampleKind::OffCpu, b)),
            };
            let tl = self.oldest_tl_batch(protect_tl)?;
            let probe = self.oldest_probe(protect_probe)?;
            // The kind whose oldest starts first (ties: runs, sample, timeline batches, probes).
            let starts = [
                run.as_ref().map(|r| r.start_unix_ns),
                batch.as_ref().map(|b| b.1.0),
                tl.as_ref().map(|t| t.0),
                probe.as_ref().map(|p| p.0),
            ];
            let oldest = (0..4).filter(|&i| starts[i].is_some()).min_by_key(|&i| (starts[i], i));
            match oldest {
                Some(0) => {
                    let run = run.expect("run present");
                    report.freed_bytes += self.delete_locked(&run)?;
                    report.deleted_runs += 1;
                }
                Some(1) => {
                    let (kind, (start, id, row)) = batch.expect("batch present");
                    report.freed_bytes += self.delete_batch_locked(kind, start, id, &row)?;
                    report.deleted_sample_batches += 1;
                    // Dictionary entries only the deleted batches used count against the cap
                    // too: sweep them before deleting more batches than needed.
                    self.maybe_sweep_dictionary()?;
                }
                Some(2) => {
                    let (start, id, row) = tl.expect("timeline batch present");
                    report.freed_bytes += self.delete_tl_batch_locked(start, id, &row)?;
                    report.deleted_timeline_batches += 1;
                    self.maybe_sweep_tl_dict()?;
                }
                Some(_) => {
                    let (start, id, row) = probe.expect("probe session present");
                    report.freed_bytes += self.delete_probe_locked(start, id, &row)?;
                    report.deleted_probe_sessions += 1;
                }
                None => {
                    // Only the protected write is left (it fits alone, checked at put), plus
                    // perhaps dictionary entries nothing refers to any more.
                    if self.sample_totals()?.deleted_since_gc > 0 {
                        self.sweep_dictionary()?;
                    }
                    if self.tl_totals()?.deleted_since_gc > 0 {
                        self.sweep_tl_dict()?;
                    }
                    break;
                }
            }
        }
        Ok(report)
    }

    /// Bytes the retention cap applies to: runs, sample and timeline batches, dictionaries,
    /// probe sessions.
    pub(crate) fn total_bytes(&self) -> Result<u64, StoreError> {
        let s = self.sample_totals()?;
        let t = self.tl_totals()?;
        let p = self.probe_totals()?;
        Ok(self.totals()?.stored_bytes
            + s.batch_bytes
            + s.dict_bytes
            + s.rollup_bytes
            + t.batch_bytes
            + t.dict_bytes
            + p.bytes)
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
