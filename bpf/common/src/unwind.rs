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
