//! `timeline-lags`: what programs' application timelines say about latency in a range.
//!
//! - Per program and event: how many, and the lag's p50 / p99 / max (the lag of an event is
//!   the time since the previous event of equal or lower level on its thread; the lag of a
//!   loop's last event is the iteration's latency). Percentiles come from a log-linear
//!   histogram (64 sub-buckets per power of two: within 1/64 of the exact value; the maximum
//!   exact), so a day of events costs 32 KiB per event name, not a list of every lag.
//! - The slowest iterations: the `top` events named `iteration` (default: any level-0 event)
//!   with the largest lags, each followed by the events of its thread inside it (after the
//!   event its lag is measured from) — which step made that iteration slow. A thread's recent
//!   events are kept in a bounded window ([`WINDOW`]), so an iteration with more events than
//!   that shows its last ones.
//!
//! One pass over the events, in time order.

use std::collections::{BTreeMap, BinaryHeap, HashMap, VecDeque};

use loupe_udf::{
    Analysis, Context, Description, Output, Param, ResultKind, Table, TimelineDefinitions, TimelineEvent, row,
};

/// Events remembered per thread for the breakdown of a slow iteration.
pub const WINDOW: usize = 256;
/// Sub-buckets per power of two.
const SUB: u64 = 64;

/// A log-linear histogram of lags.
#[derive(Clone, Debug, Default)]
pub struct Lags {
    counts: BTreeMap<u32, u64>,
    /// Events seen, with a lag or not.
    pub count: u64,
    /// Events with a lag (what the percentiles are over).
    pub lagged: u64,
    pub max: Option<u64>,
}

fn bucket(v: u64) -> u32 {
    if v < SUB {
        return v as u32;
    }
    let exp = 63 - v.leading_zeros() as u64; // ≥ 6
    let sub = (v >> (exp - 6)) - SUB; // the 6 bits below the top one
    ((exp - 5) * SUB + sub) as u32
}

/// The smallest value of a bucket.
fn bucket_low(b: u32) -> u64 {
    let b = u64::from(b);
    if b < SUB {
        return b;
    }
    let exp = b / SUB + 5;
    (SUB + b % SUB) << (exp - 6)
}

impl Lags {
    pub fn add(&mut self, lag: Option<u64>) {
        self.count += 1;
        let Some(lag) = lag else { return };
        *self.counts.entry(bucket(lag)).or_default() += 1;
        self.lagged += 1;
        self.max = Some(self.max.map_or(lag, |m| m.max(lag)));
    }

    /// The nearest-rank `q` quantile, to within 1/64 (the low end of its bucket).
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.lagged == 0 {
            return None;
        }
        let rank = ((q * self.lagged as f64).ceil() as u64).clamp(1, self.lagged);
        let mut seen = 0;
        for (&b, &n) in &self.counts {
            seen += n;
            if seen >= rank {
                return Some(bucket_low(b).min(self.max.unwrap_or(u64::MAX)));
            }
        }
        self.max
    }
}

/// One slow iteration: its closing event and the thread's events inside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slow {
    pub lag: u64,
    pub event: Ev,
    pub inside: Vec<Ev>,
}

impl Ord for Slow {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // Reversed: the heap keeps the smallest lag on top, to be replaced.
        other.lag.cmp(&self.lag).then_with(|| other.event.time.cmp(&self.event.time))
    }
}
impl PartialOrd for Slow {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The parts of an event the report shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ev {
    pub time: u64,
    pub pid: u32,
    pub tid: u32,
    pub comm: String,
    pub name: String,
    pub level: u8,
    pub lag: Option<u64>,
    /// Its arguments as `name=value`, by their definition's names (and `arg<i>=value` for
    /// any other that is not zero).
    pub args: String,
}

impl Ev {
    fn new(e: &TimelineEvent, defs: &TimelineDefinitions) -> Self {
        let names = defs.arg_names(e);
        let named = names.iter().zip(&e.args).map(|(n, v)| format!("{n}={v}"));
        let rest = e.args.iter().enumerate().skip(names.len()).filter(|(_, v)| **v != 0);
        let args = named.chain(rest.map(|(i, v)| format!("arg{i}={v}"))).collect::<Vec<_>>().join(" ");
        Ev {
            time: e.time_ns,
            pid: e.pid,
            tid: e.tid,
            comm: e.comm.clone(),
            name: e.name.clone(),
            level: e.level,
            lag: e.lag_ns,
            args,
        }
    }
}

/// Everything the report needs, built event by event.
#[derive(Default)]
pub struct Report {
    /// (pid, comm, name, level) → lags.
    pub stats: BTreeMap<(u32, String, String, u8), Lags>,
    pub slowest: BinaryHeap<Slow>,
    recent: HashMap<(u32, u32), VecDeque<Ev>>,
    top: usize,
    iteration: Option<String>,
    defs: TimelineDefinitions,
}

impl Report {
    pub fn new(top: usize, iteration: Option<String>) -> Self {
        Report { top, iteration, ..Default::default() }
    }

