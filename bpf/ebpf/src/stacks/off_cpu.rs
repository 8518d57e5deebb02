//! Off-CPU time: where threads wait rather than run. A raw tracepoint on `sched_switch`
//! (`TP_PROTO(bool preempt, struct task_struct *prev, struct task_struct *next, unsigned int
//! prev_state)`), which runs as `prev`, the current task:
//!
//! - **`prev` blocks** (its state asleep: `S` or `D`, preempted or not): 1 block in
//!   `OffCpuConfig::one_in`, at random, has its stacks taken now — the kernel's says what it
//!   waits on, the user's who asked — into the same record a CPU sample fills, kept under the
//!   task's `task_struct` address until it runs again. Only now are the stacks there to take: a
//!   task's user registers and memory can only be read while it is current.
//! - **`next` runs again**: its record, if one is held, gets the time in between and is sent
//!   if it waited at least `threshold_ns`; otherwise dropped.
//!
//! Tasks are keyed by their `task_struct` address, which the tracepoint hands over for `next`:
//! no field of the task is read, so nothing depends on the kernel's structure layout. A task
//! cannot exit while blocked (it must run to exit; its last switch is `TASK_DEAD`, not asleep),
//! so a held record always meets its task again; the map is an LRU all the same.
//!
//! Kernel threads (no user registers) are left out: each sleeps most of the time by design.
//!
//! Why a preempted switch counts when the state is asleep: a thread sets its state to asleep
//! before it arms what wakes it and calls `schedule()`. Preempted in between (possible on a
//! kernel built with preemption), it stays queued with its state asleep; if its wake-up comes
//! while it waits for the CPU, it runs again and never calls `schedule()`, and that whole wait
//! would be missed. A thread preempted that way that later blocks for real is two samples, one
//! wait each, summing to its time off the CPU. A thread preempted while running (state `R`) is
//! not waiting on anything of its own and stays out.
//!
//! **Switches the tracepoint does not report.** On this machine's kernel (6.18, a VM) the
//! program is now and then not run for a few switches in a row on one CPU, with no recursion
//! counted: beside two busy loops, 3 of 752 switches in one run of the off-CPU test, so a held
//! wait's end went unseen in about 1 run in 10 (1 of 50 20-ms sleeps) and was never sent. Each
//! CPU keeps the `next` it last saw ([`OffCpuLast`]): a `prev` that is not that task came back
//! unseen. Its held wait, if any, is sent then, weighted up to the last switch the CPU did
//! report — a lower bound, short by at most the unreported stretch (0.1–10 ms measured) — and
//! counted (`unseen_returns`), rather than lost or, worse, found at a later switch-in and
//! stretched over the time it ran.
//!
//! Two programs: `loupe_off_cpu` on the tracepoint does the cheap part for every switch and
//! tail-calls `loupe_off_cpu_take` for a block whose stacks are to be taken. The walk is verified
//! in a program of its own, from a fresh state: verified inside the tracepoint's program (after
//! its other branches) the unwinder's loop went past the verifier's 1M instructions, as a
//! filler shared with the CPU sampler did for that program. So the record is filled here, not by
//! a function the two programs share.

use aya_ebpf::{
    EbpfContext,
    bindings::{BPF_F_USER_STACK, BPF_RB_AVAIL_DATA, BPF_RB_FORCE_WAKEUP, BPF_RB_NO_WAKEUP, BPF_RB_RING_SIZE},
    helpers::{
        bpf_get_current_cgroup_id, bpf_get_current_comm, bpf_get_current_pid_tgid, bpf_get_current_task,
        bpf_get_prandom_u32, bpf_get_smp_processor_id, bpf_get_stack, bpf_ktime_get_ns,
    },
    macros::{map, raw_tracepoint},
    maps::{Array, LruHashMap, PerCpuArray, ProgramArray},
    programs::RawTracePointContext,
};
use loupe_bpf_common::stacks::{
    FLAG_IN_KERNEL, FLAG_OFF_CPU, FLAG_UNKNOWN_MAPPING, MAX_KERNEL_FRAMES, MAX_USER_FRAMES, OFF_CPU_PENDING_ENTRIES,
    OFF_CPU_TAKE_INDEX, OFF_CPU_WINDOW_SHIFT, OffCpuBurst, OffCpuConfig, OffCpuLast, StackEvent, user_end,
};

use crate::{STACK_EVENTS, STACK_LOST, add, add32, denied, unwind};

