//! Function probes on each probed function's first instruction (after `endbr64`), with the
//! function's index as the attach cookie. The entry counts the call and pushes it on the
//! thread's stack (with its entry time when the thread's outermost open call was chosen for
//! timing); the return pops it, adds the duration to the function's log-linear histogram and,
//! when asked, sends the call to userspace.
//!
//! Two ways in: `loupe_fn_session` on a uprobe session link (Linux 6.13+), where the kernel
//! runs the program at the return only when its entry returned 0 — so a call inside an untimed
//! outermost call pays the entry trap alone; or `loupe_fn_entry` and `loupe_fn_return` on
//! perf-event uprobes and uretprobes, where every call pays both traps (older kernels).
//!
//! *Why a per-thread stack rather than a per-call cookie*: the stack gives each call its depth
//! (so calls nest into trees offline without guessing from times) and lets sampling choose whole
//! outermost calls — a sampled `handle` always has its `parse`/`lookup`/`forward` children. It
//! costs one hash lookup per probe hit, ~0.1 µs of the ~1.2 µs the two traps cost here
//! (`docs/probes.md`).
#![no_std]
#![no_main]
// `AtomicU64::fetch_add` is not offered on the BPF target; the intrinsic lowers to BPF's atomic
// add (the nightly is pinned in `bpf/ebpf/NIGHTLY`).
#![allow(internal_features)]
#![feature(core_intrinsics)]

use core::intrinsics::{AtomicOrdering, atomic_xadd};

use aya_ebpf::{
    EbpfContext,
    bindings::BPF_NOEXIST,
    helpers::{
        bpf_get_attach_cookie, bpf_get_current_pid_tgid, bpf_get_prandom_u32, bpf_get_smp_processor_id,
        bpf_ktime_get_ns,
    },
    macros::{map, uprobe, uretprobe},
    maps::{Array, LruHashMap, PerCpuArray, RingBuf},
    programs::{ProbeContext, RetProbeContext},
};
use loupe_bpf_common::probes::{
    BUCKETS, CONFIG_COUNT_ONLY, CONFIG_NESTED, CONFIG_RECORD_CALLS, CONFIG_SAMPLE_EVERY, CONFIG_SLOTS, CallRecord,
    FunctionCounters, MAX_DEPTH, MAX_FUNCTIONS, MAX_THREADS, ThreadCalls, bucket_of,
};

#[map(name = "PROBE_CONFIG")]
static PROBE_CONFIG: Array<u64> = Array::with_max_entries(CONFIG_SLOTS, 0);

#[map(name = "PROBE_THREADS")]
static PROBE_THREADS: LruHashMap<u64, ThreadCalls> = LruHashMap::with_max_entries(MAX_THREADS, 0);

/// One all-zero [`ThreadCalls`], never written: what a thread's first probed call inserts
/// (392 bytes would crowd the 512-byte BPF stack).
#[map(name = "PROBE_ZERO")]
static PROBE_ZERO: Array<ThreadCalls> = Array::with_max_entries(1, 0);

#[map(name = "PROBE_COUNTERS")]
static PROBE_COUNTERS: PerCpuArray<FunctionCounters> = PerCpuArray::with_max_entries(MAX_FUNCTIONS, 0);

#[map(name = "PROBE_HISTOGRAMS")]
static PROBE_HISTOGRAMS: PerCpuArray<u64> = PerCpuArray::with_max_entries(MAX_FUNCTIONS * BUCKETS, 0);

/// 8 MiB: 262,144 calls between two drains (userspace drains every 50 ms).
#[map(name = "PROBE_CALLS")]
static PROBE_CALLS: RingBuf = RingBuf::with_byte_size(8 << 20, 0);

#[uprobe]
pub fn loupe_fn_entry(ctx: ProbeContext) -> u32 {
    // SAFETY: the helper reads the cookie of the link that fired; `regs` is the probed
    // thread's saved registers, valid for the program's run.
    let (function, sp) = unsafe { (bpf_get_attach_cookie(ctx.as_ptr()) as u32, (*ctx.regs).rsp) };
    entry(function, sp, false);
    0
}

