//! Streaming samples batch by batch, with dictionary ids instead of resolved stacks.
//!
//! Why: an analysis over a day of a big host sees ~10⁸ samples. Resolving each sample's
//! stack into frames (as [`Store::samples`] does) would copy strings 10⁸ times; a
//! [`SampleCursor`] hands out one stored batch (≈10 s of every CPU) at a time as
//! [`RawSample`]s that name their stack and comm by dictionary id, and the caller resolves
//! each *distinct* id once with [`Store::stack_frames`] / [`Store::comm_names`].
//!
//! The cursor does not hold the store's read lock between pages: each page is read under the
//! lock, so a writer never waits for a slow consumer. A batch deleted by retention between
//! pages is skipped; ids are never reused, so an id read earlier still means the same thing
//! (resolving it may fail once a dictionary sweep removed it, which the caller reports).
//!
//! A [`WaitCursor`] does the same over the waits off the CPU ([`SampleKind::OffCpu`]), each
//! with how long its thread waited and the 1 in N it was sampled at ([`RawWait`]): the
//! samples a [`SampleCursor`] yields are all worth one, waits are not, so the two never mix.

use serde::{Deserialize, Serialize};

use super::codec::Entry;
use super::model::{Frame, ProfileQuery, SampleKind};
use super::off_cpu::WaitBatch;
use super::query::Filter;
use crate::{Inner, Store, StoreError, keys};

/// One sample with dictionary ids: what a [`SampleCursor`] yields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawSample {
    pub time_unix_ns: u64,
    pub cpu: u32,
    pub pid: u32,
    pub tid: u32,
    /// Comm dictionary id ([`Store::comm_names`]).
    pub comm: u32,
    pub idle: bool,
    /// Stack dictionary id ([`Store::stack_frames`]).
    pub stack: u32,
}

/// One wait off the CPU with dictionary ids: what a [`WaitCursor`] yields. Its `sample.time_unix_ns`
/// is when the thread blocked; `sample.idle` is always false.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawWait {
    pub sample: RawSample,
    /// How long the thread stayed off the CPU, to the microsecond.
    pub waited_ns: u64,
    /// Waits were sampled 1 in this many when this one was: it stands for `waited_ns × one_in`.
    pub one_in: u32,
}

/// The batches of a query, read one page (one batch) at a time. See the module docs.
pub struct SampleCursor {
    store: Store,
    query: ProfileQuery,
    /// `(start, id)` of the batches still to read, in reverse order (popped from the end).
    pending: Vec<(u64, u64)>,
    lost: u64,
}

impl Store {
    /// Opens a cursor over the samples matching `query` (same semantics as
    /// [`Store::samples`]). Lists the batches up front (metadata only).
    pub fn sample_cursor(&self, query: ProfileQuery) -> Result<SampleCursor, StoreError> {
        query.range.check()?;
        super::query::on_cpu_only(&query, "Store::wait_cursor")?;
        let _r = self.inner.read_lock();
        let mut pending = Vec::new();
        let mut lost = 0;
        self.inner.overlapping(
            query.range,
            &[],
            |row| lost += row.lost,
            |start, id, row, _| {
                if query.cpu.is_none_or(|c| row.cpus.binary_search(&c).is_ok()) {
                    pending.push((start, id));
                }
                Ok(())
            },
        )?;
        pending.reverse();
        Ok(SampleCursor { store: self.clone(), query, pending, lost })
    }

    /// Opens a cursor over the waits off the CPU matching `query` (whatever its `kind`; as
    /// [`Store::off_cpu_samples`], page by page). Lists the batches up front (metadata only).
    pub fn wait_cursor(&self, query: ProfileQuery) -> Result<WaitCursor, StoreError> {
        query.range.check()?;
        let _r = self.inner.read_lock();
        let mut pending = self.inner.wait_batches(&query)?;
        pending.reverse();
        Ok(WaitCursor { store: self.clone(), query, pending })
    }

    /// The frames (leaf first) of each stack id.
    pub fn stack_frames(&self, ids: &[u32]) -> Result<Vec<Vec<Frame>>, StoreError> {
        let _r = self.inner.read_lock();
        self.inner.ensure_dict()?;
        let d = self.inner.dict_read();
        ids.iter().map(|&id| self.inner.frames_of(&d, id)).collect()
    }

