//! What an analysis may call: the `loupe:udf/data` interface, implemented over the store.
//!
//! Data leaves the host in batches (a few runs, up to [`SAMPLE_PAGE`] samples or
//! [`TIMELINE_PAGE`] timeline events per call),
//! so a day-long analysis makes thousands of host calls, not millions. Stacks and comms are
//! handed out as dictionary ids; the guest resolves each distinct id once.
//!
//! What the host holds for one invocation is bounded whatever the analysis does: at most
//! [`MAX_OPEN_CURSORS`] cursors at once (one more traps the analysis with `cursor_limit`), a
//! run cursor holds one page of run listings ([`RUN_PAGE`] entries) and a sample or wait cursor
//! one stored batch; a batch handed to the guest is at most [`RUN_PAGE`] runs and
//! [`MAX_RUN_BATCH_BYTES`] of series, or [`SAMPLE_PAGE`] samples or waits. The probe cursor (stored
//! `loupe probe` sessions and their calls) is in the `probes` module, under the same limits.

use std::collections::VecDeque;

use loupe_store::{ProfileQuery, RunMeta, SampleKind, Store, StoreError, TimeRange as StoreRange, TimelineQuery};
use wasmtime::component::{Resource, ResourceTable};

use super::{
    bindings::{HostInfo, Level, loupe, wit},
    cursors::{ProbeCursor, RunCursor, SampleCursor, TimelineCursor, WaitCursor},
    log::InvocationLog,
};
use loupe_api::model::{Metrics, RunView, SeriesSet};

/// Runs per `run-cursor.next-batch` call (a 2,000-slot run is ~180 KB of series), and run
/// listings a run cursor reads from the store at a time.
pub const RUN_PAGE: usize = 8;
/// Series bytes per `run-cursor.next-batch` call beyond which the batch ends early (per-CPU
/// series of a 96-CPU host are ~17 MB a run): at least one run, then no more past this.
pub const MAX_RUN_BATCH_BYTES: usize = 8 << 20;
/// Cursors one invocation may hold open at once.
pub const MAX_OPEN_CURSORS: usize = 16;
/// Most samples per `sample-cursor.next-batch` call (a stored batch of a big host can hold
/// more; it is then handed out in pieces). 16 Ki samples ≈ 512 KiB of guest memory.
pub const SAMPLE_PAGE: usize = 16 * 1024;

/// Events per `timeline-cursor.next-batch` call (an event with its names is ~100 bytes of
/// guest memory), read from the store a page at a time.
pub const TIMELINE_PAGE: usize = 4096;

/// Most ids per `stacks`/`comms` call: bounds what one call copies into the guest.
const MAX_LOOKUP: usize = 64 * 1024;

/// The host side of one invocation's data access.
pub struct DataHost {
    pub store: Store,
    pub info: HostInfo,
    pub table: ResourceTable,
    pub log: InvocationLog,
    /// Cursors open now; and whether the analysis tried to open one past the limit.
    pub open_cursors: usize,
    pub cursor_limit_hit: bool,
    /// Inside `merge`: the data functions answer an error (a merge combines partial results,
    /// it reads no data — on the asking host there may be none of the hosts' data at all).
    pub merging: bool,
}

/// What a data function answers inside `merge`.
const NO_DATA_IN_MERGE: &str = "merge() must not read data: it combines the partial results it is given";

impl DataHost {
    pub fn new(store: Store, info: HostInfo, log: InvocationLog) -> Self {
        DataHost {
            store,
            info,
            table: ResourceTable::new(),
            log,
            open_cursors: 0,
            cursor_limit_hit: false,
            merging: false,
        }
    }

    /// A cursor's range, checked — or the refusal of any data inside `merge`.
    pub(super) fn range(&self, r: wit::TimeRange) -> Result<StoreRange, String> {
        if self.merging {
            return Err(NO_DATA_IN_MERGE.into());
        }
        StoreRange::new(r.from_ns, r.to_ns).map_err(|e| e.to_string())
    }

