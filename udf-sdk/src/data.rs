//! Reading the host's data: run, sample, wait and timeline cursors, and the stack / comm
//! dictionaries.

use std::{collections::BTreeMap, ops::Deref};

use crate::bindings::loupe::udf::data as host;
use crate::{
    Frame, HostInfo, Run, Sample, SampleColumns, SampleFilter, SeriesSet, TimeRange, TimelineDefinition, TimelineEvent,
    TimelineFilter, Wait,
};

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
    RunQuery { range, interval_ns: None, iface: None, per_cpu: false, series: None }
}

/// Stack samples in `range`, in time order per stored batch. Narrow them, then
/// [`open`](SampleQuery::open). Idle samples are left out unless
/// [`include_idle`](SampleQuery::include_idle).
pub fn samples(range: TimeRange) -> SampleQuery {
    SampleQuery { range, filter: SampleFilter { pid: None, comm: None, cpu: None, include_idle: false } }
}

/// Waits off the CPU whose thread blocked in `range` (recorded by `loupe agent --off-cpu` or
/// `loupe sample --off-cpu`), in time order per stored batch. Narrow them, then
/// [`open`](WaitQuery::open). Each wait stands for [`Wait::weight_ns`] of waiting:
///
/// ```no_run
/// # fn f(range: loupe_udf::TimeRange) -> Result<(), String> {
/// let mut waited = std::collections::BTreeMap::<u32, u64>::new();
/// for w in loupe_udf::waits(range).comm("nginx").open()? {
///     *waited.entry(w.stack).or_default() += w.weight_ns(); // ns waited in each stack
/// }
/// # Ok(()) }
/// ```
pub fn waits(range: TimeRange) -> WaitQuery {
    WaitQuery { range, filter: SampleFilter { pid: None, comm: None, cpu: None, include_idle: false } }
}

impl Wait {
    /// The waiting this sample stands for, in ns: its own wait times the waits it was sampled
    /// among (`waited_ns × one_in`). Summed per stack, an unbiased estimate of the time threads
    /// waited there, as `loupe profile --off-cpu` gives it.
    pub fn weight_ns(&self) -> u64 {
        self.waited_ns.saturating_mul(u64::from(self.one_in))
    }
}

/// Programs' application-timeline events in `range`, in time order. Narrow them, then
/// [`open`](TimelineQuery::open):
///
/// ```no_run
/// # fn f(range: loupe_udf::TimeRange) -> Result<(), String> {
/// for e in loupe_udf::timeline(range).event("loop_end").open()? {
///     // e.lag_ns: this iteration's latency; e.args: what the program logged with it
/// }
/// # Ok(()) }
/// ```
pub fn timeline(range: TimeRange) -> TimelineQuery {
    TimelineQuery { range, filter: TimelineFilter { pid: None, comm: None, event: None } }
}

/// Which timeline events to read; see [`timeline`].
#[derive(Clone, Debug)]
#[must_use = "a query reads nothing until opened"]
pub struct TimelineQuery {
    range: TimeRange,
    filter: TimelineFilter,
}

impl TimelineQuery {
    /// Only this process (`None`: every process).
    pub fn pid(mut self, pid: impl Into<Option<u32>>) -> Self {
        self.filter.pid = pid.into();
        self
    }

    /// Only programs with this command name (`None`: every program).
    pub fn comm(mut self, comm: impl OptionalText) -> Self {
        self.filter.comm = comm.into_option();
        self
    }

    /// Only events of this name (`None`: every event).
    pub fn event(mut self, event: impl OptionalText) -> Self {
        self.filter.event = event.into_option();
        self
    }

    /// The definitions of the events this query yields (one host call): per program, each
    /// event's level and the names of its arguments —
    /// [`TimelineDefinitions::arg_names`] names an event's `args`.
    pub fn definitions(&self) -> Result<TimelineDefinitions, String> {
        Ok(host::timeline_definitions(self.range, &self.filter)?.into_iter().collect())
    }

