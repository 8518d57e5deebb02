//! A timeline batch's records by key (list, read, delete), the totals record (`y`), the source
//! dictionary (`n`) with its in-memory cache, and the dictionary sweep.
//!
//! *Why a cache of the whole dictionary:* it is small (one entry per process and set of event
//! definitions: a few hundred bytes each) and every write looks its source up by content and
//! every query by id. It is loaded on first use and changed only after the sled batch that
//! changes the records was applied (under the writer lock, and the visibility lock for
//! readers), like the sample dictionary.
//!
//! *Why a sweep:* a source outlives its batches; reference counts would be rewritten by every
//! batch, while the sweep reads only the small `E` records (once the batches deleted since the
//! last sweep reach a third of those left) and deletes what none refers to.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::codec::{self, TlBatchRow};
use super::model::{TimelineSource, TimelineStats};
use crate::keys::{self, TimelineTotals};
use crate::{Inner, Store, StoreError};

/// The source dictionary in memory.
#[derive(Default)]
pub(crate) struct TlDict {
    pub(crate) loaded: bool,
    pub(crate) by_content: HashMap<Vec<u8>, u32>,
    pub(crate) by_id: HashMap<u32, Arc<TimelineSource>>,
}

impl Store {
    /// Timeline totals, from the running counters (no scan).
    pub fn timeline_stats_totals(&self) -> Result<TimelineStats, StoreError> {
        let t = self.inner.tl_totals()?;
        Ok(TimelineStats {
            batches: t.batches,
            events: t.events,
            lost: t.lost,
            stored_bytes: t.batch_bytes + t.dict_bytes,
            dictionary_bytes: t.dict_bytes,
            sources: t.sources,
        })
    }

    /// Deletes timeline sources no stored batch refers to; returns how many. Retention does
    /// this by itself from time to time.
    pub fn sweep_timeline_dictionary(&self) -> Result<u64, StoreError> {
        let _w = self.inner.lock_writer();
        let n = self.inner.sweep_tl_dict()?;
        self.inner.flush("flush timeline dictionary sweep")?;
        Ok(n)
    }
}

impl Inner {
    pub(crate) fn tl_totals(&self) -> Result<TimelineTotals, StoreError> {
        match self.runs.get(keys::TL_TOTALS).map_err(|e| self.storage("read timeline totals", e))? {
            None => Ok(TimelineTotals::default()),
            Some(v) => TimelineTotals::decode(&v)
                .ok_or_else(|| self.corrupt("timeline totals record".into(), format!("{} bytes", v.len()))),
        }
    }

    /// Loads the source dictionary into memory if it is not yet.
    pub(crate) fn ensure_tl_dict(&self) -> Result<(), StoreError> {
        if self.tl_dict.read().unwrap_or_else(|e| e.into_inner()).loaded {
            return Ok(());
        }
        let mut d = self.tl_dict.write().unwrap_or_else(|e| e.into_inner());
        if d.loaded {
            return Ok(());
        }
        let mut fresh = TlDict { loaded: true, ..TlDict::default() };
        for item in self.runs.scan_prefix([keys::TL_DICT]) {
            let (k, v) = item.map_err(|e| self.storage("load the timeline dictionary", e))?;
            let id = keys::parse_tl_dict_key(&k)
                .ok_or_else(|| self.corrupt("timeline dictionary key".into(), format!("{:?}", k.as_ref())))?;
            let s = codec::decode_source(&v).map_err(|d| self.corrupt(format!("timeline source {id}"), d))?;
            fresh.by_content.insert(v.to_vec(), id);
            fresh.by_id.insert(id, Arc::new(s));
        }
        *d = fresh;
        Ok(())
    }

    /// A source by id (the dictionary is loaded).
    pub(crate) fn tl_source(&self, id: u32, batch: u64) -> Result<Arc<TimelineSource>, StoreError> {
        self.tl_dict
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .by_id
            .get(&id)
            .cloned()
            .ok_or_else(|| self.corrupt(format!("timeline batch {batch}"), format!("refers to missing source {id}")))
    }

