//! The connection sketch against flows the test opened itself, cross-region bytes against the
//! source prefixes, and the time placement of traffic sent in known windows.

mod common;

use std::{
    net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket},
    thread,
    time::Duration,
};

use common::{attach_both, per_slot, run_both, sketch, total};
use loupe_bpf::{RunRequest, SamplerOptions, StartAt, clock::monotonic_ns, parse_prefix, sketch as sk};
use loupe_testbed::{require_root, topology::*, traffic};

const FLOW_PORT_BASE: u16 = 20_000;

/// The bits the kernel must set for UDP flows `A_V4:port → B_V4:9100`.
fn expected_bits(ports: &[u16]) -> u128 {
    let words = |ip: Ipv4Addr| {
        let o = ip.to_ipv6_mapped().octets();
        std::array::from_fn::<u32, 4, _>(|i| u32::from_ne_bytes([o[4 * i], o[4 * i + 1], o[4 * i + 2], o[4 * i + 3]]))
    };
    ports.iter().fold(0u128, |acc, &p| acc | 1u128 << sk::flow_bit(&words(A_V4), &words(B_V4), p, 9100, 17))
}

#[test]
fn connection_sketch_counts_flows() {
    require_root!();
    let pair = VethPair::new("conn").unwrap();
    let mut samplers = attach_both(&pair, &SamplerOptions::default());
    let _sink = pair.b.run(|| UdpSocket::bind((B_V4, 9100))).unwrap().unwrap();
    let max_flows = 400u16;
    let sockets: Vec<UdpSocket> =
        pair.a.run(|| (0..max_flows).map(|i| UdpSocket::bind((A_V4, FLOW_PORT_BASE + i)).unwrap()).collect()).unwrap();
    let mut last_estimate = 0;
    for n in [1u16, 2, 3, 5, 8, 12, 25, 50, 100, 200, 400] {
        // One slot wide enough to hold all of the burst: every flow is active in it.
        let (ra, rb) = run_both(&mut samplers, Duration::from_millis(300), 1, || {
            for s in &sockets[..n as usize] {
                s.send_to(b"hello", (B_V4, 9100)).unwrap();
            }
        });
        let ports: Vec<u16> = (0..n).map(|i| FLOW_PORT_BASE + i).collect();
        let expected = expected_bits(&ports);
        // The kernel set exactly the bits the flows hash to, on both sides of the link.
        assert_eq!(sketch(&ra, 0, false), expected, "a0 out_conns bitmap for {n} flows");
        assert_eq!(sketch(&rb, 0, true), expected, "b0 in_conns bitmap for {n} flows");
        let estimate = sk::estimate(expected);
        if n <= 12 {
            // Exact but for hash collisions: every distinct bit is one flow. (Two of n random
            // flows share one of 128 bits with probability 1 - prod(1 - i/128): 0 for one flow,
            // 8 % for 5, 41 % for 12 — the limit of a 128-bit sketch, see docs/counters.md.)
            assert_eq!(estimate, expected.count_ones(), "estimate for {n} flows on {} bits", expected.count_ones());
            assert!(n as u32 - estimate <= 1, "{n} flows estimated as {estimate}");
        }
        if n == 100 {
            assert!((75..=125).contains(&estimate), "estimate {estimate} for 100 flows");
        }
        assert!(estimate >= last_estimate, "estimate fell from {last_estimate} to {estimate} at {n} flows");
        last_estimate = estimate;
        eprintln!("{n} flows: {} bits, estimate {estimate}", expected.count_ones());
    }
}

