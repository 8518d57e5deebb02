//! A binary's unwind table: its spans sorted into rows (each applying up to the next), with a
//! row marking every gap, and the same rows cut into the kernel's 64 KiB pages.

use loupe_bpf_common::unwind::{PAGE_BITS, PageInfo, UnwindRow};

use crate::{
    Error,
    cfi::{self, Parsed, Span},
    rule::Rule,
};

/// Pages one table spans at most: 4 GiB of code.
pub const MAX_PAGES: u64 = 1 << 16;

/// A binary's rows, sorted by start address, with no two neighbours alike.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Table {
    /// `(start, rule)`: the rule applies from `start` to the next row's start.
    pub rows: Vec<(u64, Rule)>,
    /// What reading the call-frame information found.
    pub parsed: Parsed,
}

/// The rows as the kernel program reads them: `pages[i]` is the page number (address >>
/// [`PAGE_BITS`]) and where its rows are in `rows`; pages are consecutive from the first
/// row's to the last row's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Paged {
    pub pages: Vec<(u64, PageInfo)>,
    pub rows: Vec<UnwindRow>,
}

impl Table {
    /// The table of an ELF file's bytes.
    pub fn from_elf<'data, R: object::ReadRef<'data>>(elf: R) -> Result<Table, Error> {
        let (spans, parsed) = cfi::spans(elf)?;
        Ok(Table { rows: rows_of(spans), parsed })
    }

    /// The rule for `pc` (an ELF virtual address): the last row starting at or before it,
    /// [`Rule::Invalid`] before the first.
    pub fn lookup(&self, pc: u64) -> Rule {
        match self.rows.partition_point(|&(start, _)| start <= pc) {
            0 => Rule::Invalid,
            i => self.rows[i - 1].1,
        }
    }

    /// The kernel's form of the table.
    pub fn paged(&self) -> Result<Paged, Error> {
        let mut paged = Paged::default();
        let (Some(&(first, _)), Some(&(last, _))) = (self.rows.first(), self.rows.last()) else {
            return Ok(paged);
        };
        let rows = u32::try_from(self.rows.len()).map_err(|_| Error::TooManyRows(u32::MAX as usize))?;
        if (last >> PAGE_BITS) - (first >> PAGE_BITS) >= MAX_PAGES {
            return Err(Error::TooWide(MAX_PAGES << PAGE_BITS));
        }
        paged.rows = self.rows.iter().map(|(start, rule)| rule.row(*start)).collect();
        let mut next = 0usize;
        for page in first >> PAGE_BITS..=last >> PAGE_BITS {
            let begin = next;
            while next < self.rows.len() && self.rows[next].0 >> PAGE_BITS == page {
                next += 1;
            }
            paged.pages.push((page, PageInfo { first: begin as u32, count: (next - begin) as u32 }));
        }
        debug_assert_eq!(next as u32, rows);
        Ok(paged)
    }
}

impl Paged {
    /// The rule's row for `pc`, found as the kernel program finds it: the page, then a binary
    /// search of its rows on the low 16 bits, falling back to the row before the page's first.
    pub fn lookup(&self, pc: u64) -> Option<UnwindRow> {
        let page = pc >> PAGE_BITS;
        let index = page.checked_sub(self.pages.first()?.0)? as usize;
        let (_, info) = self.pages.get(index)?;
        let rows = &self.rows[info.first as usize..(info.first + info.count) as usize];
        let low = pc as u16;
        match rows.partition_point(|r| r.pc_low <= low) {
            0 => (info.first as usize).checked_sub(1).map(|i| self.rows[i]),
            i => Some(rows[i - 1]),
        }
    }
}

