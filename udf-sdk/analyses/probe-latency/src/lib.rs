//! `probe-latency`: what function probes (`loupe probe --func … --calls`) measured in a range.
//!
//! - Per session and probed function: calls, calls timed, and p50 / p90 / p99 / mean from the
//!   session's latency histogram with the probes' own cost (`bias-ns`) taken out, the maximum
//!   as measured — the same figures as `loupe probes show`.
//! - The slowest calls (`top`; default: outermost calls, or the calls of `function`) across
//!   the sessions, each followed by where its time went: one row per function it called
//!   directly (how many calls, their total and longest duration), heaviest first, and its self
//!   time (its duration minus its direct children's). Call durations are as measured, like the
//!   call trees of `loupe probes show`.
//!
//! One pass over each session's calls, in the cursor's order (a parent before its children):
//! a call enters the running top when it is read, so its children, which come after it, are
//! added to it while it stays in. Memory is the top's entries and, per session, a map from
//! the calls in the top to their slots — never the session's calls.

use std::{
    cmp::Reverse,
    collections::{BTreeMap, BinaryHeap, HashMap},
};

use loupe_udf::{Analysis, Context, Description, Output, Param, ProbeCall, ProbeSession, ResultKind, Table, row};

/// Most `latency` rows (sessions × functions); the rest are counted in the log.
pub const MAX_LATENCY_ROWS: usize = 50_000;
/// Most slow calls shown.
pub const MAX_TOP: usize = 1000;

/// One probed function's figures, as `loupe probes show` computes them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Latency {
    pub session: u64,
    pub function: String,
    pub calls: u64,
    pub timed: u64,
    pub p50: Option<u64>,
    pub p90: Option<u64>,
    pub p99: Option<u64>,
    pub mean: Option<u64>,
    pub max: u64,
}

/// The calls a slow call made directly to one function.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Child {
    pub calls: u64,
    pub total_ns: u64,
    pub max_ns: u64,
}

/// One of the slowest calls and its direct children, by function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slow {
    pub session: u64,
    /// Its index among the session's calls.
    pub index: u32,
    pub function: String,
    pub pid: u32,
    pub tid: u32,
    pub entry_ns: u64,
    pub duration_ns: u64,
    /// Function name → its direct calls.
    pub children: BTreeMap<String, Child>,
}

impl Slow {
    /// Its duration minus its direct children's (saturating: overlapping records are not
    /// trusted to add up).
    pub fn self_ns(&self) -> u64 {
        let children = self.children.values().fold(0u64, |a, c| a.saturating_add(c.total_ns));
        self.duration_ns.saturating_sub(children)
    }

    /// The children, heaviest first (then by name).
    pub fn breakdown(&self) -> Vec<(&str, &Child)> {
        let mut v: Vec<(&str, &Child)> = self.children.iter().map(|(n, c)| (n.as_str(), c)).collect();
        v.sort_by(|a, b| b.1.total_ns.cmp(&a.1.total_ns).then_with(|| a.0.cmp(b.0)));
        v
    }
}

/// A slot of the top in the heap: (duration, (session, call index) reversed so that of equal
/// durations the later call is replaced first, slot).
type Ranked = Reverse<(u64, Reverse<(u64, u32)>, usize)>;

/// The session whose calls are being read.
struct Current {
    id: u64,
    names: Vec<String>,
    /// Per function: its calls are candidates for the slowest.
    candidate: Vec<bool>,
    /// Calls read so far (the next call's index).
    next: u32,
    /// Call index → slot in `Report::slots`, for the calls of this session in the top.
    in_top: HashMap<u32, usize>,
}

/// Everything the table needs, built session by session, call by call.
pub struct Report {
    top: usize,
    /// Only calls of this function are candidates (`None`: outermost calls).
    function: Option<String>,
    pub latency: Vec<Latency>,
    /// Functions left out past [`MAX_LATENCY_ROWS`].
    pub latency_dropped: u64,
    slots: Vec<Slow>,
    /// The top's slots by (duration, then later first): the smallest on top, to be replaced.
    heap: BinaryHeap<Ranked>,
    current: Option<Current>,
    pub sessions: u64,
    pub calls: u64,
}

