//! Off-CPU time: where threads wait rather than run. A raw tracepoint on `sched_switch`
//! (`TP_PROTO(bool preempt, struct task_struct *prev, struct task_struct *next, unsigned int
//! prev_state)`), which runs as `prev`, the current task:
//!
//! - **`prev` blocks** (its state asleep: `S` or `D`, preempted or not): the time is noted in
//!   the task's [`OffCpuTask`], and at random (1 in what its last waits predict, see
//!   `OffCpuConfig`) its stacks are taken now — the kernel's says what it waits on, the user's
//!   who asked — into the same record a CPU sample fills, kept under the task's `task_struct`
//!   address until it runs again. Only now are the stacks there to take: a task's user
//!   registers and memory can only be read while it is current.
//! - **`next` runs again**: the wait's length is counted (long, or the time of short ones, for
//!   userspace to set next second's sampling) and predicts the task's next one; a held record
//!   is kept with the probability that makes the wait's weight right (`OffCpuConfig`), and sent
//!   with the time in between.
//!
//! Why by time and not 1 block in N: a host's blocks are mostly short (epoll, futex, 1-ms
//! sleeps, ~4,000 a second beside the test's three waiting threads), so 1 in N with N from the
//! whole host's rate took a function with a few long waits from a handful of samples, each
//! weighted N: 1,404 ms for a 602 ms condition wait in one run. Kept by length, every long wait
//! is sent once, weighted by itself, and the sampling error sits where the time is small.
//!
//! Tasks are keyed by their `task_struct` address, which the tracepoint hands over for `next`:
//! no field of the task is read, so nothing depends on the kernel's structure layout. A task
//! cannot exit while blocked (it must run to exit; its last switch is `TASK_DEAD`, not asleep),
//! so a held record always meets its task again; the maps are LRUs all the same.
//!
//! Kernel threads (no user registers) are left out: each sleeps most of the time by design. The
//! first take of one finds no user registers and marks its task so that none is tried again.
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
//! stretched over the time it ran. Every wait ends this way, held or not, so that its length
//! still counts and predicts.
//!
//! Two programs: `loupe_off_cpu` on the tracepoint does the cheap part for every switch and
//! tail-calls `loupe_off_cpu_take` for a block whose stacks are to be taken. The walk is verified
//! in a program of its own, from a fresh state: verified inside the tracepoint's program (after
//! its other branches) the unwinder's loop went past the verifier's 1M instructions, as a
//! filler shared with the CPU sampler did for that program. So the record is filled here, not by
//! a function the two programs share.

use aya_ebpf::{
    EbpfContext,
    bindings::{
        BPF_F_USER_STACK, BPF_NOEXIST, BPF_RB_AVAIL_DATA, BPF_RB_FORCE_WAKEUP, BPF_RB_NO_WAKEUP, BPF_RB_RING_SIZE,
    },
    helpers::{
        bpf_get_current_cgroup_id, bpf_get_current_comm, bpf_get_current_pid_tgid, bpf_get_current_task,
        bpf_get_prandom_u32, bpf_get_smp_processor_id, bpf_get_stack, bpf_ktime_get_ns,
    },
    macros::{map, raw_tracepoint},
    maps::{Array, LruHashMap, PerCpuArray, ProgramArray},
    programs::RawTracePointContext,
};
use loupe_bpf_common::stacks::{
    FLAG_IN_KERNEL, FLAG_OFF_CPU, FLAG_UNKNOWN_MAPPING, MAX_KERNEL_FRAMES, MAX_USER_FRAMES, OFF_CPU_LONG_CREDIT,
    OFF_CPU_PENDING_ENTRIES, OFF_CPU_TAKE_INDEX, OFF_CPU_TASKS_ENTRIES, OFF_CPU_WINDOW_SHIFT, OffCpuBurst,
    OffCpuConfig, OffCpuCounts, OffCpuLast, OffCpuTask, StackEvent, TASK_NO_USER, user_end,
};

use crate::{STACK_EVENTS, STACK_LOST, add, add32, denied, unwind};