    /// The store's query for a sample or wait cursor, or the guest's range error.
    fn sample_query(
        &self,
        range: wit::TimeRange,
        filter: wit::SampleFilter,
        kind: SampleKind,
    ) -> Result<ProfileQuery, String> {
        let range = self.range(range)?;
        let include_idle = filter.include_idle && kind == SampleKind::OnCpu;
        Ok(ProfileQuery { range, pid: filter.pid, comm: filter.comm, cpu: filter.cpu, include_idle, kind })
    }

    /// Counts a cursor about to open, or traps the analysis if it holds too many: an error
    /// it could ignore would let a loop of opens grow the host's state forever.
    pub(super) fn open_cursor(&mut self) -> wasmtime::Result<()> {
        if self.open_cursors >= MAX_OPEN_CURSORS {
            self.cursor_limit_hit = true;
            return Err(wasmtime::Error::msg(format!("more than {MAX_OPEN_CURSORS} cursors open")));
        }
        self.open_cursors += 1;
        Ok(())
    }

    pub(super) fn close_cursor(&mut self) {
        self.open_cursors = self.open_cursors.saturating_sub(1);
    }

    /// A run cursor handing out the `series` asked for.
    fn open_runs_of(
        &mut self,
        range: wit::TimeRange,
        interval_ns: Option<u64>,
        iface: Option<String>,
        per_cpu: bool,
        series: SeriesSet,
    ) -> wasmtime::Result<Result<Resource<RunCursor>, String>> {
        let range = match self.range(range) {
            Ok(r) => r,
            Err(e) => return Ok(Err(e)),
        };
        self.open_cursor()?;
        let (metas, after, done) = (VecDeque::new(), None, false);
        let cursor = RunCursor { range, interval_ns, iface, per_cpu, series, metas, after, done };
        Ok(Ok(self.table.push(cursor)?))
    }
}

pub(super) fn trap(e: StoreError) -> wasmtime::Error {
    wasmtime::Error::msg(format!("store: {e}"))
}

/// The analysis' `series-set` flags as the run view's set (the same series, by name).
fn series_set(flags: wit::SeriesSet) -> SeriesSet {
    use wit::SeriesSet as F;
    let named = [
        (F::IN_BYTES, "in_bytes"),
        (F::OUT_BYTES, "out_bytes"),
        (F::IN_PACKETS, "in_packets"),
        (F::OUT_PACKETS, "out_packets"),
        (F::IN_CE_BYTES, "in_ce_bytes"),
        (F::IN_RETX_BYTES, "in_retx_bytes"),
        (F::OUT_RETX_BYTES, "out_retx_bytes"),
        (F::IN_CONNS, "in_conns"),
        (F::OUT_CONNS, "out_conns"),
        (F::IN_CROSS_REGION_BYTES, "in_cross_region_bytes"),
        (F::OUT_CROSS_REGION_BYTES, "out_cross_region_bytes"),
    ];
    named.into_iter().filter(|(f, _)| flags.contains(*f)).fold(SeriesSet::NONE, |set, (_, name)| set.with(name))
}

impl loupe::udf::types::Host for DataHost {}

impl loupe::udf::data::Host for DataHost {
    fn open_runs(
        &mut self,
        range: wit::TimeRange,
        interval_ns: Option<u64>,
        iface: Option<String>,
        per_cpu: bool,
    ) -> wasmtime::Result<Result<Resource<RunCursor>, String>> {
        self.open_runs_of(range, interval_ns, iface, per_cpu, SeriesSet::ALL)
    }

    fn open_runs_with(
        &mut self,
        range: wit::TimeRange,
        interval_ns: Option<u64>,
        iface: Option<String>,
        per_cpu: bool,
        series: wit::SeriesSet,
    ) -> wasmtime::Result<Result<Resource<RunCursor>, String>> {
        self.open_runs_of(range, interval_ns, iface, per_cpu, series_set(series))
    }

