//! The stack sampler: a perf-event program attached to the CPU clock of every online CPU
//! (like `perf record -F 10 -a -g`). Each firing records who was running — PID, TID, comm,
//! cgroup — and its kernel and user stacks as raw instruction pointers, into a ring buffer
//! that userspace drains and symbolizes. Raw frames rather than a stack-trace map: no stack ids
//! to age out or collide, and the 2.4 KB per sample is nothing at 10 Hz per CPU. The user stack
//! is unwound from the binaries' call-frame information (`unwind`); the kernel stack by the
//! kernel, which keeps frame pointers or ORC for itself.
//!
//! The deny list is enforced here, before anything is recorded: listed comms, PIDs and cgroup
//! subtrees are never sampled.
//!
//! With off-CPU sampling on, two more programs (`off_cpu`) take the same record from a thread
//! as it blocks, and send it when the thread runs again, weighted by the time in between.
//!
//! A thread of a process running CPython also gets the interpreter's own frames (`python`).
#![no_std]
#![no_main]
// `AtomicU64::fetch_add` is not offered on the BPF target; the intrinsic lowers to BPF's atomic
// add (the nightly is pinned in `bpf/ebpf/NIGHTLY`).
#![allow(internal_features)]
#![feature(core_intrinsics)]

use core::intrinsics::{AtomicOrdering, atomic_xadd};

use aya_ebpf::{
    EbpfContext,
    bindings::{BPF_F_USER_STACK, BPF_RB_AVAIL_DATA, BPF_RB_FORCE_WAKEUP, BPF_RB_NO_WAKEUP, BPF_RB_RING_SIZE},
    helpers::{
        bpf_get_current_ancestor_cgroup_id, bpf_get_current_cgroup_id, bpf_get_current_comm, bpf_get_current_pid_tgid,
        bpf_get_smp_processor_id, bpf_get_stack, bpf_ktime_get_ns,
    },
    macros::{map, perf_event},
    maps::{HashMap, PerCpuArray, RingBuf},
    programs::PerfEventContext,
};
use loupe_bpf_common::stacks::{
    FLAG_IDLE, FLAG_IN_KERNEL, FLAG_UNKNOWN_MAPPING, MAX_CGROUP_LEVELS, MAX_KERNEL_FRAMES, MAX_USER_FRAMES, StackEvent,
    user_end,
};

mod off_cpu;
mod python;
mod unwind;

use unwind::RegsFrom;

/// Sized by userspace at load for ~2 s of samples at the sampling rate (`ring_bytes` in
/// `loupe-bpf`'s `stacks`); this is only the object file's default.
#[map(name = "STACK_EVENTS")]
static STACK_EVENTS: RingBuf = RingBuf::with_byte_size(4 << 20, 0);

#[map(name = "STACK_LOST")]
static STACK_LOST: PerCpuArray<u64> = PerCpuArray::with_max_entries(1, 0);

#[map(name = "DENY_COMMS")]
static DENY_COMMS: HashMap<[u8; 16], u8> = HashMap::with_max_entries(1024, 0);

#[map(name = "DENY_PIDS")]
static DENY_PIDS: HashMap<u32, u8> = HashMap::with_max_entries(1024, 0);

#[map(name = "DENY_CGROUPS")]
static DENY_CGROUPS: HashMap<u64, u8> = HashMap::with_max_entries(1024, 0);

