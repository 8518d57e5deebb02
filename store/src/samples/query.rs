//! Reading samples back: profiles, raw samples, PIDs.

use std::collections::BTreeSet;

use super::codec::{BatchRow, Entry, ThreadRec};
use super::dict;
use super::dict::{Dict, FxMap};
use super::model::{Frame, IndexedProfile, Profile, ProfileQuery, SampleKind, StackSample};
use super::rollup;
use crate::{Inner, Store, StoreError, TimeRange};

impl Store {
    /// Sums the samples matching `query` per distinct stack, and the lost counts of the
    /// batches whose time lies in the range. Batches wholly inside the range are counted from
    /// their tables without decoding a sample (unless a CPU is given); batches cut by the
    /// range are decoded sample by sample.
    ///
    /// With `kind` [`SampleKind::OffCpu`], sums the waits off the CPU instead: each stack's
    /// value is then the nanoseconds threads waited there (see `off_cpu`).
    pub fn profile(&self, query: &ProfileQuery) -> Result<Profile, StoreError> {
        self.inner.profile(query).map(Profile::from)
    }

    /// [`Store::profile`] with each distinct frame once, the stacks as indexes into them: for
    /// readers that only look frames up (see [`IndexedProfile`]).
    pub fn indexed_profile(&self, query: &ProfileQuery) -> Result<IndexedProfile, StoreError> {
        self.inner.profile(query)
    }

    /// The CPU samples matching `query`, in time order (then CPU). Decodes every sample in the
    /// range: meant for tests and small ranges. Waits off the CPU are read with
    /// [`Store::off_cpu_samples`], which gives their durations too: a query of that kind is
    /// refused here.
    pub fn samples(&self, query: &ProfileQuery) -> Result<Vec<StackSample>, StoreError> {
        self.inner.samples(query)
    }

    /// PIDs that have at least one CPU sample (idle ones included) in `range`.
    pub fn pids(&self, range: TimeRange) -> Result<BTreeSet<u32>, StoreError> {
        self.inner.pids(range)
    }
}

/// How a batch meets the query range.
pub(super) enum Cut {
    /// Wholly inside: count from the table (or whole blocks) without decoding times.
    Inside,
    /// Partly inside: decode times and keep those in range.
    Partial,
}

impl Inner {
    /// Calls `each(start, id, row, cut)` for every batch that may hold samples in `range`,
    /// and `lost(row)` for every batch whose time is in `range`, leaving out the batches of
    /// the hours in `covered` (ascending hour starts whose rollups the caller reads instead).
    pub(super) fn overlapping(
        &self,
        range: TimeRange,
        covered: &[u64],
        mut lost: impl FnMut(&BatchRow),
        mut each: impl FnMut(u64, u64, &BatchRow, Cut) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        range.check()?;
        let TimeRange { from_unix_ns: from, to_unix_ns: to } = range;
        let span = self.sample_totals()?.max_span_ns;
        let mut visit = |start: u64, id: u64, row: &BatchRow| {
            if range.contains(start) {
                lost(row);
            }
            if row.samples == 0 || row.end < from {
                return Ok(());
            }
            let cut = if from <= start && row.end < to { Cut::Inside } else { Cut::Partial };
            each(start, id, row, cut)
        };
        let mut at = from.saturating_sub(span);
        for &hour in covered {
            if at < hour {
                self.for_each_batch(at, hour.min(to), &mut visit)?;
            }
            at = at.max(hour.saturating_add(rollup::HOUR_NS));
        }
        self.for_each_batch(at, to, &mut visit)
    }