    fn open_samples(
        &mut self,
        range: wit::TimeRange,
        filter: wit::SampleFilter,
    ) -> wasmtime::Result<Result<Resource<SampleCursor>, String>> {
        let query = match self.sample_query(range, filter, SampleKind::OnCpu) {
            Ok(q) => q,
            Err(e) => return Ok(Err(e)),
        };
        self.open_cursor()?;
        let inner = self.store.sample_cursor(query).map_err(trap)?;
        Ok(Ok(self.table.push(SampleCursor::new(inner))?))
    }

    fn open_waits(
        &mut self,
        range: wit::TimeRange,
        filter: wit::SampleFilter,
    ) -> wasmtime::Result<Result<Resource<WaitCursor>, String>> {
        // `include_idle` does not apply: the idle task never waits.
        let query = match self.sample_query(range, filter, SampleKind::OffCpu) {
            Ok(q) => q,
            Err(e) => return Ok(Err(e)),
        };
        self.open_cursor()?;
        let inner = self.store.wait_cursor(query).map_err(trap)?;
        Ok(Ok(self.table.push(WaitCursor::new(inner))?))
    }

    fn open_timeline(
        &mut self,
        range: wit::TimeRange,
        filter: wit::TimelineFilter,
    ) -> wasmtime::Result<Result<Resource<TimelineCursor>, String>> {
        let range = match self.range(range) {
            Ok(r) => r,
            Err(e) => return Ok(Err(e)),
        };
        let query = TimelineQuery { range, pid: filter.pid, comm: filter.comm, event: filter.event };
        self.open_cursor()?;
        Ok(Ok(self.table.push(TimelineCursor { query, after: None, done: false })?))
    }

    fn timeline_definitions(
        &mut self,
        range: wit::TimeRange,
        filter: wit::TimelineFilter,
    ) -> wasmtime::Result<Result<Vec<wit::TimelineDefinition>, String>> {
        let range = match self.range(range) {
            Ok(r) => r,
            Err(e) => return Ok(Err(e)),
        };
        let sources = match self.store.timeline_sources(range) {
            Ok(s) => s,
            Err(e) => return Ok(Err(e.to_string())),
        };
        let mut out = Vec::new();
        for s in sources {
            if filter.pid.is_some_and(|p| p != s.pid) || filter.comm.as_ref().is_some_and(|c| *c != s.comm) {
                continue;
            }
            for d in s.definitions {
                if filter.event.as_ref().is_none_or(|n| *n == d.name) {
                    let (pid, comm) = (s.pid, s.comm.clone());
                    out.push(wit::TimelineDefinition {
                        pid,
                        comm,
                        name: d.name,
                        level: d.level,
                        arg_names: d.arg_names,
                    });
                }
            }
        }
        Ok(Ok(out))
    }

    fn open_probes(&mut self, range: wit::TimeRange) -> wasmtime::Result<Result<Resource<ProbeCursor>, String>> {
        self.open_probe_cursor(range)
    }

    fn stacks(&mut self, ids: Vec<u32>) -> wasmtime::Result<Result<Vec<Vec<wit::Frame>>, String>> {
        if self.merging {
            return Ok(Err(NO_DATA_IN_MERGE.into()));
        }
        if ids.len() > MAX_LOOKUP {
            return Ok(Err(format!("{} ids in one call; at most {MAX_LOOKUP}", ids.len())));
        }
        Ok(match self.store.stack_frames(&ids) {
            Ok(stacks) => Ok(stacks
                .into_iter()
                .map(|s| {
                    s.into_iter()
                        .map(|f| wit::Frame { function: f.function.into(), module: f.module.into(), kernel: f.kernel })
                        .collect()
                })
                .collect()),
            Err(e) => Err(e.to_string()),
        })
    }

