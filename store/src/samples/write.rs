//! Writing a sample batch: deduplicating it into the dictionary, encoding its table and
//! per-CPU blocks, and storing it with its new dictionary entries and the updated totals.
//!
//! *Why all in one sled batch:* a block refers to table entries, the table to thread and stack
//! ids, stacks to frame ids; if any of these could land without the others a crash would leave
//! a batch that names a missing stack. So the batch's `B` and `h` records (the table, with the
//! blocks in it), the dictionary entries it adds and the `x` totals go in one atomic batch, and
//! the new entries enter the in-memory dictionary only after that batch was applied
//! ([`super::dict`]).
//!
//! Retention is not applied here: the put methods (the store's `put` module) run it after the
//! write, through the `retain` step [`Inner::write_batch`] takes, so that the sample modules
//! never name retention (which deletes samples, among everything else).

#[cfg(doc)]
use crate::Store;
use crate::keys::{self, SampleTotals};
use crate::{Inner, RetentionReport, StoreError};

use super::MAX_BATCH_SAMPLES;
use super::codec::{self, BatchRow, Entry, Part, Table, ThreadRec};
use super::dict::{FxMap, Staged};
use super::model::{Frame, SampleBatchMeta, SampleKind, StackSample};
use super::records::meta_of;

impl Inner {
    /// Stores one batch of `kind` (what [`Store::put_samples`] and [`Store::put_off_cpu`] do
    /// but for retention): `extra(order)` gives the record a kind keeps beside the table (the
    /// off-CPU waits), from the samples' indexes in the order the blocks hold them. Once the
    /// batch is durable, still under the writer lock, `retain(id)` runs: the caller's retention
    /// pass, which must spare batch `id`; what it deleted is flushed before this returns.
    pub(crate) fn write_batch<S: AsRef<StackSample>>(
        &self,
        kind: SampleKind,
        samples: &[S],
        lost: u64,
        now_unix_ns: u64,
        extra: impl FnOnce(&[u32]) -> Option<Vec<u8>>,
        retain: impl FnOnce(u64) -> Result<RetentionReport, StoreError>,
    ) -> Result<SampleBatchMeta, StoreError> {
        if samples.is_empty() && lost == 0 {
            return Ok(SampleBatchMeta::default());
        }
        let inner = self;
        let _w = inner.lock_writer();
        inner.ensure_dict()?;
        let totals = inner.sample_totals()?;
        let mut built = inner.build_batch(samples, lost, now_unix_ns, &totals)?;
        let extra = extra(&built.order);
        built.extra = extra;
        let id = inner.db.generate_id().map_err(|e| inner.storage("allocate a batch id", e))? + 1;
        let (meta, writes) = built.finish(kind, id);
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
        t.vocab += staged.vocab.len() as u64;
        t.next_thread = staged.next_thread;
        t.next_frame = staged.next_frame;
        t.next_comm = staged.next_comm;
        t.next_stack = staged.next_stack;
        t.max_span_ns = t.max_span_ns.max(meta.end_unix_ns - meta.start_unix_ns);
        // `None` only before the first batch of a new store: `open` upgrades older records.
        t.lost = Some(t.lost.unwrap_or(0).saturating_add(meta.lost));
        let mut batch = sled::Batch::default();
        if kind == SampleKind::OnCpu {
            // A batch landing in an hour already rolled up: the rollup no longer sums the hour.
            inner.drop_rollup_at(meta.start_unix_ns, &mut batch, &mut t)?;
        }
        for (k, v) in writes.records.into_iter().chain(writes.dict) {
            batch.insert(k, v);
        }
        batch.insert(keys::SAMPLE_TOTALS, t.encode());
        let op = format!("write {} {id}", kind.batch_name());
        inner.apply_adding_then(batch, &op, || {
            if !staged.is_empty() {
                staged.commit(&mut inner.dict.write().unwrap_or_else(|e| e.into_inner()));
            }
        })?;
        inner.flush(&format!("flush {} {id}", kind.batch_name()))?;
        let report = retain(id)?;
        if kind == SampleKind::OnCpu {
            // After retention, so an hour it is about to delete is not summed first.
            inner.seal_completed_hours(meta.start_unix_ns);
        }
        if report.deleted_anything() {
            inner.flush("flush retention deletes")?;
        }
        Ok(meta)
    }
}

/// A batch encoded except for its id (which goes into every key).
struct Built {
    start: u64,
    end: u64,
    lost: u64,
    samples: u64,
    /// The CPUs with samples, ascending.
    cpus: Vec<u32>,
    /// The table with the blocks (none without samples).
    table: Option<Vec<u8>>,
    /// The samples' indexes in the order of the blocks: by CPU, then time.
    order: Vec<u32>,
    /// The kind's record beside the table (the off-CPU waits), if any.
    extra: Option<Vec<u8>>,
    staged: Staged,
}

