//! The testbed's fault injectors, tc programs placed after Loupe's filter on a hook:
//!
//! * `tb_ce_mark` sets ECN CE (`bpf_skb_ecn_set_ce`) on ECT packets to a port — what a congested
//!   switch would do — so the receiver's `in_ce_bytes` can be checked against what was marked.
//! * `tb_drop` drops chosen TCP data segments, forcing the sender to retransmit (this kernel has
//!   no netem).
//! * `tb_noop` does nothing: the floor that the filter's per-packet cost is measured against.
//! * `tb_clock` reads the clock and does nothing else: the part of that cost which any program
//!   that puts packets into time slots pays (the filter's first helper call during a run).
//!
//! Each tallies what it did in a per-CPU array, the ground truth the tests compare with.
#![no_std]
#![no_main]

use aya_ebpf::{
    bindings::{TC_ACT_SHOT, TC_ACT_UNSPEC},
    helpers::{bpf_ktime_get_ns, bpf_skb_ecn_set_ce},
    macros::{classifier, map},
    maps::{Array, PerCpuArray},
    programs::TcContext,
};
use loupe_testbed_common::{FaultConfig, FaultTally};

#[map(name = "FAULT_CONFIG")]
static FAULT_CONFIG: Array<FaultConfig> = Array::with_max_entries(1, 0);

#[map(name = "FAULT_TALLY")]
static FAULT_TALLY: PerCpuArray<FaultTally> = PerCpuArray::with_max_entries(1, 0);

#[classifier]
pub fn tb_noop(_ctx: TcContext) -> i32 {
    TC_ACT_UNSPEC
}

#[classifier]
pub fn tb_clock(_ctx: TcContext) -> i32 {
    // SAFETY: bpf_ktime_get_ns takes no arguments and cannot fail.
    let now = unsafe { bpf_ktime_get_ns() };
    // The time is used (it is never 0 after boot), so the call cannot be optimized away.
    if now == 0 { TC_ACT_SHOT as i32 } else { TC_ACT_UNSPEC }
}

#[classifier]
pub fn tb_ce_mark(ctx: TcContext) -> i32 {
    if let Some(tally) = select(&ctx) {
        // Marks only ECT(0)/ECT(1) packets; returns 0 for Not-ECT, which stays untouched.
        if unsafe { bpf_skb_ecn_set_ce(ctx.skb.skb) } == 1 {
            tally.hits += 1;
            tally.hit_bytes += ctx.len() as u64;
        }
    }
    TC_ACT_UNSPEC
}

#[classifier]
pub fn tb_drop(ctx: TcContext) -> i32 {
    if let Some(tally) = select(&ctx) {
        tally.hits += 1;
        tally.hit_bytes += ctx.len() as u64;
        return TC_ACT_SHOT as i32;
    }
    TC_ACT_UNSPEC
}

/// Returns this CPU's tally when the packet is one the fault should hit.
#[inline(always)]
fn select(ctx: &TcContext) -> Option<&'static mut FaultTally> {
    let cfg = FAULT_CONFIG.get(0)?;
    if cfg.every_nth == 0 {
        return None;
    }
    let (dport, data) = ports_and_payload(ctx)?;
    if dport != cfg.dport || (cfg.data_only != 0 && !data) {
        return None;
    }
    // SAFETY: this CPU's slot of a per-CPU array; tc programs do not migrate mid-run.
    let tally = unsafe { &mut *FAULT_TALLY.get_ptr_mut(0)? };
    tally.matched += 1;
    if tally.matched % cfg.every_nth as u64 != 0 || tally.hits >= cfg.max_hits as u64 {
        return None;
    }
    Some(tally)
}

/// Destination port of a TCP/UDP packet over Ethernet, and whether it is a TCP segment with
/// payload.
#[inline(always)]
fn ports_and_payload(ctx: &TcContext) -> Option<(u16, bool)> {
    let ethertype = u16::from_be_bytes(ctx.load::<[u8; 2]>(12).ok()?);
    let (proto, l4, ip_len) = match ethertype {
        0x0800 => {
            let h: [u8; 20] = ctx.load(14).ok()?;
            let ihl = ((h[0] & 0x0f) as u32) * 4;
            (h[9], 14 + ihl, (u16::from_be_bytes([h[2], h[3]]) as u32).saturating_sub(ihl))
        }
        0x86dd => {
            let h: [u8; 8] = ctx.load(14).ok()?;
            (h[6], 14 + 40, u16::from_be_bytes([h[4], h[5]]) as u32)
        }
        _ => return None,
    };
    let l4_hdr: [u8; 14] = match proto {
        6 => ctx.load(l4 as usize).ok()?,
        17 => {
            let p: [u8; 4] = ctx.load(l4 as usize).ok()?;
            return Some((u16::from_be_bytes([p[2], p[3]]), false));
        }
        _ => return None,
    };
    let doff = ((l4_hdr[12] >> 4) as u32) * 4;
    // GSO packets may carry a zero IP length: treat them as data.
    let data = ip_len == 0 || ip_len > doff;
    Some((u16::from_be_bytes([l4_hdr[2], l4_hdr[3]]), data))
}

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}

#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 13] = *b"Dual MIT/GPL\0";