    /// Names the events' arguments by these definitions.
    pub fn with_definitions(mut self, defs: TimelineDefinitions) -> Self {
        self.defs = defs;
        self
    }

    pub fn add(&mut self, e: &TimelineEvent) {
        let lags = self.stats.entry((e.pid, e.comm.clone(), e.name.clone(), e.level)).or_default();
        lags.add(e.lag_ns);
        let ev = Ev::new(e, &self.defs);
        let is_iteration = match &self.iteration {
            Some(name) => *name == e.name,
            None => e.level == 0,
        };
        let recent = self.recent.entry((e.pid, e.tid)).or_default();
        if let (true, Some(lag)) = (is_iteration, e.lag_ns)
            && self.top > 0
            && (self.slowest.len() < self.top || self.slowest.peek().is_some_and(|s| lag > s.lag))
        {
            // After the event the lag is measured from: the thread's previous one of equal or
            // lower level (all of the window if it has gone). Not by time: converted times of
            // events a few ns apart carry the clock's ±50 ns, the lag is exact.
            let after = recent.iter().rposition(|r| r.level <= e.level).map_or(0, |i| i + 1);
            let inside: Vec<Ev> = recent.iter().skip(after).cloned().collect();
            self.slowest.push(Slow { lag, event: ev.clone(), inside });
            if self.slowest.len() > self.top {
                self.slowest.pop();
            }
        }
        if recent.len() == WINDOW {
            recent.pop_front();
        }
        recent.push_back(ev);
    }

    /// The table: statistics rows, then each slow iteration (slowest first) and its events.
    pub fn table(self) -> Table {
        let mut t = Table::new()
            .column("what", "")
            .column("pid", "")
            .column("comm", "")
            .column("tid", "")
            .column("event", "")
            .column("level", "")
            .column("count", "events")
            .column("time_ns", "ns")
            .column("lag_ns", "ns")
            .column("lag_p50_ns", "ns")
            .column("lag_p99_ns", "ns")
            .column("lag_max_ns", "ns")
            .column("args", "");
        for ((pid, comm, name, level), lags) in &self.stats {
            let names = self.defs.iter().find(|d| d.pid == *pid && d.name == *name).map(|d| d.arg_names.join(" "));
            t.push_row(row![
                "lags",
                *pid,
                comm,
                (),
                name,
                *level,
                lags.count,
                (),
                (),
                lags.quantile(0.5),
                lags.quantile(0.99),
                lags.max,
                names.unwrap_or_default()
            ]);
        }
        let mut slow = self.slowest.into_vec();
        slow.sort_by(|a, b| b.lag.cmp(&a.lag).then_with(|| a.event.time.cmp(&b.event.time)));
        for (i, s) in slow.iter().enumerate() {
            let what = format!("slow #{}", i + 1);
            for e in s.inside.iter().chain(std::iter::once(&s.event)) {
                let label = if std::ptr::eq(e, &s.event) { what.clone() } else { format!("  in #{}", i + 1) };
                t.push_row(row![
                    label,
                    e.pid,
                    &e.comm,
                    e.tid,
                    &e.name,
                    e.level,
                    (),
                    e.time,
                    e.lag,
                    (),
                    (),
                    (),
                    &e.args
                ]);
            }
        }
        t
    }
}

struct TimelineLags;

impl Analysis for TimelineLags {
    fn describe() -> Description {
        Description::new("timeline-lags", ResultKind::Table)
            .summary("Programs' timeline events: lag percentiles per event, and the slowest iterations with the events inside them")
            .param(Param::unsigned("top", "slowest iterations to show").default(10u64))
            .param(Param::text("iteration", "the event that ends an iteration (empty: any level-0 event)").default(""))
            .param(Param::unsigned("pid", "only this process (0: all)").default(0u64))
            .param(Param::text("comm", "only this program (empty: all)").default(""))
    }

    fn run(ctx: &Context) -> Result<Output, String> {
        let top = usize::try_from(ctx.params.u64("top")?.min(1000)).unwrap_or(1000);
        let iteration = ctx.params.nonempty_text("iteration")?.map(str::to_string);
        let query = ctx.timeline().pid(ctx.params.nonzero_u32("pid")?).comm(ctx.params.nonempty_text("comm")?);
        let mut report = Report::new(top, iteration).with_definitions(query.definitions()?);
        let events = query.open()?;
        for e in events {
            report.add(&e);
        }
        Ok(report.table().into())
    }
}

loupe_udf::export_analysis!(TimelineLags);

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(time: u64, tid: u32, name: &str, level: u8, lag: Option<u64>) -> TimelineEvent {
        TimelineEvent {
            time_ns: time,
            pid: 7,
            tid,
            cpu: 0,
            comm: "pktloop".into(),
            name: name.into(),
            level,
            args: vec![0; 4],
            lag_ns: lag,
        }
    }