#[map(name = "OFF_CPU_CONFIG")]
static OFF_CPU_CONFIG: Array<OffCpuConfig> = Array::with_max_entries(1, 0);

#[map(name = "OFF_CPU_PENDING")]
static OFF_CPU_PENDING: LruHashMap<u64, StackEvent> = LruHashMap::with_max_entries(OFF_CPU_PENDING_ENTRIES, 0);

#[map(name = "OFF_CPU_TASKS")]
static OFF_CPU_TASKS: LruHashMap<u64, OffCpuTask> = LruHashMap::with_max_entries(OFF_CPU_TASKS_ENTRIES, 0);

#[map(name = "OFF_CPU_COUNTS")]
static OFF_CPU_COUNTS: PerCpuArray<OffCpuCounts> = PerCpuArray::with_max_entries(1, 0);

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
    let Some(counts) = OFF_CPU_COUNTS.get_ptr_mut(0) else {
        return 0;
    };
    if let Some(last) = OFF_CPU_LAST.get_ptr_mut(0) {
        // SAFETY: this CPU's entry; programs do not nest on one CPU.
        unsafe {
            if (*last).next != 0 && (*last).next != prev && end_wait(prev, (*last).time_ns, &config, counts) {
                (*last).unseen_returns += 1;
            }
            (*last).next = next;
            (*last).time_ns = now;
        }
    }
    // `next` first: it may be the task this CPU's last block belonged to.
    end_wait(next, now, &config, counts);
    if prev_state & ASLEEP == 0 {
        return 0;
    }
    // The current task goes to sleep: note when, and take its stacks if it is picked.
    // SAFETY: this CPU's counts.
    unsafe { (*counts).blocks += 1 };
    if OFF_CPU_TASKS.get_ptr_mut(&prev).is_none() {
        let _ = OFF_CPU_TASKS.insert(&prev, &OffCpuTask::default(), BPF_NOEXIST as u64);
    }
    let Some(task) = OFF_CPU_TASKS.get_ptr_mut(&prev) else {
        return 0;
    };
    let tid = bpf_get_current_pid_tgid() as u32;
    // SAFETY: the map's value for `prev`; only this CPU's programs touch a running task's entry.
    let one_in = unsafe {
        if (*task).tid != tid {
            // A new thread in a freed thread's `task_struct`: nothing of the old one holds.
            *task = OffCpuTask { tid, ..OffCpuTask::default() };
        }
        if (*task).flags & TASK_NO_USER != 0 {
            return 0;
        }
        (*task).blocked_at = now;
        (*task).taken_one_in = 0;
        // 1 before its first wait; never rarer than the floor.
        let predicted = if (*task).predicted == 0 { 1 } else { (*task).predicted };
        core::cmp::min(predicted, config.floor.max(1)).saturating_mul(config.one_in)
    };
    if !one_in_drawn(one_in) {
        return 0;
    }
    // SAFETY: this CPU's counts.
    unsafe { (*counts).picked += 1 };
    if !within_burst(config.burst_limit) {
        return 0;
    }
    // SAFETY: as above; read by the taker, which runs next on this CPU.
    unsafe { (*task).taken_one_in = one_in };
    // SAFETY: the program array holds `loupe_off_cpu_take`, a raw tracepoint program as this
    // one; on success it does not return, on failure (not loaded yet) nothing is taken.
    unsafe { OFF_CPU_TAKE.tail_call(&ctx, OFF_CPU_TAKE_INDEX) };
    0
}