#[perf_event]
pub fn loupe_stacks(ctx: PerfEventContext) -> u32 {
    let pid_tgid = bpf_get_current_pid_tgid();
    let pid = (pid_tgid >> 32) as u32;
    let tid = pid_tgid as u32;
    let comm = bpf_get_current_comm().unwrap_or([0; 16]);
    if denied(pid, &comm) {
        return 0;
    }
    let Some(event) = unwind::STACK_SCRATCH.get_ptr_mut(0) else {
        return 0;
    };
    // SAFETY: `event` is this CPU's scratch event (a program does not nest on one CPU), written
    // field by field below and copied into the ring buffer whole.
    unsafe {
        (*event).time_ns = bpf_ktime_get_ns();
        (*event).cgroup_id = bpf_get_current_cgroup_id();
        (*event).cpu = bpf_get_smp_processor_id();
        (*event).pid = pid;
        (*event).tid = tid;
        (*event).comm = comm;
        (*event).flags = if pid == 0 { FLAG_IDLE } else { 0 };
        (*event).one_in = 0;
        (*event).off_cpu_ns = 0;
        let kernel_bytes =
            bpf_get_stack(ctx.as_ptr(), (*event).kernel.as_mut_ptr().cast(), (MAX_KERNEL_FRAMES * 8) as u32, 0);
        (*event).kernel_frames = if kernel_bytes > 0 { (kernel_bytes / 8) as u32 } else { 0 };
        if kernel_bytes > 0 {
            (*event).flags |= FLAG_IN_KERNEL;
        }
        (*event).py_frames = 0;
        (*event).py_end = loupe_bpf_common::python::py_end::NONE;
        if pid != 0 {
            python::python_stack(pid, tid, event);
        }
        if pid == 0 {
            (*event).user_frames = 0;
            (*event).user_end = user_end::NONE;
        } else if !unwind::user_stack(RegsFrom::Perf(ctx.as_ptr()), pid, event) {
            // Not loaded yet (userspace loads the process's tables when it sees this): the
            // kernel's frame-pointer walk, which stops at the first function without one.
            let user_bytes = bpf_get_stack(
                ctx.as_ptr(),
                (*event).user.as_mut_ptr().cast(),
                (MAX_USER_FRAMES * 8) as u32,
                BPF_F_USER_STACK as u64,
            );
            (*event).user_frames = if user_bytes > 0 { (user_bytes / 8) as u32 } else { 0 };
            (*event).user_end = if user_bytes > 0 { user_end::FRAME_POINTERS } else { user_end::NONE };
        }
    }
    // Wake the reader only once a quarter of the buffer is waiting: userspace drains on its own
    // schedule anyway, and a wakeup per sample would cost more than the sample.
    let wakeup = if STACK_EVENTS.query(BPF_RB_AVAIL_DATA as u64) >= STACK_EVENTS.query(BPF_RB_RING_SIZE as u64) / 4 {
        BPF_RB_FORCE_WAKEUP
    } else {
        BPF_RB_NO_WAKEUP
    };
    // SAFETY: the scratch event, written above.
    let (end, flags) = unsafe { ((*event).user_end, (*event).flags) };
    if end == user_end::FRAME_POINTERS || flags & FLAG_UNKNOWN_MAPPING != 0 {
        unwind::ask_for_tables(pid);
    }
    // SAFETY: the scratch event, fully written above.
    if STACK_EVENTS.output::<StackEvent>(unsafe { &*event }, wakeup as u64).is_err() {
        if let Some(lost) = STACK_LOST.get_ptr_mut(0) {
            // SAFETY: this CPU's counter.
            unsafe { *lost += 1 };
        }
    }
    0
}

/// Is the current task on the deny list (by PID, comm, or any cgroup it sits under)?
#[inline(always)]
pub(crate) fn denied(pid: u32, comm: &[u8; 16]) -> bool {
    // SAFETY: read-only lookups of plain values.
    unsafe {
        if DENY_PIDS.get(&pid).is_some() || DENY_COMMS.get(comm).is_some() {
            return true;
        }
        for level in 0..MAX_CGROUP_LEVELS {
            let id = bpf_get_current_ancestor_cgroup_id(level as i32);
            if id == 0 {
                break; // deeper than the task's own cgroup
            }
            if DENY_CGROUPS.get(&id).is_some() {
                return true;
            }
        }
    }
    false
}

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}

#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 13] = *b"Dual MIT/GPL\0";

/// Adds to a count shared by every CPU, atomically (the old value unused: BPF's plain atomic
/// add).
///
/// # Safety
/// `counter` points at a live, aligned `u64` in a map value.
#[inline(always)]
unsafe fn add(counter: *mut u64, n: u64) {
    // SAFETY: per the contract above.
    unsafe { atomic_xadd::<u64, u64, { AtomicOrdering::Relaxed }>(counter, n) };
}

/// [`add`] for a `u32`.
///
/// # Safety
/// `counter` points at a live, aligned `u32` in a map value.
#[inline(always)]
unsafe fn add32(counter: *mut u32, n: u32) {
    // SAFETY: per the contract above.
    unsafe { atomic_xadd::<u32, u32, { AtomicOrdering::Relaxed }>(counter, n) };
}
