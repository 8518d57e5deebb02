//! The window as a core service: one span of time, every kind of record in it, on one axis
//! ([`WindowView`]; `GET /api/v1/window`, `loupe window`, `loupe export trace`).
//!
//! Each lane collects its items until it holds more than the order's `lane_items`, then turns
//! into per-column summaries (the items so far folded in) and goes on counting; so a day's
//! window costs one pass over its records and an answer the size of its columns, a 10-minute
//! one its exact items. Stacks and comms travel as dictionary ids and are resolved once per
//! distinct id at the end.

use std::collections::{BTreeMap, hash_map::Entry};

use foldhash::HashMap;

use loupe_api::{
    model::{
        CpuLane, EventDefinitionView, NamedSeries, ProbeFunctionRef, ProgramLane, RunView, SeriesSet, ThreadCalls,
        TrafficLane, WindowFunction, WindowLimits, WindowProcess, WindowView,
    },
    orders::{MAX_WINDOW_LANE_ITEMS, WINDOW_LANE_ITEMS, WindowOrder},
};
use loupe_store::{FrameKind, ProfileQuery, SampleKind, TimeRange, TimelineQuery};

use super::{
    Host,
    error::{CoreError, CoreResult},
};
use crate::ingest::probes::quantile_of;

/// Runs drawn at most; later ones are counted in `runs_left_out`.
pub const MAX_RUNS: u32 = 64;
/// How far before the window a run or probe session may have started and still be found (a
/// run is at most 2,000 slots of 10 ms; a session longer than a day is cut at its start).
const RUN_LOOKBACK_NS: u64 = 3_600_000_000_000;
const SESSION_LOOKBACK_NS: u64 = 86_400_000_000_000;
/// Probe sessions looked at, at most.
const MAX_SESSIONS: usize = 1_000;
/// Timeline events read for one window at most: past it the lanes stop where reading did.
pub const MAX_EVENTS_READ: u64 = 20_000_000;

/// The window's axis: which column a time falls in.
#[derive(Clone, Copy)]
struct Axis {
    from: u64,
    len: u64,
    columns: u32,
}

impl Axis {
    fn column(self, t: u64) -> usize {
        let off = u128::from(t.saturating_sub(self.from));
        ((off * u128::from(self.columns) / u128::from(self.len)) as usize).min(self.columns as usize - 1)
    }

    fn offset(self, t: u64) -> u64 {
        t - self.from
    }
}

/// Interns values, handing out their index in first-seen order.
struct Interner<K> {
    index: HashMap<K, u32>,
    keys: Vec<K>,
}

impl<K: std::hash::Hash + Eq + Clone> Interner<K> {
    fn new() -> Self {
        Interner { index: HashMap::default(), keys: Vec::new() }
    }

    fn of(&mut self, k: K) -> u32 {
        match self.index.entry(k) {
            Entry::Occupied(o) => *o.get(),
            Entry::Vacant(v) => {
                self.keys.push(v.key().clone());
                *v.insert(self.keys.len() as u32 - 1)
            }
        }
    }
}

/// Per column, how many and a running maximum (the summary of spans and events).
fn fold(count: &mut Vec<u32>, max: &mut Vec<u64>, columns: u32, col: usize, value: u64) {
    if count.is_empty() {
        *count = vec![0; columns as usize];
        *max = vec![0; columns as usize];
    }
    count[col] += 1;
    max[col] = max[col].max(value);
}

/// A lane turned into per-column summaries: the items it kept, `(offset, value)`, folded in.
fn fold_kept(count: &mut Vec<u32>, max: &mut Vec<u64>, axis: Axis, kept: impl Iterator<Item = (u64, u64)>) {
    for (off, value) in kept {
        fold(count, max, axis.columns, axis.column(axis.from + off), value);
    }
}