    /// Calls `visit(entry, count)` for every batch-table entry with samples in `range`
    /// (on `cpu` only, if given); the same entry may be visited once per hour rollup, batch or
    /// block. Hours wholly in the range are read from their rollups when there is no CPU
    /// filter.
    fn visit_counts(
        &self,
        d: &Dict,
        range: TimeRange,
        cpu: Option<u32>,
        mut lost: impl FnMut(u64),
        mut visit: impl FnMut(&Entry, u64),
    ) -> Result<Option<(u64, u64)>, StoreError> {
        let mut tally: Vec<u64> = Vec::new();
        let mut span: Option<(u64, u64)> = None;
        let mut widen = |a: u64, b: u64| span = Some(span.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
        let covered = match cpu {
            Some(_) => Vec::new(),
            None => self.for_each_rollup_inside(range, d, |row, table| {
                lost(row.lost);
                if row.samples > 0 {
                    widen(row.first, row.end);
                }
                for (e, &n) in table.entries.iter().zip(&table.counts) {
                    visit(e, n);
                }
            })?,
        };
        self.overlapping(
            range,
            &covered,
            |row| lost(row.lost),
            |start, id, row, cut| {
                let one;
                let cpus: &[u32] = match cpu {
                    Some(c) if row.cpus.binary_search(&c).is_err() => return Ok(()),
                    Some(c) => {
                        one = [c];
                        &one
                    }
                    None => &row.cpus,
                };
                // The batch's time within the range: the data's span, to a batch's resolution.
                widen(start.max(range.from_unix_ns), row.end.min(range.to_unix_ns.saturating_sub(1)));
                if cpu.is_none() && matches!(cut, Cut::Inside) {
                    // The table alone: its blocks are not decoded, nor is their directory.
                    let table = self.read_table(SampleKind::OnCpu, start, id, d)?;
                    for (e, &n) in table.entries.iter().zip(&table.counts) {
                        visit(e, n);
                    }
                    return Ok(());
                }
                let batch = self.read_batch(SampleKind::OnCpu, start, id, d)?;
                let table = &batch.table;
                tally.clear();
                tally.resize(table.entries.len(), 0);
                let with_times = matches!(cut, Cut::Partial);
                for &c in cpus {
                    let block = self.read_block(&batch, c, with_times)?;
                    if with_times {
                        for (&t, &e) in block.times.iter().zip(&block.entries) {
                            if range.contains(t) {
                                tally[e as usize] += 1;
                            }
                        }
                    } else {
                        for &e in &block.entries {
                            tally[e as usize] += 1;
                        }
                    }
                }
                for (e, &n) in table.entries.iter().zip(&tally) {
                    if n > 0 {
                        visit(e, n);
                    }
                }
                Ok(())
            },
        )?;
        Ok(span)
    }

    pub(crate) fn profile(&self, q: &ProfileQuery) -> Result<IndexedProfile, StoreError> {
        q.range.check()?;
        let _r = self.read_lock();
        self.ensure_dict()?;
        let d = self.dict_read();
        if q.kind == SampleKind::OffCpu {
            return self.off_cpu_profile(&d, q);
        }
        let filter = Filter::new(q, &d);
        let mut per_stack: Vec<u64> = Vec::new();
        let (mut lost, mut samples) = (0u64, 0u64);
        let span = self.visit_counts(
            &d,
            q.range,
            q.cpu,
            |n| lost += n,
            |e, n| {
                if filter.wants(e) {
                    let s = e.stack as usize;
                    if per_stack.len() <= s {
                        per_stack.resize(s + 1, 0);
                    }
                    per_stack[s] += n;
                    samples += n;
                }
            },
        )?;
        self.indexed(&d, &per_stack, samples, lost, span)
    }

    /// The profile whose stack `s` (a dictionary id) has the value `per_stack[s]` (none where
    /// 0): each frame once, stacks as indexes into them.
    pub(super) fn indexed(
        &self,
        d: &Dict,
        per_stack: &[u64],
        samples: u64,
        lost: u64,
        span: Option<(u64, u64)>,
    ) -> Result<IndexedProfile, StoreError> {
        let span = span.filter(|_| samples > 0);
        let mut profile = IndexedProfile { samples, lost, span, ..IndexedProfile::default() };
        // Dictionary frame id → index into `profile.frames`.
        let mut index: FxMap<u32, u32> = FxMap::default();
        for (stack, &n) in per_stack.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let ids = d.stack(stack as u32).ok_or_else(|| self.missing("stack", stack as u32))?;
            let mut indexes = Vec::with_capacity(ids.len());
            for &f in ids.iter() {
                let i = match index.get(&f) {
                    Some(&i) => i,
                    None => {
                        let frame = d.frame(f).ok_or_else(|| self.missing("frame", f))?;
                        let i = profile.frames.len() as u32;
                        profile.frames.push(frame.clone());
                        index.insert(f, i);
                        i
                    }
                };
                indexes.push(i);
            }
            profile.stacks.push((indexes, n));
        }
        Ok(profile)
    }