    /// Opens the host cursor (one host call), or the host's reason why not.
    pub fn open(self) -> Result<TimelineEvents, String> {
        let cursor = host::open_timeline(self.range, &self.filter)?;
        Ok(Batched::new(cursor))
    }
}

/// Event definitions by (pid, event name); see [`TimelineQuery::definitions`].
#[derive(Clone, Debug, Default)]
pub struct TimelineDefinitions(BTreeMap<(u32, String), TimelineDefinition>);

impl FromIterator<TimelineDefinition> for TimelineDefinitions {
    fn from_iter<I: IntoIterator<Item = TimelineDefinition>>(defs: I) -> Self {
        TimelineDefinitions(defs.into_iter().map(|d| ((d.pid, d.name.clone()), d)).collect())
    }
}

impl TimelineDefinitions {
    /// The definition of `event`'s event in its program, if the host had one.
    pub fn of(&self, event: &TimelineEvent) -> Option<&TimelineDefinition> {
        self.0.get(&(event.pid, event.name.clone()))
    }

    /// The names of `event`'s arguments (empty when it has none or is not defined here).
    pub fn arg_names(&self, event: &TimelineEvent) -> &[String] {
        self.of(event).map_or(&[], |d| &d.arg_names)
    }

    /// `event`'s named arguments as `(name, value)`.
    pub fn named_args<'a>(&'a self, event: &'a TimelineEvent) -> impl Iterator<Item = (&'a str, u64)> + 'a {
        self.arg_names(event).iter().zip(&event.args).map(|(n, v)| (n.as_str(), *v))
    }

    /// Every definition, by pid then name.
    pub fn iter(&self) -> impl Iterator<Item = &TimelineDefinition> {
        self.0.values()
    }
}

/// Which runs to read; see [`runs`].
#[derive(Clone, Debug)]
#[must_use = "a query reads nothing until opened"]
pub struct RunQuery {
    range: TimeRange,
    interval_ns: Option<u64>,
    iface: Option<String>,
    per_cpu: bool,
    series: Option<SeriesSet>,
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

    /// Only these series (the others come as empty lists): the host computes and copies in
    /// only what the analysis reads. Every series by default.
    pub fn series(mut self, series: SeriesSet) -> Self {
        self.series = Some(series);
        self
    }

    /// Opens the host cursor (one host call), or the host's reason why not.
    pub fn open(self) -> Result<Runs, String> {
        let (range, interval, iface) = (self.range, self.interval_ns, self.iface.as_deref());
        let cursor = match self.series {
            None => host::open_runs(range, interval, iface, self.per_cpu)?,
            Some(series) => host::open_runs_with(range, interval, iface, self.per_cpu, series)?,
        };
        Ok(Batched::new(cursor))
    }
}

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
        Ok(Batched::new(cursor))
    }
}

/// Which waits to read; see [`waits`].
#[derive(Clone, Debug)]
#[must_use = "a query reads nothing until opened"]
pub struct WaitQuery {
    range: TimeRange,
    filter: SampleFilter,
}

impl WaitQuery {
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

    /// Only the waits that began on this CPU (`None`: every CPU).
    pub fn cpu(mut self, cpu: impl Into<Option<u32>>) -> Self {
        self.filter.cpu = cpu.into();
        self
    }

    /// Opens the host cursor (one host call), or the host's reason why not.
    pub fn open(self) -> Result<Waits, String> {
        let cursor = host::open_waits(self.range, &self.filter)?;
        Ok(Batched::new(cursor))
    }
}

/// A host cursor that hands out items a batch at a time: the host's run and sample cursors
/// (or a stand-in in tests). [`Batched`] turns one into an iterator.
pub trait NextBatch {
    type Item;
    /// What one call hands out: a `Vec`'s items, or samples read in place from columns.
    type Batch: ExactSizeIterator<Item = Self::Item> + Default;

    /// The next items, or an empty batch when the cursor is exhausted (one host call).
    fn next_batch(&mut self) -> Self::Batch;
}

