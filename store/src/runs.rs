//! The run API: store, list, read and delete Millisampler runs.
//!
//! *Why these reads look the way they do:* listing ([`Store::runs`], [`Store::runs_page`])
//! scans only the small `m` records, in key order — start time, then id — and never touches
//! columns; reading one run ([`Store::run`]) is an index lookup (`i id → start`) plus one
//! contiguous prefix scan of its `c` rows, under the shared visibility lock so it never sees a
//! run half written or half deleted; deleting a run removes every record under its prefix
//! (not only the CPUs its metadata lists) together with the updated totals, in one batch.

use std::ops::Bound;

use crate::records::build_records;
use crate::validate::validate;
use crate::{Inner, NewRun, RetentionReport, Run, RunId, RunMeta, RunPos, Store, StoreError, TimeRange, codec, keys};

impl Inner {
    /// Validates and stores a run atomically and flushes it: [`Store::put_run`] but for
    /// retention. Once the run is durable, still under the writer lock, `retain(id)` runs: the
    /// caller's retention pass, which must spare run `id`; what it deleted is flushed before
    /// this returns. (The put methods compose the two in `put`, so that this module never
    /// names retention.)
    pub(crate) fn write_run(
        &self,
        run: NewRun,
        retain: impl FnOnce(RunId) -> Result<RetentionReport, StoreError>,
    ) -> Result<RunMeta, StoreError> {
        validate(&run)?;
        let _w = self.lock_writer();
        let id = RunId(self.db.generate_id().map_err(|e| self.storage("allocate a run id", e))?);
        let records = build_records(run, id);
        let bytes = records.meta.stored_bytes;
        let max_bytes = self.retention.max_bytes;
        if bytes > max_bytes {
            return Err(StoreError::TooLarge { bytes, max_bytes });
        }
        let mut totals = self.totals()?;
        totals.runs += 1;
        totals.stored_bytes += bytes;
        let mut batch = sled::Batch::default();
        for (k, v) in records.writes {
            batch.insert(k, v);
        }
        batch.insert(keys::STATS, &totals.encode());
        self.apply_adding(batch, &format!("write run {id}"))?;
        self.flush(&format!("flush run {id}"))?;
        let report = retain(id)?;
        if report.deleted_anything() {
            self.flush("flush retention deletes")?;
        }
        Ok(records.meta)
    }
}

impl Store {
    /// Metadata of the runs whose start lies in `range`, in start-time order (then id),
    /// optionally only those with this sampling interval and/or on this interface.
    /// Reads only the metadata records, never the columns.
    pub fn runs(
        &self,
        range: TimeRange,
        interval_ns: Option<u64>,
        iface: Option<&str>,
    ) -> Result<Vec<RunMeta>, StoreError> {
        self.runs_page(range, interval_ns, iface, None, usize::MAX)
    }

    /// One page of [`Store::runs`]: at most `limit` metas, in the same order, of the runs that
    /// come strictly after `after` (from the start of `range` when `None`). Pass the last
    /// meta's [`RunMeta::pos`] as `after` to get the next page; an empty page means the end.
    ///
    /// Seeks straight to `after` in the key order and stops after `limit` matches, so a page
    /// costs its own metas (plus those the filters skip), never the whole range. Runs stored
    /// or deleted between pages show up or not according to where they sort; `after` need not
    /// exist any more.
    pub fn runs_page(
        &self,
        range: TimeRange,
        interval_ns: Option<u64>,
        iface: Option<&str>,
        after: Option<RunPos>,
        limit: usize,
    ) -> Result<Vec<RunMeta>, StoreError> {
        range.check()?;
        let TimeRange { from_unix_ns, to_unix_ns } = range;
        let mut out = Vec::new();
        if from_unix_ns == to_unix_ns || limit == 0 || after.is_some_and(|p| p.start_unix_ns >= to_unix_ns) {
            return Ok(out);
        }
        let lo = match after {
            Some(p) if p.start_unix_ns >= from_unix_ns => {
                Bound::Excluded(keys::meta_key(p.start_unix_ns, p.id).to_vec())
            }
            _ => Bound::Included(keys::meta_bound(from_unix_ns).to_vec()),
        };
        let hi = Bound::Excluded(keys::meta_bound(to_unix_ns).to_vec());
        for item in self.inner.runs.range::<Vec<u8>, _>((lo, hi)) {
            let (k, v) = item.map_err(|e| self.inner.storage("list runs", e))?;
            let meta = self.inner.decode_meta_record(&k, &v)?;
            if interval_ns.is_some_and(|i| i != meta.interval_ns) {
                continue;
            }
            if iface.is_some_and(|i| i != meta.iface) {
                continue;
            }
            out.push(meta);
            if out.len() >= limit {
                break;
            }
        }
        Ok(out)
    }