impl Report {
    pub fn new(top: usize, function: Option<String>) -> Self {
        Report {
            top: top.min(MAX_TOP),
            function,
            latency: Vec::new(),
            latency_dropped: 0,
            slots: Vec::new(),
            heap: BinaryHeap::new(),
            current: None,
            sessions: 0,
            calls: 0,
        }
    }

    /// A session's functions; its calls follow with [`add_call`](Self::add_call).
    pub fn add_session(&mut self, s: &ProbeSession) {
        self.sessions += 1;
        for f in &s.functions {
            if self.latency.len() >= MAX_LATENCY_ROWS {
                self.latency_dropped += 1;
                continue;
            }
            let unbias = |v: Option<u64>| v.map(|v| s.unbiased(v));
            self.latency.push(Latency {
                session: s.id,
                function: f.name.clone(),
                calls: f.calls,
                timed: f.timed,
                p50: unbias(f.quantile_ns(0.5)),
                p90: unbias(f.quantile_ns(0.9)),
                p99: unbias(f.quantile_ns(0.99)),
                mean: unbias(f.mean_ns()),
                max: f.max_ns,
            });
        }
        let candidate = s.functions.iter().map(|f| self.function.as_ref().is_some_and(|n| *n == f.name)).collect();
        self.current = Some(Current {
            id: s.id,
            names: s.functions.iter().map(|f| f.name.clone()).collect(),
            candidate,
            next: 0,
            in_top: HashMap::new(),
        });
    }

    /// The current session's next call (calls in the cursor's order).
    pub fn add_call(&mut self, c: &ProbeCall) {
        let Some(cur) = self.current.as_mut() else { return };
        self.calls += 1;
        let index = cur.next;
        cur.next = cur.next.saturating_add(1);
        let name = |f: u32| cur.names.get(f as usize).cloned().unwrap_or_else(|| format!("#{f}"));
        let duration = c.duration_ns();
        if let Some(&slot) = c.parent.and_then(|p| cur.in_top.get(&p)) {
            let child = self.slots[slot].children.entry(name(c.function)).or_default();
            child.calls += 1;
            child.total_ns = child.total_ns.saturating_add(duration);
            child.max_ns = child.max_ns.max(duration);
        }
        let candidate = match self.function {
            None => c.parent.is_none(),
            Some(_) => cur.candidate.get(c.function as usize).copied().unwrap_or(false),
        };
        if !candidate || self.top == 0 {
            return;
        }
        let slow = Slow {
            session: cur.id,
            index,
            function: name(c.function),
            pid: c.pid,
            tid: c.tid,
            entry_ns: c.entry_ns,
            duration_ns: duration,
            children: BTreeMap::new(),
        };
        let slot = if self.slots.len() < self.top {
            self.slots.push(slow);
            self.slots.len() - 1
        } else {
            let Some(&Reverse((smallest, _, slot))) = self.heap.peek() else { return };
            if duration <= smallest {
                return;
            }
            self.heap.pop();
            let old = std::mem::replace(&mut self.slots[slot], slow);
            if old.session == cur.id {
                cur.in_top.remove(&old.index);
            }
            slot
        };
        cur.in_top.insert(index, slot);
        self.heap.push(Reverse((duration, Reverse((cur.id, index)), slot)));
    }

    /// The slowest calls, slowest first (then by session and order).
    pub fn slowest(&self) -> Vec<&Slow> {
        let mut v: Vec<&Slow> = self.slots.iter().collect();
        v.sort_by(|a, b| {
            b.duration_ns.cmp(&a.duration_ns).then_with(|| (a.session, a.index).cmp(&(b.session, b.index)))
        });
        v
    }

