//! Timeline store figures: `cargo bench -p loupe-store --bench timeline`.
//!
//! - bytes per event stored (the store's own count: batch records, metadata with histograms,
//!   dictionary) for a realistic packet loop (4 threads, `tests/common/timeline.rs`) in
//!   5-second and 1-second batches, and for the worst case (random 64-bit values in all four
//!   arguments);
//! - ingest events per second (`put_timeline`, each batch flushed);
//! - over a synthetic day of a slower loop (4 threads, ~850 events/s, 5-s batches;
//!   `LOUPE_BENCH_HOURS` shrinks it): `timeline_stats` over an hour and over the day, the first
//!   page (1,000 events) of `timeline_events` over an hour and over the day, and paging through
//!   a whole hour.

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Instant;

use common::timeline::*;
use common::{SEC, T0};
use loupe_store::{Retention, Store, TimeRange, TimelineQuery};

fn bench(name: &str, value: f64, unit: &str, baseline: f64) {
    println!("BENCH {{\"name\": \"{name}\", \"value\": {value:.3}, \"unit\": \"{unit}\", \"baseline\": {baseline}}}");
}

/// Writes `seconds` of a loop in batches of `batch_s`; returns (events, bytes, ingest seconds).
fn write(dir: &std::path::Path, mut lp: PacketLoop, seconds: u64, batch_s: u64) -> (u64, u64, f64) {
    let store = Store::open(dir, Retention { max_bytes: u64::MAX, ..Retention::default() }).unwrap();
    let src = packet_loop_source(4242, "pktloop");
    let mut evs = Vec::new();
    let mut spent = 0.0;
    for b in 1..=seconds / batch_s {
        let until = T0 + b * batch_s * SEC;
        lp.run_until(until, &mut evs);
        let t = Instant::now();
        store.put_timeline(&src, &evs, 0, until).unwrap();
        spent += t.elapsed().as_secs_f64();
        evs.clear();
    }
    let s = store.stats().unwrap();
    (s.timeline_events, s.timeline_bytes, spent)
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    // Realistic: 4 threads waiting ~20 µs for packets between iterations.
    let (events, bytes, spent) = write(&tmp.path().join("real5"), PacketLoop::new(1, 4, T0, 20_000.0), 30, 5);
    let per = bytes as f64 / events as f64;
    println!(
        "realistic packet loop, 5-s batches: {events} events ({:.0}/s), {bytes} bytes, {per:.3} B/event",
        events as f64 / 30.0
    );
    bench("timeline_bytes_per_event", per, "bytes", 8.0);
    let eps = events as f64 / spent;
    println!("ingest: {eps:.0} events/s (put_timeline, flushed)");
    bench("timeline_ingest_events_per_s", eps, "events/s", 0.0);
    let (events1, bytes1, _) = write(&tmp.path().join("real1"), PacketLoop::new(2, 4, T0, 20_000.0), 10, 1);
    let per1 = bytes1 as f64 / events1 as f64;
    println!("realistic packet loop, 1-s batches: {per1:.3} B/event");
    bench("timeline_bytes_per_event_1s_batches", per1, "bytes", 8.0);
    let mut worst = PacketLoop::new(3, 4, T0, 20_000.0);
    worst.random_args = true;
    let (ew, bw, _) = write(&tmp.path().join("worst"), worst, 5, 5);
    let perw = bw as f64 / ew as f64;
    println!("worst case (4 random 64-bit args): {perw:.3} B/event (the ring: 48)");
    bench("timeline_bytes_per_event_random_args", perw, "bytes", 48.0);

    // A day of a slower loop.
    let hours: u64 = std::env::var("LOUPE_BENCH_HOURS").ok().and_then(|h| h.parse().ok()).unwrap_or(24);
    let day_dir = tmp.path().join("day");
    let t = Instant::now();
    let (de, db, dspent) = write(&day_dir, PacketLoop::new(4, 4, T0, 10_000_000.0), hours * 3600, 5);
    println!(
        "{hours} h: {de} events, {:.3} B/event, written in {:.1} s ({:.1} s in put_timeline)",
        db as f64 / de as f64,
        t.elapsed().as_secs_f64(),
        dspent
    );
    let store = Store::open(&day_dir, Retention { max_bytes: u64::MAX, ..Retention::default() }).unwrap();
    let mid = T0 + hours * 3600 * SEC / 2 + 1234;
    let hour = TimeRange::new(mid, mid + 3600 * SEC).unwrap();
    let day = TimeRange::new(T0, T0 + hours * 3600 * SEC).unwrap();
    let time = |f: &mut dyn FnMut()| {
        f(); // warm
        let t = Instant::now();
        f();
        t.elapsed().as_secs_f64() * 1000.0
    };
    for (label, range) in [("hour", hour), ("day", day)] {
        let q = TimelineQuery::range(range);
        let mut n = 0;
        let ms = time(&mut || n = store.timeline_stats(&q).unwrap().iter().map(|s| s.count).sum::<u64>());
        println!("timeline_stats over an {label}: {ms:.1} ms ({n} events)");
        bench(&format!("timeline_stats_{label}_ms"), ms, "ms", 0.0);
        let ms = time(&mut || drop(store.timeline_events(&q, None, 1000).unwrap()));
        println!("timeline_events first page of 1000 over an {label}: {ms:.2} ms");
        bench(&format!("timeline_events_page_{label}_ms"), ms, "ms", 0.0);
    }
    let q = TimelineQuery::range(hour);
    let t = Instant::now();
    let (mut after, mut n) = (None, 0usize);
    loop {
        let (page, next) = store.timeline_events(&q, after, 10_000).unwrap();
        n += page.len();
        match next {
            Some(p) => after = Some(p),
            None => break,
        }
    }
    let s = t.elapsed().as_secs_f64();
    println!(
        "paging through an hour (10,000 per page): {n} events in {:.0} ms, {:.0} events/s",
        s * 1000.0,
        n as f64 / s
    );
    bench("timeline_events_hour_paged_events_per_s", n as f64 / s, "events/s", 0.0);
}