/// Spans (in any order, possibly overlapping where the call-frame information is wrong) into
/// sorted rows: a gap after a span gets an [`Rule::Invalid`] row, a later span starting where
/// another ended replaces that marker, and neighbours with the same rule merge.
fn rows_of(mut spans: Vec<Span>) -> Vec<(u64, Rule)> {
    spans.retain(|s| s.start < s.end);
    spans.sort_by_key(|s| (s.start, s.end));
    let mut rows: Vec<(u64, Rule)> = Vec::with_capacity(spans.len() + spans.len() / 4);
    let mut covered_to = 0u64;
    for span in spans {
        // Overlapping call-frame information: the first FDE to cover an address keeps it.
        if span.end <= covered_to {
            continue;
        }
        // Starting where the previous span ended, this replaces its gap marker (`push`).
        push(&mut rows, span.start.max(covered_to), span.rule);
        push(&mut rows, span.end, Rule::Invalid);
        covered_to = span.end;
    }
    rows
}

/// Appends a row unless it repeats the previous one's rule; a row at the same address as the
/// previous replaces it.
fn push(rows: &mut Vec<(u64, Rule)>, start: u64, rule: Rule) {
    if let Some(last) = rows.last_mut() {
        if last.0 == start {
            last.1 = rule;
            if rows.len() >= 2 && rows[rows.len() - 2].1 == rule {
                rows.pop();
            }
            return;
        }
        if last.1 == rule {
            return;
        }
    }
    rows.push((start, rule));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rule::Base;

    const A: Rule = Rule::Cfa { base: Base::Rsp, offset: 8, rbp: None };
    const B: Rule = Rule::Cfa { base: Base::Rsp, offset: 16, rbp: None };

    fn span(start: u64, end: u64, rule: Rule) -> Span {
        Span { start, end, rule }
    }

    #[test]
    fn gaps_are_marked_and_neighbours_merge() {
        let rows = rows_of(vec![span(0x30, 0x40, A), span(0x10, 0x18, A), span(0x18, 0x20, B), span(0x20, 0x30, A)]);
        assert_eq!(rows, [(0x10, A), (0x18, B), (0x20, A), (0x40, Rule::Invalid)]);
        let rows = rows_of(vec![span(0x10, 0x18, A), span(0x28, 0x30, A)]);
        assert_eq!(rows, [(0x10, A), (0x18, Rule::Invalid), (0x28, A), (0x30, Rule::Invalid)]);
    }

    #[test]
    fn overlapping_spans_keep_the_first_cover() {
        let rows = rows_of(vec![span(0x10, 0x30, A), span(0x20, 0x40, B), span(0x12, 0x14, B)]);
        assert_eq!(rows, [(0x10, A), (0x30, B), (0x40, Rule::Invalid)]);
    }

    #[test]
    fn the_paged_form_finds_what_the_table_finds() {
        // Rows across three pages, one of them without a row of its own.
        let spans = vec![
            span(0x1_fff0, 0x2_0010, A),
            span(0x2_0010, 0x2_0020, B),
            span(0x2_0030, 0x4_0008, A),
            span(0x4_0008, 0x4_0100, B),
        ];
        let table = Table { rows: rows_of(spans), parsed: Parsed::default() };
        let paged = table.paged().unwrap();
        assert_eq!(paged.pages.iter().map(|p| p.0).collect::<Vec<_>>(), [1, 2, 3, 4]);
        assert_eq!(paged.pages[2].1.count, 0, "page 3 has no row of its own");
        for pc in [
            0x1_fff0, 0x1_ffff, 0x2_0000, 0x2_000f, 0x2_0010, 0x2_0025, 0x2_0030, 0x3_0000, 0x3_ffff, 0x4_0000,
            0x4_0008, 0x4_00ff, 0x4_0100, 0x4_ffff,
        ] {
            let want = table.lookup(pc).row(pc);
            let got = paged.lookup(pc).unwrap();
            assert_eq!((got.kind, got.cfa_off8, got.rbp_off8), (want.kind, want.cfa_off8, want.rbp_off8), "pc {pc:#x}");
        }
        assert_eq!(paged.lookup(0x0_ffff), None, "before the first page");
        assert_eq!(paged.lookup(0x5_0000), None, "after the last page");
    }
}
