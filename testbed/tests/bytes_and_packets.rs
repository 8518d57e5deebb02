//! Exact byte and packet counts: UDP datagrams of known sizes over IPv4 and IPv6, and a TCP
//! transfer whose GSO super-packets must count as the segments the sender's kernel sent.

mod common;

use std::{
    net::{IpAddr, SocketAddr, TcpListener, TcpStream},
    time::Duration,
};

use common::{attach_both, run_both, total};
use loupe_bpf::SamplerOptions;
use loupe_testbed::{require_root, topology::*, traffic};

fn udp_exact(tag: &str, src: IpAddr, dst: IpAddr) {
    let pair = VethPair::new(tag).unwrap();
    let mut samplers = attach_both(&pair, &SamplerOptions::default());
    let sink = pair.b.run(|| traffic::udp_socket(SocketAddr::new(dst, 9000), 0)).unwrap().unwrap();
    let sender = pair.a.run(|| traffic::udp_socket(SocketAddr::new(src, 0), 0)).unwrap().unwrap();
    let dst = SocketAddr::new(dst, 9000);
    let mut expected = 0;
    let (ra, rb) = run_both(&mut samplers, Duration::from_millis(1), 500, || {
        // Sizes from tiny to a full 1500-byte MTU frame.
        for (count, payload) in [(100, 1), (100, 100), (50, 1000), (50, 1500 - 8 - if dst.is_ipv4() { 20 } else { 40 })]
        {
            expected += traffic::udp_send(&sender, dst, count, payload, Duration::from_micros(200)).unwrap();
        }
    });
    drop(sink);
    assert_eq!(total(&ra, |s| s.out_bytes), expected, "a0 egress bytes");
    assert_eq!(total(&ra, |s| s.out_packets), 300, "a0 egress packets");
    assert_eq!(total(&rb, |s| s.in_bytes), expected, "b0 ingress bytes");
    assert_eq!(total(&rb, |s| s.in_packets), 300, "b0 ingress packets");
    // Nothing flowed the other way, and the other direction's counters stayed at zero.
    assert_eq!(total(&ra, |s| s.in_bytes), 0);
    assert_eq!(total(&rb, |s| s.out_bytes), 0);
}

#[test]
fn udp_ipv4_bytes_and_packets_are_exact() {
    require_root!();
    udp_exact("u4", A_V4.into(), B_V4.into());
}

#[test]
fn udp_ipv6_bytes_and_packets_are_exact() {
    require_root!();
    udp_exact("u6", A_V6.into(), B_V6.into());
}

#[test]
fn tcp_gso_packets_count_as_segments() {
    require_root!();
    let pair = VethPair::new("tso").unwrap();
    let mut samplers = attach_both(&pair, &SamplerOptions::default());
    let listener = pair.b.run(|| TcpListener::bind((B_V4, 5001))).unwrap().unwrap();
    let mut report = None;
    let (a0, b0) = pair.link_stats().unwrap();
    let (ra, rb) = run_both(&mut samplers, Duration::from_millis(10), 300, || {
        let client = pair.a.run(|| TcpStream::connect((B_V4, 5001))).unwrap().unwrap();
        report = Some(traffic::tcp_transfer(listener, client, 20 << 20).unwrap());
    });
    let report = report.unwrap();
    let (a1, b1) = pair.link_stats().unwrap();
    let (sa, sb) = (a1.since(&a0), b1.since(&b0));
    // Every byte the veth driver moved was seen, in both directions (SYN to FIN included).
    assert_eq!(total(&ra, |s| s.out_bytes), sa.tx_bytes);
    assert_eq!(total(&ra, |s| s.in_bytes), sa.rx_bytes);
    assert_eq!(total(&rb, |s| s.in_bytes), sb.rx_bytes);
    // Segments, not super-packets: the sender's own count of segments it sent, SYN to last ACK.
    let out_packets = total(&ra, |s| s.out_packets);
    assert_eq!(out_packets, report.segs_out as u64, "segments out vs TCP_INFO segs_out");
    assert!(
        out_packets > sa.tx_packets,
        "GSO must have been in play: {out_packets} segments in {} skbs",
        sa.tx_packets
    );
    assert_eq!(total(&rb, |s| s.in_packets), out_packets);
}
