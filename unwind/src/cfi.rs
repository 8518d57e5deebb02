//! Reading a binary's call-frame information: every FDE of `.eh_frame` (and of `.debug_frame`,
//! which binaries built without unwind tables may carry instead) evaluated into rows of
//! [`Rule`]s, each FDE's rows one run in one chunked buffer ([`Cfi`]).
//!
//! Why runs in chunks: a parse's memory is what an agent under `MemoryMax=` peaks at. The
//! agent's own table (733,554 rows) was read as spans (start, end, rule: 32 bytes each) and then
//! sorted into a second vector of rows: both held at once, 45 MB above the process's resident
//! set for a 5.6 MiB kernel table (`cargo bench -p loupe-query-host --bench parse_memory`). A run
//! holds each row once, as the table keeps it (24 bytes), with the FDE's end as one more row,
//! in [`Rows`]: chunks of 1.5 MiB that the table's merge hands back one by one as it
//! consumes them. The runs need merging, not just appending: that binary's 60,123 FDEs are
//! three in-address-order stretches, two of them interleaved over all of `.text`.
//!
//! The binary is outside input (any process's executable or library): a malformed FDE is
//! skipped and counted, a section that cannot be walked further ends the walk with what was
//! read, and the rows kept are bounded by [`MAX_ROWS`].

use gimli::{
    BaseAddresses, CieOrFde, DebugFrame, EhFrame, EndianSlice, LittleEndian, UnwindContext, UnwindSection, X86_64,
};
use object::{Object, ObjectSection};

use crate::{Error, rule::Rule};

/// Rows kept from one binary at most: 64 MiB of address space densely described. This host's
/// largest (`libLLVM`, 100 MiB of text) needs fewer than 3 M.
pub const MAX_ROWS: usize = 8 << 20;

/// One FDE's run of rows among a [`Cfi`]'s: `count` rows from `first`, in address order, the
/// last an [`Rule::Invalid`] row at the FDE's end address. `start` and `end` are the FDE's
/// range (ELF virtual addresses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub start: u64,
    pub end: u64,
    pub first: u32,
    pub count: u32,
}

/// Every FDE's rows: `(start, rule)`, a rule applying from its start to the next row's.
#[derive(Debug, Default)]
pub struct Cfi {
    pub(crate) rows: Rows,
    /// The FDEs' runs, in section order; each run's rows are its own (no two runs share one).
    pub(crate) runs: Vec<Run>,
    pub parsed: Parsed,
}

/// Rows in chunks of [`Rows::CHUNK`], each a mapping of its own (glibc maps blocks of 1 MiB or
/// more apart, as the agent sets it), so a chunk [`Rows::release`]d is memory handed back.
#[derive(Debug, Default)]
pub struct Rows {
    chunks: Vec<Vec<(u64, Rule)>>,
    /// Rows of each chunk not yet released.
    unreleased: Vec<u32>,
    len: usize,
}

impl Rows {
    /// 65,536 rows of 24 bytes: 1.5 MiB.
    pub const CHUNK: usize = 1 << 16;

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn push(&mut self, row: (u64, Rule)) {
        if self.len == self.chunks.len() * Self::CHUNK {
            self.chunks.push(Vec::with_capacity(Self::CHUNK));
            self.unreleased.push(0);
        }
        let chunk = self.len / Self::CHUNK;
        self.chunks[chunk].push(row);
        self.unreleased[chunk] += 1;
        self.len += 1;
    }

    /// Row `i`. Panics if `i` is past the end or its chunk was released.
    pub fn get(&self, i: usize) -> (u64, Rule) {
        self.chunks[i / Self::CHUNK][i % Self::CHUNK]
    }

    pub fn last(&self) -> Option<(u64, Rule)> {
        self.len.checked_sub(1).map(|i| self.get(i))
    }

    /// Keeps the first `len` rows (none released yet).
    pub fn truncate(&mut self, len: usize) {
        while self.len > len {
            let chunk = (self.len - 1) / Self::CHUNK;
            self.chunks[chunk].pop();
            self.unreleased[chunk] -= 1;
            self.len -= 1;
            if self.chunks[chunk].is_empty() {
                self.chunks.pop();
                self.unreleased.pop();
            }
        }
    }

    /// Rows `range` will not be read again: a chunk all of whose rows were released is freed.
    pub fn release(&mut self, range: std::ops::Range<usize>) {
        let mut at = range.start;
        while at < range.end {
            let chunk = at / Self::CHUNK;
            let upto = range.end.min((chunk + 1) * Self::CHUNK);
            self.unreleased[chunk] = self.unreleased[chunk].saturating_sub((upto - at) as u32);
            if self.unreleased[chunk] == 0 {
                self.chunks[chunk] = Vec::new();
            }
            at = upto;
        }
    }

    /// Chunks still held, for tests.
    #[cfg(test)]
    pub(crate) fn chunks_held(&self) -> usize {
        self.chunks.iter().filter(|c| c.capacity() > 0).count()
    }
}

/// What reading a binary's call-frame information found, besides its rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    /// FDEs evaluated.
    pub fdes: u64,
    /// FDEs skipped as malformed or describing addresses outside the executable sections
    /// (their range is left without rows).
    pub bad_fdes: u64,
    /// The walk of a section stopped early (an entry's length could not be read).
    pub truncated: bool,
}

/// The call-frame information of `elf`'s `.eh_frame` and `.debug_frame`, in section order.
/// `elf` is the file's bytes, or an `object::ReadCache` over the file, which reads only the
/// parts needed.
pub fn read<'data, R: object::ReadRef<'data>>(elf: R) -> Result<Cfi, Error> {
    read_bounded(elf, MAX_ROWS)
}

