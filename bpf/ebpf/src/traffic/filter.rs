//! What the filter does with one packet, in the order it does it: the run's configuration, the
//! clock and the slot, the slot's byte and packet counters, the headers, the connection sketch
//! (and cross-region bytes, where prefixes are configured), the retransmission check.
//!
//! The maps and [`observe`] live here rather than beside the programs so that the bench's
//! second object, `loupe-traffic-steps`, compiles the very same code cut after each step
//! ([`upto`]) and `cargo bench -p loupe-testbed --bench filter` can print what each step costs.

use aya_ebpf::{
    helpers::{bpf_ktime_get_ns, bpf_ktime_get_tai_ns, bpf_tcp_sock},
    macros::map,
    maps::{Array, LpmTrie, PerCpuArray, lpm_trie::Key},
    programs::TcContext,
};
use loupe_bpf_common::{
    DEFAULT_SLOTS, FLAG_CLOCK_TAI, FLAG_REGION_CONFIGURED, FLOW_SLOTS, FlowEntry, RunConfig, SlotCounters, sketch,
};

use crate::parse::{self, Packet, parse};

/// Where [`observe`] stops. Each step includes the ones before it.
#[allow(dead_code)] // the filter's own object uses only `ALL`
pub mod upto {
    /// The run's configuration, the clock, the slot number.
    pub const CLOCK: u8 = 1;
    /// The slot's counters found, bytes and packets added.
    pub const COUNT: u8 = 2;
    /// The headers parsed.
    pub const PARSE: u8 = 3;
    /// The flow hash, the connection sketch's bit, CE bytes, cross-region bytes.
    pub const SKETCH: u8 = 4;
    /// The retransmission check: the whole filter.
    pub const ALL: u8 = 5;
}

#[map(name = "RUN_CONFIG")]
pub static RUN_CONFIG: Array<RunConfig> = Array::with_max_entries(1, 0);

/// One entry per slot; the loader resizes it to the capacity it was asked for.
#[map(name = "SLOTS")]
pub static SLOTS: PerCpuArray<SlotCounters> = PerCpuArray::with_max_entries(DEFAULT_SLOTS, 0);

/// Local-region prefixes; IPv4 is stored IPv4-mapped (`::ffff:a.b.c.d`, prefix + 96).
#[map(name = "LOCAL_PREFIXES")]
pub static LOCAL_PREFIXES: LpmTrie<[u8; 16], u8> = LpmTrie::with_max_entries(4096, 1 /* BPF_F_NO_PREALLOC */);

/// Highest sequence seen per ingress TCP flow (there is no socket at tc ingress to ask): a
/// two-way set-associative table indexed by the flow's hash, which the sketch needs anyway.
///
/// *Why not a hash map:* an `LRU_HASH` lookup hashes the 36-byte key again and keeps LRU lists,
/// ~20 ns a packet here; an array lookup is inlined by the verifier into an address
/// computation. *Why the hash as the flow's name, not its 5-tuple:* two 8-byte compares instead
/// of ten, no key built on the stack, and 32-byte entries (a set's two in one cache line) instead
/// of 56: with the word-wise header reads (`parse`), the retransmission step fell from +11–12 to
/// +8–9 ns (`docs/hot-paths.md`). A flow is forgotten only when two others of its set sent more
/// recently (with 32,768 sets that takes thousands of concurrent flows), and then counts as new,
/// as it did when the LRU map evicted it.
#[map(name = "INGRESS_FLOWS")]
pub static INGRESS_FLOWS: Array<FlowEntry> = Array::with_max_entries(FLOW_SLOTS, 0);

/// Counts one packet into the running slot's counters, going as far as `UPTO` (an [`upto`]
/// step): the filter's programs go all the way, the bench's cut programs stop after one step.
#[inline(always)]
pub fn observe<const INGRESS: bool, const UPTO: u8>(ctx: &TcContext) {
    let Some(cfg) = RUN_CONFIG.get(0) else { return };
    if cfg.samples == 0 || cfg.interval_ns == 0 {
        return; // idle: the common case, one lookup
    }
    // SAFETY: both helpers take no arguments and only read the clock.
    let now =
        if cfg.flags & FLAG_CLOCK_TAI != 0 { unsafe { bpf_ktime_get_tai_ns() } } else { unsafe { bpf_ktime_get_ns() } };
    if now < cfg.start_ns {
        return; // a run scheduled for later
    }
    let slot = (now - cfg.start_ns) / cfg.interval_ns;
    if slot >= cfg.samples as u64 {
        return;
    }
    if UPTO == upto::CLOCK {
        core::hint::black_box(slot);
        return;
    }
    let Some(counters) = SLOTS.get_ptr_mut(slot as u32) else { return };
    // SAFETY: the pointer is this CPU's copy of the slot; nothing else writes it while we run
    // (tc programs run with preemption disabled on this CPU).
    let c = unsafe { &mut *counters };

    let skb = ctx.skb.skb;
    let len = ctx.len() as u64;
    let segs = unsafe { (*skb).gso_segs }.max(1) as u64;
    let pkt = parse(ctx, cfg.l2_len);

    if INGRESS {
        c.in_bytes += len;
        c.in_packets += segs;
    } else {
        c.out_bytes += len;
        c.out_packets += segs;
    }
    if UPTO == upto::COUNT {
        return;
    }
    let Some(pkt) = pkt else { return }; // not IP, or headers we cannot read: bytes only
    if UPTO == upto::PARSE {
        core::hint::black_box(&pkt);
        return;
    }

    let flow = sketch::flow_hash64(&pkt.saddr, &pkt.daddr, pkt.sport, pkt.dport, pkt.proto);
    let hash = (flow >> 32) as u32; // = sketch::flow_hash
    let bit = hash >> 25; // = sketch::flow_bit
    if INGRESS {
        sketch::set_bit(&mut c.in_conns, bit);
        if pkt.ce {
            c.in_ce_bytes += len;
        }
    } else {
        sketch::set_bit(&mut c.out_conns, bit);
    }

    if cfg.flags & FLAG_REGION_CONFIGURED != 0 {
        let remote = if INGRESS { pkt.saddr } else { pkt.daddr };
        // SAFETY: [u32; 4] and [u8; 16] have the same size; the words hold the wire bytes.
        let key = Key::new(128, unsafe { core::mem::transmute::<[u32; 4], [u8; 16]>(remote) });
        if LOCAL_PREFIXES.get(&key).is_none() {
            if INGRESS {
                c.in_cross_region_bytes += len;
            } else {
                c.out_cross_region_bytes += len;
            }
        }
    }

    if UPTO == upto::SKETCH {
        return;
    }
    if pkt.tcp_payload > 0 || pkt.tcp_flags & (parse::TCP_SYN | parse::TCP_FIN) != 0 {
        if INGRESS {
            c.in_retx_bytes += ingress_retx(&pkt, flow, cfg.start_ns, now) as u64;
        } else {
            c.out_retx_bytes += egress_retx(ctx, &pkt) as u64;
        }
    }
}

