//! CPython's own frames: at a sample of a thread of a process running CPython, the chain of the
//! interpreter's frames from the thread's `PyThreadState`, innermost first — each frame's code
//! object and instruction, which userspace names and places in the native stack.
//!
//! Why walk them: the native stack of a Python program is `_PyEval_EvalFrameDefault` under
//! `_PyEval_EvalFrameDefault`; the program's functions exist only in the interpreter's frames.
//! Debian's `python3.11` had 0 % of its samples named by the Python function before, py-spy 100 %.
//!
//! Where the thread's state is: userspace reads the interpreter's list of threads and fills
//! `PY_THREADS` (thread id → `PyThreadState`). A thread not in it yet ends its walk
//! `UNKNOWN_THREAD` and asks userspace, through the unwinder's ring, to read the list again. Everything version-specific
//! is an offset in the process's `PyProcess`; nothing here knows a CPython version.
//!
//! The walk is a `bpf_loop` callback, one call per frame, as the native unwinder's: the
//! verifier checks one frame's code. Each frame is one read of its first `frame_window` bytes
//! (the fields the walk needs lie there) and one of its code object's first line through its
//! name, so that a code object freed and another made at the same address is told apart by
//! userspace.

use core::ffi::c_void;

use aya_ebpf::{
    helpers::generated::{bpf_loop, bpf_probe_read_user},
    macros::map,
    maps::{HashMap, LruHashMap, PerCpuArray},
};
use loupe_bpf_common::{
    python::{
        MAX_PY_FRAMES, PY_CODE_WINDOW, PY_FRAME_ENTRY, PY_FRAME_WINDOW, PY_NO_FIELD, PY_PROCS_ENTRIES,
        PY_THREADS_ENTRIES, PyFrame, PyProcess, code_identity, py_end, py_entry, py_layout,
    },
    stacks::StackEvent,
};

use crate::unwind::STACK_SCRATCH;

#[map(name = "PY_PROCS")]
static PY_PROCS: HashMap<u32, PyProcess> = HashMap::with_max_entries(PY_PROCS_ENTRIES, 0);

#[map(name = "PY_THREADS")]
static PY_THREADS: LruHashMap<u64, u64> = LruHashMap::with_max_entries(PY_THREADS_ENTRIES, 0);

/// The frame being read: too big for the callback's share of the 512-byte stack.
#[map(name = "PY_FRAME_BYTES")]
static PY_FRAME_BYTES: PerCpuArray<[u8; PY_FRAME_WINDOW]> = PerCpuArray::with_max_entries(1, 0);

/// Its code object's first line through its name.
#[map(name = "PY_CODE_BYTES")]
static PY_CODE_BYTES: PerCpuArray<[u8; PY_CODE_WINDOW]> = PerCpuArray::with_max_entries(1, 0);

/// The walk's state, on `python_stack`'s stack.
#[repr(C)]
struct PyWalk {
    /// The next frame to record (0: the walk is done).
    frame: u64,
    process: PyProcess,
    end: u8,
    _pad: [u8; 7],
}

/// Walks the current thread's Python frames into `event.python`, setting `py_frames` and
/// `py_end` (`NONE` for a process not running CPython).
///
/// # Safety
/// `event` is this CPU's scratch event.
#[inline(always)]
pub unsafe fn python_stack(pid: u32, tid: u32, event: *mut StackEvent) {
    // SAFETY: this CPU's scratch event.
    unsafe {
        (*event).py_frames = 0;
        (*event).py_end = py_end::NONE;
        (*event).py_minor = 0;
    }
    // SAFETY: a read of a plain value.
    let Some(process) = (unsafe { PY_PROCS.get(&pid) }).copied() else {
        return;
    };
    // SAFETY: this CPU's scratch event.
    unsafe { (*event).py_minor = process.minor as u8 };
    let end = match first_frame(&process, pid, tid) {
        Ok(0) => py_end::IDLE,
        Ok(frame) => {
            let mut walk = PyWalk { frame, process, end: py_end::DEPTH, _pad: [0; 7] };
            // Twice the frames: 3.12+ puts a frame of the C stack between the calls of the
            // evaluation loop, which is read but not recorded.
            // SAFETY: the callback reaches the event through the scratch map, the walk through
            // its context pointer, live for the call.
            unsafe {
                bpf_loop(2 * MAX_PY_FRAMES as u32, py_frame as *mut c_void, (&mut walk as *mut PyWalk).cast(), 0)
            };
            walk.end
        }
        Err(end) => end,
    };
    // SAFETY: this CPU's scratch event.
    unsafe { (*event).py_end = end };
}