    /// The table: a `latency` row per session and function, then each slow call (`slow #k`)
    /// followed by its children by function (`  in #k`), heaviest first.
    pub fn table(&self) -> Table {
        let mut t = Table::new()
            .column("what", "")
            .column("session", "")
            .column("function", "")
            .column("calls", "calls")
            .column("timed", "calls")
            .column("p50_ns", "ns")
            .column("p90_ns", "ns")
            .column("p99_ns", "ns")
            .column("mean_ns", "ns")
            .column("max_ns", "ns")
            .column("pid", "")
            .column("tid", "")
            .column("entry_ns", "ns")
            .column("duration_ns", "ns")
            .column("self_ns", "ns");
        for l in &self.latency {
            t.push_row(row![
                "latency",
                l.session,
                &l.function,
                l.calls,
                l.timed,
                l.p50,
                l.p90,
                l.p99,
                l.mean,
                l.max,
                (),
                (),
                (),
                (),
                ()
            ]);
        }
        for (i, s) in self.slowest().into_iter().enumerate() {
            t.push_row(row![
                format!("slow #{}", i + 1),
                s.session,
                &s.function,
                (),
                (),
                (),
                (),
                (),
                (),
                (),
                s.pid,
                s.tid,
                s.entry_ns,
                s.duration_ns,
                s.self_ns()
            ]);
            for (name, c) in s.breakdown() {
                t.push_row(row![
                    format!("  in #{}", i + 1),
                    s.session,
                    name,
                    c.calls,
                    (),
                    (),
                    (),
                    (),
                    (),
                    c.max_ns,
                    (),
                    (),
                    (),
                    c.total_ns,
                    ()
                ]);
            }
        }
        t
    }
}

struct ProbeLatency;

impl Analysis for ProbeLatency {
    fn describe() -> Description {
        Description::new("probe-latency", ResultKind::Table)
            .summary("Function probes: p50/p90/p99 per probed function, and the slowest calls with their self time and time per child function")
            .param(Param::unsigned("top", "slowest calls to show (at most 1000)").default(10u64))
            .param(Param::text("function", "the calls to rank (empty: outermost calls)").default(""))
            .param(Param::unsigned("session", "only this probe session (0: every session in the range)").default(0u64))
    }

    fn run(ctx: &Context) -> Result<Output, String> {
        let top = usize::try_from(ctx.params.u64("top")?).unwrap_or(MAX_TOP);
        let function = ctx.params.nonempty_text("function")?.map(str::to_string);
        let only = ctx.params.u64("session")?;
        let mut report = Report::new(top, function);
        let mut sessions = ctx.probes().open()?;
        let (mut batches, mut largest) = (0u64, 0usize);
        while let Some(s) = sessions.next_session() {
            if only != 0 && s.id != only {
                continue;
            }
            report.add_session(&s);
            let mut calls = sessions.calls();
            while let Some(batch) = calls.next_batch() {
                batches += 1;
                largest = largest.max(batch.len());
                for c in &batch {
                    report.add_call(c);
                }
            }
        }
        loupe_udf::info!(
            "{} sessions, {} calls in {batches} batches (largest {largest})",
            report.sessions,
            report.calls
        );
        if report.latency_dropped > 0 {
            loupe_udf::warn!("{} functions past {MAX_LATENCY_ROWS} rows left out", report.latency_dropped);
        }
        Ok(report.table().into())
    }
}

loupe_udf::export_analysis!(ProbeLatency);

#[cfg(test)]
mod tests {
    use loupe_udf::{LatencyBucket, ProbeFunction};

    use super::*;

    fn function(name: &str, histogram: Vec<LatencyBucket>) -> ProbeFunction {
        let timed = histogram.iter().map(|b| b.count).sum();
        ProbeFunction {
            name: name.into(),
            symbol: name.into(),
            binary: "/usr/bin/nf".into(),
            calls: timed,
            timed,
            total_ns: timed * 1000,
            max_ns: 9_000,
            histogram,
        }
    }

