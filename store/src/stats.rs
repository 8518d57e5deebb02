//! Store-wide figures: totals from the running counters, and the per-day summary.
//!
//! *Why counters:* [`Store::stats`] is asked on every `/metrics` scrape and before every
//! retention decision, so it must not scan. The `s` record (runs, bytes of runs), the `x`
//! record (sample batches, samples, bytes, lost samples, dictionary), the `y` record
//! (timeline) and the `q` record (probe sessions, their bytes) are updated in the same
//! atomic batch as every write and delete they count, so they always equal the sums over the
//! stored records (which [`Store::verify`] checks). [`Store::days`] does scan, but only
//! metadata records.

use std::collections::BTreeMap;

use crate::samples::model::SampleKind;
use crate::{DaySummary, Store, StoreError, StoreStats, keys};

const NS_PER_DAY: u64 = 86_400 * 1_000_000_000;

impl Store {
    /// Counts and byte totals of runs, samples, timelines and probe sessions, from the running
    /// counters (no scan).
    pub fn stats(&self) -> Result<StoreStats, StoreError> {
        let totals = self.inner.totals()?;
        let samples = self.inner.sample_totals()?;
        let disk_bytes = self.inner.db.size_on_disk().map_err(|e| self.inner.storage("measure disk usage", e))?;
        let sample_bytes = samples.batch_bytes + samples.dict_bytes + samples.rollup_bytes;
        let tl = self.inner.tl_totals()?;
        let timeline_bytes = tl.batch_bytes + tl.dict_bytes;
        let probes = self.inner.probe_totals()?;
        Ok(StoreStats {
            runs: totals.runs,
            stored_bytes: totals.stored_bytes,
            disk_bytes,
            sample_batches: samples.batches,
            samples: samples.samples,
            sample_bytes,
            total_bytes: totals.stored_bytes + sample_bytes + timeline_bytes + probes.bytes,
            lost_samples: samples.lost.unwrap_or(0),
            timeline_batches: tl.batches,
            timeline_events: tl.events,
            timeline_bytes,
            lost_timeline_events: tl.lost,
            probe_sessions: probes.sessions,
            probe_bytes: probes.bytes,
        })
    }

    /// Per UTC day: how many runs of each interval started that day, their bytes, and the
    /// sample batches (by their first sample; off-CPU ones included) with their samples and bytes. Reads metadata
    /// only. Days with neither runs nor samples are absent; days are in order.
    pub fn days(&self) -> Result<Vec<DaySummary>, StoreError> {
        let mut days: BTreeMap<u64, DaySummary> = BTreeMap::new();
        let day_of = |t: u64| t - t % NS_PER_DAY;
        fn entry(days: &mut BTreeMap<u64, DaySummary>, day: u64) -> &mut DaySummary {
            days.entry(day).or_insert_with(|| DaySummary {
                day_start_unix_ns: day,
                runs_by_interval: BTreeMap::new(),
                stored_bytes: 0,
                sample_batches: 0,
                samples: 0,
                sample_bytes: 0,
            })
        }
        for item in self.inner.runs.scan_prefix([keys::META]) {
            let (k, v) = item.map_err(|e| self.inner.storage("list days", e))?;
            let meta = self.inner.decode_meta_record(&k, &v)?;
            let d = entry(&mut days, day_of(meta.start_unix_ns));
            *d.runs_by_interval.entry(meta.interval_ns).or_default() += 1;
            d.stored_bytes += meta.stored_bytes;
        }
        // Waits off the CPU count as samples too, as in the totals.
        for kind in [SampleKind::OnCpu, SampleKind::OffCpu] {
            self.inner.for_each_batch_of(kind, 0, u64::MAX, |start, _, row| {
                let d = entry(&mut days, day_of(start));
                d.sample_batches += 1;
                d.samples += row.samples;
                d.sample_bytes += row.stored_bytes;
                Ok(())
            })?;
        }
        Ok(days.into_values().collect())
    }
}
