//! Reading the host's data: run and sample cursors, and the stack / comm dictionaries.

use std::collections::BTreeMap;

use crate::bindings::loupe::udf::data as host;
use crate::{Frame, HostInfo, Run, Sample, SampleFilter, TimeRange};

/// Ids sent to `data.stacks` / `data.comms` in one call at most.
const IDS_PER_CALL: usize = 4096;

/// Facts about the host: name, Loupe version, CPUs, and the retained range.
pub fn host_info() -> HostInfo {
    host::info()
}

/// Runs that started in `range`, oldest first. Narrow them, then [`open`](RunQuery::open):
///
/// ```no_run
/// # fn f(range: loupe_udf::TimeRange) -> Result<(), String> {
/// for run in loupe_udf::runs(range).interval_ns(100_000).iface("eth0").open()? {
///     // run.metrics.in_bytes[i] is slot i, from run.start_ns + i * run.interval_ns
/// }
/// # Ok(()) }
/// ```
pub fn runs(range: TimeRange) -> RunQuery {
    RunQuery { range, interval_ns: None, iface: None, per_cpu: false }
}

/// Stack samples in `range`, in time order per stored batch. Narrow them, then
/// [`open`](SampleQuery::open). Idle samples are left out unless
/// [`include_idle`](SampleQuery::include_idle).
pub fn samples(range: TimeRange) -> SampleQuery {
    SampleQuery { range, filter: SampleFilter { pid: None, comm: None, cpu: None, include_idle: false } }
}

/// Which runs to read; see [`runs`].
#[derive(Clone, Debug)]
#[must_use = "a query reads nothing until opened"]
pub struct RunQuery {
    range: TimeRange,
    interval_ns: Option<u64>,
    iface: Option<String>,
    per_cpu: bool,
}

impl RunQuery {
    /// Only runs of this slot interval (100 µs = `100_000`).
    pub fn interval_ns(mut self, interval_ns: impl Into<Option<u64>>) -> Self {
        self.interval_ns = interval_ns.into();
        self
    }

    /// Only runs of this interface.
    pub fn iface(mut self, iface: impl OptionalText) -> Self {
        self.iface = iface.into_option();
        self
    }

    /// Also fill each run's `per_cpu` (more data per batch; off by default).
    pub fn per_cpu(mut self, per_cpu: bool) -> Self {
        self.per_cpu = per_cpu;
        self
    }

    /// Opens the host cursor (one host call), or the host's reason why not.
    pub fn open(self) -> Result<Runs, String> {
        let cursor = host::open_runs(self.range, self.interval_ns, self.iface.as_deref(), self.per_cpu)?;
        Ok(Runs { cursor, batch: Vec::new().into_iter(), done: false, batches: 0 })
    }
}

/// The runs of an opened [`RunQuery`], one host call per batch of a few runs.
pub struct Runs {
    cursor: host::RunCursor,
    batch: std::vec::IntoIter<Run>,
    done: bool,
    batches: u64,
}

impl Runs {
    /// The next batch as the host sent it (`None` when exhausted); mixes with `next()`.
    pub fn next_batch(&mut self) -> Option<Vec<Run>> {
        let rest: Vec<Run> = self.batch.by_ref().collect();
        if !rest.is_empty() {
            return Some(rest);
        }
        if self.done {
            return None;
        }
        let batch = self.cursor.next_batch();
        self.batches += 1;
        if batch.is_empty() {
            self.done = true;
            None
        } else {
            Some(batch)
        }
    }

    /// Host calls made so far.
    pub fn host_calls(&self) -> u64 {
        self.batches
    }
}

impl Iterator for Runs {
    type Item = Run;

    fn next(&mut self) -> Option<Run> {
        loop {
            if let Some(run) = self.batch.next() {
                return Some(run);
            }
            self.batch = self.next_batch()?.into_iter();
        }
    }
}

impl std::iter::FusedIterator for Runs {}