    /// Metadata of one run, or `None` if there is no such run.
    pub fn run_meta(&self, id: RunId) -> Result<Option<RunMeta>, StoreError> {
        let _r = self.inner.read_lock();
        self.inner.meta_by_id(id)
    }

    /// A whole run, or `None` if there is no such run.
    pub fn run(&self, id: RunId) -> Result<Option<Run>, StoreError> {
        let inner = &self.inner;
        let (meta, rows, counts) = {
            let _r = inner.read_lock();
            let Some(meta) = inner.meta_by_id(id)? else {
                return Ok(None);
            };
            let prefix = keys::cpu_prefix(meta.start_unix_ns, id);
            let rows = inner
                .runs
                .scan_prefix(prefix)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| inner.storage(&format!("read run {id}"), e))?;
            let counts = inner
                .runs
                .get(keys::conn_counts_key(meta.start_unix_ns, id))
                .map_err(|e| inner.storage(&format!("read run {id}"), e))?;
            (meta, rows, counts)
        };
        let mut per_cpu = Vec::with_capacity(rows.len());
        for (k, v) in rows {
            let cpu = keys::parse_cpu_key(&k)
                .ok_or_else(|| inner.corrupt(format!("run {id} column key"), format!("{k:?}")))?;
            let cols = codec::decode_cpu(cpu, &v, meta.samples)
                .map_err(|d| inner.corrupt(format!("run {id} cpu {cpu} row"), d))?;
            per_cpu.push(cols);
        }
        let cpus: Vec<u32> = per_cpu.iter().map(|c| c.cpu).collect();
        if cpus != meta.cpus {
            return Err(inner.corrupt(
                format!("run {id}"),
                format!("metadata lists cpus {:?} but rows exist for {cpus:?}", meta.cpus),
            ));
        }
        let conn_counts = counts
            .map(|v| codec::decode_conn_counts(&v, meta.samples))
            .transpose()
            .map_err(|d| inner.corrupt(format!("run {id} connection counts"), d))?;
        Ok(Some(Run { meta, per_cpu, conn_counts }))
    }

    /// Deletes a run and all its records in one atomic batch. `false` if it did not exist.
    pub fn delete_run(&self, id: RunId) -> Result<bool, StoreError> {
        let _w = self.inner.lock_writer();
        let Some(meta) = self.inner.meta_by_id(id)? else {
            return Ok(false);
        };
        self.inner.delete_locked(&meta)?;
        self.inner.flush(&format!("flush delete of run {id}"))?;
        Ok(true)
    }
}

impl Inner {
    /// Decodes an `m` record and checks that its key and value name the same run.
    pub(crate) fn decode_meta_record(&self, key: &[u8], value: &[u8]) -> Result<RunMeta, StoreError> {
        let (start, id) =
            keys::parse_meta_key(key).ok_or_else(|| self.corrupt("metadata key".into(), format!("{key:?}")))?;
        let meta = codec::decode_meta(value).map_err(|d| self.corrupt(format!("run {id} metadata"), d))?;
        if meta.id != id || meta.start_unix_ns != start {
            return Err(self.corrupt(
                format!("run {id} metadata"),
                format!("key says run {id} at {start}, value says run {} at {}", meta.id, meta.start_unix_ns),
            ));
        }
        Ok(meta)
    }

