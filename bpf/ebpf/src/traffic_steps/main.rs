//! The tc filter cut after each step, for `cargo bench -p loupe-testbed --bench filter` only:
//! the same source as `loupe-traffic` (its `filter.rs` and `parse.rs`), compiled into programs
//! that stop after one of [`filter::upto`]'s steps, so the bench can print what each step costs
//! as the difference between two of them. The agent never loads this object.
#![no_std]
#![no_main]
// Packet words are read with one BPF load each (`parse::load_u32`); the nightly is pinned in
// `bpf/ebpf/NIGHTLY`.
#![feature(asm_experimental_arch)]

#[path = "../traffic/filter.rs"]
mod filter;
#[path = "../traffic/parse.rs"]
mod parse;

use aya_ebpf::{bindings::TC_ACT_UNSPEC, macros::classifier, programs::TcContext};
use filter::{observe, upto};

/// One pair of programs per step; their names are `loupe_bpf_common::FILTER_STEPS`.
macro_rules! step {
    ($ingress:ident, $egress:ident, $upto:expr) => {
        #[classifier]
        pub fn $ingress(ctx: TcContext) -> i32 {
            observe::<true, { $upto }>(&ctx);
            TC_ACT_UNSPEC
        }

        #[classifier]
        pub fn $egress(ctx: TcContext) -> i32 {
            observe::<false, { $upto }>(&ctx);
            TC_ACT_UNSPEC
        }
    };
}

step!(in_clock, out_clock, upto::CLOCK);
step!(in_count, out_count, upto::COUNT);
step!(in_parse, out_parse, upto::PARSE);
step!(in_sketch, out_sketch, upto::SKETCH);
step!(in_all, out_all, upto::ALL);

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}

#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 13] = *b"Dual MIT/GPL\0";