/// Takes the current task's stacks as it blocks and holds them until it runs again (reached by
/// tail call only; never attached).
#[raw_tracepoint(tracepoint = "sched_switch")]
pub fn loupe_off_cpu_take(ctx: RawTracePointContext) -> i32 {
    // SAFETY: a helper without arguments.
    let task = unsafe { bpf_get_current_task() };
    let Some(followed) = OFF_CPU_TASKS.get_ptr_mut(&task) else {
        return 0;
    };
    // SAFETY: the map's value for the current task, written by the tracepoint's program just now.
    let one_in = unsafe { (*followed).taken_one_in };
    let pid_tgid = bpf_get_current_pid_tgid();
    let pid = (pid_tgid >> 32) as u32;
    if pid == 0 || unwind::saved_user_regs().is_none() {
        // The idle task, a kernel thread: never again.
        // SAFETY: as above.
        unsafe {
            (*followed).flags |= TASK_NO_USER;
            (*followed).taken_one_in = 0;
        }
        return 0;
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
        crate::python::python_stack(pid, pid_tgid as u32, event);
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
        let _ = OFF_CPU_PENDING.insert(&task, &*event, 0);
    }
    0
}

/// True with probability `1 / n` (always for `n ≤ 1`).
#[inline(always)]
fn one_in_drawn(n: u32) -> bool {
    // SAFETY: a helper without arguments.
    n <= 1 || unsafe { bpf_get_prandom_u32() } % n == 0
}

/// 1 in how many waits `waited` ns long are kept, before the config's `one_in` (`n(w) /
/// one_in` in `OffCpuConfig`'s docs).
#[inline(always)]
fn own_one_in(waited: u64, config: &OffCpuConfig) -> u32 {
    if waited >= config.exact_ns {
        return 1;
    }
    // Below `exact_ns ≤ scale_ns`: at least 2, and at most u32::MAX however short.
    let w = if waited == 0 { 1 } else { waited };
    let n = config.scale_ns / w + u64::from(config.scale_ns % w != 0);
    if n > u32::MAX as u64 { u32::MAX } else { n as u32 }
}

/// `task` runs again (since `back` at the latest): counts its wait, sets what it predicts, and
/// sends or drops the stacks held for it. False if it was not blocked (or is not followed).
#[inline(always)]
fn end_wait(task: u64, back: u64, config: &OffCpuConfig, counts: *mut OffCpuCounts) -> bool {
    let Some(t) = OFF_CPU_TASKS.get_ptr_mut(&task) else {
        return false;
    };
    // SAFETY: the map's value for `task` (switched in or out on this CPU, so no other CPU's
    // program writes it now), and this CPU's counts.
    unsafe {
        let since = (*t).blocked_at;
        if since == 0 {
            return false;
        }
        let waited = back.saturating_sub(since);
        let own = own_one_in(waited, config);
        (*t).blocked_at = 0;
        if waited >= config.exact_ns {
            (*counts).long_waits += 1;
            (*t).long_credit = OFF_CPU_LONG_CREDIT;
            (*t).predicted = 1;
        } else {
            (*counts).short_wait_ns += waited;
            if (*t).long_credit > 0 {
                (*t).long_credit -= 1;
                (*t).predicted = 1;
            } else {
                (*t).predicted = own;
            }
        }
        let taken = (*t).taken_one_in;
        if taken != 0 {
            (*t).taken_one_in = 0;
            send_held(task, waited, taken, own.saturating_mul(config.one_in));
        }
    }
    true
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

/// The stacks held for `task`, taken 1 in `taken`, of a wait `waited` ns long that is kept 1 in
/// `wanted`: kept with probability `taken / wanted` (always if `wanted ≤ taken`) and sent
/// carrying the larger of the two, then dropped from the map.
#[inline(always)]
fn send_held(task: u64, waited: u64, taken: u32, wanted: u32) {
    let Some(held) = OFF_CPU_PENDING.get_ptr_mut(&task) else {
        return; // taken from a denied task, or the taker not loaded
    };
    // SAFETY: the map's value for `task`, read before it is removed; the ring copies it.
    unsafe {
        if (*held).flags & FLAG_UNKNOWN_MAPPING != 0 {
            unwind::ask_for_tables((*held).pid);
        }
        // Kept with probability taken / wanted: drawn below `wanted`, under `taken`.
        let kept = wanted <= taken || bpf_get_prandom_u32() % wanted < taken;
        if kept {
            (*held).off_cpu_ns = waited;
            (*held).one_in = if wanted > taken { wanted } else { taken };
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
}
