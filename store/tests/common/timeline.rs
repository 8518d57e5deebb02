//! A synthetic program for timeline tests and the benchmark: a packet loop, as a program
//! using `loupe-timeline` would log it.
//!
//! Each thread loops: wait for packets (exponential gap, `gap_ns` on average), `loop_start`
//! (level 0, rate 9), `rx` (1, rate 7, packets), `process` per packet (2, rate 5, packet
//! index), `tx` (1, rate 7, packets), `loop_end` (0, rate 9, packets). Before each iteration
//! the thread rolls its threshold as the timeline library does (rate `r` logged with
//! probability 5^(r−9)). Stamps are TSC ticks at 2.7 GHz converted to wall-clock ns the way
//! the reader does (a fractional slope, rounded), and lags are computed in ticks and converted
//! separately — so a lag and the difference of the converted times differ by ±1 ns now and
//! then, as they do for real. Threads stay on their CPU and migrate rarely.

#![allow(dead_code)]

use loupe_store::{TimelineEvent, TimelineEventDef, TimelineSource};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

pub const NS_PER_TICK: f64 = 1.0 / 2.7;

pub fn packet_loop_source(pid: u32, comm: &str) -> TimelineSource {
    let def = |name: &str, level, rate, args: &[&str]| TimelineEventDef {
        name: name.into(),
        level,
        rate,
        arg_names: args.iter().map(|a| a.to_string()).collect(),
    };
    TimelineSource {
        pid,
        start_ticks: 1000 + u64::from(pid),
        comm: comm.into(),
        events: vec![
            def("loop_start", 0, 9, &[]),
            def("rx", 1, 7, &["packets"]),
            def("process", 2, 5, &["packet"]),
            def("tx", 1, 7, &["packets"]),
            def("loop_end", 0, 9, &["packets"]),
        ],
    }
}

struct Thread {
    tid: u32,
    cpu: u32,
    ticks: u64,
    /// Ticks of the latest event per level (for lags).
    last: [Option<u64>; 10],
}

/// A packet loop of a few threads, producing events window by window.
pub struct PacketLoop {
    rng: StdRng,
    threads: Vec<Thread>,
    base_ticks: u64,
    base_ns: u64,
    pub gap_ns: f64,
    /// Arguments drawn at random over 64 bits instead (the codec's worst case).
    pub random_args: bool,
}

impl PacketLoop {
    pub fn new(seed: u64, threads: u32, start_unix_ns: u64, gap_ns: f64) -> PacketLoop {
        let mut rng = StdRng::seed_from_u64(seed);
        let base_ticks = rng.random_range(1u64 << 40..1u64 << 44);
        let threads = (0..threads)
            .map(|i| Thread {
                tid: 4000 + i * 3,
                cpu: i,
                ticks: base_ticks + rng.random_range(0..10_000),
                last: [None; 10],
            })
            .collect();
        PacketLoop { rng, threads, base_ticks, base_ns: start_unix_ns, gap_ns, random_args: false }
    }

    fn to_ns(&self, ticks: u64) -> u64 {
        self.base_ns + ((ticks - self.base_ticks) as f64 * NS_PER_TICK).round() as u64
    }

    fn ticks(ns: f64) -> u64 {
        (ns / NS_PER_TICK).max(1.0) as u64
    }

    /// Appends every event of every thread up to wall-clock `until_unix_ns` (thread by thread:
    /// unsorted across threads, as the reader hands them over).
    pub fn run_until(&mut self, until_unix_ns: u64, out: &mut Vec<TimelineEvent>) {
        for t in 0..self.threads.len() {
            loop {
                let th = &self.threads[t];
                if self.to_ns(th.ticks) >= until_unix_ns {
                    break;
                }
                self.iteration(t, out);
            }
        }
    }

    fn iteration(&mut self, t: usize, out: &mut Vec<TimelineEvent>) {
        let rng = &mut self.rng;
        // Wait for packets.
        let gap = -self.gap_ns * (1.0 - rng.random::<f64>()).ln();
        self.threads[t].ticks += Self::ticks(gap);
        if rng.random_bool(0.0005) {
            self.threads[t].cpu = rng.random_range(0..8);
        }
        let v: u32 = rng.random_range(0..390_625);
        let threshold = 1 + (0..8).filter(|&k| v >= 5u32.pow(k)).count() as u8;
        let packets: u64 = if rng.random_bool(0.3) { 32 } else { rng.random_range(1..32) };
        let random_args = self.random_args;
        let mut log = |pl: &mut PacketLoop, event: u32, level: usize, rate: u8, arg: u64, step_ns: f64| {
            let rng = &mut pl.rng;
            let jitter = step_ns * (0.7 + 0.6 * rng.random::<f64>());
            pl.threads[t].ticks += Self::ticks(jitter);
            if rate < threshold {
                return;
            }
            let args =
                if random_args { [rng.random(), rng.random(), rng.random(), rng.random()] } else { [arg, 0, 0, 0] };
            let th = &pl.threads[t];
            let now = th.ticks;
            let lag_ticks = th.last[..=level].iter().flatten().max().map(|&p| now - p);
            let time = pl.to_ns(now);
            let th = &mut pl.threads[t];
            th.last[level] = Some(now);
            out.push(TimelineEvent {
                time_unix_ns: time,
                tid: th.tid,
                cpu: th.cpu,
                event,
                args,
                lag_ns: lag_ticks.map(|l| (l as f64 * NS_PER_TICK).round() as u64),
            });
        };
        log(self, 0, 0, 9, 0, 60.0);
        log(self, 1, 1, 7, packets, 300.0);
        for p in 0..packets {
            log(self, 2, 2, 5, p, 250.0);
        }
        log(self, 3, 1, 7, packets, 200.0);
        log(self, 4, 0, 9, packets, 150.0);
    }
}
