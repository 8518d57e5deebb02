//! The stack sampler's unwind tables, as the kernel program reads them: for each binary, its
//! address space cut into 64 KiB pages, and for each page the rows that start in it, sorted.
//! A row says how to find the caller's frame (its CFA, return address and saved RBP) from any
//! PC between its start and the next row's.
//!
//! Why this shape: on x86-64, gcc and clang describe almost every instruction with "CFA = RSP or
//! RBP + N, return address at CFA − 8, RBP unchanged or saved at CFA − M" (99.97 % of Debian's
//! libc rows, all but the PLT's of python3, dash and gzip), so a row fits 8 bytes, and 16 bits of
//! address suffice once the page is known: a lookup is one page lookup and a binary search of at
//! most 16 steps, which the verifier can bound. Built in userspace from `.eh_frame` by the
//! `loupe-unwind` crate.

/// Bytes of address space one page of rows covers (rows store the low 16 bits of their start).
pub const PAGE_BITS: u32 = 16;

/// `UnwindRow::kind`: CFA = RSP + 8 × `cfa_off8`.
pub const ROW_CFA_RSP: u8 = 1;
/// `UnwindRow::kind`: CFA = RBP + 8 × `cfa_off8`.
pub const ROW_CFA_RBP: u8 = 2;
/// `UnwindRow::kind`: a PLT stub: CFA = RSP + 8 + (((RIP & 15) ≥ `cfa_off8`) ? 8 : 0), the one
/// DWARF expression every `.plt` section carries (the threshold is 11, or 10 in older linkers).
pub const ROW_PLT: u8 = 3;
/// `UnwindRow::kind`: a signal trampoline (`__restore_rt`): the interrupted registers are in
/// the `ucontext` the kernel pushed, at RSP + [`SIGNAL_MCONTEXT_OFFSET`].
pub const ROW_SIGNAL: u8 = 4;
/// `UnwindRow::kind`: the outermost frame (return address undefined: `_start`, a new thread's
/// entry): the stack is complete here.
pub const ROW_STOP: u8 = 5;
/// `UnwindRow::kind`: no call-frame information covers this address (a gap between functions).
pub const ROW_INVALID: u8 = 6;
/// `UnwindRow::kind`: call-frame information this unwinder does not evaluate (longjmp's and
/// setcontext's register rules, a CFA in a general register, an offset that does not fit).
pub const ROW_UNSUPPORTED: u8 = 7;

/// Offset of the interrupted registers from RSP in a signal trampoline: RSP points at the
/// `ucontext` (the handler's `ret` popped `pretcode`), whose `uc_mcontext` follows `uc_flags`,
/// `uc_link` and `uc_stack` (8 + 8 + 24 bytes). Its general registers are `r8`…`r15`, `rdi`,
/// `rsi`, `rbp`, `rbx`, `rdx`, `rax`, `rcx`, `rsp`, `rip`, 8 bytes each.
pub const SIGNAL_MCONTEXT_OFFSET: u64 = 40;

/// One row of a binary's unwind table.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct UnwindRow {
    /// The low [`PAGE_BITS`] bits of the first address (ELF virtual address) the row covers.
    pub pc_low: u16,
    /// The CFA's offset from its base register, in units of 8 bytes (the PLT threshold for
    /// [`ROW_PLT`]).
    pub cfa_off8: u16,
    /// Where the caller's RBP was saved: at CFA + 8 × `rbp_off8` (negative); 0: RBP unchanged.
    pub rbp_off8: i16,
    /// One of the `ROW_*` kinds.
    pub kind: u8,
    pub _pad: u8,
}

/// Where a page's rows are in the binary's row array.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PageInfo {
    /// Index of the page's first row; a page whose own rows do not cover its first addresses
    /// (or that has none) continues the row at `first − 1`.
    pub first: u32,
    /// Rows that start in this page.
    pub count: u32,
}

/// Array of [`UnwindRow`]s: every loaded binary's rows, each binary in one contiguous range.
pub const MAP_UNWIND_ROWS: &str = "UNWIND_ROWS";
/// Array of [`PageInfo`]s: every loaded binary's pages, each binary in one contiguous range.
pub const MAP_UNWIND_PAGES: &str = "UNWIND_PAGES";
/// Ring buffer of `u32` PIDs whose tables the kernel wants loaded (or read again); a PID with
/// [`WANTED_AT_EXEC`] set has just started a new program.
pub const MAP_UNWIND_WANTED: &str = "UNWIND_WANTED";
/// Set in a PID asked for by [`PROG_EXEC`]: the process has just exec'd, its libraries are not
/// mapped yet (the dynamic loader maps them next), so userspace reads its mappings a moment
/// later rather than at once. PIDs are below 2^22 (`pid_max`), so the bit is free.
pub const WANTED_AT_EXEC: u32 = 1 << 31;
/// Set in a PID asked for by the Python walker: a thread of this CPython process is not in
/// `PY_THREADS` yet; userspace reads the interpreter's threads again now.
pub const WANTED_PY_THREADS: u32 = 1 << 30;
/// The program that asks for a process's tables as it starts a new program: a raw tracepoint on
/// [`EXEC_TRACEPOINT`]. Without it a process's first samples are taken before its tables are
/// loaded (the kernel's frame-pointer walk, cut short in binaries built without frame
/// pointers); a process that lives a second may get no other sample.
pub const PROG_EXEC: &str = "loupe_exec";
pub const EXEC_TRACEPOINT: &str = "sched_process_exec";

/// LPM trie: (PID, address) → [`Mapping`]. Userspace covers each executable mapping's range
/// with aligned prefixes, so one lookup finds the mapping holding a PC (no search the verifier
/// would have to follow branch by branch).
pub const MAP_UNWIND_MAPPINGS: &str = "UNWIND_MAPPINGS";

/// Executable mappings kept per process (a process with more keeps the first). Debian's
/// `python3` maps 5, a desktop browser ~150.
pub const MAX_MAPPINGS: usize = 512;

/// The trie's key data after its prefix length: the PID then the address, both big-endian so
/// the prefix runs from the PID's first bit into the address.
pub type MappingKey = [u8; 12];

/// The key of `addr` in `pid`'s address space, with `prefix_bits` of the address significant.
pub fn mapping_key(pid: u32, addr: u64) -> MappingKey {
    let mut key = [0u8; 12];
    let (head, tail) = key.split_at_mut(4);
    head.copy_from_slice(&pid.to_be_bytes());
    tail.copy_from_slice(&addr.to_be_bytes());
    key
}

/// One executable mapping of a process and the binary's table.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Mapping {
    /// The mapping's addresses in the process, `[start, end)`.
    pub start: u64,
    pub end: u64,
    /// Subtracted from a PC in the mapping to give the ELF virtual address the rows use.
    pub bias: u64,
    /// The binary's first row in `UNWIND_ROWS`; a page's `first` counts from here.
    pub rows_base: u32,
    /// The binary's first page in `UNWIND_PAGES`.
    pub pages_base: u32,
    /// The page number (address >> [`PAGE_BITS`]) of the binary's first page.
    pub first_page: u32,
    /// Pages the binary has; 0: no table (anonymous or JIT code, a binary without call-frame
    /// information): such frames are stepped by frame pointer — unless `rows_base` is
    /// [`ROWS_NO_ROOM`].
    pub page_count: u32,
}

/// `Mapping::rows_base` of a binary that has call-frame information but found no room in the
/// table memory: its frames end the stack as "no room for unwind table" rather than be stepped
/// by frame pointers it most likely does not keep.
pub const ROWS_NO_ROOM: u32 = u32::MAX;
