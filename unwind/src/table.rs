//! A binary's unwind table: its FDEs' runs of rows merged into one sorted list (each row applying
//! up to the next), with a row marking every gap, and the same rows cut into the kernel's 64 KiB
//! pages.
//!
//! The agent builds the kernel's form straight from the merge ([`Paged::from_elf`]: 8 bytes a
//! row, where [`Table`]'s rows are 24), handing the parse's chunks back as the merge passes
//! them. Measured with `cargo bench -p loupe-query-host --bench parse_memory` on the agent's own
//! binary (733,554 rows, a 5.6 MiB kernel table): 45 MB above the resident set before, at the
//! peak; see docs/hot-paths.md for the figures now.

use loupe_bpf_common::unwind::{PAGE_BITS, PageInfo, UnwindRow};

use crate::{
    Error,
    cfi::{self, Cfi, Parsed},
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
        let cfi = cfi::read(elf)?;
        let parsed = cfi.parsed;
        let mut rows = Vec::new();
        merge(cfi, |start, rule| {
            rows.push((start, rule));
            Ok(())
        })?;
        rows.shrink_to_fit();
        Ok(Table { rows, parsed })
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
        for &(start, rule) in &self.rows {
            paged.push(start, rule.row(start))?;
        }
        Ok(paged)
    }
}

impl Paged {
    /// The kernel's form of an ELF file's table, built as the merge goes: what
    /// `Table::from_elf(elf)?.paged()` gives, without holding the wider rows.
    pub fn from_elf<'data, R: object::ReadRef<'data>>(elf: R) -> Result<Paged, Error> {
        Self::from_elf_bounded(elf, cfi::MAX_ROWS)
    }

    /// [`Paged::from_elf`] for a reader with room for `max_rows` rows: a binary with more is
    /// refused as soon as its parse has read that many ([`cfi::read_bounded`]).
    pub fn from_elf_bounded<'data, R: object::ReadRef<'data>>(elf: R, max_rows: usize) -> Result<Paged, Error> {
        let mut paged = Paged::default();
        merge(cfi::read_bounded(elf, max_rows)?, |start, rule| paged.push(start, rule.row(start)))?;
        paged.rows.shrink_to_fit();
        Ok(paged)
    }