impl Host {
    /// Everything recorded in the order's range, lane by lane (see [`WindowView`]).
    pub fn window(&self, order: &WindowOrder) -> CoreResult<WindowView> {
        let (from, to) = (order.range.from_unix_ns(), order.range.to_unix_ns());
        if from == 0 || to == u64::MAX || to <= from {
            return Err(CoreError::BadWindow("give both ends of the range (e.g. from=-10m&to=now)".into()));
        }
        if !(100..=8192).contains(&order.columns) {
            return Err(CoreError::BadWindow(format!("columns {}: 100 to 8192 (the chart's width)", order.columns)));
        }
        let lane_items = order.lane_items.unwrap_or(WINDOW_LANE_ITEMS);
        if lane_items == 0 || lane_items > MAX_WINDOW_LANE_ITEMS {
            return Err(CoreError::BadLimit { limit: lane_items as usize, max: MAX_WINDOW_LANE_ITEMS as usize });
        }
        let mut series = SeriesSet::NONE;
        for name in &order.series {
            if !SeriesSet::NAMES.contains(&name.as_str()) {
                return Err(CoreError::BadWindow(format!("no series '{name}' (one of {:?})", SeriesSet::NAMES)));
            }
            series = series.with(name);
        }
        if series.is_empty() {
            series = series.with("in_bytes").with("out_bytes");
        }
        let axis = Axis { from, len: to - from, columns: order.columns };
        let mut view = WindowView {
            from_unix_ns: from,
            to_unix_ns: to,
            columns: order.columns,
            limits: WindowLimits {
                runs: MAX_RUNS,
                samples_per_lane: lane_items,
                calls_per_lane: lane_items,
                events_per_lane: lane_items,
            },
            ..Default::default()
        };
        self.window_traffic(order.range, series, &mut view)?;
        self.window_cpus(order.range, axis, lane_items, &mut view)?;
        self.window_probes(order.range, axis, lane_items, &mut view)?;
        self.window_timeline(order.range, axis, lane_items, &mut view)?;
        Ok(view)
    }

    fn window_traffic(&self, range: TimeRange, series: SeriesSet, view: &mut WindowView) -> CoreResult<()> {
        let (from, to) = (range.from_unix_ns(), range.to_unix_ns());
        let look = TimeRange::new(from.saturating_sub(RUN_LOOKBACK_NS), to)?;
        let metas: Vec<_> = self.store.runs(look, None, None)?.into_iter().filter(|m| m.end_unix_ns() > from).collect();
        view.runs_left_out = metas.len().saturating_sub(MAX_RUNS as usize) as u32;
        for meta in metas.iter().take(MAX_RUNS as usize) {
            let Some(run) = self.store.run(meta.id)? else { continue }; // deleted since listed
            let v = RunView::with_series(&run, false, series);
            let first = from.saturating_sub(v.start_unix_ns).div_ceil(v.interval_ns).min(u64::from(v.samples));
            // Slots that start before `to`.
            let end = to.saturating_sub(v.start_unix_ns).div_ceil(v.interval_ns).min(u64::from(v.samples));
            let start_ns = v.start_unix_ns + first * v.interval_ns;
            view.traffic.push(TrafficLane {
                run: v.id,
                iface: v.iface.clone(),
                host: v.host.clone(),
                interval_ns: v.interval_ns,
                first_slot: first as u32,
                offset_ns: start_ns as i64 - from as i64,
                series: v
                    .metrics
                    .named()
                    .into_iter()
                    .filter(|(name, _)| series.has(name))
                    .map(|(name, values)| NamedSeries {
                        name: name.into(),
                        values: values[first as usize..end.max(first) as usize].to_vec(),
                    })
                    .collect(),
            });
        }
        Ok(())
    }