#[map(name = "OFF_CPU_CONFIG")]
static OFF_CPU_CONFIG: Array<OffCpuConfig> = Array::with_max_entries(1, 0);

#[map(name = "OFF_CPU_PENDING")]
static OFF_CPU_PENDING: LruHashMap<u64, StackEvent> = LruHashMap::with_max_entries(OFF_CPU_PENDING_ENTRIES, 0);

#[map(name = "OFF_CPU_BLOCKS")]
static OFF_CPU_BLOCKS: PerCpuArray<u64> = PerCpuArray::with_max_entries(1, 0);

#[map(name = "OFF_CPU_LAST")]
static OFF_CPU_LAST: PerCpuArray<OffCpuLast> = PerCpuArray::with_max_entries(1, 0);

#[map(name = "OFF_CPU_BURST")]
static OFF_CPU_BURST: Array<OffCpuBurst> = Array::with_max_entries(1, 0);

/// `loupe_off_cpu_take`, put there by userspace.
#[map(name = "OFF_CPU_TAKE")]
static OFF_CPU_TAKE: ProgramArray = ProgramArray::with_max_entries(1, 0);

/// `TASK_INTERRUPTIBLE | TASK_UNINTERRUPTIBLE`: the task is going to sleep (not `TASK_DEAD`,
/// not stopped, not preempted while running).
const ASLEEP: u64 = 0x1 | 0x2;

#[raw_tracepoint(tracepoint = "sched_switch")]
pub fn loupe_off_cpu(ctx: RawTracePointContext) -> i32 {
    let Some(config) = OFF_CPU_CONFIG.get(0).copied() else {
        return 0;
    };
    if config.one_in == 0 {
        return 0;
    }
    let next: u64 = ctx.arg(2);
    let prev_state: u64 = ctx.arg(3);
    // SAFETY: helpers without arguments.
    let (prev, now) = unsafe { (bpf_get_current_task(), bpf_ktime_get_ns()) };
    if let Some(last) = OFF_CPU_LAST.get_ptr_mut(0) {
        // SAFETY: this CPU's entry; programs do not nest on one CPU.
        unsafe {
            if (*last).next != 0 && (*last).next != prev && send_held(prev, (*last).time_ns, config.threshold_ns) {
                (*last).unseen_returns += 1;
            }
            (*last).next = next;
            (*last).time_ns = now;
        }
    }
    // `next` first: it may be the task this CPU's last block belonged to.
    send_held(next, now, config.threshold_ns);
    if prev_state & ASLEEP == 0 {
        return 0;
    }
    // The current task goes to sleep: count it, and take its stacks if it is picked.
    if let Some(blocks) = OFF_CPU_BLOCKS.get_ptr_mut(0) {
        // SAFETY: this CPU's counter.
        unsafe { *blocks += 1 };
    }
    // SAFETY: a helper without arguments.
    if config.one_in > 1 && unsafe { bpf_get_prandom_u32() } % config.one_in != 0 {
        return 0;
    }
    if !within_burst(config.burst_limit) {
        return 0;
    }
    // SAFETY: the program array holds `loupe_off_cpu_take`, a raw tracepoint program as this
    // one; on success it does not return, on failure (not loaded yet) nothing is taken.
    unsafe { OFF_CPU_TAKE.tail_call(&ctx, OFF_CPU_TAKE_INDEX) };
    0
}

