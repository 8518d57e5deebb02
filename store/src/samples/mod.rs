//! Stack samples: CPU profiling at ~10 Hz per CPU, stored beside the runs, under the same
//! retention.
//!
//! The agent hands over *batches* (about 10 s of samples from every CPU) with
//! [`Store::put_samples`]; [`Store::profile`] sums them into a flame-graph-ready list of
//! stacks, [`Store::samples`] returns them one by one. A day of a 96-CPU host is ~83 M samples,
//! so the layout is built around two numbers: **bytes per sample** (a week must fit a few GB)
//! and **the cost of a day-long profile** (it must not decode 83 M samples).
//!
//! # Layout
//! All records live in the `runs` tree next to the run records (one sled batch can only
//! touch one tree, and a batch, its dictionary entries and the totals must land together):
//!
//! ```text
//! B ++ start:u64 ++ batch:u64             → batch metadata: end, samples, lost, cpus, bytes
//! h ++ start:u64 ++ batch:u64             → batch table: distinct (thread, idle, stack)
//!                                           entries and their counts = the histogram
//! b ++ start:u64 ++ cpu:u32 ++ batch:u64  → per-CPU block: that CPU's samples of the batch,
//!                                           as times + indexes into the batch table
//! d ++ f|c|s|t ++ id:u32                  → dictionary: frame, comm, stack (frame ids),
//!                                           thread (pid, tid, comm id, cgroup id)
//! x                                       → sample totals and dictionary id counters
//! ```
//!
//! `start` is the batch's earliest sample, so all three kinds sort by time and a query is a
//! range scan (starting `max batch span` before the range, kept in `x`, so a batch that began
//! earlier but reaches into the range is found). Why this shape:
//!
//! - **Stacks are deduplicated** into a dictionary (frames → frame ids, frame-id sequences →
//!   stack ids), and so are comms and threads (`(pid, tid, comm, cgroup)` → thread id, since
//!   the same threads recur batch after batch). A sample then carries two small integers
//!   instead of ~20 frames and a string. Ids are *dense* and allocated in order of first
//!   appearance rather than being a 64-bit content hash: tables refer to them thousands of
//!   times per batch, and a popular stack's id takes a few bits where a hash takes 64.
//!   Content → id lookups use a hash in memory (the cache is the whole dictionary, see
//!   `dict`). New dictionary records go into the same atomic sled batch as the first batch
//!   that uses them, so a stored block never refers to a missing stack, whatever the crash.
//! - **The batch table is the pre-aggregated histogram.** Across all CPUs of a 10-s batch the
//!   same `(thread, idle, stack)` recurs, so the batch stores each distinct entry once, with
//!   its count. A `profile()` over a long range reads one table per batch (8,640 a day,
//!   ~100 µs each to decode) instead of 96 blocks per batch and 83 M samples. It is kept per
//!   batch rather than per block because the 96 per-CPU histograms of a batch share entries
//!   and structure: one table costs less than 96, and is 96× fewer records to read.
//! - **Per-CPU blocks** hold the samples themselves: times and, per sample, which table entry
//!   it is (the table is partitioned by first CPU, so a block names only the entries it
//!   shares with lower CPUs; see `codec`). Counting a block's indexes gives that CPU's
//!   histogram: a query with a CPU filter reads only that CPU's blocks (indexes only, no
//!   times, when the batch lies inside the range); a query whose range cuts a batch decodes
//!   the cut batch's blocks sample by sample.
//! - **Columns are bit-packed** (`bits`) inside a MessagePack `bin`, each with the shortest
//!   of fixed-width / Exp-Golomb / Rice / sparse codes, after delta, zigzag, move-to-front
//!   and grid (timer period) transforms. Timestamps take ~13 bits, the entry index ~6.
//!   General-purpose compression is not used: the columns are already entropy-coded and the
//!   records small, and measured on the benchmark's blocks and tables, zstd -3 and lz4 made
//!   them 0–5 % *larger*.
//!
//! # Atomicity, retention, dictionary sweep
//! A batch (its `B`, `h`, `b` records, new `d` records and the updated `x` totals) is one
//! sled batch; so is the deletion of a batch. Retention treats a sample batch like a run whose
//! start is the batch's first sample: by age, every batch that started before `now - max_age`
//! goes; by bytes, the older of the oldest run and the oldest batch goes until the total of
//! runs, batches *and* dictionary fits the cap. Dictionary entries outlive the batches that
//! used them; once the batches deleted since the last sweep reach a third of those left, the
//! writer sweeps: it collects the threads and stacks still referenced by some batch table, and
//! the comms and frames those use, and deletes the rest (in atomic chunks, each with the
//! totals; a crash mid-sweep only leaves unreferenced entries behind). Ids are never reused.
//! The sweep reads every table (~1 s per stored day); it runs about once per third of the
//! retention period.
//!
//! # Reading
//! Readers hold the store's read lock for the whole query, so they never see a batch half
//! written or half deleted, and the dictionary cache is updated under the matching write lock.
//! A writer waits for a running query (a day-long profile: about a second).

