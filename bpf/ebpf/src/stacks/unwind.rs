//! The user stack from call-frame information: for each frame, find the mapping the PC is in,
//! the binary's row for it (`loupe_bpf_common::unwind`, built by userspace from `.eh_frame`),
//! and apply the row: the caller's stack pointer is the CFA, its PC the return address at
//! CFA − 8, its RBP unchanged or reloaded from where the row says it was saved.
//!
//! Why not frame pointers alone: Debian builds its packages, libc included, without them, so the
//! kernel's frame-pointer walk (`bpf_get_stack`) stopped at the first such function — no sample
//! of Debian's `python3`, `gzip` or `dash` reached its root. A mapping without a table (JIT code,
//! a binary without `.eh_frame`) is still stepped by frame pointer, and a process whose mappings
//! are not loaded yet gets the kernel's walk, marked as such.
//!
//! The walk runs in a `bpf_loop` callback, one call per frame, so the verifier checks one frame's
//! code instead of 127 unrolled copies. The mapping is one LPM-trie lookup, not a binary search
//! over the process's mappings: the verifier followed such a search branch by branch (each path
//! a different offset into the map value) past its million-instruction budget. The row search
//! (≤ 16 halvings of a 64 KiB page) is a bounded loop over array lookups whose indices come
//! from the map, which the verifier does not need to follow value by value.

use core::ffi::c_void;

use aya_ebpf::{
    bindings::{BPF_RB_FORCE_WAKEUP, bpf_perf_event_data, pt_regs},
    helpers::{
        bpf_ktime_get_ns,
        generated::{bpf_get_current_task_btf, bpf_loop, bpf_probe_read_kernel, bpf_probe_read_user, bpf_task_pt_regs},
    },
    macros::{map, raw_tracepoint},
    maps::{Array, LpmTrie, LruHashMap, PerCpuArray, RingBuf, lpm_trie::Key},
    programs::RawTracePointContext,
};
use loupe_bpf_common::{
    stacks::{FLAG_UNKNOWN_MAPPING, MAX_USER_FRAMES, StackEvent, user_end},
    unwind::{
        Mapping, MappingKey, PAGE_BITS, PageInfo, ROW_CFA_RBP, ROW_CFA_RSP, ROW_INVALID, ROW_PLT, ROW_SIGNAL, ROW_STOP,
        ROWS_NO_ROOM, SIGNAL_MCONTEXT_OFFSET, UnwindRow, WANTED_AT_EXEC, WANTED_PY_THREADS,
    },
};

/// `BPF_F_MMAPABLE`: userspace writes a binary's rows straight into the array's memory.
const MMAPABLE: u32 = 1 << 10;

/// Sized by userspace at load (the unwind-table memory bound); these are the object's defaults.
#[map(name = "UNWIND_ROWS")]
static UNWIND_ROWS: Array<UnwindRow> = Array::with_max_entries(1 << 16, MMAPABLE);

#[map(name = "UNWIND_PAGES")]
static UNWIND_PAGES: Array<PageInfo> = Array::with_max_entries(1 << 12, MMAPABLE);

/// (PID, address) → the mapping holding it; ~20 prefixes per mapping, 5 mappings for python3.
#[map(name = "UNWIND_MAPPINGS")]
static UNWIND_MAPPINGS: LpmTrie<MappingKey, Mapping> = LpmTrie::with_max_entries(1 << 18, 0);

/// PIDs whose tables are wanted (not loaded, or a PC in no known mapping): userspace's loader
/// thread waits on this, so a new process is unwound from its tables within milliseconds
/// whatever the sample reader is busy with.
#[map(name = "UNWIND_WANTED")]
static UNWIND_WANTED: RingBuf = RingBuf::with_byte_size(64 << 10, 0);

/// When each PID was last asked for, so a process is asked for at most every
/// [`ASK_EVERY_NS`] however fast it is sampled.
#[map(name = "UNWIND_ASKED")]
static UNWIND_ASKED: LruHashMap<u32, u64> = LruHashMap::with_max_entries(4096, 0);

const ASK_EVERY_NS: u64 = 100_000_000;

/// Asks userspace for `pid`'s tables (at most every 100 ms per PID).
#[inline(always)]
pub fn ask_for_tables(pid: u32) {
    // SAFETY: plain-value lookups and updates; the ring copies the PID.
    unsafe {
        let now = bpf_ktime_get_ns();
        if let Some(&asked) = UNWIND_ASKED.get(&pid)
            && now.wrapping_sub(asked) < ASK_EVERY_NS
        {
            return;
        }
        let _ = UNWIND_ASKED.insert(&pid, &now, 0);
    }
    let _ = UNWIND_WANTED.output::<u32>(&pid, BPF_RB_FORCE_WAKEUP as u64);
}

