//! The stack sampler's contract: the record each CPU-clock sample sends to userspace, the deny
//! list maps, and their names.

/// Ring buffer of [`StackEvent`]s.
pub const MAP_STACK_EVENTS: &str = "STACK_EVENTS";
/// Per-CPU `u64`: samples that found the ring buffer full.
pub const MAP_STACK_LOST: &str = "STACK_LOST";
/// `[u8; 16]` comm (NUL-padded, as the kernel keeps it) → 1: never sampled.
pub const MAP_DENY_COMMS: &str = "DENY_COMMS";
/// `u32` PID (thread group id) → 1: never sampled.
pub const MAP_DENY_PIDS: &str = "DENY_PIDS";
/// `u64` cgroup v2 id → 1: nothing in this cgroup or below it is sampled.
pub const MAP_DENY_CGROUPS: &str = "DENY_CGROUPS";
/// The perf-event program.
pub const PROG_STACKS: &str = "loupe_stacks";
/// The off-CPU program: a raw tracepoint on `sched_switch`.
pub const PROG_OFF_CPU: &str = "loupe_off_cpu";
/// What it tail-calls to take a blocking thread's stacks (never attached itself).
pub const PROG_OFF_CPU_TAKE: &str = "loupe_off_cpu_take";
/// Program array holding [`PROG_OFF_CPU_TAKE`] at [`OFF_CPU_TAKE_INDEX`].
pub const MAP_OFF_CPU_TAKE: &str = "OFF_CPU_TAKE";
pub const OFF_CPU_TAKE_INDEX: u32 = 0;
/// The raw tracepoint it attaches to.
pub const OFF_CPU_TRACEPOINT: &str = "sched_switch";
/// Array of one [`OffCpuConfig`], written by userspace.
pub const MAP_OFF_CPU_CONFIG: &str = "OFF_CPU_CONFIG";
/// Task (its `task_struct` address) → the [`StackEvent`] taken as it blocked, until it runs again.
pub const MAP_OFF_CPU_PENDING: &str = "OFF_CPU_PENDING";
/// Per-CPU [`OffCpuCounts`]: the blocks and waits seen (sampled or not), for userspace to set
/// the sampling each second.
pub const MAP_OFF_CPU_COUNTS: &str = "OFF_CPU_COUNTS";
/// Task (its `task_struct` address) → [`OffCpuTask`]: when it blocked, and what its last waits
/// say about its next one.
pub const MAP_OFF_CPU_TASKS: &str = "OFF_CPU_TASKS";
/// One [`OffCpuBurst`] for all CPUs: the takes of the current window, and the blocks bursts
/// skipped.
pub const MAP_OFF_CPU_BURST: &str = "OFF_CPU_BURST";
/// Per-CPU [`OffCpuLast`]: the continuity check that catches a switch the tracepoint did not
/// report.
pub const MAP_OFF_CPU_LAST: &str = "OFF_CPU_LAST";
/// The burst guard's window: `bpf_ktime_get_ns() >> OFF_CPU_WINDOW_SHIFT` (~134 ms).
pub const OFF_CPU_WINDOW_SHIFT: u32 = 27;
/// Threads blocked at once whose stacks are held (an LRU: the oldest are dropped past it).
pub const OFF_CPU_PENDING_ENTRIES: u32 = 4096;
/// Threads whose waits are followed ([`MAP_OFF_CPU_TASKS`], an LRU: the least recently switched
/// are forgotten past it, and a wait of a forgotten thread is not counted).
pub const OFF_CPU_TASKS_ENTRIES: u32 = 16_384;
/// After a wait at least [`OffCpuConfig::exact_ns`] long, this many of the thread's next blocks
/// are taken whatever their own length predicts: a long wait between a few short ones (a worker
/// that waits for work, then briefly on locks) is then taken every time.
pub const OFF_CPU_LONG_CREDIT: u32 = 8;

/// Deepest kernel stack recorded (frames past it are cut off, the leaf side kept).
pub const MAX_KERNEL_FRAMES: usize = 64;
/// Deepest user stack recorded.
pub const MAX_USER_FRAMES: usize = 127;
/// Cgroup levels checked against the deny list (a deeper cgroup is checked up to this depth).
pub const MAX_CGROUP_LEVELS: u32 = 16;