#[uretprobe]
pub fn loupe_fn_return(ctx: RetProbeContext) -> u32 {
    // SAFETY: the helpers have no preconditions; the cookie is the firing link's.
    let (now, function) = unsafe { (bpf_ktime_get_ns(), bpf_get_attach_cookie(ctx.as_ptr()) as u32) };
    returned(function, now);
    0
}

/// On a session link: called at every entry, and at the return of the calls whose entry
/// returned 0 — every call inside a timed outermost call, and the outermost call itself (when
/// several functions are probed, even untimed, so the thread's depth stays exact). Calls
/// inside an untimed outermost call return 1: counted, and no return trap.
///
/// Written out rather than with `#[uprobe]`: that macro discards the function's value and
/// returns 0, which on a session link asks for every return — each untimed call's return then
/// ran, found no open call, and was counted as another call (`--sample 64` over-counted and
/// timed nearly everything; see `docs/probes.md`).
#[unsafe(no_mangle)]
#[unsafe(link_section = "uprobe")]
pub fn loupe_fn_session(ctx: *mut core::ffi::c_void) -> u32 {
    let ctx = ProbeContext::new(ctx);
    // SAFETY: as in `loupe_fn_entry`.
    let (function, sp, now) =
        unsafe { (bpf_get_attach_cookie(ctx.as_ptr()) as u32, (*ctx.regs).rsp, bpf_ktime_get_ns()) };
    if is_return(function, sp) {
        returned(function, now);
        return 0;
    }
    entry(function, sp, true)
}

/// Is this the return of the thread's innermost open call? `ret` popped its return address,
/// so the stack pointer is 8 bytes above where it was at the entry, and only a return can be:
/// a nested call's is below, a later call's from the same caller is equal.
#[inline(always)]
fn is_return(function: u32, sp: u64) -> bool {
    let Some(thread) = PROBE_THREADS.get_ptr(bpf_get_current_pid_tgid()) else { return false };
    // SAFETY: the thread's own entry (see `entry`).
    unsafe {
        let Some(d) = ((*thread).depth as usize).checked_sub(1) else { return false };
        // `get`, not indexing: a bounds panic would be a call the verifier refuses.
        (*thread).function.get(d) == Some(&function) && (*thread).sp.get(d).is_some_and(|&s| s.wrapping_add(8) == sp)
    }
}

/// A call entered: counted — the one place a call is counted, so `calls` is the number of
/// entries — and pushed on the thread's stack. Returns 0 exactly when it pushed the call, so
/// on a session link every return the kernel runs has its open call on top. A call inside an
/// untimed outermost call is not pushed and returns 1 (no return probe); with perf-event
/// uprobes every return fires, so every call is pushed to keep returns matched.
#[inline(always)]
fn entry(function: u32, sp: u64, session: bool) -> u32 {
    if function >= MAX_FUNCTIONS {
        return 1;
    }
    let Some(counters) = PROBE_COUNTERS.get_ptr_mut(function) else { return 1 };
    // SAFETY: this CPU's entry of a map value that lives as long as the program.
    unsafe { add(&raw mut (*counters).calls, 1) };
    if config(CONFIG_COUNT_ONLY) != 0 {
        return 1; // no return probe: nothing on the stack is touched
    }
    let key = bpf_get_current_pid_tgid();
    let Some(thread) = thread_calls(key) else { return 1 };
    // SAFETY: the thread's own entry: only this thread's probes write it, one at a time (a
    // thread runs on one CPU at a time and its probes do not nest).
    unsafe {
        let depth = (*thread).depth;
        if depth == 0 {
            (*thread).sampled = chosen() as u32;
            if (*thread).sampled == 0 && session && config(CONFIG_NESTED) == 0 {
                return 1; // one function: nothing can be inside it to follow
            }
        } else if (*thread).sampled == 0 && session {
            return 1; // inside an untimed outermost call
        }
        let d = depth as usize;
        if d >= MAX_DEPTH {
            add(&raw mut (*counters).too_deep, 1);
            if !session {
                (*thread).depth = depth + 1; // its return comes, and pops only the count
            }
            return 1;
        }
        (*thread).depth = depth + 1;
        (*thread).function[d] = function;
        (*thread).sp[d] = sp;
        if (*thread).sampled != 0 {
            (*thread).entry_ns[d] = bpf_ktime_get_ns();
        }
    }
    0
}