/// [`read`], refusing the binary once it has read `max_rows` rows (its FDEs' end rows counted):
/// a reader with room for fewer rows (the agent's table memory) stops there rather than hold a
/// parse it could never place — a hostile binary's as much as a large one's.
pub fn read_bounded<'data, R: object::ReadRef<'data>>(elf: R, max_rows: usize) -> Result<Cfi, Error> {
    let max_rows = max_rows.min(MAX_ROWS);
    let file = object::File::parse(elf).map_err(|e| Error::NotElf(e.to_string()))?;
    if file.architecture() != object::Architecture::X86_64 {
        return Err(Error::Architecture(format!("{:?}", file.architecture())));
    }
    let address = |name: &str| file.section_by_name(name).map(|s| s.address());
    let mut bases = BaseAddresses::default();
    if let Some(text) = address(".text") {
        bases = bases.set_text(text);
    }
    if let Some(got) = address(".got") {
        bases = bases.set_got(got);
    }
    // Rows describe code: a range outside the executable sections is corrupt information (and
    // would stretch the table over address space no PC can be in).
    let code = code_bounds(&file).ok_or(Error::NoCode)?;
    let mut out = Cfi::default();
    if let Some(section) = file.section_by_name(".eh_frame") {
        let data = section.data().map_err(|e| Error::NotElf(e.to_string()))?;
        let bases = bases.clone().set_eh_frame(section.address());
        walk(&EhFrame::new(data, LittleEndian), &bases, code, max_rows, &mut out)?;
    }
    if let Some(section) = file.section_by_name(".debug_frame") {
        // A compressed section (SHF_COMPRESSED) reads as its compressed bytes, which no
        // entry parses from: it is skipped like any malformed section.
        let data = section.data().map_err(|e| Error::NotElf(e.to_string()))?;
        let mut debug_frame = DebugFrame::new(data, LittleEndian);
        debug_frame.set_address_size(8);
        walk(&debug_frame, &bases, code, max_rows, &mut out)?;
    }
    Ok(out)
}

/// From the lowest executable section's start to the highest one's end.
fn code_bounds<'data, R: object::ReadRef<'data>>(file: &object::File<'data, R>) -> Option<(u64, u64)> {
    let executable = |s: &object::Section<'data, '_, R>| match s.flags() {
        object::SectionFlags::Elf { sh_flags } => sh_flags & u64::from(object::elf::SHF_EXECINSTR) != 0,
        _ => false,
    };
    let ranges = file.sections().filter(executable).map(|s| (s.address(), s.address().saturating_add(s.size())));
    ranges.fold(None, |acc, (a, b)| match acc {
        None => Some((a, b)),
        Some((lo, hi)) => Some((lo.min(a), hi.max(b))),
    })
}

fn walk<'a, S>(
    section: &S,
    bases: &BaseAddresses,
    (code_start, code_end): (u64, u64),
    max_rows: usize,
    out: &mut Cfi,
) -> Result<(), Error>
where
    S: UnwindSection<EndianSlice<'a, LittleEndian>>,
{
    // Boxed: the context holds the register-rule stacks, a few KiB.
    let mut ctx = Box::new(UnwindContext::new());
    let mut entries = section.entries(bases);
    loop {
        let partial = match entries.next() {
            Ok(None) => return Ok(()),
            Ok(Some(CieOrFde::Cie(_))) => continue,
            Ok(Some(CieOrFde::Fde(partial))) => partial,
            Err(_) => {
                out.parsed.truncated = true;
                return Ok(());
            }
        };
        let Ok(fde) = partial.parse(S::cie_from_offset) else {
            out.parsed.bad_fdes += 1;
            continue;
        };
        let (start, end) = (fde.initial_address(), fde.end_address());
        if start < code_start || end > code_end || end < start {
            out.parsed.bad_fdes += 1;
            continue;
        }
        let signal = fde.is_signal_trampoline();
        let Ok(mut rows) = fde.rows(section, bases, &mut ctx) else {
            out.parsed.bad_fdes += 1;
            continue;
        };
        let first = out.rows.len();
        let mut covered_to = start;
        let mut good = true;
        loop {
            match rows.next_row() {
                Ok(Some(row)) => {
                    if row.start_address() >= row.end_address() {
                        continue;
                    }
                    covered_to = row.end_address();
                    let rule = if signal {
                        Rule::Signal
                    } else {
                        let expression = match row.cfa() {
                            gimli::CfaRule::Expression(e) => e.get(section).ok().map(|e| e.0.slice()),
                            _ => None,
                        };
                        Rule::from_cfi(row.cfa(), expression, row.register(X86_64::RA), row.register(X86_64::RBP))
                    };
                    // A row repeating the one before it in the run adds nothing.
                    if out.rows.len() > first && out.rows.last().is_some_and(|r| r.1 == rule) {
                        continue;
                    }
                    if out.rows.len() >= max_rows {
                        return Err(Error::TooManyRows(max_rows));
                    }
                    out.rows.push((row.start_address(), rule));
                }
                Ok(None) => break,
                Err(_) => {
                    good = false;
                    break;
                }
            }
        }
        if !good {
            out.rows.truncate(first);
            out.parsed.bad_fdes += 1;
            continue;
        }
        out.parsed.fdes += 1;
        if out.rows.len() == first {
            continue; // an FDE of empty rows covers nothing
        }
        if out.rows.len() >= max_rows {
            return Err(Error::TooManyRows(max_rows));
        }
        out.rows.push((covered_to, Rule::Invalid));
        let count = (out.rows.len() - first) as u32;
        out.runs.push(Run { start: out.rows.get(first).0, end: covered_to, first: first as u32, count });
    }
}