    pub(crate) fn pids(&self, range: TimeRange) -> Result<BTreeSet<u32>, StoreError> {
        range.check()?;
        let _r = self.read_lock();
        self.ensure_dict()?;
        let d = self.dict_read();
        let mut seen: Vec<bool> = Vec::new();
        let mut mark = |t: u32| {
            let t = t as usize;
            if seen.len() <= t {
                seen.resize(t + 1, false);
            }
            seen[t] = true;
        };
        let covered =
            self.for_each_rollup_inside(range, &d, |_, table| table.entries.iter().for_each(|e| mark(e.thread)))?;
        self.overlapping(
            range,
            &covered,
            |_| {},
            |start, id, row, cut| {
                if matches!(cut, Cut::Inside) {
                    // Wholly inside: the table's thread columns are enough.
                    let what = || format!("sample batch {id} table");
                    let v = self
                        .runs
                        .get(crate::keys::batch_key(crate::keys::TABLE, start, id))
                        .map_err(|e| self.storage("read a sample batch table", e))?
                        .ok_or_else(|| self.corrupt(what(), "missing".into()))?;
                    let threads = super::codec::table_threads(&v).map_err(|d| self.corrupt(what(), d))?;
                    threads.into_iter().for_each(&mut mark);
                    return Ok(());
                }
                let batch = self.read_batch(SampleKind::OnCpu, start, id, &*d)?;
                let table = &batch.table;
                for &cpu in &row.cpus {
                    let block = self.read_block(&batch, cpu, true)?;
                    for (&t, &e) in block.times.iter().zip(&block.entries) {
                        if range.contains(t) {
                            mark(table.entries[e as usize].thread);
                        }
                    }
                }
                Ok(())
            },
        )?;
        let threads = seen.iter().enumerate().filter(|(_, s)| **s).map(|(t, _)| t as u32);
        threads.map(|t| Ok(self.thread(&d, t)?.pid)).collect()
    }