/// A call returned at `now`: popped, timed if its outermost call was chosen, recorded if asked.
#[inline(always)]
fn returned(function: u32, now: u64) {
    let key = bpf_get_current_pid_tgid();
    let Some(thread) = PROBE_THREADS.get_ptr_mut(key) else { return };
    let Some(counters) = PROBE_COUNTERS.get_ptr_mut(function) else { return };
    // SAFETY: the thread's own entry and this CPU's counters, as in `entry`.
    unsafe {
        let depth = (*thread).depth;
        if depth == 0 {
            return; // attached while the call was open: its entry was never seen
        }
        let d = (depth - 1) as usize;
        if d >= MAX_DEPTH {
            (*thread).depth = d as u32;
            return;
        }
        if (*thread).function[d] != function {
            // Returned from a call that is not the innermost open one: something unwound past
            // probed frames. Start the thread over rather than time calls against wrong entries.
            add(&raw mut (*counters).mismatched, 1);
            (*thread).depth = 0;
            return;
        }
        (*thread).depth = d as u32;
        if (*thread).sampled == 0 {
            return;
        }
        let ns = now.saturating_sub((*thread).entry_ns[d]);
        add(&raw mut (*counters).timed, 1);
        add(&raw mut (*counters).total_ns, ns);
        if ns > (*counters).max_ns {
            (*counters).max_ns = ns;
        }
        if let Some(bucket) = PROBE_HISTOGRAMS.get_ptr_mut(function * BUCKETS + bucket_of(ns)) {
            add(bucket, 1);
        }
        if config(CONFIG_RECORD_CALLS) != 0 {
            let record = CallRecord {
                entry_ns: (*thread).entry_ns[d],
                exit_ns: now,
                pid: (key >> 32) as u32,
                tid: key as u32,
                cpu: bpf_get_smp_processor_id(),
                function: function as u16,
                depth: d as u16,
            };
            if PROBE_CALLS.output::<CallRecord>(&record, 0).is_err() {
                add(&raw mut (*counters).records_lost, 1);
            }
        }
    }
}

/// Adds to a per-CPU counter atomically. The program runs with migration disabled but not
/// preemption, so two tasks on one CPU can interleave a plain `+=` and lose a count — and
/// counts must be exact. An uncontended atomic add costs a few nanoseconds.
///
/// # Safety
/// `counter` points at a live, aligned `u64` in a map value.
#[inline(always)]
unsafe fn add(counter: *mut u64, n: u64) {
    // SAFETY: per the contract above; map values are 8-byte aligned.
    unsafe { atomic_xadd::<u64, u64, { AtomicOrdering::Relaxed }>(counter, n) };
}

/// The thread's open calls, made on its first probed call.
#[inline(always)]
fn thread_calls(key: u64) -> Option<*mut ThreadCalls> {
    if let Some(thread) = PROBE_THREADS.get_ptr_mut(key) {
        return Some(thread);
    }
    let zero = PROBE_ZERO.get(0)?;
    // NOEXIST: another CPU cannot be inserting this thread's key, but be exact anyway.
    let _ = PROBE_THREADS.insert(key, zero, BPF_NOEXIST as u64);
    PROBE_THREADS.get_ptr_mut(key)
}

/// Is this outermost call one of the 1-in-N timed?
#[inline(always)]
fn chosen() -> bool {
    let every = config(CONFIG_SAMPLE_EVERY);
    // SAFETY: the helper has no preconditions.
    every <= 1 || (unsafe { bpf_get_prandom_u32() } as u64) % every == 0
}

#[inline(always)]
fn config(index: u32) -> u64 {
    PROBE_CONFIG.get(index).copied().unwrap_or(0)
}

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}

#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 13] = *b"Dual MIT/GPL\0";
