//! What an analysis may call: the `loupe:udf/data` interface, implemented over the store.
//!
//! Data leaves the host in batches (a few runs, up to [`SAMPLE_PAGE`] samples or
//! [`TIMELINE_PAGE`] timeline events per call),
//! so a day-long analysis makes thousands of host calls, not millions. Stacks and comms are
//! handed out as dictionary ids; the guest resolves each distinct id once.
//!
//! What the host holds for one invocation is bounded whatever the analysis does: at most
//! [`MAX_OPEN_CURSORS`] cursors at once (one more traps the analysis with `cursor_limit`), a
//! run cursor holds one page of run listings ([`RUN_PAGE`] entries) and a sample cursor one
//! stored batch of samples; a batch handed to the guest is at most [`RUN_PAGE`] runs and
//! [`MAX_RUN_BATCH_BYTES`] of series, or [`SAMPLE_PAGE`] samples. The probe cursor (stored
//! `loupe probe` sessions and their calls) is in [`super::probes`], under the same limits.

use std::collections::VecDeque;

use loupe_store::{
    EventPos, ProfileQuery, RawSample, RunMeta, RunPos, Store, StoreError, TimeRange as StoreRange, TimelineQuery,
};
use wasmtime::component::{Resource, ResourceTable};

use super::sandbox::InvocationLog;
use crate::model::{Metrics, RunView};

wasmtime::component::bindgen!({
    path: "../udf-sdk/wit",
    world: "analysis",
    // A store error inside a cursor call traps the guest (it cannot do anything useful with
    // it); the host reports it as an internal error, not as the analysis' fault.
    imports: { default: trappable },
    additional_derives: [PartialEq],
    with: {
        "loupe:udf/data.run-cursor": RunCursor,
        "loupe:udf/data.sample-cursor": SampleCursor,
        "loupe:udf/data.timeline-cursor": TimelineCursor,
        "loupe:udf/data.probe-cursor": super::probes::ProbeCursor,
    },
});

pub use loupe::udf::data::{HostInfo, Level};
use loupe::udf::types as wit;

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

pub struct RunCursor {
    range: StoreRange,
    interval_ns: Option<u64>,
    iface: Option<String>,
    per_cpu: bool,
    /// The current page of listings, and the last run listed (where the next page starts).
    metas: VecDeque<RunMeta>,
    after: Option<RunPos>,
    done: bool,
}

pub struct SampleCursor {
    inner: loupe_store::SampleCursor,
    /// The rest of the current store page, handed out [`SAMPLE_PAGE`] at a time.
    pending: VecDeque<RawSample>,
}

pub struct TimelineCursor {
    query: TimelineQuery,
    /// Where the next page starts; `done` once the store said there is no more.
    after: Option<EventPos>,
    done: bool,
}

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
}

pub(super) fn trap(e: StoreError) -> wasmtime::Error {
    wasmtime::Error::msg(format!("store: {e}"))
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
        let range = match self.range(range) {
            Ok(r) => r,
            Err(e) => return Ok(Err(e)),
        };
        self.open_cursor()?;
        let cursor = RunCursor { range, interval_ns, iface, per_cpu, metas: VecDeque::new(), after: None, done: false };
        Ok(Ok(self.table.push(cursor)?))
    }

    fn open_samples(
        &mut self,
        range: wit::TimeRange,
        filter: wit::SampleFilter,
    ) -> wasmtime::Result<Result<Resource<SampleCursor>, String>> {
        let range = match self.range(range) {
            Ok(r) => r,
            Err(e) => return Ok(Err(e)),
        };
        let query = ProfileQuery {
            range,
            pid: filter.pid,
            comm: filter.comm,
            cpu: filter.cpu,
            include_idle: filter.include_idle,
        };
        self.open_cursor()?;
        let inner = self.store.sample_cursor(query).map_err(trap)?;
        Ok(Ok(self.table.push(SampleCursor { inner, pending: VecDeque::new() })?))
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

    fn open_probes(
        &mut self,
        range: wit::TimeRange,
    ) -> wasmtime::Result<Result<Resource<super::probes::ProbeCursor>, String>> {
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
                        .map(|f| wit::Frame { function: f.function, module: f.module, kernel: f.kernel })
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
                let series = run.meta.samples as usize * 11 * 8;
                bytes += series * if c.per_cpu { run.per_cpu.len() + 1 } else { 1 };
                out.push(wit_run(RunView::new(&run, c.per_cpu)));
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
        let c = self.table.get_mut(&cursor)?;
        if c.pending.is_empty() {
            match c.inner.next_page().map_err(trap)? {
                Some(page) => c.pending = page.into(),
                None => return Ok(Vec::new()),
            }
        }
        let n = c.pending.len().min(SAMPLE_PAGE);
        Ok(c.pending
            .drain(..n)
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

    fn lost(&mut self, cursor: Resource<SampleCursor>) -> wasmtime::Result<u64> {
        Ok(self.table.get(&cursor)?.inner.lost())
    }

    fn drop(&mut self, cursor: Resource<SampleCursor>) -> wasmtime::Result<()> {
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