#[test]
fn cross_region_bytes_follow_local_prefixes() {
    require_root!();
    let pair = VethPair::new("xr").unwrap();
    let local_v4: Ipv4Addr = "10.1.0.1".parse().unwrap();
    let remote_v4: Ipv4Addr = "10.2.0.1".parse().unwrap();
    let remote_v6: Ipv6Addr = "fd00::2:1".parse().unwrap();
    for addr in [IpAddr::V4(local_v4), remote_v4.into(), remote_v6.into()] {
        pair.add_a_address(addr).unwrap();
    }
    // The local region: 10.0.0.0/16, 10.1.0.0/16, and fd00::/112 (fd00::2:1 lies outside it).
    let prefixes = ["10.0.0.0/16", "10.1.0.0/16", "fd00::/112"].map(|p| parse_prefix(p).unwrap()).to_vec();
    let mut samplers = attach_both(&pair, &SamplerOptions { local_prefixes: prefixes, ..Default::default() });
    let b_v4_sink = pair.b.run(|| traffic::udp_socket(SocketAddr::new(B_V4.into(), 9200), 0)).unwrap().unwrap();
    let _b_v6_sink = pair.b.run(|| traffic::udp_socket(SocketAddr::new(B_V6.into(), 9200), 0)).unwrap().unwrap();
    let _a_sink = pair.a.run(|| traffic::udp_socket(SocketAddr::new(remote_v4.into(), 9300), 0)).unwrap().unwrap();
    let senders: Vec<(IpAddr, UdpSocket)> = [IpAddr::V4(A_V4), local_v4.into(), remote_v4.into(), remote_v6.into()]
        .into_iter()
        .map(|ip| (ip, pair.a.run(|| traffic::udp_socket(SocketAddr::new(ip, 0), 0)).unwrap().unwrap()))
        .collect();
    let mut remote_in = 0;
    let mut remote_out = 0;
    let (_, rb) = run_both(&mut samplers, Duration::from_millis(1), 300, || {
        for (i, (ip, socket)) in senders.iter().enumerate() {
            let dst = if ip.is_ipv4() { IpAddr::V4(B_V4) } else { IpAddr::V6(B_V6) };
            let sent =
                traffic::udp_send(socket, SocketAddr::new(dst, 9200), 20 + i, 400 + 100 * i, Duration::ZERO).unwrap();
            if *ip == IpAddr::V4(remote_v4) || *ip == IpAddr::V6(remote_v6) {
                remote_in += sent;
            }
        }
        // And b sends to a's remote-region address: egress cross-region bytes at b0.
        remote_out =
            traffic::udp_send(&b_v4_sink, SocketAddr::new(remote_v4.into(), 9300), 7, 999, Duration::ZERO).unwrap();
    });
    assert!(remote_in > 0 && remote_out > 0);
    assert_eq!(total(&rb, |s| s.in_cross_region_bytes), remote_in, "ingress bytes from remote prefixes");
    assert_eq!(total(&rb, |s| s.out_cross_region_bytes), remote_out, "egress bytes to remote prefixes");
}

#[test]
fn no_prefixes_means_no_cross_region_claims() {
    require_root!();
    let pair = VethPair::new("xr0").unwrap();
    let mut samplers = attach_both(&pair, &SamplerOptions::default());
    let _sink = pair.b.run(|| UdpSocket::bind((B_V4, 9200))).unwrap().unwrap();
    let s = pair.a.run(|| UdpSocket::bind((A_V4, 0))).unwrap().unwrap();
    let (_, rb) = run_both(&mut samplers, Duration::from_millis(1), 100, || {
        traffic::udp_send(&s, SocketAddr::new(B_V4.into(), 9200), 10, 100, Duration::ZERO).unwrap();
    });
    assert!(total(&rb, |s| s.in_bytes) > 0);
    assert_eq!(total(&rb, |s| s.in_cross_region_bytes), 0);
}

#[test]
fn traffic_lands_in_the_slots_it_was_sent_in() {
    require_root!();
    let pair = VethPair::new("time").unwrap();
    let mut samplers = attach_both(&pair, &SamplerOptions::default());
    let _sink = pair.b.run(|| UdpSocket::bind((B_V4, 9400))).unwrap().unwrap();
    let s = pair.a.run(|| UdpSocket::bind((A_V4, 0))).unwrap().unwrap();
    let interval = Duration::from_millis(10);
    let req = RunRequest { interval, samples: 100, start: StartAt::Now };
    let pa = samplers.a.begin(&req).unwrap();
    let pb = samplers.b.begin(&req).unwrap();
    // Bursts at known instants; each recorded as [first send, last send] on the monotonic clock.
    let mut windows = Vec::new();
    for (at_ms, count) in [(105u64, 30), (333, 10), (777, 50)] {
        let target = pa.start_mono_ns + at_ms * 1_000_000;
        while monotonic_ns() < target {
            thread::sleep(Duration::from_micros(200));
        }
        let first = monotonic_ns();
        traffic::udp_send(&s, SocketAddr::new(B_V4.into(), 9400), count, 200, Duration::ZERO).unwrap();
        windows.push((first, monotonic_ns(), count as u64));
    }
    let ra = samplers.a.finish(pa).unwrap();
    let rb = samplers.b.finish(pb).unwrap();
    for (run, start, packets) in [
        (&ra, pa.start_mono_ns, per_slot(&ra, |s| s.out_packets)),
        (&rb, pb.start_mono_ns, per_slot(&rb, |s| s.in_packets)),
    ] {
        let slot = |t: u64| ((t - start) / run.interval_ns) as usize;
        for &(first, last, count) in &windows {
            let (lo, hi) = (slot(first).saturating_sub(1), slot(last) + 1);
            let inside: u64 = packets[lo..=hi].iter().sum();
            assert_eq!(
                inside,
                count,
                "burst sent in slots {}..={} landed elsewhere: {packets:?}",
                slot(first),
                slot(last)
            );
        }
        assert_eq!(packets.iter().sum::<u64>(), windows.iter().map(|w| w.2).sum::<u64>());
    }
}
