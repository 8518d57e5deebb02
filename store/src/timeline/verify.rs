//! The timeline part of [`crate::Store::verify`]: every batch whole (metadata, and events when
//! it has any), every block decodable against its source and agreeing with its metadata's
//! counts and histograms, every referenced source present, totals exact.

use std::collections::BTreeMap;

use super::codec::{self, TlBatchRow};
use super::model::TimelineSource;
use crate::keys::{self, TimelineTotals};
use crate::{Inner, StoreError, VerifyReport};

#[derive(Default)]
struct BatchSeen {
    meta: Option<TlBatchRow<'static>>,
    block: bool,
    bytes: u64,
}

/// Timeline records met during the verify scan.
#[derive(Default)]
pub(crate) struct TimelineSeen {
    batches: BTreeMap<(u64, u64), BatchSeen>,
    sources: BTreeMap<u32, TimelineSource>,
    dict_bytes: u64,
    totals: Option<TimelineTotals>,
}

impl TimelineSeen {
    /// Takes the record if it is a timeline record; `false` if it is not one.
    pub(crate) fn observe(&mut self, k: &[u8], v: &[u8], report: &mut VerifyReport) -> bool {
        let size = (k.len() + v.len()) as u64;
        match k.first().copied() {
            Some(kind @ (keys::TL_BATCH | keys::TL_BLOCK)) if k.len() == 17 => {
                let (start, id) = keys::parse_batch_key(k).unwrap_or_default();
                let seen = self.batches.entry((start, id)).or_default();
                seen.bytes += size;
                if kind == keys::TL_BLOCK {
                    seen.block = true;
                } else {
                    match codec::decode_batch(v) {
                        Ok(row) => seen.meta = Some(row.into_owned()),
                        Err(d) => report.problems.push(format!("timeline batch {id} metadata: {d}")),
                    }
                }
                true
            }
            Some(keys::TL_DICT) if k.len() == 5 => {
                self.dict_bytes += size;
                let id = keys::parse_tl_dict_key(k).unwrap_or_default();
                match codec::decode_source(v) {
                    Ok(s) => drop(self.sources.insert(id, s)),
                    Err(d) => report.problems.push(format!("timeline source {id}: {d}")),
                }
                true
            }
            _ if k == keys::TL_TOTALS => {
                match TimelineTotals::decode(v) {
                    Some(t) => self.totals = Some(t),
                    None => report.problems.push("timeline totals record does not decode".into()),
                }
                true
            }
            _ => false,
        }
    }

    /// Cross-checks everything seen; decodes every block again, one batch at a time.
    pub(crate) fn finish(self, inner: &Inner, report: &mut VerifyReport) -> Result<(), StoreError> {
        let totals = self.totals.unwrap_or_default();
        let p = &mut report.problems;
        let (mut lost, mut max_span) = (0u64, 0u64);
        for (&(start, id), seen) in &self.batches {
            let Some(meta) = &seen.meta else {
                p.push(format!("timeline batch {id}: records without metadata (half-written or half-deleted)"));
                continue;
            };
            report.timeline_batches += 1;
            report.timeline_events += meta.events;
            report.timeline_bytes += meta.stored_bytes;
            lost = lost.saturating_add(meta.lost);
            max_span = max_span.max(meta.end.saturating_sub(start));
            if seen.bytes != meta.stored_bytes {
                p.push(format!(
                    "timeline batch {id}: records take {} bytes, metadata says {}",
                    seen.bytes, meta.stored_bytes
                ));
            }
            let hists = match codec::decode_hists(&meta.hists.0) {
                Ok(h) => h,
                Err(d) => {
                    p.push(format!("timeline batch {id} histograms: {d}"));
                    continue;
                }
            };
            if seen.block != (meta.events > 0) {
                p.push(format!(
                    "timeline batch {id}: {} events but events record present: {}",
                    meta.events, seen.block
                ));
                continue;
            }
            let Some(source) = self.sources.get(&meta.source) else {
                p.push(format!("timeline batch {id} refers to missing source {}", meta.source));
                continue;
            };
            if meta.events == 0 {
                if !hists.is_empty() {
                    p.push(format!("timeline batch {id}: histograms but no events"));
                }
                continue;
            }
            match inner.read_tl_block(start, id, source) {
                Ok(evs) => {
                    if evs.len() as u64 != meta.events {
                        p.push(format!(
                            "timeline batch {id}: {} events decoded, metadata says {}",
                            evs.len(),
                            meta.events
                        ));
                    }
                    if evs.iter().any(|e| e.time < start || e.time > meta.end) {
                        p.push(format!("timeline batch {id}: events outside the batch's time"));
                    }
                    if super::write::histograms(&evs) != hists {
                        p.push(format!("timeline batch {id}: histograms disagree with the events"));
                    }
                }
                Err(e) => p.push(e.to_string()),
            }
        }
        let counted = (
            report.timeline_batches,
            report.timeline_events,
            report.timeline_bytes,
            self.dict_bytes,
            self.sources.len() as u64,
        );
        let recorded = (totals.batches, totals.events, totals.batch_bytes, totals.dict_bytes, totals.sources);
        if counted != recorded {
            p.push(format!(
                "timeline totals say (batches, events, batch bytes, dictionary bytes, sources) = {recorded:?}, \
                 records add up to {counted:?}"
            ));
        }
        if totals.lost != lost {
            p.push(format!("timeline totals say {} lost events, batches add up to {lost}", totals.lost));
        }
        if max_span > totals.max_span_ns {
            p.push(format!(
                "a timeline batch spans {max_span} ns, more than the recorded maximum {}",
                totals.max_span_ns
            ));
        }
        if self.sources.keys().next_back().is_some_and(|&i| u64::from(i) >= totals.next_source) {
            p.push("a timeline source id is not below its counter (ids could be reused)".into());
        }
        Ok(())
    }
}