    fn window_cpus(&self, range: TimeRange, axis: Axis, limit: u32, view: &mut WindowView) -> CoreResult<()> {
        let mut lanes: BTreeMap<u32, CpuLane> = BTreeMap::new();
        // (pid, comm id) → process index; stack id → stack index.
        let mut procs: Interner<(u32, u32)> = Interner::new();
        let mut stacks: Interner<u32> = Interner::new();
        // Summarized lanes: per (column, process) samples, for each column's top process.
        let mut per_proc: HashMap<(u32, usize, u32), u32> = HashMap::default();
        let mut cursor = self.store.sample_cursor(ProfileQuery::range(range))?;
        while let Some(page) = cursor.next_page()? {
            for s in page {
                let lane = lanes.entry(s.cpu).or_insert_with(|| CpuLane { cpu: s.cpu, ..Default::default() });
                lane.samples += 1;
                let process = procs.of((s.pid, s.comm));
                let t = &mut lane.ticks;
                if !t.summarized && t.t_ns.len() < limit as usize {
                    t.t_ns.push(axis.offset(s.time_unix_ns));
                    t.process.push(process);
                    t.tid.push(s.tid);
                    t.stack.push(stacks.of(s.stack));
                    continue;
                }
                if !t.summarized {
                    // Past the limit: fold what was kept into columns and go on counting.
                    t.summarized = true;
                    t.column_count = vec![0; axis.columns as usize];
                    for (&off, &p) in t.t_ns.iter().zip(&t.process) {
                        let col = axis.column(axis.from + off);
                        t.column_count[col] += 1;
                        *per_proc.entry((s.cpu, col, p)).or_default() += 1;
                    }
                    (t.t_ns, t.process, t.tid, t.stack) = Default::default();
                }
                let col = axis.column(s.time_unix_ns);
                t.column_count[col] += 1;
                *per_proc.entry((s.cpu, col, process)).or_default() += 1;
            }
        }
        // Each summarized column's top process (most samples; the lower index on a tie), in
        // one pass over the counts.
        let mut tops: BTreeMap<u32, Vec<(u32, u32)>> = BTreeMap::new();
        for (&(cpu, col, p), &n) in &per_proc {
            let top = tops.entry(cpu).or_insert_with(|| vec![(0, u32::MAX); axis.columns as usize]);
            if (n, std::cmp::Reverse(p)) > (top[col].0, std::cmp::Reverse(top[col].1)) {
                top[col] = (n, p);
            }
        }
        for lane in lanes.values_mut().filter(|l| l.ticks.summarized) {
            let top = tops.remove(&lane.cpu).unwrap_or_default();
            lane.ticks.column_process = top.into_iter().map(|(_, p)| p).collect();
        }
        let mut waits =
            self.store.wait_cursor(ProfileQuery { kind: SampleKind::OffCpu, ..ProfileQuery::range(range) })?;
        while let Some(page) = waits.next_page()? {
            for w in page {
                let s = w.sample;
                let lane = lanes.entry(s.cpu).or_insert_with(|| CpuLane { cpu: s.cpu, ..Default::default() });
                lane.waits += 1;
                let sp = &mut lane.wait_spans;
                if !sp.summarized && sp.t_ns.len() < limit as usize {
                    sp.t_ns.push(axis.offset(s.time_unix_ns));
                    sp.dur_ns.push(w.waited_ns);
                    sp.process.push(procs.of((s.pid, s.comm)));
                    sp.tid.push(s.tid);
                    sp.stack.push(stacks.of(s.stack));
                    continue;
                }
                if !sp.summarized {
                    sp.summarized = true;
                    let kept = sp.t_ns.iter().copied().zip(sp.dur_ns.iter().copied());
                    fold_kept(&mut sp.column_count, &mut sp.column_max_ns, axis, kept);
                    (sp.t_ns, sp.dur_ns, sp.process, sp.tid, sp.stack) = Default::default();
                }
                fold(
                    &mut sp.column_count,
                    &mut sp.column_max_ns,
                    axis.columns,
                    axis.column(s.time_unix_ns),
                    w.waited_ns,
                );
            }
        }
        view.cpus = lanes.into_values().collect();
        // Names, once per distinct id.
        let comm_ids: Vec<u32> = procs.keys.iter().map(|k| k.1).collect();
        let comms = self.store.comm_names(&comm_ids)?;
        view.processes = procs.keys.iter().zip(comms).map(|(&(pid, _), comm)| WindowProcess { pid, comm }).collect();
        let mut functions: Interner<(String, String, bool, FrameKind)> = Interner::new();
        for ids in stacks.keys.chunks(4096) {
            for frames in self.store.stack_frames(ids)? {
                let stack = frames
                    .iter()
                    .map(|f| functions.of((f.function.to_string(), f.module.to_string(), f.kernel, f.kind)))
                    .collect();
                view.stacks.push(stack);
            }
        }
        view.functions = functions
            .keys
            .into_iter()
            .map(|(name, module, kernel, kind)| WindowFunction { name, module, kernel, kind })
            .collect();
        Ok(())
    }

