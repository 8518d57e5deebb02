//! A writer killed with SIGKILL mid-stream, and a reader slower than its writer: everything
//! published is read intact, and whatever is not read is counted as lost, exactly.

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use loupe_timeline::reader::{Event, Tailer, WriterState};

fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z ^ (z >> 27)
}

/// Checks every record's arguments (a torn or stale record fails) and returns, per thread, the
/// counters in order.
fn check(events: &[Event]) -> HashMap<u32, Vec<u64>> {
    let mut per: HashMap<u32, Vec<u64>> = HashMap::new();
    for e in events {
        let [c, chk, t, m] = e.args;
        assert_eq!(chk, c * 3 + 1, "torn record {e:?}");
        assert_eq!(m, mix(c ^ t << 56), "torn record {e:?}");
        per.entry(e.tid).or_default().push(c);
    }
    for (tid, cs) in &per {
        assert!(cs.windows(2).all(|w| w[0] < w[1]), "thread {tid}: counters not strictly increasing");
    }
    per
}

/// Records missing between the counters read (a thread's counters start at 0).
fn gaps(per: &HashMap<u32, Vec<u64>>, totals: &HashMap<u32, u64>) -> u64 {
    per.iter().map(|(tid, cs)| totals.get(tid).copied().unwrap_or(*cs.last().unwrap() + 1) - cs.len() as u64).sum()
}

#[test]
fn kill_9_mid_stream_leaves_every_published_record_readable() {
    let dir = tempfile::tempdir().unwrap();
    let w = common::writer(dir.path(), &[("LOUPE_TIMELINE_RING_RECORDS", "262144")], &["stream", "2"]);
    let mut t = Tailer::open(&w.path).unwrap();
    let mut ev = Vec::new();
    let (mut lost, mut corrupt) = (0, 0);
    let until = Instant::now() + Duration::from_millis(400);
    while Instant::now() < until {
        let s = t.poll(&mut ev).unwrap();
        (lost, corrupt) = (lost + s.lost, corrupt + s.corrupt);
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(t.writer_state(), WriterState::Running);
    let mut child = w.child;
    // SIGKILL, mid-stream.
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(t.writer_state(), WriterState::Exited, "a killed writer is seen as exited");
    let s = common::drain(&mut t, &mut ev);
    (lost, corrupt) = (lost + s.lost, corrupt + s.corrupt);
    assert_eq!(corrupt, 0);
    assert_eq!(lost, 0, "the reader kept up (256 Ki records of slack per thread)");
    let per = check(&ev);
    assert_eq!(per.len(), 2, "two writer threads");
    // Every published record was read: per ring, the last counter read + 1 is the ring's head.
    let heads = t.positions();
    let mut by_ring: HashMap<u16, u64> = HashMap::new();
    for e in &ev {
        by_ring.insert(e.ring, e.args[0]);
    }
    for (r, last) in by_ring {
        assert_eq!(heads[r as usize], last + 1, "ring {r}: head {} but last record {last}", heads[r as usize]);
    }
    assert_eq!(gaps(&per, &HashMap::new()), 0);
    assert!(ev.len() > 10_000, "the writer was mid-stream ({} records)", ev.len());
    println!("kill -9: {} records read, all intact, none lost", ev.len());
}

fn slow_reader(ring_records: &str, per_thread: u64, interval: Duration) -> (u64, u64) {
    let dir = tempfile::tempdir().unwrap();
    let mut w = common::writer(
        dir.path(),
        &[("LOUPE_TIMELINE_RING_RECORDS", ring_records)],
        &["count", "2", &per_thread.to_string()],
    );
    let mut t = Tailer::open(&w.path).unwrap();
    let mut ev = Vec::new();
    let (mut lost, mut corrupt) = (0, 0);
    let done = std::thread::spawn(move || {
        let line = w.line().expect("done line");
        let total: u64 = line.strip_prefix("done ").expect("done").parse().unwrap();
        w.wait_ok();
        total
    });
    while !done.is_finished() {
        let s = t.poll(&mut ev).unwrap();
        (lost, corrupt) = (lost + s.lost, corrupt + s.corrupt);
        if !interval.is_zero() {
            std::thread::sleep(interval);
        }
    }
    let total = done.join().unwrap();
    let s = common::drain(&mut t, &mut ev);
    (lost, corrupt) = (lost + s.lost, corrupt + s.corrupt);
    assert_eq!(corrupt, 0);
    let per = check(&ev);
    let totals: HashMap<u32, u64> = per.keys().map(|&k| (k, per_thread)).collect();
    assert_eq!(ev.len() as u64 + lost, total, "read + lost = published, exactly");
    assert_eq!(gaps(&per, &totals), lost, "every missing record is counted as lost");
    (ev.len() as u64, lost)
}

#[test]
fn a_slow_reader_counts_every_overwritten_record_as_lost() {
    let (read, lost) = slow_reader("1024", 2_000_000, Duration::from_millis(20));
    println!("20 ms polls of 1024-record rings: {read} read, {lost} lost");
    assert!(lost > 0, "a 1024-record ring polled every 20 ms must lose records");
}

#[test]
fn a_reader_racing_the_writer_never_returns_a_torn_record() {
    // 64-record rings and back-to-back polls: most copies race the writer's overwrites.
    let (read, lost) = slow_reader("64", 3_000_000, Duration::ZERO);
    println!("tight polls of 64-record rings: {read} read, {lost} lost");
    assert!(read > 0 && lost > 0);
}

/// A writer logging flat out is killed while it is most likely inside `log`: the newest record
/// of each ring is whole and readable, the record it was killed writing (over the oldest slot)
/// is not taken (either would fail the argument or order checks), and read + lost = every head.
#[test]
fn kill_9_of_a_flat_out_writer_takes_nothing_half_written() {
    // Several kills: each lands inside a record's stores only some of the time.
    for round in 0..16 {
        let dir = tempfile::tempdir().unwrap();
        let w = common::writer(
            dir.path(),
            &[("LOUPE_TIMELINE_RING_RECORDS", "65536")],
            &["count", "2", "18446744073709551615"],
        );
        std::thread::sleep(Duration::from_millis(30 + 7 * round));
        let mut child = w.child;
        child.kill().unwrap();
        child.wait().unwrap();
        let mut t = Tailer::open(&w.path).unwrap();
        let mut ev = Vec::new();
        let s = common::drain(&mut t, &mut ev);
        assert_eq!(s.corrupt, 0);
        let per = check(&ev);
        assert_eq!(per.len(), 2);
        let heads = t.positions();
        assert_eq!(ev.len() as u64 + s.lost, heads.iter().sum::<u64>(), "read + lost = published");
        let mut last: HashMap<u16, u64> = HashMap::new();
        let mut count: HashMap<u16, u64> = HashMap::new();
        for e in &ev {
            last.insert(e.ring, e.args[0]);
            *count.entry(e.ring).or_default() += 1;
        }
        for (r, l) in last {
            assert_eq!(heads[r as usize], l + 1, "ring {r}: the newest published record is readable");
            // All but the oldest slot, which a killed writer may have been overwriting.
            assert_eq!(count[&r], 65535.min(heads[r as usize]), "ring {r}: the whole window is read");
        }
    }
}
