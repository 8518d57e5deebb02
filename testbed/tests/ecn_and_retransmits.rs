//! ECN CE bytes against a CE marker's own tally, and retransmitted bytes against the sender's
//! `TCP_INFO` when a dropper forces retransmissions.

mod common;

use std::{
    net::{IpAddr, SocketAddr, TcpListener, TcpStream},
    time::Duration,
};

use aya::programs::TcAttachType;
use common::{attach_both, run_both, total};
use loupe_bpf::SamplerOptions;
use loupe_testbed::{
    faults::{Fault, FaultConfig, FaultKind},
    require_root,
    topology::*,
    traffic::{self, ECT0, NOT_ECT},
};

fn ce_exact(tag: &str, src: IpAddr, dst: IpAddr) {
    let pair = VethPair::new(tag).unwrap();
    let mut samplers = attach_both(&pair, &SamplerOptions::default());
    // Mark every packet to port 9001 — as a congested switch would — if it is ECN-capable.
    let cfg = FaultConfig { dport: 9001, data_only: 0, every_nth: 1, max_hits: u32::MAX, _pad: 0 };
    let marker = pair.a.run(|| Fault::attach(FaultKind::CeMark, A_IF, TcAttachType::Egress, cfg)).unwrap().unwrap();
    let _sinks: Vec<_> = [9001, 9002]
        .map(|port| pair.b.run(|| traffic::udp_socket(SocketAddr::new(dst, port), 0)).unwrap().unwrap())
        .into();
    let ect = pair.a.run(|| traffic::udp_socket(SocketAddr::new(src, 0), ECT0)).unwrap().unwrap();
    let not_ect = pair.a.run(|| traffic::udp_socket(SocketAddr::new(src, 0), NOT_ECT)).unwrap().unwrap();
    let gap = Duration::from_micros(100);
    let (_, rb) = run_both(&mut samplers, Duration::from_millis(1), 400, || {
        traffic::udp_send(&ect, SocketAddr::new(dst, 9001), 200, 700, gap).unwrap(); // all marked
        traffic::udp_send(&ect, SocketAddr::new(dst, 9002), 100, 300, gap).unwrap(); // other port
        traffic::udp_send(&not_ect, SocketAddr::new(dst, 9001), 100, 500, gap).unwrap(); // not ECN-capable
    });
    let tally = pair.a.run(|| marker.tally()).unwrap().unwrap();
    // The not-ECT packets to 9001 were selected too but cannot carry CE.
    assert_eq!(tally.matched, 300);
    assert_eq!(tally.hits, 200, "CE marks applied");
    let expected = 200 * traffic::udp_frame_len(dst, 700);
    assert_eq!(tally.hit_bytes, expected);
    assert_eq!(total(&rb, |s| s.in_ce_bytes), expected, "in_ce_bytes at b0");
}

#[test]
fn ce_marked_bytes_are_exact_ipv4() {
    require_root!();
    ce_exact("ce4", A_V4.into(), B_V4.into());
}

#[test]
fn ce_marked_bytes_are_exact_ipv6() {
    require_root!();
    ce_exact("ce6", A_V6.into(), B_V6.into());
}

fn retx_match(tag: &str, dst: IpAddr) {
    let pair = VethPair::new(tag).unwrap();
    let mut samplers = attach_both(&pair, &SamplerOptions::default());
    // Drop every 10th data packet to port 5002, eight times in all, on b0's ingress behind Loupe
    // — a loss in the network. (A drop on the sender's own egress would not do: tc reports it to
    // TCP as a local drop, and TCP sends the segment again as if for the first time.)
    let cfg = FaultConfig { dport: 5002, data_only: 1, every_nth: 10, max_hits: 8, _pad: 0 };
    let dropper = pair.b.run(|| Fault::attach(FaultKind::Drop, B_IF, TcAttachType::Ingress, cfg)).unwrap().unwrap();
    let listener = pair.b.run(|| TcpListener::bind(SocketAddr::new(dst, 5002))).unwrap().unwrap();
    let mut report = None;
    let (ra, rb) = run_both(&mut samplers, Duration::from_millis(10), 500, || {
        let client = pair.a.run(|| TcpStream::connect(SocketAddr::new(dst, 5002))).unwrap().unwrap();
        // The ingress method calls any segment below the highest seen a retransmission, so a
        // flow reordered on the way (a sender hopping CPUs) would count extra: keep it on one.
        std::thread::scope(|s| {
            s.spawn(|| {
                traffic::pin_current_thread(0).unwrap();
                report = Some(traffic::tcp_transfer(listener, client, 16 << 20).unwrap());
            });
        });
    });
    let report = report.unwrap();
    let tally = pair.b.run(|| dropper.tally()).unwrap().unwrap();
    assert!(tally.hits > 0, "the dropper must have dropped something: {tally:?}");
    assert!(report.bytes_retrans > 0, "sender retransmitted nothing: {report:?}");
    assert_eq!(report.bytes_received_by_peer, 16 << 20);
    assert_eq!(total(&ra, |s| s.out_retx_bytes), report.bytes_retrans, "out_retx_bytes vs TCP_INFO ({report:?})");
    assert_eq!(total(&rb, |s| s.in_retx_bytes), report.bytes_retrans, "in_retx_bytes vs TCP_INFO ({report:?})");
    // Nothing was retransmitted the other way.
    assert_eq!(total(&rb, |s| s.out_retx_bytes), 0);
}

#[test]
fn retransmitted_bytes_match_tcp_info_ipv4() {
    require_root!();
    retx_match("rx4", B_V4.into());
}

#[test]
fn retransmitted_bytes_match_tcp_info_ipv6() {
    require_root!();
    retx_match("rx6", B_V6.into());
}
