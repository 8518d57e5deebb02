//! The Python walker's contract: where a process's CPython keeps its threads' frames (set by
//! userspace per process from the interpreter's version and its own tables), each thread's
//! state, and the frames a sample carries.
//!
//! The kernel walks the interpreter's frame chain from the sampled thread's `PyThreadState`
//! and records each frame's code object and instruction; userspace names the code objects (it
//! reads the process's memory once per code object) and interleaves the Python frames with the
//! native stack at each evaluation loop frame. Nothing in the kernel program knows a CPython
//! version: every offset comes from [`PyProcess`].

/// PID → [`PyProcess`]: the processes running CPython, and where their frames are.
pub const MAP_PY_PROCS: &str = "PY_PROCS";
/// `pid << 32 | tid` → the thread's `PyThreadState` address, filled by userspace from the
/// interpreter's own list of threads.
pub const MAP_PY_THREADS: &str = "PY_THREADS";
/// Processes followed at once.
pub const PY_PROCS_ENTRIES: u32 = 1024;
/// Threads followed at once (an LRU: the least recently sampled are forgotten, and found again
/// from the interpreter's list when next sampled).
pub const PY_THREADS_ENTRIES: u32 = 16_384;
/// Deepest Python stack recorded; a deeper one keeps its innermost frames and ends
/// [`py_end::DEPTH`].
pub const MAX_PY_FRAMES: usize = 48;
/// Bytes of the buffer a frame is read into (the fields the walker needs lie within the first
/// 108: 3.8's `f_lasti`); a frame's window is less than it (a power of two, so that the kernel
/// program masks the size).
pub const PY_FRAME_WINDOW: usize = 128;
/// [`PyProcess::frame_entry`] etc.: the field does not exist in this version.
pub const PY_NO_FIELD: u32 = u32::MAX;

/// How frames are chained in a CPython version ([`PyProcess::layout`]).
pub mod py_layout {
    /// 3.8–3.10: `PyThreadState.frame` → `PyFrameObject`, `f_back`, `f_lasti` an `int`; each
    /// frame is run by a call of its own to the evaluation loop.
    pub const FRAME_OBJECTS: u32 = 1;
    /// 3.11+: `_PyInterpreterFrame`s (`previous`), the instruction a pointer into the code
    /// object; one call of the evaluation loop runs several frames, the first marked
    /// ([`super::PyProcess::entry`]).
    pub const INTERPRETER_FRAMES: u32 = 2;
}

/// How the frame a call of the evaluation loop began with is marked ([`PyProcess::entry`]).
pub mod py_entry {
    /// Every frame is one (3.8–3.10).
    pub const EVERY_FRAME: u32 = 0;
    /// A byte flag in the frame (3.11's `is_entry`).
    pub const FLAG: u32 = 1;
    /// A frame owned by the C stack (`owner`, 3.12+) sits below the first frame of each call:
    /// not a Python frame itself, it marks the one above it.
    pub const C_STACK_FRAME: u32 = 2;
}

/// How a Python walk ended (`StackEvent::py_end`).
pub mod py_end {
    /// Not a Python process or thread, or not walked.
    pub const NONE: u8 = 0;
    /// The outermost frame was reached.
    pub const ROOT: u8 = 1;
    /// [`super::MAX_PY_FRAMES`] frames were recorded before the root.
    pub const DEPTH: u8 = 2;
    /// A frame or the thread state could not be read.
    pub const UNREADABLE: u8 = 3;
    /// A Python process's thread not yet in [`super::MAP_PY_THREADS`]: userspace reads the
    /// interpreter's threads again when it sees this.
    pub const UNKNOWN_THREAD: u8 = 4;
    /// The thread runs no Python code now (no current frame).
    pub const IDLE: u8 = 5;
    pub const COUNT: usize = 6;
}

/// `PyFrame::instr`: this frame is the first a call of the evaluation loop ran (the native
/// `_PyEval_EvalFrameDefault` frame it belongs under).
pub const PY_FRAME_ENTRY: u32 = 1 << 31;

/// Where a process's CPython keeps its frames: offsets in bytes, from the interpreter's version
/// (`bpf/user/src/python/layout.rs`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PyProcess {
    /// [`py_layout`].
    pub layout: u32,
    /// [`py_entry`].
    pub entry: u32,
    /// In `PyThreadState`: the current frame (3.8–3.10 `frame`, 3.13 `current_frame`) or the
    /// `_PyCFrame` that holds it (3.11–3.12 `cframe`).
    pub thread_frame: u32,
    /// In `_PyCFrame`: `current_frame` (3.11–3.12); [`PY_NO_FIELD`] when the thread state
    /// points at the frame itself.
    pub cframe_frame: u32,
    /// In a frame: the caller's frame (`f_back`, `previous`).
    pub frame_previous: u32,
    /// In a frame: its code object (`f_code`, 3.13's `f_executable`).
    pub frame_code: u32,
    /// In a frame: the instruction (`f_lasti`, an `int`; or `prev_instr` / `instr_ptr`, a
    /// pointer into the code object).
    pub frame_instr: u32,
    /// In a frame: `is_entry` or `owner` (a byte), per [`PyProcess::entry`]; else
    /// [`PY_NO_FIELD`].
    pub frame_entry: u32,
    /// The `owner` that marks a frame of the C stack (3.12+'s `FRAME_OWNED_BY_CSTACK`).
    pub c_stack_owner: u32,
    /// Bytes of a frame read at once: past the last field used, at most [`PY_FRAME_WINDOW`].
    pub frame_window: u32,
    /// In a code object: `co_firstlineno` and the name (`co_qualname`, else `co_name`), read
    /// with each frame into its [`PyFrame::identity`], so that a code object freed and another
    /// made at its address is not named from the old one. The name lies after the line.
    pub code_first_line: u32,
    pub code_name: u32,
    /// In `PyThreadState`: `native_thread_id` (3.11+), checked against the sampled thread so
    /// that a thread id reused by a new thread never walks the old one's state; else
    /// [`PY_NO_FIELD`], and the check goes through `thread_id` (the thread's `pthread_t`).
    pub thread_native_id: u32,
    /// In `PyThreadState`: `thread_id`, the thread's `pthread_t` (glibc: its `struct pthread`).
    pub thread_pthread: u32,
    /// In glibc's `struct pthread`: `tid` (from glibc's own `_thread_db_pthread_tid`).
    pub pthread_tid: u32,
    /// The CPython version's minor number (3.x), copied into each sample for userspace.
    pub minor: u32,
    pub _pad: u32,
}

/// One Python frame of a sample, innermost first.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PyFrame {
    /// The code object's address.
    pub code: u64,
    /// 3.8–3.10: `f_lasti`; 3.11+: the instruction pointer's offset from the code object (a
    /// pointer into `co_code_adaptive`). Bit 31: [`PY_FRAME_ENTRY`].
    pub instr: u32,
    /// What the code object was when sampled: [`code_identity`] of its first line and name.
    pub identity: u32,
}

/// A code object's identity as the walker records it: two code objects with the same first
/// line and the same name object are the same function.
pub const fn code_identity(first_line: u32, name: u64) -> u32 {
    first_line.wrapping_mul(0x9e37_79b1) ^ (name as u32) ^ ((name >> 32) as u32)
}

/// Bytes of the buffer a code object is read into, per frame: from `co_firstlineno` through the
/// name's pointer (at most 80 bytes, 3.8–3.10), less than it (a power of two, so that the
/// kernel program masks the size).
pub const PY_CODE_WINDOW: usize = 128;
