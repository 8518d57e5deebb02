//! Unwind tables for the stack sampler: a binary's call-frame information (`.eh_frame`, which
//! gcc and clang emit for every function whether or not it keeps a frame pointer, and
//! `.debug_frame`) turned into the compact rows the kernel program walks user stacks with.
//!
//! Why: Debian builds its packages, libc included, without frame pointers, so a frame-pointer
//! walk stops at the first such function — 0 % of the samples of Debian's `python3`, `gzip`
//! and `dash` reached their thread root, against 100 % for `perf --call-graph dwarf`. The
//! call-frame information describes every instruction's frame instead.
//!
//! * [`rule`] — what one row says: CFA from RSP or RBP, the PLT's expression, a signal frame,
//!   the outermost frame, a gap, or a rule the kernel does not evaluate (named).
//! * [`cfi`] — reading `.eh_frame` / `.debug_frame` with gimli into each FDE's run of rows, bounded.
//! * [`table`] — the runs merged into sorted rows with gaps marked, and those rows cut into 64 KiB pages
//!   (`loupe_bpf_common::unwind`), as the kernel looks them up.
//! * [`binary`] — a binary's build ID and segments: its table's name, and a mapping's bias.
//! * [`cache`] — tables on disk by build ID, parsed once per host.

pub mod binary;
pub mod cache;
pub mod cfi;
pub mod rule;
pub mod table;

pub use binary::Binary;
/// Reads only the parts of a file a parse asks for: a cached table needs the build-ID note, not
/// the whole binary.
pub use object::ReadCache;
pub use rule::{Base, Rule, Unsupported};
pub use table::{Paged, Table};

/// Why a binary has no table.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("not an ELF file this unwinder reads: {0}")]
    NotElf(String),
    #[error("unwind tables are built for x86-64 binaries only; this one is {0}")]
    Architecture(String),
    #[error("the binary has no executable section, so nothing to unwind")]
    NoCode,
    #[error("the call-frame information has more than {0} rows; the binary gets no table")]
    TooManyRows(usize),
    #[error("the call-frame information spans more than {0} bytes of code; the binary gets no table")]
    TooWide(u64),
}