pub(crate) mod bits;
pub(crate) mod codec;
mod cursor;
pub(crate) mod dict;
pub mod model;
mod query;
pub(crate) mod verify;

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::keys::{self, SampleTotals};
use crate::{Inner, Store, StoreError, TimeRange};
use codec::{BatchRow, Entry, Part, Table, ThreadRec};
use dict::{Dict, FxMap, Staged};
pub use cursor::{RawSample, SampleCursor};
use model::{Frame, Profile, ProfileQuery, SampleBatchMeta, SampleStats, StackSample};

/// The most samples one batch may hold (a 10-s batch of a 1,000-CPU host at 100 Hz is 1 M).
pub const MAX_BATCH_SAMPLES: usize = bits::MAX_COLUMN;

impl Store {
    /// Appends a batch of samples (any CPUs, any order; typically ~10 s of every CPU)
    /// atomically, flushes it, then applies retention (which never deletes this batch).
    ///
    /// `lost` is the number of samples the kernel dropped since the previous batch; it is
    /// recorded at this batch's time (its earliest sample, or `now_unix_ns` when the batch has
    /// no sample). An empty batch with nothing lost is a no-op and returns a meta with `id 0`.
    ///
    /// Errors: [`StoreError::TooLarge`] when the batch and its new dictionary entries alone
    /// exceed the byte cap (nothing written); a storage error from the retention pass comes
    /// after the batch was durably stored.
    pub fn put_samples(
        &self,
        samples: &[StackSample],
        lost: u64,
        now_unix_ns: u64,
    ) -> Result<SampleBatchMeta, StoreError> {
        if samples.is_empty() && lost == 0 {
            return Ok(SampleBatchMeta::default());
        }
        let inner = &*self.inner;
        let _w = inner.lock_writer();
        inner.ensure_dict()?;
        let totals = inner.sample_totals()?;
        let built = inner.build_batch(samples, lost, now_unix_ns, &totals)?;
        let id = inner.db.generate_id().map_err(|e| inner.storage("allocate a batch id", e))? + 1;
        let (meta, writes) = built.finish(id);
        let new_dict_bytes: u64 = writes.dict.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum();
        let bytes = meta.stored_bytes + new_dict_bytes;
        let max_bytes = inner.retention.max_bytes;
        if bytes > max_bytes {
            return Err(StoreError::TooLarge { bytes, max_bytes });
        }
        let staged = writes.staged;
        let mut t = totals;
        t.batches += 1;
        t.samples += meta.samples;
        t.batch_bytes += meta.stored_bytes;
        t.dict_bytes += new_dict_bytes;
        t.frames += staged.frames.len() as u64;
        t.comms += staged.comms.len() as u64;
        t.stacks += staged.stacks.len() as u64;
        t.threads += staged.threads.len() as u64;
        t.next_thread = staged.next_thread;
        t.next_frame = staged.next_frame;
        t.next_comm = staged.next_comm;
        t.next_stack = staged.next_stack;
        t.max_span_ns = t.max_span_ns.max(meta.end_unix_ns - meta.start_unix_ns);
        let mut batch = sled::Batch::default();
        for (k, v) in writes.records.into_iter().chain(writes.dict) {
            batch.insert(k, v);
        }
        batch.insert(keys::SAMPLE_TOTALS, t.encode());
        let op = format!("write sample batch {id}");
        inner.apply_then(batch, &op, || {
            if !staged.is_empty() {
                staged.commit(&mut inner.dict.write().unwrap_or_else(|e| e.into_inner()));
            }
        })?;
        inner.flush(&format!("flush sample batch {id}"))?;
        let report = inner.enforce_retention(now_unix_ns, Some(crate::retention::Protect::Batch(id)))?;
        if report.deleted_runs > 0 || report.deleted_sample_batches > 0 {
            inner.flush("flush retention deletes")?;
        }
        Ok(meta)
    }