/// Asks userspace to read a CPython process's threads again: thread `tid` is not known yet
/// (at most every 10 ms per thread: a thread started while sampled is named from its second
/// sample or so, not after a drain).
#[inline(always)]
pub fn ask_for_python_threads(pid: u32, tid: u32) {
    // Threads share the map with processes: a thread's key is its TID with the flag set, which
    // no PID has.
    let key = tid | WANTED_PY_THREADS;
    // SAFETY: plain-value lookups and updates; the ring copies the PID.
    unsafe {
        let now = bpf_ktime_get_ns();
        if let Some(&asked) = UNWIND_ASKED.get(&key)
            && now.wrapping_sub(asked) < ASK_EVERY_NS / 10
        {
            return;
        }
        let _ = UNWIND_ASKED.insert(&key, &now, 0);
    }
    let _ = UNWIND_WANTED.output::<u32>(&(pid | WANTED_PY_THREADS), BPF_RB_FORCE_WAKEUP as u64);
}

/// A process starting a new program (`sched_process_exec`, in the exec'ing task): its tables
/// are asked for now, not at its first sample, which would be taken without them. Not rate
/// limited (an exec is a new image) and marked [`WANTED_AT_EXEC`]; a denied process is not
/// asked for, as it is never sampled.
#[raw_tracepoint(tracepoint = "sched_process_exec")]
pub fn loupe_exec(_ctx: RawTracePointContext) -> i32 {
    let pid = (aya_ebpf::helpers::bpf_get_current_pid_tgid() >> 32) as u32;
    let comm = aya_ebpf::helpers::bpf_get_current_comm().unwrap_or([0; 16]);
    if crate::denied(pid, &comm) {
        return 0;
    }
    let _ = UNWIND_WANTED.output::<u32>(&(pid | WANTED_AT_EXEC), 0);
    0
}

/// The sample being built: a `StackEvent` is too big for the 512-byte stack, and the frame
/// callback reaches it here rather than through a pointer the verifier would have to follow.
#[map(name = "STACK_SCRATCH")]
pub static STACK_SCRATCH: PerCpuArray<StackEvent> = PerCpuArray::with_max_entries(1, 0);

/// The registers of the frame being unwound, and how the walk is going.
#[repr(C)]
struct Walk {
    pc: u64,
    sp: u64,
    bp: u64,
    pid: u32,
    /// The PC is where the thread was stopped (the first frame, or one a signal interrupted),
    /// not a return address: a return address is looked up one byte back, in the call.
    exact: u32,
    end: u8,
    flags: u8,
    _pad: [u8; 6],
}

/// Where the walk's first registers come from.
#[derive(Clone, Copy)]
pub enum RegsFrom {
    /// A perf-event program's context: its own registers when the sample interrupted user code,
    /// else the ones saved on entry to the kernel.
    Perf(*mut c_void),
    /// The ones saved when the current task entered the kernel: a task switching out.
    Saved,
}

/// Unwinds the current task's user stack into `event.user`, setting `user_frames` and
/// `user_end`. Returns false when the process's mappings are not loaded (the caller then
/// takes the kernel's frame-pointer walk).
///
/// # Safety
/// A `RegsFrom::Perf` context is the perf-event program's; `event` is this CPU's scratch event.
#[inline(always)]
pub unsafe fn user_stack(from: RegsFrom, pid: u32, event: *mut StackEvent) -> bool {
    // Every known process has its PID alone as a prefix (no mapping holds address 0).
    if mapping_of(pid, 0).is_none() {
        return false;
    }
    let Some(regs) = (unsafe { user_regs(from) }) else {
        // SAFETY: `event` is this CPU's scratch event.
        unsafe {
            (*event).user_frames = 0;
            (*event).user_end = user_end::NONE;
        }
        return true;
    };
    let mut walk =
        Walk { pc: regs.rip, sp: regs.rsp, bp: regs.rbp, pid, exact: 1, end: user_end::DEPTH, flags: 0, _pad: [0; 6] };
    // SAFETY: `event` is this CPU's scratch event; the callback only writes inside `user`.
    unsafe {
        (*event).user_frames = 0;
        bpf_loop(MAX_USER_FRAMES as u32, frame as *mut c_void, (&mut walk as *mut Walk).cast(), 0);
        (*event).user_end = walk.end;
        if walk.flags != 0 {
            (*event).flags |= FLAG_UNKNOWN_MAPPING;
        }
    }
    true
}

