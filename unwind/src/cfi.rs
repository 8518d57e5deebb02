//! Reading a binary's call-frame information: every FDE of `.eh_frame` (and of `.debug_frame`,
//! which binaries built without unwind tables may carry instead) evaluated into address ranges
//! with their [`Rule`]s.
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

/// One evaluated row: `rule` applies from `start` (an ELF virtual address) to `end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub start: u64,
    pub end: u64,
    pub rule: Rule,
}

/// What reading a binary's call-frame information found, besides its spans.
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

/// Every span of `elf`'s `.eh_frame` and `.debug_frame`, in section order. `elf` is the file's
/// bytes, or an `object::ReadCache` over the file, which reads only the parts needed.
pub fn spans<'data, R: object::ReadRef<'data>>(elf: R) -> Result<(Vec<Span>, Parsed), Error> {
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
    // Rows describe code: a span outside the executable sections is corrupt information (and
    // would stretch the table over address space no PC can be in).
    let code = code_bounds(&file).ok_or(Error::NoCode)?;
    let mut out = Vec::new();
    let mut parsed = Parsed::default();
    if let Some(section) = file.section_by_name(".eh_frame") {
        let data = section.data().map_err(|e| Error::NotElf(e.to_string()))?;
        let bases = bases.clone().set_eh_frame(section.address());
        walk(&EhFrame::new(data, LittleEndian), &bases, code, &mut out, &mut parsed)?;
    }
    if let Some(section) = file.section_by_name(".debug_frame") {
        // A compressed section (SHF_COMPRESSED) reads as its compressed bytes, which no
        // entry parses from: it is skipped like any malformed section.
        let data = section.data().map_err(|e| Error::NotElf(e.to_string()))?;
        let mut debug_frame = DebugFrame::new(data, LittleEndian);
        debug_frame.set_address_size(8);
        walk(&debug_frame, &bases, code, &mut out, &mut parsed)?;
    }
    Ok((out, parsed))
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
    out: &mut Vec<Span>,
    parsed: &mut Parsed,
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
                parsed.truncated = true;
                return Ok(());
            }
        };
        let Ok(fde) = partial.parse(S::cie_from_offset) else {
            parsed.bad_fdes += 1;
            continue;
        };
        if fde.initial_address() < code_start
            || fde.end_address() > code_end
            || fde.end_address() < fde.initial_address()
        {
            parsed.bad_fdes += 1;
            continue;
        }
        let signal = fde.is_signal_trampoline();
        let Ok(mut rows) = fde.rows(section, bases, &mut ctx) else {
            parsed.bad_fdes += 1;
            continue;
        };
        let before = out.len();
        let mut good = true;
        loop {
            match rows.next_row() {
                Ok(Some(row)) => {
                    let rule = if signal {
                        Rule::Signal
                    } else {
                        let expression = match row.cfa() {
                            gimli::CfaRule::Expression(e) => e.get(section).ok().map(|e| e.0.slice()),
                            _ => None,
                        };
                        Rule::from_cfi(row.cfa(), expression, row.register(X86_64::RA), row.register(X86_64::RBP))
                    };
                    if out.len() >= MAX_ROWS {
                        return Err(Error::TooManyRows(MAX_ROWS));
                    }
                    out.push(Span { start: row.start_address(), end: row.end_address(), rule });
                }
                Ok(None) => break,
                Err(_) => {
                    good = false;
                    break;
                }
            }
        }
        if good {
            parsed.fdes += 1;
        } else {
            out.truncate(before);
            parsed.bad_fdes += 1;
        }
    }
}