/// `StackEvent::flags`: the CPU was idle (the swapper task, PID 0).
pub const FLAG_IDLE: u32 = 1;
/// `StackEvent::flags`: the sample interrupted kernel code.
pub const FLAG_IN_KERNEL: u32 = 2;

/// `StackEvent::flags`: an off-CPU sample: the stacks of a thread as it blocked, sent when it
/// ran again, weighted by [`StackEvent::off_cpu_ns`].
pub const FLAG_OFF_CPU: u32 = 8;
/// `StackEvent::flags`: a user PC fell in no mapping the unwinder knows (a library loaded or a
/// process exec'd since its mappings were read): userspace reads them again.
pub const FLAG_UNKNOWN_MAPPING: u32 = 4;

/// How the user stack ended (`StackEvent::user_end`).
pub mod user_end {
    /// Walked by the kernel's frame-pointer walker (`bpf_get_stack`): the process's mappings were
    /// not loaded yet. Whether it reached the root is not known.
    pub const FRAME_POINTERS: u8 = 0;
    /// Reached the outermost frame (`_start`, a thread's entry): the stack is whole.
    pub const ROOT: u8 = 1;
    /// [`super::MAX_USER_FRAMES`] frames were recorded before the root.
    pub const DEPTH: u8 = 2;
    /// A PC no call-frame information covers.
    pub const NO_ROW: u8 = 3;
    /// A rule the unwinder does not evaluate (longjmp's, a CFA in a general register).
    pub const UNSUPPORTED: u8 = 4;
    /// The stack could not be read (a page not present, a bad pointer).
    pub const UNREADABLE: u8 = 5;
    /// A frame that cannot be right: a zero return address, or a CFA not above the stack pointer.
    pub const BAD_FRAME: u8 = 6;
    /// No user stack: a kernel thread, or the idle task.
    pub const NONE: u8 = 7;
    /// A PC in no executable mapping the unwinder knows: the process exec'd or loaded a library
    /// since its mappings were read (they are read again), or a return address was wrong.
    pub const NO_MAPPING: u8 = 8;
    /// A PC in a binary whose table found no room in the table memory (`--unwind-memory-mib`).
    pub const NO_ROOM: u8 = 9;
    /// How many ends there are.
    pub const COUNT: usize = 10;
}

/// One sample, as the kernel writes it into the ring buffer.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct StackEvent {
    /// `bpf_ktime_get_ns` (`CLOCK_MONOTONIC`) when the sample fired.
    pub time_ns: u64,
    pub cgroup_id: u64,
    pub cpu: u32,
    /// Thread group id (what userspace calls the PID).
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    pub flags: u32,
    /// Frames in `kernel` and `user` (0 when that stack was not available).
    pub kernel_frames: u32,
    pub user_frames: u32,
    /// How the user stack ended: one of [`user_end`].
    pub user_end: u8,
    pub _pad: [u8; 3],
    /// Off-CPU: blocks were sampled 1 in this many (so this one stands for that many); 0 on CPU.
    pub one_in: u32,
    /// Off-CPU: how long the thread stayed off the CPU, in ns; 0 on CPU.
    pub off_cpu_ns: u64,
    pub comm: [u8; 16],
    /// Instruction pointers, leaf first.
    pub kernel: [u64; MAX_KERNEL_FRAMES],
    pub user: [u64; MAX_USER_FRAMES],
    /// Frames in `python`.
    pub py_frames: u32,
    /// How the Python walk ended: one of [`crate::python::py_end`].
    pub py_end: u8,
    /// The CPython version's minor number (3.x) of a Python walk.
    pub py_minor: u8,
    pub _pad2: [u8; 2],
    /// The interpreter's frames of a CPython thread, innermost first.
    pub python: [crate::python::PyFrame; crate::python::MAX_PY_FRAMES],
}