    fn session(id: u64, bias_ns: u64, names: &[&str]) -> ProbeSession {
        ProbeSession {
            id,
            start_ns: 1_000,
            end_ns: 2_000_000_000,
            pids: vec![7],
            binary: None,
            sample_every: 1,
            ended: "duration".into(),
            notes: vec![],
            bias_ns,
            functions: names.iter().map(|n| function(n, vec![])).collect(),
            recorded_calls: 0,
            calls_lost: 0,
        }
    }

    fn call(function: u32, tid: u32, entry: u64, exit: u64, parent: Option<u32>) -> ProbeCall {
        ProbeCall {
            function,
            pid: 7,
            tid,
            cpu: 0,
            entry_ns: entry,
            exit_ns: exit,
            depth: u32::from(parent.is_some()),
            parent,
        }
    }

    /// `handle` (0) calling `parse` (1), `lookup` (2) twice and `forward` (3), `packets` times on
    /// one thread, every call's durations from `forward_ns(i)`; returns the calls.
    fn packet_loop(packets: u32, forward_ns: impl Fn(u32) -> u64) -> Vec<ProbeCall> {
        let mut calls = Vec::new();
        let mut t = 10_000;
        for i in 0..packets {
            let root = calls.len() as u32;
            let start = t;
            let mut at = start + 10;
            let mut child = |calls: &mut Vec<ProbeCall>, f: u32, ns: u64| {
                calls.push(call(f, 1, at, at + ns, Some(root)));
                at += ns + 5;
            };
            calls.push(call(0, 1, start, 0, None));
            child(&mut calls, 1, 100);
            child(&mut calls, 2, 200);
            child(&mut calls, 2, 250);
            child(&mut calls, 3, forward_ns(i));
            calls[root as usize].exit_ns = at + 10;
            t = at + 1_000;
        }
        calls
    }

    #[test]
    fn percentiles_come_from_the_histogram_without_the_bias() {
        let mut s = session(3, 40, &[]);
        let b = |low: u64, high: u64, count: u64| LatencyBucket { low_ns: low, high_ns: high, count };
        s.functions.push(function("parse", vec![b(96, 100, 50), b(200, 208, 45), b(4096, 4352, 5)]));
        s.functions.push(function("idle", vec![]));
        let mut r = Report::new(5, None);
        r.add_session(&s);
        let l = &r.latency[0];
        assert_eq!((l.session, l.function.as_str(), l.timed), (3, "parse", 100));
        // Bucket midpoints 98, 204, 4224, less the 40 ns bias.
        assert_eq!((l.p50, l.p90, l.p99), (Some(58), Some(164), Some(4184)));
        assert_eq!((l.mean, l.max), (Some(1000 - 40), 9_000));
        assert_eq!((r.latency[1].p50, r.latency[1].mean), (None, None), "nothing timed");
    }

    #[test]
    fn the_slowest_call_shows_its_heaviest_child_and_self_time() {
        let mut r = Report::new(2, None);
        r.add_session(&session(1, 0, &["handle", "parse", "lookup", "forward"]));
        // Packet 37's forward takes 50 µs; the others 300 ns; packet 80's 2 µs.
        let calls = packet_loop(100, |i| match i {
            37 => 50_000,
            80 => 2_000,
            _ => 300,
        });
        for c in &calls {
            r.add_call(c);
        }
        assert_eq!((r.sessions, r.calls), (1, 500));
        let slow = r.slowest();
        assert_eq!(slow.len(), 2);
        assert_eq!((slow[0].function.as_str(), slow[0].index), ("handle", 37 * 5));
        assert_eq!(slow[0].duration_ns, calls[37 * 5].exit_ns - calls[37 * 5].entry_ns);
        assert_eq!(slow[1].index, 80 * 5);
        let breakdown = slow[0].breakdown();
        let names: Vec<&str> = breakdown.iter().map(|b| b.0).collect();
        assert_eq!(names, ["forward", "lookup", "parse"], "heaviest first");
        assert_eq!(*breakdown[0].1, Child { calls: 1, total_ns: 50_000, max_ns: 50_000 });
        assert_eq!(*breakdown[1].1, Child { calls: 2, total_ns: 450, max_ns: 250 });
        // 10 ns before parse, 5 between each of the four children, 10 after forward.
        assert_eq!(slow[0].self_ns(), 10 + 3 * 5 + 5 + 10);
        let t = r.table();
        assert_eq!(t.rows.len(), 4 + 2 * 4, "4 functions, then 2 slow calls with 3 child rows each");
        assert_eq!(t.rows[4][0], "slow #1".into());
        assert_eq!((&t.rows[5][0], &t.rows[5][2]), (&"  in #1".into(), &"forward".into()));
    }