    /// Sums the samples matching `query` per distinct stack, and the lost counts of the
    /// batches whose time lies in the range. Batches wholly inside the range are counted from
    /// their tables without decoding a sample (unless a CPU is given); batches cut by the
    /// range are decoded sample by sample.
    pub fn profile(&self, query: &ProfileQuery) -> Result<Profile, StoreError> {
        self.inner.profile(query)
    }

    /// The samples matching `query`, in time order (then CPU). Decodes every sample in the
    /// range: meant for tests and small ranges.
    pub fn samples(&self, query: &ProfileQuery) -> Result<Vec<StackSample>, StoreError> {
        self.inner.samples(query)
    }

    /// PIDs that have at least one sample (idle ones included) in `range`.
    pub fn pids(&self, range: TimeRange) -> Result<BTreeSet<u32>, StoreError> {
        self.inner.pids(range)
    }

    /// Metadata of the sample batches whose time (earliest sample) lies in `range`, in time
    /// order.
    pub fn sample_batches(&self, range: TimeRange) -> Result<Vec<SampleBatchMeta>, StoreError> {
        check_range(range)?;
        let _r = self.inner.read_lock();
        let mut out = Vec::new();
        self.inner.for_each_batch(range.from_unix_ns, range.to_unix_ns, |start, id, row| {
            out.push(meta_of(start, id, row));
            Ok(())
        })?;
        Ok(out)
    }

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

    /// Deletes dictionary entries no stored batch refers to any more; returns how many.
    /// Retention does this by itself from time to time (see the module docs).
    pub fn sweep_sample_dictionary(&self) -> Result<u64, StoreError> {
        let _w = self.inner.lock_writer();
        let n = self.inner.sweep_dictionary()?;
        self.inner.flush("flush dictionary sweep")?;
        Ok(n)
    }
}

pub(crate) fn check_range(range: TimeRange) -> Result<(), StoreError> {
    let TimeRange { from_unix_ns, to_unix_ns } = range;
    if from_unix_ns > to_unix_ns {
        return Err(StoreError::BadRange { from_unix_ns, to_unix_ns });
    }
    Ok(())
}

pub(crate) fn meta_of(start: u64, id: u64, row: &BatchRow) -> SampleBatchMeta {
    SampleBatchMeta {
        id,
        start_unix_ns: start,
        end_unix_ns: row.end,
        samples: row.samples,
        lost: row.lost,
        cpus: row.cpus.clone(),
        stored_bytes: row.stored_bytes,
    }
}

/// A batch encoded except for its id (which goes into every key).
struct Built {
    start: u64,
    end: u64,
    lost: u64,
    samples: u64,
    /// (cpu, block value)
    blocks: Vec<(u32, Vec<u8>)>,
    table: Option<Vec<u8>>,
    staged: Staged,
}

struct Writes {
    records: Vec<(Vec<u8>, Vec<u8>)>,
    dict: Vec<(Vec<u8>, Vec<u8>)>,
    staged: Staged,
}

impl Built {
    fn finish(self, id: u64) -> (SampleBatchMeta, Writes) {
        let start = self.start;
        let mut records: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(self.blocks.len() + 2);
        let cpus: Vec<u32> = self.blocks.iter().map(|(c, _)| *c).collect();
        for (cpu, v) in self.blocks {
            records.push((keys::block_key(start, cpu, id).to_vec(), v));
        }
        if let Some(t) = self.table {
            records.push((keys::batch_key(keys::TABLE, start, id).to_vec(), t));
        }
        let others: u64 = records.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum();
        let key = keys::batch_key(keys::BATCH, start, id);
        let mut row = BatchRow { end: self.end, samples: self.samples, lost: self.lost, cpus, stored_bytes: 0 };
        // stored_bytes counts the metadata record, whose size depends on it: climb to the
        // fixed point (the encoded size only grows with the value).
        let mut guess = others + key.len() as u64;
        let value = loop {
            row.stored_bytes = guess;
            let v = codec::encode_batch(&row);
            let total = others + (key.len() + v.len()) as u64;
            if total == guess {
                break v;
            }
            guess = total;
        };
        records.push((key.to_vec(), value));
        let mut dict = Vec::new();
        let st = &self.staged;
        for (id, f) in &st.frames {
            dict.push((keys::dict_key(keys::DICT_FRAME, *id).to_vec(), codec::encode_frame(f)));
        }
        for (id, c) in &st.comms {
            dict.push((keys::dict_key(keys::DICT_COMM, *id).to_vec(), codec::encode_comm(c)));
        }
        for (id, s) in &st.stacks {
            dict.push((keys::dict_key(keys::DICT_STACK, *id).to_vec(), codec::encode_stack(s)));
        }
        for (id, t) in &st.threads {
            dict.push((keys::dict_key(keys::DICT_THREAD, *id).to_vec(), codec::encode_thread(t)));
        }
        (meta_of(start, id, &row), Writes { records, dict, staged: self.staged })
    }
}