    #[test]
    fn histogram_quantiles_are_within_a_64th() {
        let mut l = Lags::default();
        let values: Vec<u64> = (1..=10_000u64).map(|i| i * 37 + (i * i) % 1013).collect();
        for &v in &values {
            l.add(Some(v));
        }
        l.add(None);
        assert_eq!((l.count, l.lagged), (10_001, 10_000));
        let mut sorted = values.clone();
        sorted.sort_unstable();
        for q in [0.5, 0.9, 0.99] {
            let exact = sorted[((q * sorted.len() as f64).ceil() as usize).max(1) - 1];
            let got = l.quantile(q).unwrap();
            assert!(got <= exact && exact - got <= exact / 64 + 1, "q{q}: {got} vs {exact}");
        }
        assert_eq!(l.max, Some(*sorted.last().unwrap()));
        assert_eq!(Lags::default().quantile(0.5), None);
        for v in [0, 1, 63, 64, 65, 127, 128, 1 << 40, u64::MAX] {
            let b = bucket(v);
            // (the last bucket has no next one)
            assert!(bucket_low(b) <= v && (v == u64::MAX || bucket_low(b + 1) > v), "{v}");
        }
    }

    #[test]
    fn slowest_iterations_carry_the_events_inside_them() {
        let lookup = loupe_udf::TimelineDefinition {
            pid: 7,
            comm: "pktloop".into(),
            name: "lookup".into(),
            level: 1,
            arg_names: vec!["key".into()],
        };
        let mut r = Report::new(2, Some("loop_end".into())).with_definitions([lookup].into_iter().collect());
        // Three iterations on thread 1 (lags 100, 900, 300); thread 2's events never mix in.
        let mut t = 1_000;
        for (i, slow_step) in [10u64, 800, 200].into_iter().enumerate() {
            let start = t;
            r.add(&ev(start, 1, "loop_start", 0, None));
            r.add(&ev(start + 5, 2, "other", 1, Some(5)));
            r.add(&ev(start + 20, 1, "parse", 1, Some(20)));
            r.add(&ev(start + 20 + slow_step, 1, "lookup", 1, Some(slow_step)));
            let end = start + 100 + slow_step - 10;
            r.add(&ev(end, 1, "loop_end", 0, Some(end - start)));
            t = end + 50 + i as u64;
        }
        let slow = r.slowest.clone().into_sorted_vec();
        // into_sorted_vec is ascending by Ord, which is reversed lag: slowest first.
        let lags: Vec<u64> = slow.iter().map(|s| s.lag).collect();
        assert_eq!(lags, vec![890, 290]);
        let inside: Vec<&str> = slow[0].inside.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(inside, vec!["parse", "lookup"], "the iteration's own thread, after its start");
        assert_eq!(slow[0].inside[1].lag, Some(800), "the slow step is there with its lag");
        let stats = &r.stats[&(7, "pktloop".to_string(), "lookup".to_string(), 1)];
        assert_eq!((stats.count, stats.max), (3, Some(800)));
        assert_eq!(slow[0].inside[1].args, "key=0", "named by its definition");
        assert_eq!(slow[0].inside[0].args, "", "no names, all zero");
        let table = r.table();
        assert_eq!(table.rows.len(), 5 + 3 + 3, "5 event kinds, then 2 iterations of 3 rows");
    }

    #[test]
    fn inside_follows_the_threads_order_not_its_clock() {
        // Times as a reader may give them: the step a few ns after loop_start stamped 40 ns
        // before it, and the previous iteration's end stamped inside this one's time span.
        let mut r = Report::new(1, Some("loop_end".into()));
        r.add(&ev(1_000, 1, "loop_start", 0, None));
        r.add(&ev(1_100, 1, "loop_end", 0, Some(100)));
        r.add(&ev(1_060, 1, "loop_start", 0, Some(10)));
        r.add(&ev(1_020, 1, "step", 1, Some(5)));
        r.add(&ev(5_000, 1, "loop_end", 0, Some(3_990)));
        let slow = r.slowest.into_sorted_vec();
        let inside: Vec<&str> = slow[0].inside.iter().map(|e| e.name.as_str()).collect();
        assert_eq!((slow[0].lag, inside), (3_990, vec!["step"]));
    }
}