    fn thread<'d>(&self, d: &'d Dict, id: u32) -> Result<&'d ThreadRec, StoreError> {
        d.thread(id).ok_or_else(|| self.missing("thread", id))
    }

    pub(crate) fn samples(&self, q: &ProfileQuery) -> Result<Vec<StackSample>, StoreError> {
        q.range.check()?;
        on_cpu_only(q, "Store::off_cpu_samples")?;
        let _r = self.read_lock();
        self.ensure_dict()?;
        let d = self.dict_read();
        let filter = Filter::new(q, &d);
        let mut out = Vec::new();
        let mut frames_of: FxMap<u32, Vec<Frame>> = FxMap::default();
        self.overlapping(
            q.range,
            &[],
            |_| {},
            |start, id, row, _| {
                let batch = self.read_batch(SampleKind::OnCpu, start, id, &*d)?;
                let table = &batch.table;
                for &cpu in &row.cpus {
                    if q.cpu.is_some_and(|c| c != cpu) {
                        continue;
                    }
                    let block = self.read_block(&batch, cpu, true)?;
                    for (&t, &e) in block.times.iter().zip(&block.entries) {
                        let e = &table.entries[e as usize];
                        if !q.range.contains(t) || !filter.wants(e) {
                            continue;
                        }
                        out.push(self.sample_of(&d, t, cpu, e, &mut frames_of)?);
                    }
                }
                Ok(())
            },
        )?;
        out.sort_by_key(|s| (s.time_unix_ns, s.cpu));
        Ok(out)
    }

    /// The sample at `t` on `cpu` of table entry `e`, its stack resolved through `memo`.
    pub(super) fn sample_of(
        &self,
        d: &Dict,
        t: u64,
        cpu: u32,
        e: &Entry,
        memo: &mut FxMap<u32, Vec<Frame>>,
    ) -> Result<StackSample, StoreError> {
        let th = self.thread(d, e.thread)?;
        let comm = d.comm(th.comm).ok_or_else(|| self.missing("comm", th.comm))?;
        Ok(StackSample {
            time_unix_ns: t,
            cpu,
            pid: th.pid,
            tid: th.tid,
            comm: comm.to_owned(),
            cgroup_id: th.cgroup,
            idle: e.idle,
            frames: self.resolve_stack(d, e.stack, memo)?,
        })
    }

    pub(super) fn missing(&self, what: &str, id: u32) -> StoreError {
        self.corrupt(format!("sample dictionary {what} {id}"), "referenced but missing".into())
    }

    pub(super) fn frames_of(&self, d: &Dict, id: u32) -> Result<Vec<Frame>, StoreError> {
        let ids = d.stack(id).ok_or_else(|| self.missing("stack", id))?;
        ids.iter().map(|&f| d.frame(f).cloned().ok_or_else(|| self.missing("frame", f))).collect()
    }

    /// [`Self::frames_of`], remembered per query (raw samples repeat stacks).
    fn resolve_stack(&self, d: &Dict, id: u32, memo: &mut FxMap<u32, Vec<Frame>>) -> Result<Vec<Frame>, StoreError> {
        if let Some(f) = memo.get(&id) {
            return Ok(f.clone());
        }
        let frames = self.frames_of(d, id)?;
        memo.insert(id, frames.clone());
        Ok(frames)
    }
}

/// Refuses a query of waits off the CPU where only CPU samples are read; `instead` says what
/// reads them.
pub(super) fn on_cpu_only(q: &ProfileQuery, instead: &str) -> Result<(), StoreError> {
    match q.kind {
        SampleKind::OnCpu => Ok(()),
        SampleKind::OffCpu => Err(StoreError::InvalidSamples(format!(
            "this reads CPU samples only; waits off the CPU (with their durations) are read with {instead}"
        ))),
    }
}

/// The per-entry part of a query (time and CPU are handled by the scan).
pub(super) struct Filter<'d> {
    dict: &'d Dict,
    pid: Option<u32>,
    /// `Some(None)`: a comm was asked for that no sample ever had.
    comm: Option<Option<u32>>,
    include_idle: bool,
}

impl<'d> Filter<'d> {
    pub(super) fn new(q: &ProfileQuery, d: &'d dict::Dict) -> Filter<'d> {
        Filter {
            dict: d,
            pid: q.pid,
            comm: q.comm.as_ref().map(|c| d.comm_ids.get(c.as_str()).copied()),
            include_idle: q.include_idle,
        }
    }

    /// Whether the entry's samples are wanted. An entry whose thread is missing from the
    /// dictionary is wanted only by queries without pid or comm (the corruption then surfaces
    /// when the sample is resolved, or in `verify`).
    #[inline]
    pub(super) fn wants(&self, e: &Entry) -> bool {
        if !self.include_idle && e.idle {
            return false;
        }
        if self.pid.is_none() && self.comm.is_none() {
            return true;
        }
        let Some(t) = self.dict.thread(e.thread) else { return false };
        self.pid.is_none_or(|p| p == t.pid) && self.comm.is_none_or(|c| c == Some(t.comm))
    }
}