impl Inner {
    pub(crate) fn read_lock(&self) -> std::sync::RwLockReadGuard<'_, ()> {
        self.visibility.read().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn dict_read(&self) -> std::sync::RwLockReadGuard<'_, Dict> {
        self.dict.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies a batch and, only if it was applied, runs `then` before readers can look.
    pub(crate) fn apply_then(&self, batch: sled::Batch, op: &str, then: impl FnOnce()) -> Result<(), StoreError> {
        let _v = self.visibility.write().unwrap_or_else(|e| e.into_inner());
        self.runs.apply_batch(batch).map_err(|e| self.storage(op, e))?;
        then();
        Ok(())
    }

    pub(crate) fn sample_totals(&self) -> Result<SampleTotals, StoreError> {
        match self.runs.get(keys::SAMPLE_TOTALS).map_err(|e| self.storage("read sample totals", e))? {
            None => Ok(SampleTotals::default()),
            Some(v) => SampleTotals::decode(&v)
                .ok_or_else(|| self.corrupt("sample totals record".into(), format!("{} bytes", v.len()))),
        }
    }

    /// Loads the dictionary cache if it is not yet loaded.
    pub(crate) fn ensure_dict(&self) -> Result<(), StoreError> {
        if self.dict_read().loaded {
            return Ok(());
        }
        let mut d = self.dict.write().unwrap_or_else(|e| e.into_inner());
        if d.loaded {
            return Ok(());
        }
        let mut fresh = Dict::default();
        for item in self.runs.scan_prefix([keys::DICT]) {
            let (k, v) = item.map_err(|e| self.storage("load the sample dictionary", e))?;
            let Some((kind, id)) = keys::parse_dict_key(&k) else {
                return Err(self.corrupt("dictionary key".into(), format!("{:?}", k.as_ref())));
            };
            let bad = |d: String| self.corrupt(format!("dictionary entry {}/{id}", kind as char), d);
            match kind {
                keys::DICT_FRAME => fresh.insert_frame(id, codec::decode_frame(&v).map_err(bad)?),
                keys::DICT_COMM => fresh.insert_comm(id, codec::decode_comm(&v).map_err(bad)?),
                keys::DICT_STACK => fresh.insert_stack(id, Arc::from(codec::decode_stack(&v).map_err(bad)?)),
                keys::DICT_THREAD => fresh.insert_thread(id, codec::decode_thread(&v).map_err(bad)?),
                _ => return Err(bad("unknown kind".into())),
            }
        }
        fresh.loaded = true;
        *d = fresh;
        Ok(())
    }