    #[test]
    fn a_named_function_ranks_its_own_calls_across_sessions() {
        let mut r = Report::new(3, Some("forward".into()));
        for (id, slow) in [(1u64, 7_000u64), (2, 9_000)] {
            r.add_session(&session(id, 0, &["handle", "parse", "lookup", "forward"]));
            for c in &packet_loop(20, |i| if i == 5 { slow } else { 300 + u64::from(i) }) {
                r.add_call(c);
            }
        }
        let slow: Vec<(u64, &str, u64)> =
            r.slowest().iter().map(|s| (s.session, s.function.as_str(), s.duration_ns)).collect();
        assert_eq!(slow, [(2, "forward", 9_000), (1, "forward", 7_000), (1, "forward", 319)], "ties: the first stays");
        assert!(r.slowest()[0].children.is_empty(), "forward calls nothing");
    }

    #[test]
    fn an_evicted_call_takes_no_more_children_and_bad_parents_are_ignored() {
        let mut r = Report::new(1, None);
        r.add_session(&session(9, 0, &["a", "b"]));
        r.add_call(&call(0, 1, 0, 100, None)); // 0: in the top
        r.add_call(&call(0, 2, 0, 500, None)); // 1: replaces 0
        r.add_call(&call(1, 1, 10, 60, Some(0))); // a child of the evicted call
        r.add_call(&call(1, 2, 10, 30, Some(1)));
        r.add_call(&call(1, 2, 40, 45, Some(99))); // a parent that does not exist
        r.add_call(&call(7, 2, 50, 60, Some(1))); // a function out of range
        r.add_call(&call(1, 2, 70, 80, Some(u32::MAX)));
        let slow = r.slowest();
        assert_eq!((slow.len(), slow[0].index), (1, 1));
        let names: Vec<&str> = slow[0].breakdown().iter().map(|b| b.0).collect();
        assert_eq!(names, ["b", "#7"]);
        assert_eq!(slow[0].self_ns(), 500 - 20 - 10);
        // A call before any session, and top 0, are nothing.
        let mut none = Report::new(0, None);
        none.add_call(&call(0, 1, 0, 1, None));
        none.add_session(&session(1, 0, &["a"]));
        none.add_call(&call(0, 1, 0, 1, None));
        assert_eq!((none.calls, none.slowest().len()), (1, 0));
    }

    #[test]
    fn a_million_calls_in_increasing_order_keep_only_the_top() {
        let mut r = Report::new(MAX_TOP, None);
        r.add_session(&session(1, 0, &["a"]));
        for i in 0..1_000_000u64 {
            r.add_call(&call(0, 1, i, 2 * i, None));
        }
        let slow = r.slowest();
        assert_eq!(slow.len(), MAX_TOP);
        assert_eq!((slow[0].duration_ns, slow[MAX_TOP - 1].duration_ns), (999_999, 1_000_000 - MAX_TOP as u64));
        assert!(r.current.as_ref().unwrap().in_top.len() <= MAX_TOP);
    }
}
