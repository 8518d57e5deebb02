//! Header parsing for the filter: just enough of IPv4/IPv6/TCP/UDP to fill the counters.
//!
//! Headers are read in place (direct packet access: `skb->data` to `data_end`, each read
//! bounds-checked for the verifier) when they lie in the skb's linear part, which is where a
//! driver or the stack puts them for nearly every packet. Only when they do not (a non-linear
//! skb whose headers sit in a fragment) does a read fall back to `bpf_skb_load_bytes`, which
//! copies from anywhere in the skb and fails cleanly on short packets. A helper call per header
//! cost ~15 ns, three of them per TCP packet (`cargo bench -p loupe-testbed --bench filter`,
//! docs/hot-paths.md). Either way a truncated or odd header makes `parse` return `None` (the
//! packet then counts toward bytes and packets only), never a verifier error.

use core::mem::{MaybeUninit, align_of, size_of};

use aya_ebpf::programs::TcContext;

/// Deepest header offset read in place: L2 (with a VLAN tag) + IPv6 + the TCP header's first
/// 16 bytes fit well inside. A bound the verifier needs for a variable offset into the packet;
/// beyond it the helper copy is used.
const MAX_DIRECT_OFFSET: usize = 256;

/// A `T` at byte `offset` of the packet (from the L2 header, as `bpf_skb_load_bytes` counts).
///
/// A header whose size and alignment are multiples of four is copied a 32-bit word at a time
/// ([`load_u32`]): LLVM's BPF backend splits a load it cannot prove aligned into byte loads,
/// shifts and ors (a 20-byte IPv4 header took ~50 instructions), and the packet's alignment is
/// not known to it. The copy is a plain `T` on the stack, so its fields are read with aligned
/// loads after it.
#[inline(always)]
fn read<T>(ctx: &TcContext, offset: usize) -> Option<T> {
    // Bounded on the very value added to the packet pointer. Without the barrier LLVM checks
    // `l2_len <= 254` and adds `l2_len + 2`, computed before the check: a verifier that links no
    // register to another with a constant delta (Linux before 6.12; 6.1 refused the filter with
    // "R1 offset is outside of the packet") then sees an unbounded offset.
    let offset = core::hint::black_box(offset);
    if offset <= MAX_DIRECT_OFFSET {
        let at = ctx.data() + offset;
        if at + size_of::<T>() <= ctx.data_end() {
            if size_of::<T>() % 4 == 0 && align_of::<T>() >= 4 {
                let mut out = MaybeUninit::<T>::uninit();
                let words = out.as_mut_ptr() as *mut u32;
                for i in 0..size_of::<T>() / 4 {
                    // SAFETY: [at, at + size_of::<T>()) lies inside the packet's linear data
                    // (checked just above, and by the verifier), so each word read does; `out`
                    // has room for size_of::<T>() / 4 words and is aligned for them.
                    unsafe { words.add(i).write(load_u32(at + 4 * i)) };
                }
                // SAFETY: every byte of `out` was written; `T` is plain integers.
                return Some(unsafe { out.assume_init() });
            }
            // SAFETY: as above; `T` is plain bytes, read unaligned.
            return Some(unsafe { (at as *const T).read_unaligned() });
        }
    }
    ctx.load(offset).ok()
}

/// The 32-bit word at packet address `at`, wherever it is aligned: one BPF load instruction.
/// The kernel allows unaligned packet reads where the CPU does them cheaply (x86-64, arm64);
/// a kernel that wants them aligned refuses the program at load, it never misreads.
///
/// # Safety
/// `[at, at + 4)` must lie inside the packet, checked against `data_end` before the call.
#[inline(always)]
unsafe fn load_u32(at: usize) -> u32 {
    let word: u64;
    // SAFETY: the caller's bounds check covers the four bytes read; the instruction reads
    // memory only and has no other effect.
    unsafe {
        core::arch::asm!("{word} = *(u32 *)({at} + 0)", at = in(reg) at, word = lateout(reg) word,
            options(pure, readonly, nostack, preserves_flags));
    }
    word as u32
}

pub const TCP_FIN: u8 = 0x01;
pub const TCP_SYN: u8 = 0x02;

const ETH_P_IP: u16 = 0x0800;
const ETH_P_IPV6: u16 = 0x86dd;
const ETH_P_8021Q: u16 = 0x8100;
const ETH_P_8021AD: u16 = 0x88a8;
const IPPROTO_TCP: u8 = 6;
const IPPROTO_UDP: u8 = 17;

/// What the counters need from one packet. Addresses are IPv4-mapped for IPv4 and kept as the
/// words of the wire bytes (see `loupe_bpf_common::sketch::flow_bit`).
pub struct Packet {
    pub saddr: [u32; 4],
    pub daddr: [u32; 4],
    pub sport: u16,
    pub dport: u16,
    pub proto: u8,
    pub ce: bool,
    pub is_tcp: bool,
    pub tcp_flags: u8,
    pub tcp_seq: u32,
    /// TCP payload bytes (sequence space without SYN/FIN); 0 for non-TCP.
    pub tcp_payload: u32,
}