    /// Dedups and encodes a batch. Caller holds the writer lock; the dictionary is loaded.
    fn build_batch(
        &self,
        samples: &[StackSample],
        lost: u64,
        now_unix_ns: u64,
        totals: &SampleTotals,
    ) -> Result<Built, StoreError> {
        if samples.len() > MAX_BATCH_SAMPLES {
            return Err(StoreError::InvalidSamples(format!(
                "{} samples in one batch, more than {MAX_BATCH_SAMPLES}; write smaller batches",
                samples.len()
            )));
        }
        let dict = self.dict_read();
        let mut staged = Staged::new(totals.next_frame, totals.next_comm, totals.next_stack, totals.next_thread);
        let full = StoreError::InvalidSamples;
        let mut stack_of: FxMap<&[Frame], u32> = FxMap::default();
        let mut comm_of: FxMap<&str, u32> = FxMap::default();
        let mut thread_of: FxMap<ThreadRec, u32> = FxMap::default();
        let mut entry_of: FxMap<Entry, u32> = FxMap::default();
        let mut entries: Vec<Entry> = Vec::new();
        let mut counts: Vec<u64> = Vec::new();
        let mut first_cpu: Vec<u32> = Vec::new();
        let mut sample_entry: Vec<u32> = Vec::with_capacity(samples.len());
        let mut frame_ids: Vec<u32> = Vec::new();
        for s in samples {
            let stack = match stack_of.get(s.frames.as_slice()) {
                Some(&id) => id,
                None => {
                    frame_ids.clear();
                    for f in &s.frames {
                        frame_ids.push(staged.frame_id(&dict, f).map_err(full)?);
                    }
                    let id = staged.stack_id(&dict, &frame_ids).map_err(full)?;
                    stack_of.insert(&s.frames, id);
                    id
                }
            };
            let comm = match comm_of.get(s.comm.as_str()) {
                Some(&id) => id,
                None => {
                    let id = staged.comm_id(&dict, &s.comm).map_err(full)?;
                    comm_of.insert(&s.comm, id);
                    id
                }
            };
            let rec = ThreadRec { pid: s.pid, tid: s.tid, comm, cgroup: s.cgroup_id };
            let thread = match thread_of.get(&rec) {
                Some(&id) => id,
                None => {
                    let id = staged.thread_id(&dict, &rec).map_err(full)?;
                    thread_of.insert(rec, id);
                    id
                }
            };
            let e = Entry { thread, idle: s.idle, stack };
            let idx = *entry_of.entry(e).or_insert_with(|| {
                entries.push(e);
                counts.push(0);
                first_cpu.push(s.cpu);
                (entries.len() - 1) as u32
            });
            counts[idx as usize] += 1;
            first_cpu[idx as usize] = first_cpu[idx as usize].min(s.cpu);
            sample_entry.push(idx);
        }
        drop(dict);
        if samples.is_empty() {
            let blocks = Vec::new();
            return Ok(Built { start: now_unix_ns, end: now_unix_ns, lost, samples: 0, blocks, table: None, staged });
        }
        // Table order: partitions by lowest CPU, sorted within; and each sample's entry in it.
        let mut order: Vec<u32> = (0..entries.len() as u32).collect();
        order.sort_unstable_by_key(|&i| (first_cpu[i as usize], entries[i as usize]));
        let mut remap = vec![0u32; entries.len()];
        for (new, &old) in order.iter().enumerate() {
            remap[old as usize] = new as u32;
        }
        let mut parts: Vec<Part> = Vec::new();
        for (pos, &i) in order.iter().enumerate() {
            let cpu = first_cpu[i as usize];
            match parts.last_mut() {
                Some(p) if p.cpu == cpu => p.len += 1,
                _ => parts.push(Part { cpu, start: pos as u32, len: 1 }),
            }
        }
        let table = Table {
            entries: order.iter().map(|&i| entries[i as usize]).collect(),
            counts: order.iter().map(|&i| counts[i as usize]).collect(),
            parts,
        };
        // Per-CPU blocks: samples by CPU, then time (stable: input order breaks ties).
        let mut by_cpu: Vec<u32> = (0..samples.len() as u32).collect();
        by_cpu.sort_by_key(|&i| {
            let s = &samples[i as usize];
            (s.cpu, s.time_unix_ns)
        });
        let start = samples.iter().map(|s| s.time_unix_ns).min().unwrap_or(0);
        let end = samples.iter().map(|s| s.time_unix_ns).max().unwrap_or(0);
        let mut blocks = Vec::new();
        let mut times = Vec::new();
        let mut idx = Vec::new();
        for group in by_cpu.chunk_by(|&a, &b| samples[a as usize].cpu == samples[b as usize].cpu) {
            times.clear();
            idx.clear();
            for &i in group {
                times.push(samples[i as usize].time_unix_ns);
                idx.push(remap[sample_entry[i as usize] as usize]);
            }
            let cpu = samples[group[0] as usize].cpu;
            blocks.push((cpu, codec::encode_block(start, &times, &idx, table.own_range(cpu))));
        }
        Ok(Built {
            start,
            end,
            lost,
            samples: samples.len() as u64,
            blocks,
            table: Some(codec::encode_table(&table)),
            staged,
        })
    }