/// The thread's current frame (0 if it runs no Python code now).
#[inline(always)]
fn first_frame(process: &PyProcess, pid: u32, tid: u32) -> Result<u64, u8> {
    let key = (u64::from(pid) << 32) | u64::from(tid);
    // SAFETY: a read of a plain value.
    let Some(&thread) = (unsafe { PY_THREADS.get(&key) }) else {
        crate::unwind::ask_for_python_threads(pid, tid);
        return Err(py_end::UNKNOWN_THREAD);
    };
    // The state must be this thread's: a thread id reused by a new thread, or a state freed
    // and made again for another, would walk someone else's frames.
    let owner = if process.thread_native_id != PY_NO_FIELD {
        read_u64(thread.wrapping_add(u64::from(process.thread_native_id)))?
    } else {
        let pthread = read_u64(thread.wrapping_add(u64::from(process.thread_pthread)))?;
        u64::from(read_u32(pthread.wrapping_add(u64::from(process.pthread_tid))).ok_or(py_end::UNREADABLE)?)
    };
    if owner != u64::from(tid) {
        // Forgotten: userspace reads the interpreter's threads again and gives the right one.
        let _ = PY_THREADS.remove(&key);
        crate::unwind::ask_for_python_threads(pid, tid);
        return Err(py_end::UNKNOWN_THREAD);
    }
    let frame = read_u64(thread.wrapping_add(u64::from(process.thread_frame)))?;
    if process.cframe_frame == PY_NO_FIELD || frame == 0 {
        return Ok(frame);
    }
    read_u64(frame.wrapping_add(u64::from(process.cframe_frame)))
}

/// One frame: read it, record its code and instruction (unless it is the C stack's), step to
/// its caller. Returns 1 to stop.
extern "C" fn py_frame(_index: u64, ctx: *mut c_void) -> i64 {
    // SAFETY: `ctx` is the `PyWalk` on `python_stack`'s stack.
    let walk = unsafe { &mut *(ctx as *mut PyWalk) };
    if walk.frame == 0 {
        walk.end = py_end::ROOT;
        return 1;
    }
    let (Some(event), Some(bytes)) = (STACK_SCRATCH.get_ptr_mut(0), PY_FRAME_BYTES.get_ptr_mut(0)) else {
        return 1;
    };
    let p = &walk.process;
    let Some(window) = read_size(u64::from(p.frame_window), PY_FRAME_WINDOW) else {
        walk.end = py_end::UNREADABLE;
        return 1;
    };
    // SAFETY: reads at most the buffer's size into this CPU's buffer; a failed read is an end.
    if unsafe { bpf_probe_read_user(bytes.cast(), window, walk.frame as *const c_void) } != 0 {
        walk.end = py_end::UNREADABLE;
        return 1;
    }
    // SAFETY: this CPU's buffer, just filled.
    let bytes = unsafe { &*bytes };
    let (Some(code), Some(previous)) = (field_u64(bytes, p.frame_code), field_u64(bytes, p.frame_previous)) else {
        walk.end = py_end::UNREADABLE;
        return 1;
    };
    let owner = if p.frame_entry == PY_NO_FIELD { 0 } else { field_u8(bytes, p.frame_entry).unwrap_or(0) };
    // SAFETY: this CPU's scratch event; indices are checked against the array's length.
    unsafe {
        let n = (*event).py_frames as usize;
        if p.entry == py_entry::C_STACK_FRAME && u32::from(owner) == p.c_stack_owner {
            // Not a Python frame: the one above it began a call of the evaluation loop.
            // Checked and indexed as one value: LLVM checked `n - 1` in a copy and indexed
            // with `n`, and the verifier refused the unbounded index.
            let last = core::hint::black_box(n.wrapping_sub(1));
            if last < MAX_PY_FRAMES {
                (*event).python[last].instr |= PY_FRAME_ENTRY;
            }
            walk.frame = previous;
            return 0;
        }
        if n >= MAX_PY_FRAMES {
            walk.end = py_end::DEPTH;
            return 1;
        }
        if code == 0 {
            walk.end = py_end::UNREADABLE;
            return 1;
        }
        let instr = if p.layout == py_layout::FRAME_OBJECTS {
            field_u32(bytes, p.frame_instr).unwrap_or(0)
        } else {
            field_u64(bytes, p.frame_instr).unwrap_or(0).wrapping_sub(code) as u32
        };
        let entry = match p.entry {
            py_entry::EVERY_FRAME => true,
            py_entry::FLAG => owner != 0,
            _ => false,
        };
        (*event).python[n] = PyFrame {
            code,
            instr: (instr & !PY_FRAME_ENTRY) | if entry { PY_FRAME_ENTRY } else { 0 },
            identity: identity(p, code),
        };
        (*event).py_frames = n as u32 + 1;
    }
    walk.frame = previous;
    0
}