    fn comms(&mut self, ids: Vec<u32>) -> wasmtime::Result<Result<Vec<String>, String>> {
        if self.merging {
            return Ok(Err(NO_DATA_IN_MERGE.into()));
        }
        if ids.len() > MAX_LOOKUP {
            return Ok(Err(format!("{} ids in one call; at most {MAX_LOOKUP}", ids.len())));
        }
        Ok(self.store.comm_names(&ids).map_err(|e| e.to_string()))
    }

    fn info(&mut self) -> wasmtime::Result<HostInfo> {
        Ok(self.info.clone())
    }

    fn log(&mut self, level: Level, message: String) -> wasmtime::Result<()> {
        self.log.push(level, message);
        Ok(())
    }
}

impl loupe::udf::data::HostRunCursor for DataHost {
    fn next_batch(&mut self, cursor: Resource<RunCursor>) -> wasmtime::Result<Vec<wit::Run>> {
        let store = self.store.clone();
        let c = self.table.get_mut(&cursor)?;
        let mut out = Vec::new();
        let mut bytes = 0usize;
        while out.len() < RUN_PAGE && bytes < MAX_RUN_BATCH_BYTES {
            if c.metas.is_empty() && !c.done {
                let page =
                    store.runs_page(c.range, c.interval_ns, c.iface.as_deref(), c.after, RUN_PAGE).map_err(trap)?;
                c.done = page.len() < RUN_PAGE;
                c.after = page.last().map(RunMeta::pos);
                c.metas = page.into();
            }
            let Some(meta) = c.metas.pop_front() else { break };
            // A run deleted by retention since it was listed is skipped.
            if let Some(run) = store.run(meta.id).map_err(trap)? {
                let series = run.meta.samples as usize * c.series.len() * 8;
                bytes += series * if c.per_cpu { run.per_cpu.len() + 1 } else { 1 };
                out.push(wit_run(RunView::with_series(&run, c.per_cpu, c.series)));
            }
        }
        Ok(out)
    }

    fn drop(&mut self, cursor: Resource<RunCursor>) -> wasmtime::Result<()> {
        self.table.delete(cursor)?;
        self.close_cursor();
        Ok(())
    }
}

impl loupe::udf::data::HostSampleCursor for DataHost {
    fn next_batch(&mut self, cursor: Resource<SampleCursor>) -> wasmtime::Result<Vec<wit::Sample>> {
        Ok(self
            .table
            .get_mut(&cursor)?
            .next(SAMPLE_PAGE)
            .map_err(trap)?
            .map(|s| wit::Sample {
                time_ns: s.time_unix_ns,
                cpu: s.cpu,
                pid: s.pid,
                tid: s.tid,
                comm: s.comm,
                idle: s.idle,
                stack: s.stack,
            })
            .collect())
    }

    fn next_columns(&mut self, cursor: Resource<SampleCursor>) -> wasmtime::Result<wit::SampleColumns> {
        let samples = self.table.get_mut(&cursor)?.next(SAMPLE_PAGE).map_err(trap)?;
        let n = samples.len();
        let mut c = wit::SampleColumns {
            time_ns: Vec::with_capacity(n),
            cpu: Vec::with_capacity(n),
            pid: Vec::with_capacity(n),
            tid: Vec::with_capacity(n),
            comm: Vec::with_capacity(n),
            idle: Vec::with_capacity(n),
            stack: Vec::with_capacity(n),
        };
        for s in samples {
            c.time_ns.push(s.time_unix_ns);
            c.cpu.push(s.cpu);
            c.pid.push(s.pid);
            c.tid.push(s.tid);
            c.comm.push(s.comm);
            c.idle.push(u8::from(s.idle));
            c.stack.push(s.stack);
        }
        Ok(c)
    }

    fn lost(&mut self, cursor: Resource<SampleCursor>) -> wasmtime::Result<u64> {
        Ok(self.table.get(&cursor)?.inner.lost())
    }

    fn drop(&mut self, cursor: Resource<SampleCursor>) -> wasmtime::Result<()> {
        self.table.delete(cursor)?;
        self.close_cursor();
        Ok(())
    }
}