/// What the off-CPU program does, set by userspace (once a second, as the host's waits change).
///
/// Which waits are sent, and what each stands for (the estimator; docs/stacks.md says it with
/// its error): a wait of `w` ns is kept with probability `1 / n(w)` and sent with `one_in =
/// n(w)`, so that summed `w × one_in` is an unbiased estimate of the time waited, where `n(w) =
/// one_in` for `w ≥ exact_ns` (exact while `one_in` is 1) and `one_in × ⌈scale_ns / w⌉` below it
/// (each kept short wait stands for about `scale_ns`). The stacks must be taken as the thread
/// blocks, before `w` is known: each block is taken with probability `1 / n'`, `n'` from the
/// thread's last waits ([`OffCpuTask::predicted`], at most `floor`), and kept when it ends with
/// probability `n' / n(w)` (always if `n(w) ≤ n'`); a kept wait carries `max(n', n(w))`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OffCpuConfig {
    /// Waits this long or longer are all kept (while `one_in` is 1), each standing for itself.
    pub exact_ns: u64,
    /// Shorter waits are kept 1 in `⌈scale_ns / w⌉`; at least `exact_ns`.
    pub scale_ns: u64,
    /// Every wait is also kept only 1 in this many (0: off; 1 unless the long waits alone
    /// exceed the bound).
    pub one_in: u32,
    /// A block is taken at least 1 in this many, whatever its thread's last waits predict
    /// (before `one_in`): what bounds the takes that turn out too short to send.
    pub floor: u32,
    /// Stacks all CPUs may take in one window (`OFF_CPU_WINDOW_SHIFT`) at most, whatever the
    /// rest says: the guard between a burst of blocks and the next adjustment (a second
    /// later), which would otherwise fill the ring and lose CPU samples with it.
    pub burst_limit: u32,
    pub _pad: u32,
}

/// What the off-CPU program follows of one thread ([`MAP_OFF_CPU_TASKS`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OffCpuTask {
    /// When it blocked (`bpf_ktime_get_ns`); 0 while it runs.
    pub blocked_at: u64,
    /// Its stacks were taken as it blocked, 1 in this many; 0: not taken.
    pub taken_one_in: u32,
    /// Take its next block 1 in this many (before the config's `one_in` and `floor`): `n(w)` of
    /// its last wait, 1 while it has [`OFF_CPU_LONG_CREDIT`] left; 0 before its first wait.
    pub predicted: u32,
    /// Blocks still taken whatever they predict, since its last long wait.
    pub long_credit: u32,
    /// [`TASK_NO_USER`].
    pub flags: u32,
    /// The thread's id: a `task_struct` freed and given to a new thread finds its old entry
    /// under the same address, and must not take its predictions (nor its kernel-thread mark).
    pub tid: u32,
    pub _pad: u32,
}

/// `OffCpuTask::flags`: a kernel thread (no user registers): its blocks are never taken or
/// counted.
pub const TASK_NO_USER: u32 = 1;

/// Per-CPU counts of what the off-CPU program saw ([`MAP_OFF_CPU_COUNTS`]), since the start.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OffCpuCounts {
    /// Threads seen blocking (kernel threads included).
    pub blocks: u64,
    /// Waits that ended at least `exact_ns` long (user threads, taken or not).
    pub long_waits: u64,
    /// The time of the shorter ones, in ns.
    pub short_wait_ns: u64,
    /// Blocks picked for their stacks (before the burst guard).
    pub picked: u64,
}

/// What each CPU's off-CPU program last saw (`MAP_OFF_CPU_LAST`, one per CPU): the task it
/// reported switched in, when, and how many of the CPU's switches went unreported since the start.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OffCpuLast {
    /// `task_struct` address of the last `next` reported on this CPU (0 before the first).
    pub next: u64,
    /// When that switch was reported (`bpf_ktime_get_ns`).
    pub time_ns: u64,
    /// Waits of tasks that came back onto this CPU through a switch the tracepoint did not
    /// report: ended at `time_ns` of the last one it did (a lower bound; a held one is sent so).
    pub unseen_returns: u64,
}

/// The burst guard (`MAP_OFF_CPU_BURST`), shared by the CPUs: counted with atomic adds, the
/// window reset with plain stores. CPUs that race past the limit together overshoot it by at
/// most one take each — a guard, not an exact count.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OffCpuBurst {
    /// The window `takes` counts in.
    pub window: u64,
    /// Blocks picked by `one_in` but not taken: their window's stacks were all taken.
    pub skipped: u64,
    pub takes: u32,
    pub _pad: u32,
}