/// A read's size, `1..max` (`max` a power of two, the buffer's size), in the form every
/// verifier accepts as a helper's size: checked, then masked, so the register passed is known
/// unsigned and below the buffer's size — Linux 6.1 refused the walk ("R2 min value is
/// negative") when the size was only compared (in a copy LLVM made).
#[inline(always)]
fn read_size(size: u64, max: usize) -> Option<u32> {
    if size == 0 || size >= max as u64 {
        return None;
    }
    Some((core::hint::black_box(size) & (max as u64 - 1)) as u32)
}

/// The code object's [`code_identity`] (0 if it cannot be read).
#[inline(always)]
fn identity(p: &PyProcess, code: u64) -> u32 {
    let Some(bytes) = PY_CODE_BYTES.get_ptr_mut(0) else {
        return 0;
    };
    // The name's pointer, from the first line: where it lies in the bytes read.
    let name_at = u64::from(p.code_name).wrapping_sub(u64::from(p.code_first_line));
    let Some(span) = read_size(name_at.wrapping_add(8), PY_CODE_WINDOW) else {
        return 0;
    };
    let from = code.wrapping_add(u64::from(p.code_first_line));
    // SAFETY: reads at most the buffer's size into this CPU's buffer.
    if unsafe { bpf_probe_read_user(bytes.cast(), span, from as *const c_void) } != 0 {
        return 0;
    }
    // SAFETY: this CPU's buffer, just filled.
    let bytes = unsafe { &*(bytes as *const [u8; PY_CODE_WINDOW]) };
    match (field_u32(bytes, 0), field_u64(bytes, name_at as u32)) {
        (Some(line), Some(name)) => code_identity(line, name),
        _ => 0,
    }
}

/// The `u64` at `offset` of bytes read (a frame's, a code object's), if it lies within them.
#[inline(always)]
fn field_u64<const N: usize>(bytes: &[u8; N], offset: u32) -> Option<u64> {
    let at = offset as usize;
    let b = bytes.get(at..at.checked_add(8)?)?;
    Some(u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
}

#[inline(always)]
fn field_u32<const N: usize>(bytes: &[u8; N], offset: u32) -> Option<u32> {
    let at = offset as usize;
    let b = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

#[inline(always)]
fn field_u8<const N: usize>(bytes: &[u8; N], offset: u32) -> Option<u8> {
    bytes.get(offset as usize).copied()
}

/// Reads a `u64` from the current process's memory.
#[inline(always)]
fn read_u64(addr: u64) -> Result<u64, u8> {
    let mut value = 0u64;
    // SAFETY: a checked copy into a local.
    let ok = unsafe { bpf_probe_read_user((&mut value as *mut u64).cast(), 8, addr as *const c_void) } == 0;
    if ok { Ok(value) } else { Err(py_end::UNREADABLE) }
}

#[inline(always)]
fn read_u32(addr: u64) -> Option<u32> {
    let mut value = 0u32;
    // SAFETY: a checked copy into a local.
    let ok = unsafe { bpf_probe_read_user((&mut value as *mut u32).cast(), 4, addr as *const c_void) } == 0;
    ok.then_some(value)
}