    /// Calls `each(start, id, row)` for every batch whose start lies in `[from, to)`, in order.
    pub(crate) fn for_each_batch(
        &self,
        from: u64,
        to: u64,
        mut each: impl FnMut(u64, u64, &BatchRow) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        if from >= to {
            return Ok(());
        }
        let lo = keys::batch_bound(keys::BATCH, from);
        let hi = keys::batch_bound(keys::BATCH, to);
        for item in self.runs.range(lo..hi) {
            let (k, v) = item.map_err(|e| self.storage("list sample batches", e))?;
            let (start, id) = self.decode_batch_key(&k)?;
            let row = codec::decode_batch(&v).map_err(|d| self.corrupt(format!("sample batch {id} metadata"), d))?;
            each(start, id, &row)?;
        }
        Ok(())
    }

    pub(crate) fn decode_batch_key(&self, k: &[u8]) -> Result<(u64, u64), StoreError> {
        keys::parse_batch_key(k).ok_or_else(|| self.corrupt("sample batch key".into(), format!("{k:?}")))
    }

    pub(crate) fn read_table(&self, start: u64, id: u64) -> Result<Table, StoreError> {
        let what = || format!("sample batch {id} table");
        let v = self
            .runs
            .get(keys::batch_key(keys::TABLE, start, id))
            .map_err(|e| self.storage("read a sample batch table", e))?
            .ok_or_else(|| self.corrupt(what(), "missing".into()))?;
        codec::decode_table(&v).map_err(|d| self.corrupt(what(), d))
    }

    pub(crate) fn read_block(
        &self,
        start: u64,
        cpu: u32,
        id: u64,
        table: &Table,
        with_times: bool,
    ) -> Result<codec::Block, StoreError> {
        let what = || format!("sample batch {id} cpu {cpu} block");
        let v = self
            .runs
            .get(keys::block_key(start, cpu, id))
            .map_err(|e| self.storage("read a sample block", e))?
            .ok_or_else(|| self.corrupt(what(), "missing".into()))?;
        codec::decode_block(&v, start, table, cpu, with_times).map_err(|d| self.corrupt(what(), d))
    }

    /// Deletes every record of a batch in one atomic batch with the totals. Caller holds the
    /// writer lock. Returns the bytes freed.
    pub(crate) fn delete_batch_locked(&self, start: u64, id: u64, row: &BatchRow) -> Result<u64, StoreError> {
        let op = format!("delete sample batch {id}");
        let mut batch = sled::Batch::default();
        // Whatever blocks exist under the batch's time (not only `row.cpus`), so a delete
        // never leaves anything behind.
        for k in self.runs.scan_prefix(keys::batch_bound(keys::BLOCK, start)).keys() {
            let k = k.map_err(|e| self.storage(&op, e))?;
            if keys::parse_block_key(&k).is_some_and(|(_, _, b)| b == id) {
                batch.remove(k);
            }
        }
        batch.remove(&keys::batch_key(keys::TABLE, start, id));
        batch.remove(&keys::batch_key(keys::BATCH, start, id));
        let mut t = self.sample_totals()?;
        t.batches = t.batches.saturating_sub(1);
        t.samples = t.samples.saturating_sub(row.samples);
        t.batch_bytes = t.batch_bytes.saturating_sub(row.stored_bytes);
        t.deleted_since_gc += 1;
        batch.insert(keys::SAMPLE_TOTALS, t.encode());
        self.apply(batch, &op)?;
        Ok(row.stored_bytes)
    }

    /// The oldest batch other than `protect`.
    pub(crate) fn oldest_batch(&self, protect: Option<u64>) -> Result<Option<(u64, u64, BatchRow)>, StoreError> {
        let mut found = None;
        self.for_each_batch_until(|start, id, row| {
            if Some(id) == protect {
                return true;
            }
            found = Some((start, id, row));
            false
        })?;
        Ok(found)
    }

    fn for_each_batch_until(&self, mut each: impl FnMut(u64, u64, BatchRow) -> bool) -> Result<(), StoreError> {
        for item in self.runs.scan_prefix([keys::BATCH]) {
            let (k, v) = item.map_err(|e| self.storage("scan sample batches", e))?;
            let (start, id) = self.decode_batch_key(&k)?;
            let row = codec::decode_batch(&v).map_err(|d| self.corrupt(format!("sample batch {id} metadata"), d))?;
            if !each(start, id, row) {
                break;
            }
        }
        Ok(())
    }

    /// Sweeps when enough batches went since the last sweep (see the module docs).
    pub(crate) fn maybe_sweep_dictionary(&self) -> Result<(), StoreError> {
        let t = self.sample_totals()?;
        if t.deleted_since_gc > 0 && t.deleted_since_gc * 3 >= t.batches {
            self.sweep_dictionary()?;
        }
        Ok(())
    }