struct Writes {
    records: Vec<(Vec<u8>, Vec<u8>)>,
    dict: Vec<(Vec<u8>, Vec<u8>)>,
    staged: Staged,
}

impl Built {
    fn finish(self, kind: SampleKind, id: u64) -> (SampleBatchMeta, Writes) {
        let start = self.start;
        let mut records: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(3);
        let cpus = self.cpus;
        if let Some(t) = self.table {
            records.push((keys::batch_key(kind.table_prefix(), start, id).to_vec(), t));
        }
        if let Some(w) = self.extra {
            records.push((keys::batch_key(keys::OFF_WAITS, start, id).to_vec(), w));
        }
        let others: u64 = records.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum();
        let key = keys::batch_key(kind.meta_prefix(), start, id);
        let mut row = BatchRow { end: self.end, samples: self.samples, lost: self.lost, cpus, stored_bytes: 0 };
        let (stored_bytes, value) = crate::encoding::self_counting_record(others, key.len(), |bytes| {
            row.stored_bytes = bytes;
            codec::encode_batch(&row)
        });
        row.stored_bytes = stored_bytes;
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
        for &(pid, local, stack) in &st.vocab {
            dict.push((keys::vocab_key(pid, local).to_vec(), codec::encode_vocab(stack)));
        }
        (meta_of(start, id, &row), Writes { records, dict, staged: self.staged })
    }
}

impl Inner {
    /// Dedups and encodes a batch. Caller holds the writer lock; the dictionary is loaded.
    fn build_batch<S: AsRef<StackSample>>(
        &self,
        samples: &[S],
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
        let mut pid_of: FxMap<u32, u32> = FxMap::default();
        let mut entry_of: FxMap<Entry, u32> = FxMap::default();
        let mut entries: Vec<Entry> = Vec::new();
        let mut counts: Vec<u64> = Vec::new();
        let mut first_cpu: Vec<u32> = Vec::new();
        let mut sample_entry: Vec<u32> = Vec::with_capacity(samples.len());
        let mut frame_ids: Vec<u32> = Vec::new();
        for s in samples {
            let s = s.as_ref();
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
                    pid_of.insert(id, rec.pid);
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
        // Each entry's stack by its place in its process's vocabulary, in order of first use.
        let mut locals: Vec<u32> = Vec::with_capacity(entries.len());
        for e in &entries {
            locals.push(staged.local_id(&dict, pid_of[&e.thread], e.stack).map_err(full)?);
        }
        drop(dict);
        if samples.is_empty() {
            let cpus = Vec::new();
            return Ok(Built {
                start: now_unix_ns,
                end: now_unix_ns,
                lost,
                samples: 0,
                cpus,
                table: None,
                order: Vec::new(),
                extra: None,
                staged,
            });
        }
        // Table order: partitions by lowest CPU, sorted within by (thread, idle, local); and
        // each sample's entry in it.
        let mut order: Vec<u32> = (0..entries.len() as u32).collect();
        order.sort_unstable_by_key(|&i| {
            let (e, local) = (entries[i as usize], locals[i as usize]);
            (first_cpu[i as usize], e.thread, e.idle, local)
        });
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
        // Times as stored: to the microsecond.
        let sample = |i: u32| samples[i as usize].as_ref();
        let time = |i: u32| StackSample::stored_time(sample(i).time_unix_ns);
        by_cpu.sort_by_key(|&i| (sample(i).cpu, time(i)));
        let start = (0..samples.len() as u32).map(time).min().unwrap_or(0);
        let end = (0..samples.len() as u32).map(time).max().unwrap_or(0);
        let mut blocks = Vec::new();
        let mut times = Vec::new();
        let mut idx = Vec::new();
        for group in by_cpu.chunk_by(|&a, &b| sample(a).cpu == sample(b).cpu) {
            times.clear();
            idx.clear();
            for &i in group {
                times.push(time(i));
                idx.push(remap[sample_entry[i as usize] as usize]);
            }
            let cpu = sample(group[0]).cpu;
            blocks.push(codec::encode_block_payload(start, &times, &idx, &table, cpu));
        }
        let locals: Vec<u32> = order.iter().map(|&i| locals[i as usize]).collect();
        Ok(Built {
            start,
            end,
            lost,
            samples: samples.len() as u64,
            cpus: blocks.iter().map(|b| b.cpu).collect(),
            table: Some(codec::encode_batch_record(&table, &locals, &blocks)),
            order: by_cpu,
            extra: None,
            staged,
        })
    }
}