impl NextBatch for host::RunCursor {
    type Item = Run;
    type Batch = std::vec::IntoIter<Run>;

    fn next_batch(&mut self) -> Self::Batch {
        host::RunCursor::next_batch(self).into_iter()
    }
}

impl NextBatch for host::WaitCursor {
    type Item = Wait;
    type Batch = std::vec::IntoIter<Wait>;

    fn next_batch(&mut self) -> Self::Batch {
        host::WaitCursor::next_batch(self).into_iter()
    }
}

impl NextBatch for host::SampleCursor {
    type Item = Sample;
    type Batch = SampleBatch;

    /// Asks for columns: a list of numbers crosses into the guest as one copy, where the host
    /// writes a `list<sample>` field by field (twice the time); the samples are then read from
    /// the columns in place.
    fn next_batch(&mut self) -> SampleBatch {
        SampleBatch::new(host::SampleCursor::next_columns(self))
    }
}

/// The samples of one column batch (`sample-cursor.next-columns`), read in place.
pub struct SampleBatch {
    columns: SampleColumns,
    at: usize,
    len: usize,
}

impl SampleBatch {
    /// As many samples as the shortest column holds.
    pub fn new(columns: SampleColumns) -> Self {
        let c = &columns;
        let len = [c.time_ns.len(), c.cpu.len(), c.pid.len(), c.tid.len(), c.comm.len(), c.idle.len(), c.stack.len()]
            .into_iter()
            .min()
            .unwrap_or(0);
        SampleBatch { columns, at: 0, len }
    }
}

impl Iterator for SampleBatch {
    type Item = Sample;

    #[inline]
    fn next(&mut self) -> Option<Sample> {
        let i = self.at;
        if i >= self.len {
            return None;
        }
        self.at += 1;
        let c = &self.columns;
        Some(Sample {
            time_ns: c.time_ns[i],
            cpu: c.cpu[i],
            pid: c.pid[i],
            tid: c.tid[i],
            comm: c.comm[i],
            idle: c.idle[i] != 0,
            stack: c.stack[i],
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.len - self.at, Some(self.len - self.at))
    }
}

impl ExactSizeIterator for SampleBatch {}

impl Default for SampleBatch {
    fn default() -> Self {
        SampleBatch::new(SampleColumns {
            time_ns: vec![],
            cpu: vec![],
            pid: vec![],
            tid: vec![],
            comm: vec![],
            idle: vec![],
            stack: vec![],
        })
    }
}

impl NextBatch for host::TimelineCursor {
    type Item = TimelineEvent;
    type Batch = std::vec::IntoIter<TimelineEvent>;

    fn next_batch(&mut self) -> Self::Batch {
        host::TimelineCursor::next_batch(self).into_iter()
    }
}

/// The items of a batched cursor, one [`NextBatch::next_batch`] call per batch, never one per
/// item. An iterator, and batch by batch with [`next_batch`](Self::next_batch).
pub struct Batched<C: NextBatch> {
    cursor: C,
    batch: C::Batch,
    done: bool,
    batches: u64,
}

/// The runs of an opened [`RunQuery`], one host call per batch of a few runs.
pub type Runs = Batched<host::RunCursor>;

/// The waits of an opened [`WaitQuery`], one host call per stored batch.
pub type Waits = Batched<host::WaitCursor>;

/// The events of an opened [`TimelineQuery`], one host call per few thousand events.
pub type TimelineEvents = Batched<host::TimelineCursor>;

/// The samples of an opened [`SampleQuery`], one host call per stored batch (about ten seconds of
/// every CPU). [`lost`](Batched::lost) tells how many the kernel dropped.
pub type Samples = Batched<host::SampleCursor>;

impl<C: NextBatch> Batched<C> {
    /// Iterates over `cursor`'s batches; nothing is asked until the first item or batch.
    pub fn new(cursor: C) -> Self {
        Self { cursor, batch: C::Batch::default(), done: false, batches: 0 }
    }

