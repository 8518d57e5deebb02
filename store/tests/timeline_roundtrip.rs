//! Timeline events read back exactly as written: every range (cutting batches or not), every
//! filter, paging with `after` (each event exactly once), stats against brute-force
//! percentiles, sources, and `verify`.

mod common;

use std::collections::BTreeMap;

use common::timeline::*;
use common::*;
use loupe_store::*;
use rand::Rng;

const MS: u64 = 1_000_000;

struct Written {
    events: Vec<StoredEvent>,
    /// (pid, start_ticks, comm) → (events, lost)
    sources: BTreeMap<(u32, u64, String), (u64, u64)>,
}

fn record(w: &mut Written, s: &TimelineSource, evs: &[TimelineEvent], lost: u64) {
    for e in evs {
        let d = &s.events[e.event as usize];
        w.events.push(StoredEvent {
            time_unix_ns: e.time_unix_ns,
            pid: s.pid,
            tid: e.tid,
            cpu: e.cpu,
            comm: s.comm.clone(),
            name: d.name.clone(),
            level: d.level,
            args: e.args,
            arg_names: d.arg_names.clone(),
            lag_ns: e.lag_ns,
        });
    }
    let v = w.sources.entry((s.pid, s.start_ticks, s.comm.clone())).or_default();
    v.0 += evs.len() as u64;
    v.1 += lost;
}

/// Three packet loops (one restarted with an extra event definition: a second source of the
/// same pid), batches of 40–60 ms overlapping across sources, plus odd batches: events out of
/// order, equal times, no lags, huge values, a loss-only batch.
fn populate(store: &Store) -> Written {
    let mut w = Written { events: Vec::new(), sources: BTreeMap::new() };
    let mut rng = rng(14);
    let a = packet_loop_source(100, "pktloop");
    let b = packet_loop_source(200, "relay");
    let mut a2 = a.clone();
    a2.events.push(TimelineEventDef { name: "flush".into(), level: 1, rate: 9, arg_names: vec!["bytes".into()] });
    let mut la = PacketLoop::new(1, 3, T0, 20_000.0);
    let mut lb = PacketLoop::new(2, 2, T0 + 7 * MS, 50_000.0);
    let (mut ta, mut tb) = (T0, T0 + 7 * MS);
    let mut evs = Vec::new();
    for round in 0..20 {
        ta += rng.random_range(40..60) * MS;
        la.run_until(ta, &mut evs);
        let src = if round < 12 { &a } else { &a2 };
        if round >= 12 {
            for e in evs.iter_mut().filter(|e| e.event == 4).step_by(3) {
                e.event = 5; // "flush"
                e.args[0] = 1 << 20;
            }
        }
        let lost = rng.random_range(0..3);
        store.put_timeline(src, &evs, lost, ta).unwrap();
        record(&mut w, src, &evs, lost);
        evs.clear();
        tb += rng.random_range(40..60) * MS;
        lb.run_until(tb, &mut evs);
        store.put_timeline(&b, &evs, 0, tb).unwrap();
        record(&mut w, &b, &evs, 0);
        evs.clear();
    }
    // Odd batches.
    let odd = TimelineSource { pid: 300, start_ticks: 5, comm: "odd ☃".into(), events: a.events.clone() };
    let base = T0 + 500 * MS;
    let mut odd_evs: Vec<TimelineEvent> = (0..500u64)
        .map(|i| TimelineEvent {
            time_unix_ns: base + (i * 7919) % 3000 * 1000,
            tid: (i % 5) as u32 * 1_000_000,
            cpu: if i % 11 == 0 { u32::MAX } else { 3 },
            event: (i % 5) as u32,
            args: [i, u64::MAX - i, if i % 3 == 0 { 0 } else { i << 40 }, 7],
            lag_ns: match i % 4 {
                0 => None,
                1 => Some(u64::MAX),
                _ => Some(i * 1000),
            },
        })
        .collect();
    odd_evs.push(odd_evs[10]); // a duplicate
    store.put_timeline(&odd, &odd_evs, 0, base).unwrap();
    record(&mut w, &odd, &odd_evs, 0);
    store.put_timeline(&odd, &[], 9, T0 + 700 * MS).unwrap();
    record(&mut w, &odd, &[], 9);
    w
}