/// The user registers at the sample: the perf context's own when it interrupted user code,
/// else (in a system call or an interrupt) the ones saved on entry to the kernel.
#[inline(always)]
unsafe fn user_regs(from: RegsFrom) -> Option<pt_regs> {
    if let RegsFrom::Perf(ctx) = from {
        // SAFETY: a perf-event program's context is a `bpf_perf_event_data`.
        let here = unsafe { &(*(ctx as *const bpf_perf_event_data)).regs };
        if here.cs & 3 == 3 {
            return Some(*here);
        }
    }
    saved_user_regs()
}

/// The user registers the current task saved on entry to the kernel; `None` for a kernel thread.
#[inline(always)]
pub fn saved_user_regs() -> Option<pt_regs> {
    // SAFETY: the helpers take the current task; the saved registers are read with a checked copy.
    unsafe {
        let saved = bpf_task_pt_regs(bpf_get_current_task_btf()) as *const c_void;
        if saved.is_null() {
            return None;
        }
        let mut regs = core::mem::zeroed::<pt_regs>();
        if bpf_probe_read_kernel((&mut regs as *mut pt_regs).cast(), size_of::<pt_regs>() as u32, saved) != 0 {
            return None;
        }
        // A kernel thread has no user registers.
        if regs.cs & 3 != 3 || regs.rip == 0 { None } else { Some(regs) }
    }
}

/// One frame: record the PC, then step to the caller. Returns 1 to stop the loop.
extern "C" fn frame(_index: u64, ctx: *mut c_void) -> i64 {
    // SAFETY: `ctx` is the `Walk` on `user_stack`'s stack.
    let walk = unsafe { &mut *(ctx as *mut Walk) };
    let Some(event) = STACK_SCRATCH.get_ptr_mut(0) else {
        return 1;
    };
    // SAFETY: this CPU's scratch event; the index is checked against the array's length.
    unsafe {
        let n = (*event).user_frames as usize;
        if n >= MAX_USER_FRAMES {
            walk.end = user_end::DEPTH;
            return 1;
        }
        (*event).user[n] = walk.pc;
        (*event).user_frames = n as u32 + 1;
    }
    match step(walk) {
        Ok(()) => 0,
        Err(end) => {
            walk.end = end;
            1
        }
    }
}

/// Moves `walk` to the caller's frame, or says how the stack ended.
#[inline(always)]
fn step(walk: &mut Walk) -> Result<(), u8> {
    let lookup = if walk.exact != 0 { walk.pc } else { walk.pc.wrapping_sub(1) };
    // The PID's own entry (start = end = 0) answers for an address in no mapping.
    // Code lives in executable mappings, JIT code included (they are in the trie without a
    // table): a PC outside all of them means the mappings changed since they were read, or the
    // return address that led here was wrong. Either way nothing past it can be trusted.
    let Some(mapping) = mapping_of(walk.pid, lookup).filter(|m| m.start <= lookup && lookup < m.end) else {
        walk.flags = 1;
        return Err(user_end::NO_MAPPING);
    };
    if mapping.page_count == 0 {
        if mapping.rows_base == ROWS_NO_ROOM {
            return Err(user_end::NO_ROOM);
        }
        return frame_pointer_step(walk);
    }
    let row = row_of(&mapping, lookup.wrapping_sub(mapping.bias))?;
    let cfa = match row.kind {
        ROW_CFA_RSP => walk.sp.wrapping_add(8 * row.cfa_off8 as u64),
        ROW_CFA_RBP => walk.bp.wrapping_add(8 * row.cfa_off8 as u64),
        ROW_PLT => walk.sp.wrapping_add(if walk.pc & 15 >= row.cfa_off8 as u64 { 16 } else { 8 }),
        ROW_SIGNAL => return signal_step(walk),
        ROW_STOP => return Err(user_end::ROOT),
        ROW_INVALID => return Err(user_end::NO_ROW),
        _ => return Err(user_end::UNSUPPORTED),
    };
    if cfa <= walk.sp {
        return Err(user_end::BAD_FRAME);
    }
    let ra = read_user(cfa.wrapping_sub(8))?;
    if row.rbp_off8 != 0 {
        walk.bp = read_user(cfa.wrapping_add((8 * row.rbp_off8 as i64) as u64))?;
    }
    if ra == 0 {
        return Err(user_end::BAD_FRAME);
    }
    walk.pc = ra;
    walk.sp = cfa;
    walk.exact = 0;
    Ok(())
}

/// The classic step, for code without a table: RBP points at the saved RBP, the return address
/// above it. A zero RBP is the end of the chain (`_start` clears it).
#[inline(always)]
fn frame_pointer_step(walk: &mut Walk) -> Result<(), u8> {
    if walk.bp == 0 {
        return Err(user_end::ROOT);
    }
    if walk.bp < walk.sp {
        return Err(user_end::BAD_FRAME);
    }
    let ra = read_user(walk.bp.wrapping_add(8))?;
    let bp = read_user(walk.bp)?;
    if ra == 0 {
        return Err(user_end::BAD_FRAME);
    }
    walk.sp = walk.bp.wrapping_add(16);
    walk.bp = bp;
    walk.pc = ra;
    walk.exact = 0;
    Ok(())
}