/// Which samples to read; see [`samples`].
#[derive(Clone, Debug)]
#[must_use = "a query reads nothing until opened"]
pub struct SampleQuery {
    range: TimeRange,
    filter: SampleFilter,
}

impl SampleQuery {
    /// Only this process (`None`: every process).
    pub fn pid(mut self, pid: impl Into<Option<u32>>) -> Self {
        self.filter.pid = pid.into();
        self
    }

    /// Only this command name (`None`: every command).
    pub fn comm(mut self, comm: impl OptionalText) -> Self {
        self.filter.comm = comm.into_option();
        self
    }

    /// Only this CPU (`None`: every CPU).
    pub fn cpu(mut self, cpu: impl Into<Option<u32>>) -> Self {
        self.filter.cpu = cpu.into();
        self
    }

    /// Also the samples of idle CPUs (off by default).
    pub fn include_idle(mut self, include_idle: bool) -> Self {
        self.filter.include_idle = include_idle;
        self
    }

    /// Replaces the whole filter.
    pub fn filter(mut self, filter: SampleFilter) -> Self {
        self.filter = filter;
        self
    }

    /// Opens the host cursor (one host call), or the host's reason why not.
    pub fn open(self) -> Result<Samples, String> {
        let cursor = host::open_samples(self.range, &self.filter)?;
        Ok(Samples { cursor, batch: Vec::new().into_iter(), done: false, batches: 0 })
    }
}

/// The samples of an opened [`SampleQuery`], one host call per stored batch (about ten seconds of
/// every CPU).
pub struct Samples {
    cursor: host::SampleCursor,
    batch: std::vec::IntoIter<Sample>,
    done: bool,
    batches: u64,
}

impl Samples {
    /// The next batch as the host sent it (`None` when exhausted); mixes with `next()`.
    pub fn next_batch(&mut self) -> Option<Vec<Sample>> {
        let rest: Vec<Sample> = self.batch.by_ref().collect();
        if !rest.is_empty() {
            return Some(rest);
        }
        if self.done {
            return None;
        }
        let batch = self.cursor.next_batch();
        self.batches += 1;
        if batch.is_empty() {
            self.done = true;
            None
        } else {
            Some(batch)
        }
    }

    /// Samples the kernel dropped (ring buffer full) in the range: a profile's error bar.
    pub fn lost(&self) -> u64 {
        self.cursor.lost()
    }

    /// Host calls made so far for batches.
    pub fn host_calls(&self) -> u64 {
        self.batches
    }
}

impl Iterator for Samples {
    type Item = Sample;

    fn next(&mut self) -> Option<Sample> {
        loop {
            if let Some(s) = self.batch.next() {
                return Some(s);
            }
            self.batch = self.next_batch()?.into_iter();
        }
    }
}

impl std::iter::FusedIterator for Samples {}

/// A cache over the host's stack dictionary: stack id → frames, leaf first.
///
/// Count samples per stack id while streaming, then [`resolve`](Stacks::resolve) the distinct
/// ids: one host call per 4096 unknown ids, none for ids already known.
///
/// ```no_run
/// # fn f(ctx: &loupe_udf::Context) -> Result<(), String> {
/// use std::collections::BTreeMap;
/// let mut counts: BTreeMap<u32, u64> = BTreeMap::new();
/// for s in ctx.samples().open()? {
///     *counts.entry(s.stack).or_default() += 1;
/// }
/// let mut stacks = loupe_udf::Stacks::new();
/// stacks.resolve(counts.keys().copied())?;
/// for (id, n) in &counts {
///     let leaf = stacks.get(*id).and_then(|f| f.first()).map_or("[unknown]", |f| &f.function);
/// }
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, Default)]
pub struct Stacks {
    known: BTreeMap<u32, Vec<Frame>>,
    calls: u64,
}

impl Stacks {
    pub fn new() -> Self {
        Self::default()
    }