fn key(e: &StoredEvent) -> (u64, u32, u32, String, u8, [u64; 4], Option<u64>, u32, String) {
    (e.time_unix_ns, e.pid, e.tid, e.name.clone(), e.level, e.args, e.lag_ns, e.cpu, e.comm.clone())
}

fn matches(q: &TimelineQuery, e: &StoredEvent) -> bool {
    q.range.contains(e.time_unix_ns)
        && q.pid.is_none_or(|p| p == e.pid)
        && q.comm.as_ref().is_none_or(|c| *c == e.comm)
        && q.event.as_ref().is_none_or(|n| *n == e.name)
}

fn all_pages(store: &Store, q: &TimelineQuery, limit: usize) -> Vec<StoredEvent> {
    let mut out = Vec::new();
    let mut after = None;
    loop {
        let (page, next) = store.timeline_events(q, after, limit).unwrap();
        assert!(page.len() <= limit.max(1));
        out.extend(page);
        match next {
            Some(p) => after = Some(p),
            None => return out,
        }
    }
}

fn queries(w: &Written) -> Vec<TimelineQuery> {
    let last = w.events.iter().map(|e| e.time_unix_ns).max().unwrap();
    let mut rng = rng(99);
    let mut ranges = vec![TimeRange::ALL, TimeRange::new(T0, last + 1).unwrap(), TimeRange::new(T0, T0).unwrap()];
    for _ in 0..6 {
        let a = rng.random_range(T0..last);
        let b = rng.random_range(a..=last + 1);
        ranges.push(TimeRange::new(a, b).unwrap());
    }
    let mut out = Vec::new();
    for range in ranges {
        let q = TimelineQuery::range(range);
        out.push(q.clone());
        out.push(TimelineQuery { pid: Some(100), ..q.clone() });
        out.push(TimelineQuery { comm: Some("relay".into()), ..q.clone() });
        out.push(TimelineQuery { event: Some("loop_end".into()), ..q.clone() });
        out.push(TimelineQuery { pid: Some(100), event: Some("flush".into()), ..q.clone() });
        out.push(TimelineQuery { pid: Some(300), comm: Some("odd ☃".into()), ..q.clone() });
        out.push(TimelineQuery { pid: Some(200), comm: Some("pktloop".into()), ..q.clone() }); // none
        out.push(TimelineQuery { event: Some("nope".into()), ..q });
    }
    out
}

#[test]
fn events_roundtrip_with_every_filter_and_paging() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), Retention::default());
    let w = populate(&store);
    assert!(w.events.len() > 20_000, "{} events", w.events.len());
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_eq!(report.timeline_events, w.events.len() as u64);
    let stats = store.stats().unwrap();
    assert_eq!(stats.timeline_events, w.events.len() as u64);
    assert_eq!(stats.lost_timeline_events, w.sources.values().map(|v| v.1).sum::<u64>());
    assert_eq!(stats.total_bytes, stats.timeline_bytes);
    let mut checked = 0;
    for (i, q) in queries(&w).iter().enumerate() {
        let mut want: Vec<StoredEvent> = w.events.iter().filter(|e| matches(q, e)).cloned().collect();
        let (got, next) = store.timeline_events(q, None, usize::MAX).unwrap();
        assert_eq!(next, None);
        assert!(got.windows(2).all(|p| p[0].time_unix_ns <= p[1].time_unix_ns), "query {i}: not in time order");
        let mut sorted = got.clone();
        sorted.sort_by_key(key);
        want.sort_by_key(key);
        assert_eq!(sorted.len(), want.len(), "query {i} {q:?}");
        assert!(sorted == want, "query {i} {q:?}: events differ");
        checked += got.len();
        // Batch by batch (the window's reader): the same events, each once.
        let mut batched: Vec<StoredEvent> = Vec::new();
        store
            .timeline_batches(q, |src, evs| {
                for e in evs {
                    let d = &src.events[e.event as usize];
                    batched.push(StoredEvent {
                        time_unix_ns: e.time_unix_ns,
                        pid: src.pid,
                        tid: e.tid,
                        cpu: e.cpu,
                        comm: src.comm.clone(),
                        name: d.name.clone(),
                        level: d.level,
                        args: e.args,
                        arg_names: d.arg_names.clone(),
                        lag_ns: e.lag_ns,
                    });
                }
                true
            })
            .unwrap();
        batched.sort_by_key(key);
        assert!(batched == want, "query {i} {q:?}: batches differ");
        // Paging gives exactly the whole result, once, in the same order.
        // (A page decodes the batches around it whole: small pages only over small results.)
        for limit in [1usize, 7, 1000] {
            if limit * 300 < got.len() {
                continue;
            }
            assert!(all_pages(&store, q, limit) == got, "query {i} paged by {limit}");
        }
    }
    assert!(checked > 100_000);
}