/// A signal trampoline: the interrupted registers are in the `ucontext` the kernel pushed.
#[inline(always)]
fn signal_step(walk: &mut Walk) -> Result<(), u8> {
    let gregs = walk.sp.wrapping_add(SIGNAL_MCONTEXT_OFFSET);
    let bp = read_user(gregs + 8 * 10)?;
    let sp = read_user(gregs + 8 * 15)?;
    let pc = read_user(gregs + 8 * 16)?;
    if pc == 0 {
        return Err(user_end::BAD_FRAME);
    }
    (walk.pc, walk.sp, walk.bp, walk.exact) = (pc, sp, bp, 1);
    Ok(())
}

/// The mapping holding `pc` in the process: one trie lookup.
#[inline(always)]
fn mapping_of(pid: u32, pc: u64) -> Option<Mapping> {
    let mut data = [0u8; 12];
    data[..4].copy_from_slice(&pid.to_be_bytes());
    data[4..].copy_from_slice(&pc.to_be_bytes());
    UNWIND_MAPPINGS.get(Key::new(96, data)).copied()
}

/// A binary search between rows `lo` and `hi` (of the table at `base`) for the first row whose
/// `pc_low` is past `low`: one halving per call of [`halve`].
#[repr(C)]
struct Search {
    base: u32,
    lo: u32,
    hi: u32,
    low: u16,
    /// A row index the array does not hold (a damaged page): no row.
    missing: u16,
}

/// One halving of a [`Search`]. Returns 1 to stop the loop.
///
/// The halvings are a `bpf_loop` of their own rather than a 17-step loop inside the frame
/// callback: the verifier checks a loop callback until its states converge, whereas it walked
/// the unrolled steps with the loop counter known, state by state, and the frame callback sat
/// at the 1M-instruction limit (a second program reusing the walk went over).
extern "C" fn halve(_index: u64, ctx: *mut c_void) -> i64 {
    // SAFETY: `ctx` is the `Search` on `row_of`'s stack.
    let search = unsafe { &mut *(ctx as *mut Search) };
    if search.lo >= search.hi {
        return 1;
    }
    let mid = search.lo + (search.hi - search.lo) / 2;
    let Some(row) = UNWIND_ROWS.get(search.base.wrapping_add(mid)) else {
        search.missing = 1;
        return 1;
    };
    if row.pc_low <= search.low {
        search.lo = mid + 1;
    } else {
        search.hi = mid;
    }
    0
}

/// The row covering ELF address `addr` in `mapping`'s table: its 64 KiB page, then the last row
/// of the page starting at or before `addr` (≤ 17 halvings), or the row before the page's first
/// when the page's own rows start later.
#[inline(always)]
fn row_of(mapping: &Mapping, addr: u64) -> Result<UnwindRow, u8> {
    let page = addr >> PAGE_BITS;
    let index = page.wrapping_sub(mapping.first_page as u64);
    if page < mapping.first_page as u64 || index >= mapping.page_count as u64 {
        return Err(user_end::NO_ROW);
    }
    let info = UNWIND_PAGES.get(mapping.pages_base.wrapping_add(index as u32)).ok_or(user_end::NO_ROW)?;
    let mut search = Search {
        base: mapping.rows_base,
        lo: info.first,
        hi: info.first.wrapping_add(info.count),
        low: addr as u16,
        missing: 0,
    };
    // SAFETY: the callback only reads the array and writes `search`, which outlives the loop.
    unsafe { bpf_loop(17, halve as *mut c_void, (&mut search as *mut Search).cast(), 0) };
    if search.missing != 0 {
        return Err(user_end::NO_ROW);
    }
    // `lo` is the first row past `addr`; the one before it covers `addr`. Before the table's
    // first row there is none.
    let index = search.lo.checked_sub(1).ok_or(user_end::NO_ROW)?;
    UNWIND_ROWS.get(mapping.rows_base.wrapping_add(index)).copied().ok_or(user_end::NO_ROW)
}

/// Eight bytes of the user stack.
#[inline(always)]
fn read_user(addr: u64) -> Result<u64, u8> {
    let mut value = 0u64;
    // SAFETY: a checked copy from user memory into a local.
    let ok = unsafe { bpf_probe_read_user((&mut value as *mut u64).cast(), 8, addr as *const c_void) } == 0;
    if ok { Ok(value) } else { Err(user_end::UNREADABLE) }
}