    /// Fetches the ids not yet known (duplicates and known ids cost nothing).
    pub fn resolve(&mut self, ids: impl IntoIterator<Item = u32>) -> Result<(), String> {
        let missing = missing_ids(ids, |id| self.known.contains_key(&id));
        for chunk in missing.chunks(IDS_PER_CALL) {
            self.calls += 1;
            let frames = host::stacks(chunk)?;
            check_len("stacks", chunk.len(), frames.len())?;
            self.known.extend(chunk.iter().copied().zip(frames));
        }
        Ok(())
    }

    /// The frames of a resolved id (leaf first), `None` when not resolved.
    pub fn get(&self, id: u32) -> Option<&[Frame]> {
        self.known.get(&id).map(Vec::as_slice)
    }

    /// The frames of an id, asking the host if it is not known yet. Prefer one
    /// [`resolve`](Self::resolve) of all ids first.
    pub fn frames(&mut self, id: u32) -> Result<&[Frame], String> {
        self.resolve([id])?;
        Ok(self.get(id).unwrap_or_default())
    }

    /// Host calls made so far.
    pub fn host_calls(&self) -> u64 {
        self.calls
    }
}

/// A cache over the host's comm dictionary: comm id → command name. Works like [`Stacks`].
#[derive(Clone, Debug, Default)]
pub struct Comms {
    known: BTreeMap<u32, String>,
    calls: u64,
}

impl Comms {
    pub fn new() -> Self {
        Self::default()
    }

    /// Fetches the ids not yet known (duplicates and known ids cost nothing).
    pub fn resolve(&mut self, ids: impl IntoIterator<Item = u32>) -> Result<(), String> {
        let missing = missing_ids(ids, |id| self.known.contains_key(&id));
        for chunk in missing.chunks(IDS_PER_CALL) {
            self.calls += 1;
            let names = host::comms(chunk)?;
            check_len("comms", chunk.len(), names.len())?;
            self.known.extend(chunk.iter().copied().zip(names));
        }
        Ok(())
    }

    /// The name of a resolved id, `None` when not resolved.
    pub fn get(&self, id: u32) -> Option<&str> {
        self.known.get(&id).map(String::as_str)
    }

    /// The name of an id, asking the host if it is not known yet.
    pub fn name(&mut self, id: u32) -> Result<&str, String> {
        self.resolve([id])?;
        Ok(self.get(id).unwrap_or_default())
    }

    /// Host calls made so far.
    pub fn host_calls(&self) -> u64 {
        self.calls
    }
}

/// A string or no string: `"eth0"`, `String`, `Option<&str>`, `Option<String>`.
pub trait OptionalText {
    fn into_option(self) -> Option<String>;
}

impl OptionalText for &str {
    fn into_option(self) -> Option<String> {
        Some(self.to_string())
    }
}
impl OptionalText for String {
    fn into_option(self) -> Option<String> {
        Some(self)
    }
}
impl OptionalText for Option<&str> {
    fn into_option(self) -> Option<String> {
        self.map(str::to_string)
    }
}
impl OptionalText for Option<String> {
    fn into_option(self) -> Option<String> {
        self
    }
}

fn missing_ids(ids: impl IntoIterator<Item = u32>, known: impl Fn(u32) -> bool) -> Vec<u32> {
    let mut missing: Vec<u32> = ids.into_iter().filter(|id| !known(*id)).collect();
    missing.sort_unstable();
    missing.dedup();
    missing
}

fn check_len(what: &str, asked: usize, got: usize) -> Result<(), String> {
    if asked == got { Ok(()) } else { Err(format!("the host answered {got} {what} for {asked} ids")) }
}

#[cfg(test)]
mod tests {
    #[test]
    fn missing_ids_are_distinct_sorted_and_unknown() {
        assert_eq!(super::missing_ids([5, 3, 5, 9, 3, 1], |id| id == 9), vec![1, 3, 5]);
    }
}
