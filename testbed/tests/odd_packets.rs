//! Frames the filter must survive and still count: non-IP, truncated and malformed IP headers,
//! IPv6 extension headers, a VLAN tag — crafted byte by byte and sent on a raw packet socket.

mod common;

use std::{mem, time::Duration};

use common::{attach_both, run_both, total};
use loupe_bpf::SamplerOptions;
use loupe_testbed::{require_root, topology::*};

const A_MAC_BYTES: [u8; 6] = [2, 0, 0, 0, 0, 0x0a];
const B_MAC_BYTES: [u8; 6] = [2, 0, 0, 0, 0, 0x0b];

fn ethernet(ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&B_MAC_BYTES);
    f.extend_from_slice(&A_MAC_BYTES);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// A minimal IPv4 header (checksum left 0: the filter does not check it, and the receiver's stack
/// drops these frames after tc has seen them).
fn ipv4(tos: u8, proto: u8, ihl: u8, total_len: u16, rest: &[u8]) -> Vec<u8> {
    let mut h = vec![0x40 | ihl, tos];
    h.extend_from_slice(&total_len.to_be_bytes());
    h.extend_from_slice(&[0, 0, 0, 0, 64, proto, 0, 0]);
    h.extend_from_slice(&A_V4.octets());
    h.extend_from_slice(&B_V4.octets());
    h.extend_from_slice(rest);
    h
}

/// Sends raw frames out of `iface` (in the calling thread's namespace).
fn send_raw(iface: &str, frames: &[(u16, Vec<u8>)]) {
    // SAFETY: plain socket calls with correctly sized sockaddr_ll.
    unsafe {
        let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0);
        assert!(fd >= 0, "AF_PACKET socket: {}", std::io::Error::last_os_error());
        let name = std::ffi::CString::new(iface).unwrap();
        let index = libc::if_nametoindex(name.as_ptr());
        for (proto, frame) in frames {
            let mut addr: libc::sockaddr_ll = mem::zeroed();
            addr.sll_family = libc::AF_PACKET as u16;
            addr.sll_ifindex = index as i32;
            addr.sll_protocol = proto.to_be();
            addr.sll_halen = 6;
            addr.sll_addr[..6].copy_from_slice(&B_MAC_BYTES);
            let sent = libc::sendto(
                fd,
                frame.as_ptr().cast(),
                frame.len(),
                0,
                (&addr as *const libc::sockaddr_ll).cast(),
                mem::size_of::<libc::sockaddr_ll>() as u32,
            );
            assert_eq!(sent, frame.len() as isize, "sendto: {}", std::io::Error::last_os_error());
        }
        libc::close(fd);
    }
}

#[test]
fn odd_frames_count_as_bytes_and_packets() {
    require_root!();
    let pair = VethPair::new("odd").unwrap();
    let mut samplers = attach_both(&pair, &SamplerOptions::default());
    let udp = [0x13, 0x88, 0x13, 0x89, 0, 12, 0, 0, 1, 2, 3, 4];
    let mut ipv6_hbh = vec![0x60, 0x00, 0x00, 0x00, 0, 28, 0 /* hop-by-hop */, 64];
    ipv6_hbh.extend_from_slice(&A_V6.octets());
    ipv6_hbh.extend_from_slice(&B_V6.octets());
    ipv6_hbh.extend_from_slice(&[6, 0, 1, 4, 0, 0, 0, 0]); // HBH: next TCP, PadN
    ipv6_hbh.extend_from_slice(&[0u8; 20]); // a TCP header the filter does not reach
    let mut vlan = vec![0x00, 0x07, 0x08, 0x00]; // VID 7, inner IPv4
    vlan.extend_from_slice(&ipv4(0x03 /* CE */, 17, 5, 32, &udp));
    let frames: Vec<(u16, Vec<u8>)> = vec![
        (0x0806, ethernet(0x0806, &[0u8; 46])),                        // ARP-like, not IP
        (0x88b5, ethernet(0x88b5, b"local experimental ethertype")),   // unknown ethertype
        (0x0800, ethernet(0x0800, &[0x45, 0, 0, 60, 0, 0])),           // IPv4 cut short
        (0x0800, ethernet(0x0800, &ipv4(0, 6, 3, 40, &[0u8; 20]))),    // IHL 3 (< 5)
        (0x0800, ethernet(0x0800, &ipv4(0x03, 6, 5, 40, &[0u8; 20]))), // TCP, data offset 0, CE
        (0x0800, ethernet(0x0800, &ipv4(0, 17, 5, 1000, &udp))),       // length beyond frame
        (0x0800, ethernet(0x0800, &ipv4(0, 17, 15, 60, &[0u8; 4]))),   // options past the end
        (0x86dd, ethernet(0x86dd, &ipv6_hbh)),                         // IPv6 extension header
        (0x86dd, ethernet(0x86dd, &[0x60, 0, 0])),                     // IPv6 cut short
        (0x8100, ethernet(0x8100, &vlan)),                             // 802.1Q, CE inside
    ];
    let bytes: u64 = frames.iter().map(|(_, f)| f.len() as u64).sum();
    let count = frames.len() as u64;
    let (ra, rb) = run_both(&mut samplers, Duration::from_millis(1), 300, || {
        pair.a.run(|| send_raw(A_IF, &frames)).unwrap();
    });
    assert_eq!(total(&ra, |s| s.out_bytes), bytes, "a0 egress bytes");
    assert_eq!(total(&ra, |s| s.out_packets), count, "a0 egress packets");
    // On ingress the stack moves a VLAN tag out of the packet (into `vlan_tci`) before tc runs,
    // so `skb->len` there is 4 bytes shorter for the tagged frame.
    assert_eq!(total(&rb, |s| s.in_bytes), bytes - 4, "b0 ingress bytes");
    assert_eq!(total(&rb, |s| s.in_packets), count, "b0 ingress packets");
    // CE is read from the IPv4 header whatever follows it, and behind the VLAN tag.
    let ce_frames = frames[4].1.len() + frames[9].1.len() - 4;
    assert_eq!(total(&rb, |s| s.in_ce_bytes), ce_frames as u64, "in_ce_bytes");
    // Nothing here is TCP with payload that could be a retransmission.
    assert_eq!(total(&rb, |s| s.in_retx_bytes), 0);
}