    /// The command name of each comm id.
    pub fn comm_names(&self, ids: &[u32]) -> Result<Vec<String>, StoreError> {
        let _r = self.inner.read_lock();
        self.inner.ensure_dict()?;
        let d = self.inner.dict_read();
        ids.iter().map(|&id| d.comm(id).map(str::to_owned).ok_or_else(|| self.inner.missing("comm", id))).collect()
    }
}

impl SampleCursor {
    /// Samples the kernel dropped in the cursor's range (by the batches' times).
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// The next non-empty page of samples in time order (then CPU), or `None` when done.
    pub fn next_page(&mut self) -> Result<Option<Vec<RawSample>>, StoreError> {
        while let Some((start, id)) = self.pending.pop() {
            let page = self.store.inner.read_page(&self.query, start, id)?;
            if !page.is_empty() {
                return Ok(Some(page));
            }
        }
        Ok(None)
    }
}

/// The off-CPU batches of a query, read one page (one batch) at a time. See the module docs.
pub struct WaitCursor {
    store: Store,
    query: ProfileQuery,
    /// The batches still to read, in reverse order (popped from the end).
    pending: Vec<WaitBatch>,
}

impl WaitCursor {
    /// The next non-empty page of waits in time order (then CPU), or `None` when done.
    pub fn next_page(&mut self) -> Result<Option<Vec<RawWait>>, StoreError> {
        while let Some(batch) = self.pending.pop() {
            let page = self.store.inner.read_wait_page(&self.query, batch)?;
            if !page.is_empty() {
                return Ok(Some(page));
            }
        }
        Ok(None)
    }
}

impl Inner {
    fn read_wait_page(&self, q: &ProfileQuery, batch: WaitBatch) -> Result<Vec<RawWait>, StoreError> {
        let _r = self.read_lock();
        self.ensure_dict()?;
        let meta = keys::batch_key(SampleKind::OffCpu.meta_prefix(), batch.start, batch.id);
        match self.runs.contains_key(meta) {
            Ok(true) => {}
            Ok(false) => return Ok(Vec::new()), // deleted by retention since the cursor opened
            Err(e) => return Err(self.storage("read off-CPU batch metadata", e)),
        }
        let d = self.dict_read();
        let filter = Filter::new(q, &d);
        let mut out = Vec::new();
        self.visit_wait_batch(&d, q, &filter, batch, |t, cpu, e, waited_ns, one_in| {
            let th = d.thread(e.thread).ok_or_else(|| self.missing("thread", e.thread))?;
            let sample = RawSample {
                time_unix_ns: t,
                cpu,
                pid: th.pid,
                tid: th.tid,
                comm: th.comm,
                idle: false,
                stack: e.stack,
            };
            out.push(RawWait { sample, waited_ns, one_in });
            Ok(())
        })?;
        out.sort_unstable_by_key(|w| (w.sample.time_unix_ns, w.sample.cpu));
        Ok(out)
    }

    fn read_page(&self, q: &ProfileQuery, start: u64, id: u64) -> Result<Vec<RawSample>, StoreError> {
        let _r = self.read_lock();
        self.ensure_dict()?;
        let row = match self.runs.get(keys::batch_key(keys::BATCH, start, id)) {
            Ok(Some(v)) => {
                super::codec::decode_batch(&v).map_err(|d| self.corrupt(format!("sample batch {id} metadata"), d))?
            }
            Ok(None) => return Ok(Vec::new()), // deleted by retention since the cursor opened
            Err(e) => return Err(self.storage("read sample batch metadata", e)),
        };
        let d = self.dict_read();
        let filter = Filter::new(q, &d);
        let batch = self.read_batch(SampleKind::OnCpu, start, id, &*d)?;
        let table = &batch.table;
        let mut out = Vec::new();
        for &cpu in &row.cpus {
            if q.cpu.is_some_and(|c| c != cpu) {
                continue;
            }
            let block = self.read_block(&batch, cpu, true)?;
            for (&t, &e) in block.times.iter().zip(&block.entries) {
                let e: &Entry = &table.entries[e as usize];
                if !q.range.contains(t) || !filter.wants(e) {
                    continue;
                }
                let th = d.thread(e.thread).ok_or_else(|| self.missing("thread", e.thread))?;
                out.push(RawSample {
                    time_unix_ns: t,
                    cpu,
                    pid: th.pid,
                    tid: th.tid,
                    comm: th.comm,
                    idle: e.idle,
                    stack: e.stack,
                });
            }
        }
        out.sort_unstable_by_key(|s| (s.time_unix_ns, s.cpu));
        Ok(out)
    }
}