/// `a` comes before `b` in sequence space (RFC 1982 serial arithmetic, as the kernel's `before`).
#[inline(always)]
fn seq_before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// Payload bytes of this segment that lie below `high`, i.e. that were sent before.
#[inline(always)]
fn resent_bytes(seq: u32, payload: u32, high: u32) -> u32 {
    if payload == 0 || !seq_before(seq, high) {
        return 0;
    }
    let end = seq.wrapping_add(payload);
    if seq_before(end, high) { payload } else { high.wrapping_sub(seq) }
}

/// On egress the sending socket is at hand: a segment that starts below `snd_nxt` resends
/// sequence space (new data always starts at `snd_nxt`, which TCP advances only after the
/// segment has passed through the qdisc layer and this filter).
#[inline(always)]
fn egress_retx(ctx: &TcContext, pkt: &Packet) -> u32 {
    if !pkt.is_tcp {
        return 0;
    }
    let skb = ctx.skb.skb;
    // SAFETY: reading `skb->sk` is allowed for tc programs; the verifier tracks the NULL checks.
    unsafe {
        let sk = (*skb).__bindgen_anon_2.sk;
        if sk.is_null() {
            return 0; // forwarded traffic has no local socket
        }
        // One helper: `bpf_tcp_sock` takes any socket and returns NULL unless it is a full TCP
        // socket (not a request or timewait one), so no `bpf_sk_fullsock` before it.
        let tp = bpf_tcp_sock(sk);
        if tp.is_null() {
            return 0;
        }
        resent_bytes(pkt.tcp_seq, pkt.tcp_payload, (*tp).snd_nxt)
    }
}

/// On ingress there is no socket: remember the highest sequence per flow and call anything
/// below it a retransmission. Reordered segments count too (a false positive); a lost tail
/// whose retransmission is the highest segment seen does not (a false negative).
///
/// Two CPUs updating the same entry at once can lose one update of `high_seq` (or, for two
/// new flows of one set, one flow), which is documented as a limit; no lock is taken.
#[inline(always)]
fn ingress_retx(pkt: &Packet, flow: u64, run_start: u64, now: u64) -> u32 {
    if !pkt.is_tcp {
        return 0;
    }
    let syn_fin = (pkt.tcp_flags & (parse::TCP_SYN | parse::TCP_FIN) != 0) as u32;
    let end = pkt.tcp_seq.wrapping_add(pkt.tcp_payload).wrapping_add(syn_fin);
    // The set: the low bits of `sketch::flow_hash`, the top half of `flow`.
    let set = ((flow >> 32) as u32 & (FLOW_SLOTS / 2 - 1)) << 1;
    let (Some(a), Some(b)) = (INGRESS_FLOWS.get_ptr_mut(set), INGRESS_FLOWS.get_ptr_mut(set + 1)) else {
        return 0;
    };
    // SAFETY: both are valid pointers into the array's values (the map is never freed while
    // the program runs); concurrent writers from other CPUs are the documented race above.
    unsafe {
        let live = |e: *mut FlowEntry| (*e).flow == flow && (*e).run_start_ns == run_start;
        let found = if live(a) {
            Some(a)
        } else if live(b) {
            Some(b)
        } else {
            None
        };
        match found {
            Some(e) => {
                let high = (*e).high_seq;
                if seq_before(high, end) {
                    (*e).high_seq = end;
                }
                (*e).seen_ns = now;
                resent_bytes(pkt.tcp_seq, pkt.tcp_payload, high)
            }
            None => {
                // A new flow (or one forgotten): it takes the entry of an earlier run, else the
                // one seen longer ago.
                let stale = |e: *mut FlowEntry| (*e).run_start_ns != run_start;
                let e = if stale(a) || (!stale(b) && (*a).seen_ns <= (*b).seen_ns) { a } else { b };
                *e = FlowEntry { flow, run_start_ns: run_start, seen_ns: now, high_seq: end, _pad: 0 };
                0
            }
        }
    }
}
