//! The filter cut after each step (`loupe-traffic-steps`, what `cargo bench -p loupe-testbed
//! --bench filter` prices step by step): every cut program loads, and each counts what its
//! steps count and nothing of the steps after it, so the bench's table prices what it says.
//! The same TCP data segment is handed to each ingress cut ten times with `BPF_PROG_TEST_RUN`:
//! the first is new, the nine after it are retransmissions of it.

use std::{os::fd::AsFd, time::Duration};

use loupe_bpf::{FILTER_STEPS, FilterSteps};
use loupe_testbed::{
    require_root,
    test_run::{Segment, ipv4_tcp_frame, mac, tcp_payload, test_run},
    topology::{A_MAC, A_V4, B_MAC, B_V4},
};

const FRAME_LEN: usize = 400;
const RUNS: u32 = 10;

#[test]
fn each_cut_counts_up_to_its_step_and_nothing_after_it() {
    require_root!();
    let frame = ipv4_tcp_frame(&Segment {
        src_mac: mac(B_MAC),
        dst_mac: mac(A_MAC),
        saddr: B_V4,
        daddr: A_V4,
        tos: 0,
        sport: 40_000,
        dport: 5_001,
        seq: 1_000,
        frame_len: FRAME_LEN,
    });
    let payload = tcp_payload(FRAME_LEN) as u64;
    let interval = Duration::from_secs(1).as_nanos() as u64;
    for (step, (name, ..)) in FILTER_STEPS.iter().enumerate() {
        let mut steps = FilterSteps::load(interval, 100).unwrap_or_else(|e| panic!("loading the cut filter: {e}"));
        let fd = steps.program(step, true).fd().unwrap().as_fd().try_clone_to_owned().unwrap();
        let (verdict, _) = test_run(fd.as_fd(), &frame, RUNS).unwrap();
        assert_eq!(verdict, -1, "{name}: TC_ACT_UNSPEC");
        let c = steps.counted().unwrap();
        let counted = step >= 1; // from "slot's counters" on
        let sketched = step >= 3;
        let checked = step >= 4;
        assert_eq!(c.in_packets, if counted { RUNS as u64 } else { 0 }, "{name}: packets");
        assert_eq!(c.in_bytes, if counted { RUNS as u64 * FRAME_LEN as u64 } else { 0 }, "{name}: bytes");
        assert_eq!(c.in_conns != [0, 0], sketched, "{name}: the sketch's bit");
        assert_eq!(c.in_retx_bytes, if checked { (RUNS as u64 - 1) * payload } else { 0 }, "{name}: retransmitted");
        assert_eq!((c.out_packets, c.out_bytes), (0, 0), "{name}: nothing counted as egress");
    }
}
