//! Helpers shared by the kernel tests: attach samplers in both namespaces and run them together.
#![allow(dead_code)]

use std::time::Duration;

use loupe_bpf::{RunCounters, RunRequest, SamplerOptions, SlotCounters, StartAt, TrafficSampler};
use loupe_testbed::topology::{A_IF, B_IF, VethPair};

/// Samplers on `a0` (in ns a) and `b0` (in ns b), each owned by a thread living in its namespace.
pub struct Samplers {
    pub a: TrafficSampler,
    pub b: TrafficSampler,
}

pub fn attach_both(pair: &VethPair, options: &SamplerOptions) -> Samplers {
    let a = pair.a.run(|| TrafficSampler::attach(A_IF, options)).unwrap().expect("attach a0");
    let b = pair.b.run(|| TrafficSampler::attach(B_IF, options)).unwrap().expect("attach b0");
    Samplers { a, b }
}

/// Starts the same run on both samplers, calls `traffic` while it runs, and returns both runs.
pub fn run_both(
    s: &mut Samplers,
    interval: Duration,
    samples: u32,
    traffic: impl FnOnce(),
) -> (RunCounters, RunCounters) {
    let req = RunRequest { interval, samples, start: StartAt::Now };
    let pa = s.a.begin(&req).expect("begin a");
    let pb = s.b.begin(&req).expect("begin b");
    traffic();
    let ra = s.a.finish(pa).expect("finish a");
    let rb = s.b.finish(pb).expect("finish b");
    (ra, rb)
}

/// Sum of one counter over every slot and CPU.
pub fn total(run: &RunCounters, field: impl Fn(&SlotCounters) -> u64) -> u64 {
    run.per_cpu.iter().flat_map(|c| c.slots.iter()).map(field).sum()
}

/// One counter per slot, summed over CPUs.
pub fn per_slot(run: &RunCounters, field: impl Fn(&SlotCounters) -> u64) -> Vec<u64> {
    (0..run.samples as usize).map(|i| run.per_cpu.iter().map(|c| field(&c.slots[i])).sum()).collect()
}

/// The union of the CPUs' connection sketches of one slot.
pub fn sketch(run: &RunCounters, slot: usize, ingress: bool) -> u128 {
    run.per_cpu
        .iter()
        .map(|c| {
            let s = &c.slots[slot];
            loupe_bpf::sketch::to_u128(if ingress { s.in_conns } else { s.out_conns })
        })
        .fold(0, |a, b| a | b)
}
