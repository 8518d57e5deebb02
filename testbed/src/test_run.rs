//! Running a loaded tc program on a crafted packet in the kernel (`BPF_PROG_TEST_RUN`), and the
//! IPv4/TCP frames the filter's bench and flow-table test feed it.
//!
//! *Why:* some behaviour needs packets no real stack sends on demand (the same segment a million
//! times; flows whose hashes collide), and test-run hands the real program exactly the bytes
//! given, in the kernel, with its maps live.

use std::io;
use std::mem::size_of;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, BorrowedFd};

/// `BPF_PROG_TEST_RUN` from `enum bpf_cmd` in `linux/bpf.h`.
const BPF_PROG_TEST_RUN: libc::c_long = 10;

/// The `test` member of the kernel's `union bpf_attr` (`linux/bpf.h`), used by
/// `BPF_PROG_TEST_RUN`. The kernel requires every byte after the last field it knows to be zero.
#[repr(C)]
#[derive(Default)]
struct TestRunAttr {
    prog_fd: u32,
    retval: u32,
    data_size_in: u32,
    data_size_out: u32,
    data_in: u64,
    data_out: u64,
    repeat: u32,
    duration: u32,
    ctx_size_in: u32,
    ctx_size_out: u32,
    ctx_in: u64,
    ctx_out: u64,
    flags: u32,
    cpu: u32,
    batch_size: u32,
    _pad: u32,
}

/// Runs `prog` on `frame` `repeat` times in the kernel; returns (return value, mean ns per run).
pub fn test_run(prog: BorrowedFd<'_>, frame: &[u8], repeat: u32) -> io::Result<(i32, u32)> {
    let mut attr = TestRunAttr {
        prog_fd: prog.as_raw_fd() as u32,
        data_size_in: frame.len() as u32,
        data_in: frame.as_ptr() as u64,
        repeat,
        ..Default::default()
    };
    // SAFETY: `attr` is a zero-padded `bpf_attr.test`, its input buffer outlives the call and no
    // output buffers are given (data_out / ctx_out are NULL).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_PROG_TEST_RUN,
            &mut attr as *mut TestRunAttr,
            size_of::<TestRunAttr>() as libc::c_uint,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((attr.retval as i32, attr.duration))
}

/// One TCP segment to build a frame of.
#[derive(Clone, Copy, Debug)]
pub struct Segment {
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    pub saddr: Ipv4Addr,
    pub daddr: Ipv4Addr,
    /// The IP header's traffic class byte (ECN in its low bits).
    pub tos: u8,
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    /// The whole frame's length: headers (66 bytes) plus payload.
    pub frame_len: usize,
}

/// Ethernet + IPv4 (DF) + TCP (ACK|PSH, timestamp option) + payload, as a bulk-transfer data
/// segment looks on the wire. The TCP checksum is left zero: the filter never reads it.
pub fn ipv4_tcp_frame(s: &Segment) -> Vec<u8> {
    let mut f = Vec::with_capacity(s.frame_len);
    f.extend(s.dst_mac);
    f.extend(s.src_mac);
    f.extend(0x0800u16.to_be_bytes());
    let ip_len = (s.frame_len - f.len()) as u16;
    let mut ip = vec![0x45, s.tos];
    ip.extend(ip_len.to_be_bytes());
    ip.extend([0x12, 0x34, 0x40, 0x00, 64, 6, 0, 0]); // id, DF, ttl, TCP, checksum (below)
    ip.extend(s.saddr.octets());
    ip.extend(s.daddr.octets());
    let sum = ipv4_checksum(&ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    f.extend(ip);
    f.extend(s.sport.to_be_bytes());
    f.extend(s.dport.to_be_bytes());
    f.extend(s.seq.to_be_bytes());
    f.extend(1u32.to_be_bytes()); // ack
    f.extend([8 << 4, 0x18]); // 32-byte header, ACK|PSH
    f.extend(64_240u16.to_be_bytes()); // window
    f.extend([0, 0, 0, 0]); // checksum, urgent pointer
    f.extend([1, 1, 8, 10, 0, 0, 0x10, 0, 0, 0, 0x20, 0]); // NOP NOP timestamps
    f.resize(s.frame_len, 0xa5);
    f
}

/// TCP payload bytes of a frame [`ipv4_tcp_frame`] built.
pub fn tcp_payload(frame_len: usize) -> usize {
    frame_len - 14 - 20 - 32
}

fn ipv4_checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header.chunks(2).map(|w| u16::from_be_bytes([w[0], w[1]]) as u32).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// A MAC address from its text form (`aa:bb:…`).
pub fn mac(text: &str) -> [u8; 6] {
    let bytes: Vec<u8> = text.split(':').map(|b| u8::from_str_radix(b, 16).expect("hex MAC")).collect();
    bytes.try_into().expect("six bytes")
}