    pub(crate) fn meta_by_id(&self, id: RunId) -> Result<Option<RunMeta>, StoreError> {
        let op = format!("look up run {id}");
        let Some(start) = self.runs.get(keys::index_key(id)).map_err(|e| self.storage(&op, e))? else {
            return Ok(None);
        };
        let start =
            keys::decode_u64(&start).ok_or_else(|| self.corrupt(format!("run {id} index"), format!("{start:?}")))?;
        let key = keys::meta_key(start, id);
        match self.runs.get(key).map_err(|e| self.storage(&op, e))? {
            None => Err(self.corrupt(format!("run {id}"), "indexed but has no metadata".into())),
            Some(v) => self.decode_meta_record(&key, &v).map(Some),
        }
    }

    /// Deletes every record of the run in one batch, with the totals. Caller holds the writer.
    pub(crate) fn delete_locked(&self, meta: &RunMeta) -> Result<u64, StoreError> {
        let (start, id) = (meta.start_unix_ns, meta.id);
        let op = format!("delete run {id}");
        let mut batch = sled::Batch::default();
        // Remove whatever rows exist under the run's prefix (not only `meta.cpus`), so a
        // delete always leaves nothing behind.
        for k in self.runs.scan_prefix(keys::cpu_prefix(start, id)).keys() {
            batch.remove(k.map_err(|e| self.storage(&op, e))?);
        }
        batch.remove(&keys::conn_counts_key(start, id));
        batch.remove(&keys::index_key(id));
        batch.remove(&keys::meta_key(start, id));
        let mut totals = self.totals()?;
        totals.runs = totals.runs.saturating_sub(1);
        totals.stored_bytes = totals.stored_bytes.saturating_sub(meta.stored_bytes);
        batch.insert(keys::STATS, &totals.encode());
        self.apply(batch, &op)?;
        Ok(meta.stored_bytes)
    }
}

#[cfg(test)]
mod tests {
    use crate::*;

    fn idle_run(samples: u32, cpus: u32) -> NewRun {
        NewRun {
            iface: "eth0".into(),
            host: "host-a1.example".into(),
            rack: Some("rack-17".into()),
            start_unix_ns: 1_700_000_000_000_000_000,
            interval_ns: 100_000,
            samples,
            local_prefixes: vec!["10.0.0.0/8".into(), "2001:db8::/32".into()],
            source: RunSource::Agent,
            per_cpu: (0..cpus).map(|c| CpuColumns::zeroed(c, samples)).collect(),
            conn_counts: None,
            clock: None,
        }
    }

    #[test]
    fn idle_run_is_under_600_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), Retention::default()).unwrap();
        let meta = store.put_run(idle_run(2000, 2), 0).unwrap();
        assert!(meta.stored_bytes < 600, "idle run takes {} bytes", meta.stored_bytes);
        assert_eq!(store.stats().unwrap().stored_bytes, meta.stored_bytes);
    }

    #[test]
    fn stored_bytes_counts_every_record_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), Retention::default()).unwrap();
        let mut run = idle_run(50, 3);
        run.per_cpu[1].counters[0][7] = 1 << 40;
        run.conn_counts = Some(ConnCounts { in_conns: vec![3; 50], out_conns: vec![0; 50] });
        let meta = store.put_run(run, 0).unwrap();
        let actual: u64 = store
            .inner
            .runs
            .iter()
            .map(|kv| kv.unwrap())
            .filter(|(k, _)| k.as_ref() != keys::STATS)
            .map(|(k, v)| (k.len() + v.len()) as u64)
            .sum();
        assert_eq!(meta.stored_bytes, actual);
    }

    #[test]
    fn store_is_send_sync_clone() {
        fn check<T: Send + Sync + Clone + 'static>() {}
        check::<Store>();
    }
}