type GroupKey = (u32, String, String, u8);

/// Exact nearest-rank quantile.
fn exact(sorted: &[u64], q: f64) -> u64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

#[test]
fn stats_match_brute_force_within_the_histogram_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), Retention::default());
    let w = populate(&store);
    for q in queries(&w) {
        let mut want: BTreeMap<GroupKey, (u64, Vec<u64>)> = BTreeMap::new();
        for e in w.events.iter().filter(|e| matches(&q, e)) {
            let g = want.entry((e.pid, e.comm.clone(), e.name.clone(), e.level)).or_default();
            g.0 += 1;
            g.1.extend(e.lag_ns);
        }
        let got = store.timeline_stats(&q).unwrap();
        assert_eq!(got.len(), want.len(), "{q:?}");
        for (s, ((pid, comm, name, level), (count, mut lags))) in got.iter().zip(want) {
            assert_eq!((s.pid, &s.comm, &s.name, s.level, s.count), (pid, &comm, &name, level, count), "{q:?}");
            lags.sort_unstable();
            if lags.is_empty() {
                assert_eq!((s.lag_p50_ns, s.lag_p99_ns, s.lag_max_ns), (None, None, None));
                continue;
            }
            assert_eq!(s.lag_max_ns, lags.last().copied(), "{name}");
            for (got, qq) in [(s.lag_p50_ns.unwrap(), 0.5), (s.lag_p99_ns.unwrap(), 0.99)] {
                let want = exact(&lags, qq);
                let err = (got as f64 - want as f64).abs();
                assert!(err <= want as f64 / 64.0 + 0.5, "{name} p{qq}: {got} vs exact {want} ({q:?})");
            }
        }
    }
}

#[test]
fn sources_list_processes_with_counts_and_losses() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), Retention::default());
    let w = populate(&store);
    let got = store.timeline_sources(TimeRange::ALL).unwrap();
    let got: BTreeMap<_, _> =
        got.into_iter().map(|s| ((s.pid, s.start_ticks, s.comm.clone()), (s.events, s.lost))).collect();
    assert_eq!(got, w.sources);
    // pid 100 defined "flush" later: its one summary lists the events of both definitions.
    let all = store.timeline_sources(TimeRange::ALL).unwrap();
    let loop100 = all.iter().find(|s| s.pid == 100).unwrap();
    let mut want = packet_loop_source(100, "pktloop").events;
    want.push(TimelineEventDef { name: "flush".into(), level: 1, rate: 9, arg_names: vec!["bytes".into()] });
    want.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(loop100.definitions, want);
    // Dictionary: pid 100 has two sources (definitions changed), stored once each.
    assert_eq!(store.timeline_stats_totals().unwrap().sources, 4);
    assert!(store.timeline_sources(TimeRange::new(0, T0).unwrap()).unwrap().is_empty());
}

#[test]
fn bad_input_is_refused_and_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), Retention::default());
    let s = packet_loop_source(1, "x");
    let e = TimelineEvent { time_unix_ns: T0, event: 5, ..Default::default() };
    assert!(matches!(store.put_timeline(&s, &[e], 0, T0), Err(StoreError::InvalidTimeline(_))));
    let mut long = s.clone();
    long.comm = "x".repeat(1000);
    let e = TimelineEvent { time_unix_ns: T0, ..Default::default() };
    assert!(matches!(store.put_timeline(&long, &[e], 0, T0), Err(StoreError::InvalidTimeline(_))));
    assert_eq!(store.put_timeline(&s, &[], 0, T0).unwrap().id, 0);
    assert_eq!(store.stats().unwrap().timeline_batches, 0);
    let bad = TimelineQuery::range(TimeRange::ALL);
    assert!(store.timeline_events(&bad, None, 10).unwrap().0.is_empty());
}