impl loupe::udf::data::HostWaitCursor for DataHost {
    fn next_batch(&mut self, cursor: Resource<WaitCursor>) -> wasmtime::Result<Vec<wit::Wait>> {
        Ok(self
            .table
            .get_mut(&cursor)?
            .next(SAMPLE_PAGE)
            .map_err(trap)?
            .map(|w| wit::Wait {
                time_ns: w.sample.time_unix_ns,
                cpu: w.sample.cpu,
                pid: w.sample.pid,
                tid: w.sample.tid,
                comm: w.sample.comm,
                stack: w.sample.stack,
                waited_ns: w.waited_ns,
                one_in: w.one_in,
            })
            .collect())
    }

    fn drop(&mut self, cursor: Resource<WaitCursor>) -> wasmtime::Result<()> {
        self.table.delete(cursor)?;
        self.close_cursor();
        Ok(())
    }
}

impl loupe::udf::data::HostTimelineCursor for DataHost {
    fn next_batch(&mut self, cursor: Resource<TimelineCursor>) -> wasmtime::Result<Vec<wit::TimelineEvent>> {
        let store = self.store.clone();
        let c = self.table.get_mut(&cursor)?;
        if c.done {
            return Ok(Vec::new());
        }
        let (events, next) = store.timeline_events(&c.query, c.after, TIMELINE_PAGE).map_err(trap)?;
        c.done = next.is_none();
        c.after = next;
        Ok(events
            .into_iter()
            .map(|e| wit::TimelineEvent {
                time_ns: e.time_unix_ns,
                pid: e.pid,
                tid: e.tid,
                cpu: e.cpu,
                comm: e.comm,
                name: e.name,
                level: e.level,
                args: e.args.to_vec(),
                lag_ns: e.lag_ns,
            })
            .collect())
    }

    fn drop(&mut self, cursor: Resource<TimelineCursor>) -> wasmtime::Result<()> {
        self.table.delete(cursor)?;
        self.close_cursor();
        Ok(())
    }
}

fn wit_metrics(m: Metrics) -> wit::Metrics {
    wit::Metrics {
        in_bytes: m.in_bytes,
        out_bytes: m.out_bytes,
        in_packets: m.in_packets,
        out_packets: m.out_packets,
        in_ce_bytes: m.in_ce_bytes,
        in_retx_bytes: m.in_retx_bytes,
        out_retx_bytes: m.out_retx_bytes,
        in_conns: m.in_conns,
        out_conns: m.out_conns,
        in_cross_region_bytes: m.in_cross_region_bytes,
        out_cross_region_bytes: m.out_cross_region_bytes,
    }
}

