//! The Millisampler tc filter: one program per direction, attached with tcx (clsact + cls_bpf
//! before Linux 6.6).
//!
//! Outside a run the filter does one array lookup and returns. During a run it finds the packet's
//! slot, `(now - start) / interval`, and adds into that slot's per-CPU counters: no locks, no
//! atomics, because every CPU owns its own copy of [`filter::SLOTS`]. Userspace sums (and ORs, for the
//! connection sketches) the CPUs' copies after the run. `docs/counters.md` defines every counter.
//!
//! The filter never changes a packet's fate: it returns `TC_ACT_UNSPEC`, which lets the next
//! filter on the hook (if any) decide, and the packet continues as if Loupe were not there.
#![no_std]
#![no_main]
// Packet words are read with one BPF load each (`parse::load_u32`); the nightly is pinned in
// `bpf/ebpf/NIGHTLY`.
#![feature(asm_experimental_arch)]

mod filter;
mod parse;

use aya_ebpf::{bindings::TC_ACT_UNSPEC, macros::classifier, programs::TcContext};
use filter::{observe, upto};

#[classifier]
pub fn loupe_ingress(ctx: TcContext) -> i32 {
    observe::<true, { upto::ALL }>(&ctx);
    TC_ACT_UNSPEC
}

#[classifier]
pub fn loupe_egress(ctx: TcContext) -> i32 {
    observe::<false, { upto::ALL }>(&ctx);
    TC_ACT_UNSPEC
}

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}

#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 13] = *b"Dual MIT/GPL\0";