    fn window_probes(&self, range: TimeRange, axis: Axis, limit: u32, view: &mut WindowView) -> CoreResult<()> {
        let (from, to) = (range.from_unix_ns(), range.to_unix_ns());
        let look = TimeRange::new(from.saturating_sub(SESSION_LOOKBACK_NS), to)?;
        let mut threads: BTreeMap<(u32, u32), ThreadCalls> = BTreeMap::new();
        for summary in self.store.probe_sessions(look, MAX_SESSIONS)? {
            if summary.end_unix_ns < from {
                continue;
            }
            let Some((session, mut chunks)) = self.store.probe_session_parts(summary.id)? else { continue };
            if !session.with_calls {
                continue;
            }
            let base = view.probe_functions.len() as u32;
            let slow: Vec<u64> = session
                .functions
                .iter()
                .map(|f| quantile_of(&f.buckets, 0.99).unwrap_or(u64::MAX).min(f.max_ns))
                .collect();
            view.probe_functions.extend(session.functions.iter().zip(&slow).map(|(f, &slow_ns)| ProbeFunctionRef {
                session: session.id,
                name: f.name.clone(),
                slow_ns,
            }));
            while let Some(chunk) = chunks.next_chunk()? {
                for c in chunk {
                    if c.entry_unix_ns < from || c.entry_unix_ns >= to || c.function as usize >= slow.len() {
                        continue;
                    }
                    let dur = c.exit_unix_ns.saturating_sub(c.entry_unix_ns);
                    let lane = threads.entry((c.pid, c.tid)).or_insert_with(|| ThreadCalls {
                        pid: c.pid,
                        tid: c.tid,
                        ..Default::default()
                    });
                    lane.calls += 1;
                    if !lane.summarized && lane.t_ns.len() < limit as usize {
                        lane.t_ns.push(axis.offset(c.entry_unix_ns));
                        lane.dur_ns.push(dur);
                        lane.depth.push(c.depth);
                        lane.function.push(base + c.function);
                        lane.slow.push(dur >= slow[c.function as usize]);
                        continue;
                    }
                    if !lane.summarized {
                        lane.summarized = true;
                        let kept = lane.t_ns.iter().copied().zip(lane.dur_ns.iter().copied());
                        fold_kept(&mut lane.column_count, &mut lane.column_max_ns, axis, kept);
                        (lane.t_ns, lane.dur_ns, lane.depth, lane.function, lane.slow) = Default::default();
                    }
                    let col = axis.column(c.entry_unix_ns);
                    fold(&mut lane.column_count, &mut lane.column_max_ns, axis.columns, col, dur);
                }
            }
        }
        view.probes = threads.into_values().collect();
        // Calls come by session, then thread: each lane in entry order.
        for lane in view.probes.iter_mut().filter(|l| !l.summarized) {
            let mut order: Vec<usize> = (0..lane.t_ns.len()).collect();
            order.sort_by_key(|&i| (lane.t_ns[i], lane.depth[i]));
            let pick = |v: &[u64]| order.iter().map(|&i| v[i]).collect::<Vec<_>>();
            (lane.t_ns, lane.dur_ns) = (pick(&lane.t_ns), pick(&lane.dur_ns));
            lane.depth = order.iter().map(|&i| lane.depth[i]).collect();
            lane.function = order.iter().map(|&i| lane.function[i]).collect();
            lane.slow = order.iter().map(|&i| lane.slow[i]).collect();
        }
        Ok(())
    }