    /// The next batch as the cursor sent it, or what `next()` left of it (`None` when
    /// exhausted); mixes with `next()`.
    pub fn next_batch(&mut self) -> Option<Vec<C::Item>> {
        let rest: Vec<C::Item> = self.batch.by_ref().collect();
        if !rest.is_empty() {
            return Some(rest);
        }
        self.refill().then(|| self.batch.by_ref().collect())
    }

    /// Asks the cursor for its next batch (unless it is exhausted); false when there is none.
    fn refill(&mut self) -> bool {
        if self.done {
            return false;
        }
        let batch = self.cursor.next_batch();
        self.batches += 1;
        if batch.len() == 0 {
            self.done = true;
            return false;
        }
        self.batch = batch;
        true
    }

    /// Host calls made so far for batches.
    pub fn host_calls(&self) -> u64 {
        self.batches
    }

    /// The underlying cursor.
    pub fn cursor(&self) -> &C {
        &self.cursor
    }
}

impl Batched<host::SampleCursor> {
    /// Samples the kernel dropped (ring buffer full) in the range: a profile's error bar.
    pub fn lost(&self) -> u64 {
        self.cursor.lost()
    }
}

impl<C: NextBatch> Iterator for Batched<C> {
    type Item = C::Item;

    #[inline]
    fn next(&mut self) -> Option<C::Item> {
        loop {
            if let Some(item) = self.batch.next() {
                return Some(item);
            }
            if !self.refill() {
                return None;
            }
        }
    }
}

impl<C: NextBatch> std::iter::FusedIterator for Batched<C> {}

/// A dictionary of the host that maps ids to entries, asked a list of ids at a time: stacks
/// ([`StackDictionary`]) and comms ([`CommDictionary`]), or a stand-in in tests. [`IdCache`]
/// caches one.
pub trait Dictionary {
    /// What an id maps to, as the host sends it; [`IdCache::get`] lends it as its `Target`.
    type Entry: Deref;
    /// What the entries are, for error messages ("stacks").
    const WHAT: &'static str;

    /// One entry per id, in order (one host call).
    fn fetch(&mut self, ids: &[u32]) -> Result<Vec<Self::Entry>, String>;
}

/// The host's stack dictionary: stack id → frames, leaf first.
#[derive(Clone, Copy, Debug, Default)]
pub struct StackDictionary;

impl Dictionary for StackDictionary {
    type Entry = Vec<Frame>;
    const WHAT: &'static str = "stacks";

    fn fetch(&mut self, ids: &[u32]) -> Result<Vec<Vec<Frame>>, String> {
        host::stacks(ids)
    }
}

/// The host's comm dictionary: comm id → command name.
#[derive(Clone, Copy, Debug, Default)]
pub struct CommDictionary;

impl Dictionary for CommDictionary {
    type Entry = String;
    const WHAT: &'static str = "comms";

    fn fetch(&mut self, ids: &[u32]) -> Result<Vec<String>, String> {
        host::comms(ids)
    }
}

/// A cache over one of the host's dictionaries: ask for the distinct ids once
/// ([`resolve`](Self::resolve)), one host call per 4096 unknown ids, none for ids already known;
/// then look them up ([`get`](Self::get)).
#[derive(Clone, Debug, Default)]
pub struct IdCache<D: Dictionary> {
    dictionary: D,
    known: BTreeMap<u32, D::Entry>,
    calls: u64,
}

/// A cache over the host's stack dictionary: stack id → frames, leaf first.
///
/// Count samples per stack id while streaming, then [`resolve`](IdCache::resolve) the distinct
/// ids: one host call per 4096 unknown ids, none for ids already known.
///
/// ```no_run
/// # fn f(ctx: &loupe_udf::Context) -> Result<(), String> {
/// use std::{collections::BTreeMap, ops::Deref};
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
pub type Stacks = IdCache<StackDictionary>;

/// A cache over the host's comm dictionary: comm id → command name. Works like [`Stacks`].
pub type Comms = IdCache<CommDictionary>;

impl<D: Dictionary + Default> IdCache<D> {
    pub fn new() -> Self {
        Self::with_dictionary(D::default())
    }
}

impl<D: Dictionary> IdCache<D> {
    /// A cache over `dictionary`.
    pub fn with_dictionary(dictionary: D) -> Self {
        Self { dictionary, known: BTreeMap::new(), calls: 0 }
    }