    /// Appends `row`, which starts at `start` (at or after the last row's start), opening the
    /// pages up to its own.
    fn push(&mut self, start: u64, row: UnwindRow) -> Result<(), Error> {
        let page = start >> PAGE_BITS;
        let first = self.pages.first().map_or(page, |p| p.0);
        // Before any page is opened: a gap of terabytes is refused, not walked (and rows out of
        // order, which no merge makes, likewise).
        if page.checked_sub(first).is_none_or(|pages| pages >= MAX_PAGES) {
            return Err(Error::TooWide(MAX_PAGES << PAGE_BITS));
        }
        let index = u32::try_from(self.rows.len()).map_err(|_| Error::TooManyRows(u32::MAX as usize))?;
        if self.pages.is_empty() {
            self.pages.push((page, PageInfo { first: index, count: 0 }));
        }
        while let Some(&(last, _)) = self.pages.last()
            && last < page
        {
            self.pages.push((last + 1, PageInfo { first: index, count: 0 }));
        }
        if let Some((_, info)) = self.pages.last_mut() {
            info.count += 1;
        }
        self.rows.push(row);
        Ok(())
    }

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

/// The merge's output is held back this many rows: [`push`] changes only the last two, so rows
/// before them are final.
const HELD_BACK: usize = 256;

/// The runs (in any order, possibly overlapping where the call-frame information is wrong)
/// merged into sorted rows, each given to `emit` once final: a gap after a run keeps its end
/// row ([`Rule::Invalid`]), a run starting where another ended replaces it, and neighbours with
/// the same rule merge.
///
/// Each run's rows are released as the merge passes them, so what `emit` keeps takes the place
/// of chunks handed back: the merge holds the parse's rows once, plus a partly read chunk per
/// stretch of runs in address order.
fn merge(cfi: Cfi, mut emit: impl FnMut(u64, Rule) -> Result<(), Error>) -> Result<(), Error> {
    let Cfi { mut rows, mut runs, .. } = cfi;
    runs.sort_by_key(|r| (r.start, r.end));
    let mut out = Vec::with_capacity(HELD_BACK);
    let mut covered_to = 0u64;
    for run in &runs {
        // A run is its rows and its end row, within the rows read (as `cfi::read` makes them).
        let (first, count) = (run.first as usize, run.count as usize);
        if count < 2 || first + count > rows.len() {
            continue;
        }
        let last = first + count - 1;
        // Overlapping call-frame information: the first run to cover an address keeps it.
        if run.end > covered_to {
            for i in first..last {
                let ((start, rule), next) = (rows.get(i), rows.get(i + 1).0);
                if next <= covered_to {
                    continue;
                }
                // Starting where the previous run ended, this replaces its end row (`push`).
                push(&mut out, start.max(covered_to), rule);
                if out.len() >= HELD_BACK {
                    out.drain(..HELD_BACK - 2).try_for_each(|(start, rule)| emit(start, rule))?;
                }
            }
            push(&mut out, run.end, Rule::Invalid);
            covered_to = run.end;
        }
        rows.release(first..last + 1);
    }
    out.into_iter().try_for_each(|(start, rule)| emit(start, rule))
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

    fn rows_of(cfi: Cfi) -> Vec<(u64, Rule)> {
        let mut rows = Vec::new();
        merge(cfi, |start, rule| {
            rows.push((start, rule));
            Ok(())
        })
        .unwrap();
        rows
    }

    /// Each `(start, end, rule)` an FDE of one row.
    fn rows_of_spans(spans: &[(u64, u64, Rule)]) -> Vec<(u64, Rule)> {
        rows_of(runs(
            &spans.iter().map(|&(start, end, rule)| vec![(start, rule), (end, Rule::Invalid)]).collect::<Vec<_>>(),
        ))
    }

    /// Each list an FDE's run (its rows, then its end row), in this order.
    fn runs(fdes: &[Vec<(u64, Rule)>]) -> Cfi {
        let mut cfi = Cfi::default();
        for rows in fdes {
            let (start, end) = (rows[0].0, rows[rows.len() - 1].0);
            cfi.runs.push(cfi::Run { start, end, first: cfi.rows.len() as u32, count: rows.len() as u32 });
            rows.iter().for_each(|&r| cfi.rows.push(r));
        }
        cfi
    }

    #[test]
    fn gaps_are_marked_and_neighbours_merge() {
        let rows = rows_of_spans(&[(0x30, 0x40, A), (0x10, 0x18, A), (0x18, 0x20, B), (0x20, 0x30, A)]);
        assert_eq!(rows, [(0x10, A), (0x18, B), (0x20, A), (0x40, Rule::Invalid)]);
        let rows = rows_of_spans(&[(0x10, 0x18, A), (0x28, 0x30, A)]);
        assert_eq!(rows, [(0x10, A), (0x18, Rule::Invalid), (0x28, A), (0x30, Rule::Invalid)]);
    }

    #[test]
    fn overlapping_spans_keep_the_first_cover() {
        let rows = rows_of_spans(&[(0x10, 0x30, A), (0x20, 0x40, B), (0x12, 0x14, B)]);
        assert_eq!(rows, [(0x10, A), (0x30, B), (0x40, Rule::Invalid)]);
    }

    #[test]
    fn runs_merge_the_same_in_place_and_out_of_order() {
        // FDEs of several rows: abutting, with a gap, overlapping the one before (corrupt), and
        // one inside another; then the same FDEs in reverse, which takes the copying path.
        let fdes = vec![
            vec![(0x10, A), (0x14, B), (0x20, Rule::Invalid)],
            vec![(0x20, B), (0x28, A), (0x30, Rule::Invalid)],
            vec![(0x2c, B), (0x34, A), (0x38, B), (0x40, Rule::Invalid)],
            vec![(0x30, B), (0x32, A), (0x34, Rule::Invalid)],
            vec![(0x50, A), (0x58, Rule::Invalid)],
        ];
        let want = [
            (0x10, A),
            (0x14, B),
            (0x28, A),
            (0x30, B),
            (0x34, A),
            (0x38, B),
            (0x40, Rule::Invalid),
            (0x50, A),
            (0x58, Rule::Invalid),
        ];
        assert_eq!(rows_of(runs(&fdes)), want);
        let reversed: Vec<_> = fdes.iter().rev().cloned().collect();
        assert_eq!(rows_of(runs(&reversed)), want, "in reverse");
        let interleaved: Vec<_> = [&fdes[1..2], &fdes[3..], &fdes[..1], &fdes[2..3]].concat();
        assert_eq!(rows_of(runs(&interleaved)), want, "two interleaved stretches");
        // The same 200 times over, 0x100 apart, in two interleaved stretches: more rows than
        // the merge holds back, with merges and replaced end rows across its flushes.
        let shift = |rows: &[(u64, Rule)], k: u64| rows.iter().map(|&(a, r)| (a + 0x100 * k, r)).collect::<Vec<_>>();
        let many: Vec<_> = (0..200)
            .step_by(2)
            .chain((1..200).step_by(2))
            .flat_map(|k| fdes.iter().map(move |f| shift(f, k)))
            .collect();
        let want_many: Vec<_> = (0..200).flat_map(|k| shift(&want, k)).collect();
        assert!(want_many.len() > 4 * HELD_BACK);
        assert_eq!(rows_of(runs(&many)), want_many);
    }

    #[test]
    fn chunks_are_handed_back_as_the_merge_passes_them() {
        // Two interleaved stretches of 3 × CHUNK one-row FDEs each, as the agent's own binary
        // has them: the merge holds at most a partly read chunk per stretch besides its output.
        let n = 3 * cfi::Rows::CHUNK as u64;
        let mut cfi = Cfi::default();
        for i in (0..n).map(|i| 2 * i).chain((0..n).map(|i| 2 * i + 1)) {
            let rule = if i % 4 < 2 { A } else { B };
            cfi.runs.push(cfi::Run { start: 16 * i, end: 16 * i + 16, first: cfi.rows.len() as u32, count: 2 });
            cfi.rows.push((16 * i, rule));
            cfi.rows.push((16 * i + 16, Rule::Invalid));
        }
        assert_eq!(cfi.rows.chunks_held(), 12);
        let total = cfi.rows.len();
        let mut rows = cfi.rows;
        let mut runs = cfi.runs.clone();
        runs.sort_by_key(|r| r.start);
        let mut released = 0;
        for run in &runs {
            rows.release(run.first as usize..(run.first + run.count) as usize);
            released += run.count as usize;
            // What is still to read, plus one partly read chunk per stretch.
            let bound = (total - released).div_ceil(cfi::Rows::CHUNK) + 2;
            assert!(rows.chunks_held() <= bound, "{} chunks held, {released} of {total} rows read", rows.chunks_held());
        }
        assert_eq!(rows.chunks_held(), 0, "every chunk handed back");
        // Half-way through, the first stretch's first half and the second's are both gone.
        let mut rows = Cfi::default().rows;
        for i in 0..4 * cfi::Rows::CHUNK as u64 {
            rows.push((i, A));
        }
        rows.release(0..cfi::Rows::CHUNK + 5);
        assert_eq!(rows.chunks_held(), 3, "a chunk wholly released is freed, a partly released one kept");
    }

    #[test]
    fn the_kernel_form_built_as_the_merge_goes_is_the_tables() {
        for binary in ["/bin/dash", "/usr/lib/x86_64-linux-gnu/libc.so.6"] {
            let bytes = std::fs::read(binary).unwrap();
            let paged = Paged::from_elf(&bytes[..]).unwrap();
            assert!(paged.rows.len() > 1000, "{binary}: {} rows", paged.rows.len());
            assert_eq!(paged, Table::from_elf(&bytes[..]).unwrap().paged().unwrap(), "{binary}");
        }
    }

    #[test]
    fn a_reader_with_room_for_fewer_rows_stops_the_parse_there() {
        let bytes = std::fs::read("/usr/lib/x86_64-linux-gnu/libc.so.6").unwrap();
        let whole = Paged::from_elf(&bytes[..]).unwrap();
        let err = Paged::from_elf_bounded(&bytes[..], 1000).unwrap_err();
        assert!(matches!(err, Error::TooManyRows(1000)), "{err}");
        // Room for all its rows (its FDEs' end rows counted while parsing): the same table.
        let room = 2 * whole.rows.len();
        assert_eq!(Paged::from_elf_bounded(&bytes[..], room).unwrap(), whole);
    }

    #[test]
    fn a_table_wider_than_the_pages_is_refused_before_its_pages_are_made() {
        let mut paged = Paged::default();
        paged.push(0x1000, Rule::Stop.row(0x1000)).unwrap();
        let far = MAX_PAGES << PAGE_BITS; // page MAX_PAGES; the first row is in page 0
        assert!(matches!(paged.push(far, Rule::Invalid.row(far)), Err(Error::TooWide(_))));
        assert_eq!(paged.pages.len(), 1);
        paged.push(far - 1, Rule::Invalid.row(far - 1)).unwrap();
        assert_eq!(paged.pages.len() as u64, MAX_PAGES);
    }

    #[test]
    fn the_paged_form_finds_what_the_table_finds() {
        // Rows across three pages, one of them without a row of its own.
        let spans =
            [(0x1_fff0, 0x2_0010, A), (0x2_0010, 0x2_0020, B), (0x2_0030, 0x4_0008, A), (0x4_0008, 0x4_0100, B)];
        let table = Table { rows: rows_of_spans(&spans), parsed: Parsed::default() };
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