    fn window_timeline(&self, range: TimeRange, axis: Axis, limit: u32, view: &mut WindowView) -> CoreResult<()> {
        let mut lanes: Vec<ProgramLane> = Vec::new();
        // A program's lane by (pid, comm); per lane, its definitions' indexes by name.
        let mut lane_of: HashMap<(u32, String), usize> = HashMap::default();
        let mut def_index: Vec<HashMap<String, u32>> = Vec::new();
        let mut read = 0u64;
        let mut cut_at: Option<u64> = None;
        self.store.timeline_batches(&TimelineQuery::range(range), |source, events| {
            let l = *lane_of.entry((source.pid, source.comm.clone())).or_insert_with(|| {
                lanes.push(ProgramLane { pid: source.pid, comm: source.comm.clone(), ..Default::default() });
                def_index.push(HashMap::default());
                lanes.len() - 1
            });
            let lane = &mut lanes[l];
            // The batch's definitions as the lane's (a program that defined more events later
            // has one lane with all of them).
            let defs: Vec<u32> = source
                .events
                .iter()
                .map(|d| {
                    *def_index[l].entry(d.name.clone()).or_insert_with(|| {
                        lane.definitions.push(EventDefinitionView {
                            name: d.name.clone(),
                            level: d.level,
                            rate: d.rate,
                            arg_names: d.arg_names.clone(),
                        });
                        lane.definitions.len() as u32 - 1
                    })
                })
                .collect();
            for e in events {
                let def = defs[e.event as usize];
                lane.events += 1;
                let iteration = if lane.definitions[def as usize].level == 0 { e.lag_ns.unwrap_or(0) } else { 0 };
                if !lane.summarized && lane.t_ns.len() < limit as usize {
                    lane.t_ns.push(axis.offset(e.time_unix_ns));
                    lane.tid.push(e.tid);
                    lane.event.push(def);
                    if lane.args.is_empty() {
                        lane.args = vec![Vec::new(); 4];
                    }
                    for (col, v) in lane.args.iter_mut().zip(e.args) {
                        col.push(v);
                    }
                    lane.lag_ns.push(e.lag_ns);
                    continue;
                }
                if !lane.summarized {
                    lane.summarized = true;
                    let (defs, lags) = (&lane.definitions, &lane.lag_ns);
                    let kept = lane
                        .t_ns
                        .iter()
                        .zip(&lane.event)
                        .zip(lags)
                        .map(|((&t, &e), lag)| (t, if defs[e as usize].level == 0 { lag.unwrap_or(0) } else { 0 }));
                    fold_kept(&mut lane.column_count, &mut lane.column_max_lag_ns, axis, kept);
                    (lane.t_ns, lane.tid, lane.event, lane.args, lane.lag_ns) = Default::default();
                }
                let col = axis.column(e.time_unix_ns);
                fold(&mut lane.column_count, &mut lane.column_max_lag_ns, axis.columns, col, iteration);
            }
            read += events.len() as u64;
            if read >= MAX_EVENTS_READ {
                cut_at = events.last().map(|e| e.time_unix_ns);
                return false;
            }
            true
        })?;
        if let Some(t) = cut_at {
            view.notes.push(format!(
                "timeline: the first {read} events were read, up to {} (narrow the window)",
                loupe_api::clock::format_unix_ns(t)
            ));
        }
        // Batches of one program may interleave: each lane's items in time order.
        for lane in lanes.iter_mut().filter(|l| !l.summarized) {
            let mut order: Vec<usize> = (0..lane.t_ns.len()).collect();
            order.sort_by_key(|&i| lane.t_ns[i]);
            if order.windows(2).all(|w| w[0] < w[1]) {
                continue;
            }
            lane.t_ns = order.iter().map(|&i| lane.t_ns[i]).collect();
            lane.tid = order.iter().map(|&i| lane.tid[i]).collect();
            lane.event = order.iter().map(|&i| lane.event[i]).collect();
            lane.lag_ns = order.iter().map(|&i| lane.lag_ns[i]).collect();
            for col in &mut lane.args {
                *col = order.iter().map(|&i| col[i]).collect();
            }
        }
        lanes.sort_by(|a, b| (a.pid, &a.comm).cmp(&(b.pid, &b.comm)));
        for lane in &mut lanes {
            for col in &mut lane.args {
                if col.iter().all(|&v| v == 0) {
                    col.clear();
                }
            }
        }
        view.programs = lanes;
        Ok(())
    }
}