// Headers as they lie on the wire: multi-byte fields in network order (read with `from_be`),
// addresses kept as the words of their wire bytes. Each is a multiple of four bytes with
// alignment 4, so [`read`] copies it word by word.

#[repr(C)]
struct Ipv4Hdr {
    version_ihl: u8,
    tos: u8,
    tot_len: u16,
    id: u16,
    frag_off: u16,
    ttl: u8,
    protocol: u8,
    check: u16,
    saddr: u32,
    daddr: u32,
}

#[repr(C)]
struct Ipv6Hdr {
    vtc_flow: [u8; 4],
    payload_len: u16,
    nexthdr: u8,
    hop_limit: u8,
    saddr: [u32; 4],
    daddr: [u32; 4],
}

/// The first 16 bytes of a TCP header (20 at least), read at once: ports, sequence, flags.
#[repr(C)]
struct TcpHead {
    sport: u16,
    dport: u16,
    seq: u32,
    ack: u32,
    doff_res: u8,
    flags: u8,
    window: u16,
}

/// IPv4-mapped prefix word `::ffff:` as it sits in memory.
const V4_MAPPED: u32 = u32::from_ne_bytes([0, 0, 0xff, 0xff]);

#[inline(always)]
pub fn parse(ctx: &TcContext, l2_len: u32) -> Option<Packet> {
    let skb_len = ctx.len();
    // The L3 protocol comes from the skb (set by the driver on ingress, by the stack on egress),
    // so raw-IP devices (l2_len 0) need no guessing.
    let mut proto = u16::from_be(ctx.skb.protocol() as u16);
    let mut l3 = l2_len;
    if proto == ETH_P_8021Q || proto == ETH_P_8021AD {
        // An untagged-by-hardware VLAN header: the inner EtherType follows the tag.
        let inner: [u8; 2] = read(ctx, l2_len as usize + 2)?;
        proto = u16::from_be_bytes(inner);
        l3 += 4;
    }
    let ip_room = skb_len.checked_sub(l3)?;

    let mut pkt = Packet {
        saddr: [0; 4],
        daddr: [0; 4],
        sport: 0,
        dport: 0,
        proto: 0,
        ce: false,
        is_tcp: false,
        tcp_flags: 0,
        tcp_seq: 0,
        tcp_payload: 0,
    };
    let l4;
    let ip_len; // bytes of IP packet (header + payload), padding excluded
    if proto == ETH_P_IP {
        let ip: Ipv4Hdr = read(ctx, l3 as usize)?;
        if ip.version_ihl >> 4 != 4 {
            return None;
        }
        let ihl = ((ip.version_ihl & 0x0f) as u32) * 4;
        pkt.saddr = [0, 0, V4_MAPPED, ip.saddr];
        pkt.daddr = [0, 0, V4_MAPPED, ip.daddr];
        pkt.proto = ip.protocol;
        pkt.ce = ip.tos & 0x03 == 0x03;
        // A GSO packet may carry 0 here (BIG TCP); trailing Ethernet padding makes skb->len
        // longer than the IP packet on ingress.
        let tot = u16::from_be(ip.tot_len) as u32;
        ip_len = if tot == 0 || tot > ip_room { ip_room } else { tot };
        let frag = u16::from_be(ip.frag_off) & 0x1fff;
        if ihl < 20 || frag != 0 {
            return Some(pkt); // no transport header here: count as IP without ports
        }
        l4 = ihl;
    } else if proto == ETH_P_IPV6 {
        let ip: Ipv6Hdr = read(ctx, l3 as usize)?;
        if ip.vtc_flow[0] >> 4 != 6 {
            return None;
        }
        pkt.saddr = ip.saddr;
        pkt.daddr = ip.daddr;
        pkt.proto = ip.nexthdr;
        pkt.ce = (ip.vtc_flow[1] >> 4) & 0x03 == 0x03;
        let plen = u16::from_be(ip.payload_len) as u32 + 40;
        ip_len = if plen == 40 || plen > ip_room { ip_room } else { plen };
        // Extension headers are not walked: such packets count as IP without ports.
        l4 = 40;
    } else {
        return None;
    }

    if pkt.proto != IPPROTO_TCP && pkt.proto != IPPROTO_UDP {
        return Some(pkt);
    }
    let at = (l3 + l4) as usize;
    if pkt.proto == IPPROTO_TCP {
        // A TCP header shorter than 16 bytes is malformed: counted as IP without ports.
        let Some(t) = read::<TcpHead>(ctx, at) else { return Some(pkt) };
        let doff = ((t.doff_res >> 4) as u32) * 4;
        pkt.sport = u16::from_be(t.sport);
        pkt.dport = u16::from_be(t.dport);
        pkt.is_tcp = doff >= 20;
        pkt.tcp_flags = t.flags;
        pkt.tcp_seq = u32::from_be(t.seq);
        pkt.tcp_payload = ip_len.saturating_sub(l4 + doff);
    } else {
        // Both ports as one word of wire bytes: the source port is its first two.
        let Some(ports) = read::<u32>(ctx, at) else { return Some(pkt) };
        let [a, b, c, d] = ports.to_ne_bytes();
        pkt.sport = u16::from_be_bytes([a, b]);
        pkt.dport = u16::from_be_bytes([c, d]);
    }
    Some(pkt)
}
