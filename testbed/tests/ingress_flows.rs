//! The ingress flow table (`INGRESS_FLOWS`, two-way set-associative, indexed by the sketch's
//! flow hash): two flows whose hashes share a set are both tracked exactly; a third one makes
//! the one seen longer ago forgotten, and only that one; a new run starts every flow afresh.
//! Packets are crafted with colliding 5-tuples and handed to the real ingress program with
//! `BPF_PROG_TEST_RUN`.

mod common;

use std::os::fd::AsFd;
use std::time::Duration;

use aya::programs::TcAttachType;
use common::total;
use loupe_bpf::{RunRequest, SamplerOptions, StartAt, TrafficSampler};
use loupe_bpf_common::{FLOW_SLOTS, sketch};
use loupe_testbed::require_root;
use loupe_testbed::test_run::{Segment, ipv4_tcp_frame, mac, tcp_payload, test_run};
use loupe_testbed::topology::{A_IF, A_MAC, A_V4, B_MAC, B_V4, VethPair};

const FRAME_LEN: usize = 200;
const DPORT: u16 = 5_001;

/// An IPv4 address as the filter hashes it: IPv4-mapped, each word as it sits in the packet.
fn words(ip: std::net::Ipv4Addr) -> [u32; 4] {
    let o = ip.to_ipv6_mapped().octets();
    std::array::from_fn(|i| u32::from_ne_bytes([o[4 * i], o[4 * i + 1], o[4 * i + 2], o[4 * i + 3]]))
}

/// The flow table set of a segment from B to A (ingress on a0) with source port `sport`.
fn set_of(sport: u16) -> u32 {
    sketch::flow_hash(&words(B_V4), &words(A_V4), sport, DPORT, 6) & (FLOW_SLOTS / 2 - 1)
}

fn segment(sport: u16, seq: u32) -> Vec<u8> {
    ipv4_tcp_frame(&Segment {
        src_mac: mac(B_MAC),
        dst_mac: mac(A_MAC),
        saddr: B_V4,
        daddr: A_V4,
        tos: 0,
        sport,
        dport: DPORT,
        seq,
        frame_len: FRAME_LEN,
    })
}

#[test]
fn flows_sharing_a_set_are_tracked_and_the_least_recent_is_forgotten() {
    require_root!();
    // Three source ports whose flows fall in one set (64,512 ports over 32,768 sets: about a
    // third of the sets hold three or more).
    let mut by_set: std::collections::BTreeMap<u32, Vec<u16>> = Default::default();
    for port in 1_024..=u16::MAX {
        by_set.entry(set_of(port)).or_default().push(port);
    }
    let ports = by_set.values().find(|ports| ports.len() >= 3).expect("a set of three flows");
    let (a, b, c) = (ports[0], ports[1], ports[2]);

    let pair = VethPair::new("flows").unwrap();
    let mut sampler = pair.a.run(|| TrafficSampler::attach(A_IF, &SamplerOptions::default())).unwrap().unwrap();
    let payload = tcp_payload(FRAME_LEN) as u64;
    // Each step: (source port, sequence, retransmitted bytes expected for that one packet).
    let steps: [(u16, u32, u64); 9] = [
        (a, 1_000, 0),       // a: new
        (b, 5_000, 0),       // b: new, the set's other entry
        (a, 1_000, payload), // a: resent, still known
        (b, 5_000, payload), // b: resent, still known
        (a, 1_200, 0),       // a: new data (a was seen after b now)
        (c, 9_000, 0),       // c: new, takes b's entry (seen longer ago than a's)
        (a, 1_000, payload), // a: resent, still known
        (b, 5_000, 0),       // b: forgotten, counts as new (and takes c's entry)
        (b, 5_000, payload), // b: known again
    ];
    let run = RunRequest { interval: Duration::from_millis(50), samples: 20, start: StartAt::Now };
    for round in 0..2 {
        let pending = sampler.begin(&run).unwrap();
        let mut want = 0;
        for &(sport, seq, resent) in &steps {
            let prog = sampler.program(TcAttachType::Ingress);
            test_run(prog.fd().unwrap().as_fd(), &segment(sport, seq), 1).unwrap();
            want += resent;
        }
        let counted = sampler.finish(pending).unwrap();
        // Per-step counts are not visible separately; the total is exact only if every step
        // counted what it should (a table forgetting too much, or too little, changes it).
        assert_eq!(total(&counted, |s| s.in_retx_bytes), want, "round {round}");
        assert_eq!(total(&counted, |s| s.in_packets), steps.len() as u64, "round {round}");
        // Round two is a new run: every flow starts afresh (the first packets count nothing).
    }
}