fn wit_run(v: RunView) -> wit::Run {
    wit::Run {
        id: v.id,
        iface: v.iface,
        host: v.host,
        start_ns: v.start_unix_ns,
        interval_ns: v.interval_ns,
        samples: v.samples,
        cpus: v.cpus,
        metrics: wit_metrics(v.metrics),
        per_cpu: v
            .per_cpu
            .unwrap_or_default()
            .into_iter()
            .map(|c| wit::CpuMetrics { cpu: c.cpu, metrics: wit_metrics(c.metrics) })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use loupe::udf::data::{Host, HostRunCursor, HostSampleCursor};
    use loupe_store::{CpuColumns, Frame, NewRun, Retention, RunSource, StackSample};

    use super::*;

    fn host_of(store: &Store) -> DataHost {
        let info = HostInfo {
            hostname: "h".into(),
            loupe_version: "0".into(),
            cpus: 4,
            retained: wit::TimeRange { from_ns: 0, to_ns: 0 },
        };
        DataHost::new(store.clone(), info, InvocationLog::new(1 << 16))
    }

    const EVERY: wit::TimeRange = wit::TimeRange { from_ns: 0, to_ns: u64::MAX };

    /// Each series flag hands out its own series (as the API computes it) and nothing else,
    /// in the run's sums and per CPU; `open-runs` hands out all eleven.
    #[test]
    fn a_run_cursor_hands_out_only_the_series_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), Retention::default()).unwrap();
        let samples = 50u32;
        let per_cpu: Vec<CpuColumns> = (0..3u32)
            .map(|cpu| {
                let mut c = CpuColumns::zeroed(cpu, samples);
                for (k, col) in c.counters.iter_mut().enumerate() {
                    col.iter_mut().enumerate().for_each(|(i, v)| *v = u64::from(cpu + 1) * (k as u64 + 1) * i as u64);
                }
                c.in_conns.iter_mut().enumerate().for_each(|(i, s)| *s = 1u128 << ((i + cpu as usize) % 128));
                c.out_conns.iter_mut().enumerate().for_each(|(i, s)| *s = 3u128 << (i % 100));
                c
            })
            .collect();
        let run = NewRun {
            iface: "eth0".into(),
            host: "h".into(),
            rack: None,
            start_unix_ns: 1_000,
            interval_ns: 1_000_000,
            samples,
            local_prefixes: vec![],
            source: RunSource::Agent,
            per_cpu,
            conn_counts: None,
            clock: None,
        };
        let meta = store.put_run(run, 0).unwrap();
        let full = RunView::new(&store.run(meta.id).unwrap().unwrap(), true);
        let named = |m: &wit::Metrics| -> Vec<(&'static str, Vec<u64>)> {
            let m = Metrics {
                in_bytes: m.in_bytes.clone(),
                out_bytes: m.out_bytes.clone(),
                in_packets: m.in_packets.clone(),
                out_packets: m.out_packets.clone(),
                in_ce_bytes: m.in_ce_bytes.clone(),
                in_retx_bytes: m.in_retx_bytes.clone(),
                out_retx_bytes: m.out_retx_bytes.clone(),
                in_conns: m.in_conns.clone(),
                out_conns: m.out_conns.clone(),
                in_cross_region_bytes: m.in_cross_region_bytes.clone(),
                out_cross_region_bytes: m.out_cross_region_bytes.clone(),
            };
            m.named().iter().map(|(n, v)| (*n, v.to_vec())).collect()
        };
        let want_all = named(&wit_metrics(full.metrics.clone()));
        let want_cpu1 = named(&wit_metrics(full.per_cpu.as_ref().unwrap()[1].metrics.clone()));
        assert!(want_all.iter().all(|(_, v)| v.len() == samples as usize && v.iter().any(|&x| x > 0)));
        let mut host = host_of(&store);
        let read = |host: &mut DataHost, series: Option<wit::SeriesSet>| -> wit::Run {
            let cursor = match series {
                Some(s) => host.open_runs_with(EVERY, None, None, true, s),
                None => host.open_runs(EVERY, None, None, true),
            };
            let cursor = cursor.unwrap().unwrap();
            let mut runs = HostRunCursor::next_batch(host, Resource::new_borrow(cursor.rep())).unwrap();
            HostRunCursor::drop(host, cursor).unwrap();
            assert_eq!(runs.len(), 1);
            runs.pop().unwrap()
        };
        let all = read(&mut host, None);
        assert_eq!(named(&all.metrics), want_all);
        assert_eq!(named(&all.per_cpu[1].metrics), want_cpu1);
        use wit::SeriesSet as F;
        // The WIT's flags in declaration order, which is the names' order.
        let flags = [
            F::IN_BYTES,
            F::OUT_BYTES,
            F::IN_PACKETS,
            F::OUT_PACKETS,
            F::IN_CE_BYTES,
            F::IN_RETX_BYTES,
            F::OUT_RETX_BYTES,
            F::IN_CONNS,
            F::OUT_CONNS,
            F::IN_CROSS_REGION_BYTES,
            F::OUT_CROSS_REGION_BYTES,
        ];
        for (flag, name) in flags.into_iter().zip(SeriesSet::NAMES) {
            let run = read(&mut host, Some(flag));
            for (got, want) in [(named(&run.metrics), &want_all), (named(&run.per_cpu[1].metrics), &want_cpu1)] {
                for ((n, g), (_, w)) in got.iter().zip(want.iter()) {
                    if *n == name {
                        assert_eq!(g, w, "{name} asked: {n} differs");
                    } else {
                        assert!(g.is_empty(), "{name} asked: {n} handed out too");
                    }
                }
            }
        }
    }

    fn sample(i: u64) -> StackSample {
        StackSample {
            time_unix_ns: 1_700_000_000_000_000_000 + i * 1_000_003,
            cpu: (i % 4) as u32,
            pid: 100 + (i % 7) as u32,
            tid: 1_000 + (i % 11) as u32,
            comm: format!("comm{}", i % 3),
            cgroup_id: 0,
            idle: i % 5 == 0,
            frames: vec![Frame::user(format!("f{}", i % 13), "m")],
        }
    }

    /// Records and columns hand out the same samples, each call the next ones, in pages of at
    /// most `SAMPLE_PAGE`, across stored batches.
    #[test]
    fn records_and_columns_hand_out_the_same_samples_in_turn() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), Retention::default()).unwrap();
        let all: Vec<StackSample> = (0..40_000).map(sample).collect();
        for batch in [&all[..30_000], &all[30_000..31_000], &all[31_000..]] {
            store.put_samples(batch, 0, 0).unwrap();
        }
        let mut host = host_of(&store);
        let range = EVERY;
        let filter = wit::SampleFilter { pid: None, comm: None, cpu: None, include_idle: true };
        let cursor = host.open_samples(range, filter).unwrap().unwrap();
        let mut got: Vec<wit::Sample> = Vec::new();
        let mut calls = 0;
        loop {
            let c = Resource::new_borrow(cursor.rep());
            let batch = if calls % 2 == 0 {
                HostSampleCursor::next_batch(&mut host, c).unwrap()
            } else {
                let cols = host.next_columns(c).unwrap();
                let n = cols.time_ns.len();
                let lens = [cols.cpu.len(), cols.pid.len(), cols.tid.len(), cols.comm.len(), cols.idle.len()];
                assert!(lens.iter().chain([&cols.stack.len()]).all(|&l| l == n), "columns of one length");
                (0..n)
                    .map(|i| wit::Sample {
                        time_ns: cols.time_ns[i],
                        cpu: cols.cpu[i],
                        pid: cols.pid[i],
                        tid: cols.tid[i],
                        comm: cols.comm[i],
                        idle: cols.idle[i] == 1,
                        stack: cols.stack[i],
                    })
                    .collect()
            };
            calls += 1;
            if batch.is_empty() {
                break;
            }
            assert!(batch.len() <= SAMPLE_PAGE);
            got.extend(batch);
        }
        // 30,000 stored samples take two pages; then 1,000, then 9,000; then the empty answer.
        assert_eq!(calls, 5);
        let want: Vec<(u64, u32, u32, u32, bool)> =
            all.iter().map(|s| (StackSample::stored_time(s.time_unix_ns), s.cpu, s.pid, s.tid, s.idle)).collect();
        let seen: Vec<(u64, u32, u32, u32, bool)> =
            got.iter().map(|s| (s.time_ns, s.cpu, s.pid, s.tid, s.idle)).collect();
        assert_eq!(seen, want);
        // Ids resolve to what was written.
        let comms = host.comms(got.iter().map(|s| s.comm).collect()).unwrap().unwrap();
        assert!(comms.iter().zip(&all).all(|(c, s)| *c == s.comm));
        let stacks = host.stacks(got[..100].iter().map(|s| s.stack).collect()).unwrap().unwrap();
        assert!(stacks.iter().zip(&all).all(|(f, s)| f[0].function == *s.frames[0].function));
    }
}