    /// Deletes unreferenced dictionary entries. Caller holds the writer lock.
    pub(crate) fn sweep_dictionary(&self) -> Result<u64, StoreError> {
        self.ensure_dict()?;
        let t = self.sample_totals()?;
        let mut live_stacks = vec![false; t.next_stack as usize];
        let mut live_threads = vec![false; t.next_thread as usize];
        let mut live_comms = vec![false; t.next_comm as usize];
        for item in self.runs.scan_prefix([keys::TABLE]) {
            let (k, v) = item.map_err(|e| self.storage("sweep the sample dictionary", e))?;
            let (_, id) = self.decode_batch_key(&k)?;
            let table = codec::decode_table(&v).map_err(|d| self.corrupt(format!("sample batch {id} table"), d))?;
            for e in &table.entries {
                if let Some(s) = live_stacks.get_mut(e.stack as usize) {
                    *s = true;
                }
                if let Some(th) = live_threads.get_mut(e.thread as usize) {
                    *th = true;
                }
            }
        }
        let mut dead: Vec<(u8, u32, u64)> = Vec::new(); // kind, id, record bytes
        {
            let d = self.dict_read();
            for (id, th) in d.threads.iter().enumerate() {
                let Some(th) = th else { continue };
                if live_threads.get(id).copied().unwrap_or(false) {
                    if let Some(c) = live_comms.get_mut(th.comm as usize) {
                        *c = true;
                    }
                } else {
                    dead.push((keys::DICT_THREAD, id as u32, 6 + codec::encode_thread(th).len() as u64));
                }
            }
            let mut live_frames = vec![false; t.next_frame as usize];
            for (id, s) in d.stacks.iter().enumerate() {
                let Some(s) = s else { continue };
                if live_stacks.get(id).copied().unwrap_or(false) {
                    for &f in s.iter() {
                        if let Some(l) = live_frames.get_mut(f as usize) {
                            *l = true;
                        }
                    }
                } else {
                    dead.push((keys::DICT_STACK, id as u32, 6 + codec::encode_stack(s).len() as u64));
                }
            }
            for (id, f) in d.frames.iter().enumerate() {
                if let Some(f) = f
                    && !live_frames.get(id).copied().unwrap_or(false)
                {
                    dead.push((keys::DICT_FRAME, id as u32, 6 + codec::encode_frame(f).len() as u64));
                }
            }
            for (id, c) in d.comms.iter().enumerate() {
                if let Some(c) = c
                    && !live_comms.get(id).copied().unwrap_or(false)
                {
                    dead.push((keys::DICT_COMM, id as u32, 6 + codec::encode_comm(c).len() as u64));
                }
            }
        }
        let removed = dead.len() as u64;
        let mut chunks = dead.chunks(4096).peekable();
        if chunks.peek().is_none() {
            let mut t = self.sample_totals()?;
            t.deleted_since_gc = 0;
            let mut batch = sled::Batch::default();
            batch.insert(keys::SAMPLE_TOTALS, t.encode());
            self.apply(batch, "finish a dictionary sweep")?;
        }
        for chunk in chunks {
            let mut t = self.sample_totals()?;
            let mut batch = sled::Batch::default();
            for &(kind, id, bytes) in chunk {
                batch.remove(&keys::dict_key(kind, id));
                t.dict_bytes = t.dict_bytes.saturating_sub(bytes);
                match kind {
                    keys::DICT_STACK => t.stacks = t.stacks.saturating_sub(1),
                    keys::DICT_FRAME => t.frames = t.frames.saturating_sub(1),
                    keys::DICT_THREAD => t.threads = t.threads.saturating_sub(1),
                    _ => t.comms = t.comms.saturating_sub(1),
                }
            }
            t.deleted_since_gc = 0;
            batch.insert(keys::SAMPLE_TOTALS, t.encode());
            self.apply_then(batch, "sweep the sample dictionary", || {
                let mut d = self.dict.write().unwrap_or_else(|e| e.into_inner());
                for &(kind, id, _) in chunk {
                    match kind {
                        keys::DICT_STACK => d.remove_stack(id),
                        keys::DICT_FRAME => d.remove_frame(id),
                        keys::DICT_THREAD => d.remove_thread(id),
                        _ => d.remove_comm(id),
                    }
                }
            })?;
        }
        Ok(removed)
    }
}