    /// Calls `each(start, id, row)` for every timeline batch whose start lies in `[from, to)`,
    /// in order; stops early when `each` returns `false`.
    pub(crate) fn for_each_tl_batch(
        &self,
        from: u64,
        to: u64,
        mut each: impl FnMut(u64, u64, TlBatchRow<'_>) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError> {
        if from >= to {
            return Ok(());
        }
        let lo = keys::batch_bound(keys::TL_BATCH, from);
        let hi = keys::batch_bound(keys::TL_BATCH, to);
        for item in self.runs.range(lo..hi) {
            let (k, v) = item.map_err(|e| self.storage("list timeline batches", e))?;
            let (start, id) = keys::parse_batch_key(&k)
                .ok_or_else(|| self.corrupt("timeline batch key".into(), format!("{:?}", k.as_ref())))?;
            let row = codec::decode_batch(&v).map_err(|d| self.corrupt(format!("timeline batch {id} metadata"), d))?;
            if !each(start, id, row)? {
                break;
            }
        }
        Ok(())
    }

    /// The events of a batch, in canonical order.
    pub(crate) fn read_tl_block(
        &self,
        start: u64,
        id: u64,
        source: &TimelineSource,
    ) -> Result<Vec<codec::Ev>, StoreError> {
        let what = || format!("timeline batch {id} events");
        let v = self
            .runs
            .get(keys::batch_key(keys::TL_BLOCK, start, id))
            .map_err(|e| self.storage("read timeline events", e))?
            .ok_or_else(|| self.corrupt(what(), "missing".into()))?;
        let levels: Vec<u8> = source.events.iter().map(|d| d.level).collect();
        codec::decode_block(&v, start, &levels).map_err(|d| self.corrupt(what(), d))
    }

    /// Deletes a batch's records in one atomic batch with the totals; returns the bytes freed.
    /// Caller holds the writer lock.
    pub(crate) fn delete_tl_batch_locked(&self, start: u64, id: u64, row: &TlBatchRow<'_>) -> Result<u64, StoreError> {
        let op = format!("delete timeline batch {id}");
        let mut batch = sled::Batch::default();
        batch.remove(&keys::batch_key(keys::TL_BLOCK, start, id));
        batch.remove(&keys::batch_key(keys::TL_BATCH, start, id));
        let mut t = self.tl_totals()?;
        t.batches = t.batches.saturating_sub(1);
        t.events = t.events.saturating_sub(row.events);
        t.batch_bytes = t.batch_bytes.saturating_sub(row.stored_bytes);
        t.lost = t.lost.saturating_sub(row.lost);
        t.deleted_since_gc += 1;
        batch.insert(keys::TL_TOTALS, t.encode());
        self.apply(batch, &op)?;
        Ok(row.stored_bytes)
    }

    /// The oldest timeline batch other than `protect`.
    pub(crate) fn oldest_tl_batch(
        &self,
        protect: Option<u64>,
    ) -> Result<Option<(u64, u64, TlBatchRow<'static>)>, StoreError> {
        let mut found = None;
        self.for_each_tl_batch(0, u64::MAX, |start, id, row| {
            if Some(id) == protect {
                return Ok(true);
            }
            found = Some((start, id, row.into_owned()));
            Ok(false)
        })?;
        Ok(found)
    }

    /// Sweeps when enough batches went since the last sweep.
    pub(crate) fn maybe_sweep_tl_dict(&self) -> Result<(), StoreError> {
        let t = self.tl_totals()?;
        if t.deleted_since_gc > 0 && t.deleted_since_gc * 3 >= t.batches {
            self.sweep_tl_dict()?;
        }
        Ok(())
    }

    /// Deletes sources no batch refers to. Caller holds the writer lock.
    pub(crate) fn sweep_tl_dict(&self) -> Result<u64, StoreError> {
        self.ensure_tl_dict()?;
        let mut live = HashSet::new();
        self.for_each_tl_batch(0, u64::MAX, |_, _, row| {
            live.insert(row.source);
            Ok(true)
        })?;
        let dead: Vec<(u32, u64)> = {
            let d = self.tl_dict.read().unwrap_or_else(|e| e.into_inner());
            d.by_content.iter().filter(|(_, id)| !live.contains(*id)).map(|(v, &id)| (id, 5 + v.len() as u64)).collect()
        };
        let mut t = self.tl_totals()?;
        let mut batch = sled::Batch::default();
        for &(id, bytes) in &dead {
            batch.remove(&keys::tl_dict_key(id));
            t.dict_bytes = t.dict_bytes.saturating_sub(bytes);
            t.sources = t.sources.saturating_sub(1);
        }
        t.deleted_since_gc = 0;
        batch.insert(keys::TL_TOTALS, t.encode());
        // Sources are few (one per process and definition set): one atomic batch.
        self.apply_then(batch, "sweep the timeline dictionary", || {
            let gone: HashSet<u32> = dead.iter().map(|d| d.0).collect();
            let mut d = self.tl_dict.write().unwrap_or_else(|e| e.into_inner());
            d.by_id.retain(|id, _| !gone.contains(id));
            d.by_content.retain(|_, id| !gone.contains(id));
        })?;
        Ok(dead.len() as u64)
    }
}