/// Takes the current task's stacks as it blocks and holds them until it runs again (reached by
/// tail call only; never attached).
#[raw_tracepoint(tracepoint = "sched_switch")]
pub fn loupe_off_cpu_take(ctx: RawTracePointContext) -> i32 {
    let one_in = OFF_CPU_CONFIG.get(0).map_or(1, |c| c.one_in.max(1));
    let pid_tgid = bpf_get_current_pid_tgid();
    let pid = (pid_tgid >> 32) as u32;
    if pid == 0 || unwind::saved_user_regs().is_none() {
        return 0; // the idle task, a kernel thread
    }
    let comm = bpf_get_current_comm().unwrap_or([0; 16]);
    if denied(pid, &comm) {
        return 0;
    }
    let Some(event) = unwind::STACK_SCRATCH.get_ptr_mut(0) else {
        return 0;
    };
    // SAFETY: this CPU's scratch event (programs do not nest on one CPU), filled whole and then
    // copied into the map.
    unsafe {
        (*event).time_ns = bpf_ktime_get_ns();
        (*event).cgroup_id = bpf_get_current_cgroup_id();
        (*event).cpu = bpf_get_smp_processor_id();
        (*event).pid = pid;
        (*event).tid = pid_tgid as u32;
        (*event).comm = comm;
        (*event).flags = FLAG_OFF_CPU;
        (*event).one_in = one_in;
        (*event).off_cpu_ns = 0;
        let kernel_bytes =
            bpf_get_stack(ctx.as_ptr(), (*event).kernel.as_mut_ptr().cast(), (MAX_KERNEL_FRAMES * 8) as u32, 0);
        (*event).kernel_frames = if kernel_bytes > 0 { (kernel_bytes / 8) as u32 } else { 0 };
        if kernel_bytes > 0 {
            (*event).flags |= FLAG_IN_KERNEL;
        }
        if !unwind::user_stack(unwind::RegsFrom::Saved, pid, event) {
            let user_bytes = bpf_get_stack(
                ctx.as_ptr(),
                (*event).user.as_mut_ptr().cast(),
                (MAX_USER_FRAMES * 8) as u32,
                BPF_F_USER_STACK as u64,
            );
            (*event).user_frames = if user_bytes > 0 { (user_bytes / 8) as u32 } else { 0 };
            (*event).user_end = if user_bytes > 0 { user_end::FRAME_POINTERS } else { user_end::NONE };
            // Not loaded yet. A walk that met a PC in no known mapping asks as the record is sent
            // (`send_held`). Asked after the walk, as the CPU sampler does, this program took
            // Linux 6.18's verifier to 1,000,001 instructions and was refused; asked here and
            // there, it takes 15,815 (`bpf/user/tests/verifier_headroom.rs`).
            unwind::ask_for_tables(pid);
        }
        let task = bpf_get_current_task();
        let _ = OFF_CPU_PENDING.insert(&task, &*event, 0);
    }
    0
}

/// Counts a take against the current window; false (and the block counted as skipped) once the
/// window has had `limit`. Shared by the CPUs (a per-CPU share would skip blocks on a host
/// whose blocks all happen on one CPU): atomic adds, racing CPUs overshoot by one take each.
#[inline(always)]
fn within_burst(limit: u32) -> bool {
    let Some(b) = OFF_CPU_BURST.get_ptr_mut(0) else {
        return false;
    };
    // SAFETY: a helper without arguments.
    let window = unsafe { bpf_ktime_get_ns() } >> OFF_CPU_WINDOW_SHIFT;
    // SAFETY: the map's one entry, live as long as the program; its fields are aligned u64s and
    // u32s, read and written whole (a reset racing a count loses at most that count).
    unsafe {
        if core::ptr::read_volatile(&raw const (*b).window) != window {
            core::ptr::write_volatile(&raw mut (*b).window, window);
            core::ptr::write_volatile(&raw mut (*b).takes, 0);
        }
        if core::ptr::read_volatile(&raw const (*b).takes) >= limit {
            add(&raw mut (*b).skipped, 1);
            return false;
        }
        add32(&raw mut (*b).takes, 1);
    }
    true
}

/// `task` runs again (since `back` at the latest): sends its held record if it waited long
/// enough, and drops it. True if one was held.
#[inline(always)]
fn send_held(task: u64, back: u64, threshold_ns: u64) -> bool {
    let Some(held) = OFF_CPU_PENDING.get_ptr_mut(&task) else {
        return false;
    };
    // SAFETY: the map's value for `task`, read before it is removed; the ring copies it.
    unsafe {
        if (*held).flags & FLAG_UNKNOWN_MAPPING != 0 {
            unwind::ask_for_tables((*held).pid);
        }
        let waited = back.saturating_sub((*held).time_ns);
        if waited >= threshold_ns {
            (*held).off_cpu_ns = waited;
            // As the CPU sampler: the reader is woken once a quarter of the ring is waiting.
            let wakeup =
                if STACK_EVENTS.query(BPF_RB_AVAIL_DATA as u64) >= STACK_EVENTS.query(BPF_RB_RING_SIZE as u64) / 4 {
                    BPF_RB_FORCE_WAKEUP
                } else {
                    BPF_RB_NO_WAKEUP
                };
            if STACK_EVENTS.output::<StackEvent>(&*held, wakeup as u64).is_err()
                && let Some(lost) = STACK_LOST.get_ptr_mut(0)
            {
                *lost += 1;
            }
        }
    }
    let _ = OFF_CPU_PENDING.remove(&task);
    true
}
