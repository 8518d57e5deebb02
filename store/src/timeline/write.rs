//! Writing a timeline batch: its source into the dictionary (once per distinct content), its
//! events as columns, its per-event lag histograms into the metadata, all with the updated
//! totals in one atomic sled batch; then the caller's retention pass (the store's `put`
//! module composes the two, so that this module never names retention).

use std::borrow::Cow;
use std::sync::Arc;

use super::codec::{self, Ev, Hist, MAX_BATCH_EVENTS, TlBatchRow};
use super::model::{TimelineBatchMeta, TimelineEvent, TimelineSource};
#[cfg(doc)]
use crate::Store;
use crate::encoding::msgpack::Blob;
use crate::keys;
use crate::{Inner, RetentionReport, StoreError};

impl Inner {
    /// Checks, encodes and stores one batch of events: [`Store::put_timeline`] but for
    /// retention. Once the batch is durable, still under the writer lock, `retain(id)` runs:
    /// the caller's retention pass, which must spare batch `id`; what it deleted is flushed
    /// before this returns.
    pub(crate) fn write_timeline(
        &self,
        source: &TimelineSource,
        events: &[TimelineEvent],
        lost: u64,
        now_unix_ns: u64,
        retain: impl FnOnce(u64) -> Result<RetentionReport, StoreError>,
    ) -> Result<TimelineBatchMeta, StoreError> {
        if events.is_empty() && lost == 0 {
            return Ok(TimelineBatchMeta::default());
        }
        let invalid = StoreError::InvalidTimeline;
        codec::check_source(source).map_err(invalid)?;
        if events.len() > MAX_BATCH_EVENTS {
            return Err(invalid(format!(
                "{} events in one batch, more than {MAX_BATCH_EVENTS}; write smaller batches",
                events.len()
            )));
        }
        if let Some(e) = events.iter().find(|e| e.event as usize >= source.events.len()) {
            return Err(invalid(format!(
                "an event names definition {} but the source has {}",
                e.event,
                source.events.len()
            )));
        }
        // Canonical order: thread, then time (input order breaks ties).
        let mut evs: Vec<Ev> = events
            .iter()
            .map(|e| Ev { time: e.time_unix_ns, tid: e.tid, cpu: e.cpu, event: e.event, args: e.args, lag: e.lag_ns })
            .collect();
        evs.sort_by_key(|e| (e.tid, e.time));
        let start = evs.iter().map(|e| e.time).min().unwrap_or(now_unix_ns);
        let end = evs.iter().map(|e| e.time).max().unwrap_or(now_unix_ns);
        let levels: Vec<u8> = source.events.iter().map(|d| d.level).collect();
        let block = (!evs.is_empty()).then(|| codec::encode_block(start, &evs, &levels));
        let hists = codec::encode_hists(&histograms(&evs));
        let source_bytes = codec::encode_source(source);

        let inner = self;
        let _w = inner.lock_writer();
        inner.ensure_tl_dict()?;
        let mut totals = inner.tl_totals()?;
        let existing = inner.tl_dict.read().unwrap_or_else(|e| e.into_inner()).by_content.get(&source_bytes).copied();
        let (source_id, new_source) = match existing {
            Some(id) => (id, None),
            None => {
                let id = u32::try_from(totals.next_source)
                    .map_err(|_| invalid("the timeline source dictionary ran out of ids".into()))?;
                (id, Some(id))
            }
        };
        let id = inner.db.generate_id().map_err(|e| inner.storage("allocate a batch id", e))? + 1;
        let mut records: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(2);
        if let Some(b) = block {
            records.push((keys::batch_key(keys::TL_BLOCK, start, id).to_vec(), b));
        }
        let others: u64 = records.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum();
        let key = keys::batch_key(keys::TL_BATCH, start, id);
        let mut row = TlBatchRow {
            end,
            events: evs.len() as u64,
            lost,
            source: source_id,
            stored_bytes: 0,
            hists: Blob(Cow::Owned(hists)),
        };
        let (stored_bytes, value) = crate::encoding::self_counting_record(others, key.len(), |bytes| {
            row.stored_bytes = bytes;
            codec::encode_batch(&row)
        });
        row.stored_bytes = stored_bytes;
        records.push((key.to_vec(), value));
        let dict_key = keys::tl_dict_key(source_id);
        let new_dict_bytes = if new_source.is_some() { (dict_key.len() + source_bytes.len()) as u64 } else { 0 };
        let bytes = row.stored_bytes + new_dict_bytes;
        let max_bytes = inner.retention.max_bytes;
        if bytes > max_bytes {
            return Err(StoreError::TooLarge { bytes, max_bytes });
        }
        totals.batches += 1;
        totals.events += row.events;
        totals.batch_bytes += row.stored_bytes;
        totals.dict_bytes += new_dict_bytes;
        totals.max_span_ns = totals.max_span_ns.max(end - start);
        totals.lost = totals.lost.saturating_add(lost);
        if new_source.is_some() {
            totals.sources += 1;
            totals.next_source += 1;
        }
        let mut batch = sled::Batch::default();
        for (k, v) in records {
            batch.insert(k, v);
        }
        if new_source.is_some() {
            batch.insert(&dict_key, source_bytes.clone());
        }
        batch.insert(keys::TL_TOTALS, totals.encode());
        let op = format!("write timeline batch {id}");
        inner.apply_adding_then(batch, &op, || {
            if let Some(sid) = new_source {
                let mut d = inner.tl_dict.write().unwrap_or_else(|e| e.into_inner());
                d.by_content.insert(source_bytes, sid);
                d.by_id.insert(sid, Arc::new(source.clone()));
            }
        })?;
        inner.flush(&format!("flush timeline batch {id}"))?;
        let report = retain(id)?;
        if report.deleted_anything() {
            inner.flush("flush retention deletes")?;
        }
        Ok(TimelineBatchMeta {
            id,
            start_unix_ns: start,
            end_unix_ns: end,
            events: row.events,
            lost,
            stored_bytes: row.stored_bytes,
        })
    }
}

/// Per event id (ascending): count and lag histogram.
pub(crate) fn histograms(evs: &[Ev]) -> Vec<(u32, Hist)> {
    let mut keyed: Vec<(u32, u32, u64)> = Vec::with_capacity(evs.len()); // event, bucket, lag
    let mut counts: std::collections::BTreeMap<u32, u64> = Default::default();
    for e in evs {
        *counts.entry(e.event).or_default() += 1;
        if let Some(l) = e.lag {
            keyed.push((e.event, codec::bucket(l) as u32, l));
        }
    }
    keyed.sort_unstable_by_key(|k| (k.0, k.1));
    let mut out: Vec<(u32, Hist)> =
        counts.into_iter().map(|(id, count)| (id, Hist { count, ..Hist::default() })).collect();
    let mut i = 0;
    for (id, h) in &mut out {
        while i < keyed.len() && keyed[i].0 == *id {
            let (_, b, l) = keyed[i];
            match h.buckets.last_mut() {
                Some(last) if last.0 == b => last.1 += 1,
                _ => h.buckets.push((b, 1)),
            }
            h.max = h.max.max(l);
            i += 1;
        }
    }
    out
}
