//! Unwind tables from any binary a sampled process maps (`loupe_unwind::Table::from_elf`).
//! Input: the bytes of an ELF file. Whatever the call-frame information says, the table is
//! sorted with no two neighbours alike, and its kernel (paged) form finds every row it holds and
//! is what the agent's streamed build (`Paged::from_elf`) makes.
//! Seed: `testbed/fixtures/deep.c` built `cc -Os -fomit-frame-pointer` and stripped.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loupe_unwind::{Paged, Table};

fuzz_target!(|data: &[u8]| {
    let Ok(table) = Table::from_elf(data) else { return };
    assert!(table.rows.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 != w[1].1), "rows sorted and merged");
    let paged = table.paged();
    assert_eq!(Paged::from_elf(data).ok(), paged.as_ref().ok().cloned(), "the streamed build");
    if let Ok(paged) = paged {
        for &(start, rule) in &table.rows {
            assert_eq!(paged.lookup(start), Some(rule.row(start)), "paged row at {start:#x}");
        }
    }
});
