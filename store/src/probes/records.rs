//! A probe session's records by key: the totals record (`q`), listing metadata (`P`) in time
//! order, finding a session by id (`j`), reading its call chunks (`p`), deleting it.
//!
//! *Why apart:* every reader (listing, whole sessions, verify) and retention reach the probe
//! records through these few functions, which turn a missing or undecodable record into
//! [`StoreError::Corrupt`] naming the session.

use super::codec::{self, MetaRow};
use crate::keys::{self, ProbeTotals};
use crate::{Inner, StoreError};

impl Inner {
    /// The probe totals (`q` record); zero for a store without probe sessions.
    pub(crate) fn probe_totals(&self) -> Result<ProbeTotals, StoreError> {
        match self.runs.get(keys::PROBE_TOTALS).map_err(|e| self.storage("read probe totals", e))? {
            None => Ok(ProbeTotals::default()),
            Some(v) => ProbeTotals::decode(&v)
                .ok_or_else(|| self.corrupt("probe totals record".into(), format!("{} bytes", v.len()))),
        }
    }

    /// Decodes a `P` record, naming the session when it does not.
    pub(crate) fn decode_probe_meta<'a>(
        &self,
        key: &[u8],
        value: &'a [u8],
    ) -> Result<(u64, u64, MetaRow<'a>), StoreError> {
        let (start, id) = keys::parse_batch_key(key)
            .filter(|_| key[0] == keys::PROBE_META)
            .ok_or_else(|| self.corrupt("probe session key".into(), format!("{key:?}")))?;
        let row =
            codec::decode_meta(value, start).map_err(|d| self.corrupt(format!("probe session {id} metadata"), d))?;
        Ok((start, id, row))
    }

    /// Calls `each(start, id, row)` for every probe session whose start lies in `[from, to)`,
    /// in order (start, then id); stops early when `each` returns `false`.
    pub(crate) fn for_each_probe(
        &self,
        from: u64,
        to: u64,
        each: impl FnMut(u64, u64, MetaRow<'_>) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError> {
        if from >= to {
            return Ok(());
        }
        let lo = keys::batch_bound(keys::PROBE_META, from);
        let hi = keys::batch_bound(keys::PROBE_META, to);
        self.scan_probes(self.runs.range(lo..hi), each)
    }

    /// [`Inner::for_each_probe`] over every session, whatever its start (`u64::MAX` too).
    pub(crate) fn for_each_probe_ever(
        &self,
        each: impl FnMut(u64, u64, MetaRow<'_>) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError> {
        self.scan_probes(self.runs.scan_prefix([keys::PROBE_META]), each)
    }

    fn scan_probes(
        &self,
        scan: sled::Iter,
        mut each: impl FnMut(u64, u64, MetaRow<'_>) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError> {
        for item in scan {
            let (k, v) = item.map_err(|e| self.storage("list probe sessions", e))?;
            let (start, id, row) = self.decode_probe_meta(&k, &v)?;
            if !each(start, id, row)? {
                break;
            }
        }
        Ok(())
    }

    /// Where session `id` starts, from the `j` index; `None` if there is no such session.
    pub(crate) fn probe_start(&self, id: u64) -> Result<Option<u64>, StoreError> {
        let op = format!("look up probe session {id}");
        let Some(v) = self.runs.get(keys::probe_index_key(id)).map_err(|e| self.storage(&op, e))? else {
            return Ok(None);
        };
        keys::decode_u64(&v)
            .map(Some)
            .ok_or_else(|| self.corrupt(format!("probe session {id} index"), format!("{v:?}")))
    }

    /// Session `id`'s metadata (start, row); `None` if there is no such session.
    pub(crate) fn probe_meta_by_id(&self, id: u64) -> Result<Option<(u64, MetaRow<'static>)>, StoreError> {
        let Some(start) = self.probe_start(id)? else {
            return Ok(None);
        };
        let key = keys::probe_key(keys::PROBE_META, start, id);
        let v = self
            .runs
            .get(key)
            .map_err(|e| self.storage(&format!("read probe session {id}"), e))?
            .ok_or_else(|| self.corrupt(format!("probe session {id}"), "indexed but has no metadata".into()))?;
        let (_, _, row) = self.decode_probe_meta(&key, &v)?;
        Ok(Some((start, row.into_owned())))
    }

    /// The raw `(chunk, value)` records under a session's prefix, in chunk order.
    pub(crate) fn probe_chunks(&self, start: u64, id: u64) -> Result<Vec<(u32, sled::IVec)>, StoreError> {
        let mut out = Vec::new();
        for item in self.runs.scan_prefix(keys::probe_key(keys::PROBE_CALLS, start, id)) {
            let (k, v) = item.map_err(|e| self.storage(&format!("read probe session {id} calls"), e))?;
            let (_, _, chunk) = keys::parse_probe_calls_key(&k)
                .ok_or_else(|| self.corrupt(format!("probe session {id} calls key"), format!("{:?}", k.as_ref())))?;
            out.push((chunk, v));
        }
        Ok(out)
    }

    /// Deletes every record of a session (whatever chunks exist under its prefix, not only
    /// those the metadata counts) in one atomic batch with the totals; returns the bytes
    /// freed. Caller holds the writer lock.
    pub(crate) fn delete_probe_locked(&self, start: u64, id: u64, row: &MetaRow<'_>) -> Result<u64, StoreError> {
        let op = format!("delete probe session {id}");
        let mut batch = sled::Batch::default();
        for k in self.runs.scan_prefix(keys::probe_key(keys::PROBE_CALLS, start, id)).keys() {
            batch.remove(k.map_err(|e| self.storage(&op, e))?);
        }
        batch.remove(&keys::probe_key(keys::PROBE_META, start, id));
        batch.remove(&keys::probe_index_key(id));
        let mut t = self.probe_totals()?;
        t.sessions = t.sessions.saturating_sub(1);
        t.calls = t.calls.saturating_sub(row.recorded_calls);
        t.bytes = t.bytes.saturating_sub(row.stored_bytes);
        batch.insert(keys::PROBE_TOTALS, t.encode());
        self.apply(batch, &op)?;
        Ok(row.stored_bytes)
    }

    /// The oldest probe session other than `protect`: `(start, id, row)`.
    pub(crate) fn oldest_probe(
        &self,
        protect: Option<u64>,
    ) -> Result<Option<(u64, u64, MetaRow<'static>)>, StoreError> {
        let mut found = None;
        self.for_each_probe_ever(|start, id, row| {
            if Some(id) == protect {
                return Ok(true);
            }
            found = Some((start, id, row.into_owned()));
            Ok(false)
        })?;
        Ok(found)
    }
}