    /// Fetches the ids not yet known (duplicates and known ids cost nothing).
    pub fn resolve(&mut self, ids: impl IntoIterator<Item = u32>) -> Result<(), String> {
        let missing = missing_ids(ids, |id| self.known.contains_key(&id));
        for chunk in missing.chunks(IDS_PER_CALL) {
            self.calls += 1;
            let entries = self.dictionary.fetch(chunk)?;
            check_len(D::WHAT, chunk.len(), entries.len())?;
            self.known.extend(chunk.iter().copied().zip(entries));
        }
        Ok(())
    }

    /// The entry of a resolved id (frames: `&[Frame]`, a name: `&str`), `None` when not resolved.
    pub fn get(&self, id: u32) -> Option<&<D::Entry as Deref>::Target> {
        self.known.get(&id).map(|e| &**e)
    }

    /// Ids resolved so far.
    pub fn len(&self) -> usize {
        self.known.len()
    }

    pub fn is_empty(&self) -> bool {
        self.known.is_empty()
    }

    /// Host calls made so far.
    pub fn host_calls(&self) -> u64 {
        self.calls
    }
}

impl IdCache<StackDictionary> {
    /// The frames of an id, asking the host if it is not known yet. Prefer one
    /// [`resolve`](Self::resolve) of all ids first.
    pub fn frames(&mut self, id: u32) -> Result<&[Frame], String> {
        self.resolve([id])?;
        Ok(self.get(id).unwrap_or_default())
    }
}

impl IdCache<CommDictionary> {
    /// The name of an id, asking the host if it is not known yet.
    pub fn name(&mut self, id: u32) -> Result<&str, String> {
        self.resolve([id])?;
        Ok(self.get(id).unwrap_or_default())
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
    use std::collections::VecDeque;

    use super::*;

    #[test]
    fn missing_ids_are_distinct_sorted_and_unknown() {
        assert_eq!(missing_ids([5, 3, 5, 9, 3, 1], |id| id == 9), vec![1, 3, 5]);
    }

    /// A cursor that hands out fixed batches, then empty ones, and counts the calls.
    struct FakeCursor {
        batches: VecDeque<Vec<u32>>,
        calls: u64,
    }

    impl NextBatch for FakeCursor {
        type Item = u32;
        type Batch = std::vec::IntoIter<u32>;

        fn next_batch(&mut self) -> Self::Batch {
            self.calls += 1;
            self.batches.pop_front().unwrap_or_default().into_iter()
        }
    }

    fn batched(batches: &[&[u32]]) -> Batched<FakeCursor> {
        Batched::new(FakeCursor { batches: batches.iter().map(|b| b.to_vec()).collect(), calls: 0 })
    }

    #[test]
    fn iterates_every_item_one_call_per_batch() {
        let mut b = batched(&[&[1, 2, 3], &[4], &[5, 6]]);
        assert_eq!(b.host_calls(), 0, "nothing asked before the first item");
        assert_eq!(b.by_ref().collect::<Vec<_>>(), vec![1, 2, 3, 4, 5, 6]);
        // Three batches and the empty one that ends the cursor.
        assert_eq!((b.host_calls(), b.cursor().calls), (4, 4));
        // Fused: exhausted means no more calls.
        assert_eq!(b.next(), None);
        assert_eq!(b.next_batch(), None);
        assert_eq!(b.cursor().calls, 4);
    }

    #[test]
    fn sample_batches_read_columns_in_place_up_to_the_shortest() {
        let columns = SampleColumns {
            time_ns: vec![10, 20, 30],
            cpu: vec![1, 2, 3],
            pid: vec![4, 5, 6],
            tid: vec![7, 8, 9],
            comm: vec![0, 1, 2],
            idle: vec![0, 1, 0],
            stack: vec![11, 12], // one short: the batch holds two samples
        };
        let mut b = SampleBatch::new(columns);
        assert_eq!(b.len(), 2);
        let first = b.next().unwrap();
        assert_eq!(
            (first.time_ns, first.cpu, first.pid, first.tid, first.comm, first.idle, first.stack),
            (10, 1, 4, 7, 0, false, 11)
        );
        assert_eq!(b.len(), 1);
        let second = b.next().unwrap();
        assert_eq!((second.time_ns, second.idle, second.stack), (20, true, 12));
        assert!(b.next().is_none() && b.len() == 0);
        assert_eq!(SampleBatch::default().len(), 0);
    }

    #[test]
    fn next_batch_mixes_with_next() {
        let mut b = batched(&[&[1, 2, 3], &[4, 5]]);
        assert_eq!(b.next(), Some(1));
        assert_eq!(b.next_batch(), Some(vec![2, 3]), "the rest of the current batch first");
        assert_eq!(b.host_calls(), 1);
        assert_eq!(b.next_batch(), Some(vec![4, 5]));
        assert_eq!(b.next(), None);
        assert_eq!(b.host_calls(), 3);
    }

    #[test]
    fn an_empty_cursor_is_one_call() {
        let mut b = batched(&[]);
        assert_eq!(b.next(), None);
        assert_eq!(b.next(), None);
        assert_eq!(b.host_calls(), 1);
    }

    /// A dictionary that names id `i` "n{i}" and records the ids of every call; `short` makes it
    /// answer one entry too few.
    #[derive(Default)]
    struct FakeDictionary {
        asked: Vec<Vec<u32>>,
        short: bool,
    }

    impl Dictionary for FakeDictionary {
        type Entry = String;
        const WHAT: &'static str = "names";

        fn fetch(&mut self, ids: &[u32]) -> Result<Vec<String>, String> {
            self.asked.push(ids.to_vec());
            let n = ids.len() - usize::from(self.short);
            Ok(ids[..n].iter().map(|i| format!("n{i}")).collect())
        }
    }

    #[test]
    fn cache_asks_each_unknown_id_once() {
        let mut c: IdCache<FakeDictionary> = IdCache::new();
        c.resolve([3, 1, 3]).unwrap();
        assert_eq!((c.get(1), c.get(3), c.get(2)), (Some("n1"), Some("n3"), None));
        c.resolve([1, 2, 3, 2]).unwrap();
        c.resolve([3, 1]).unwrap();
        c.resolve([]).unwrap();
        assert_eq!(c.dictionary.asked, vec![vec![1, 3], vec![2]]);
        assert_eq!((c.host_calls(), c.len()), (2, 3));
    }

    #[test]
    fn cache_asks_in_chunks() {
        let mut c: IdCache<FakeDictionary> = IdCache::new();
        c.resolve((0..2 * IDS_PER_CALL as u32 + 1).rev()).unwrap();
        let sizes: Vec<usize> = c.dictionary.asked.iter().map(Vec::len).collect();
        assert_eq!(sizes, vec![IDS_PER_CALL, IDS_PER_CALL, 1]);
        assert_eq!(c.dictionary.asked[0][0], 0, "sorted");
        assert_eq!(c.get(2 * IDS_PER_CALL as u32), Some(format!("n{}", 2 * IDS_PER_CALL).as_str()));
    }

    #[test]
    fn cache_refuses_a_short_answer() {
        let mut c = IdCache::with_dictionary(FakeDictionary { short: true, ..Default::default() });
        assert_eq!(c.resolve([7, 8]), Err("the host answered 1 names for 2 ids".to_string()));
    }
}
