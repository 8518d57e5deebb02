//! An hour rollup (`H` record): `decode_rollup_row` (which hours a profile may read from
//! their rollup) and `decode_rollup` (profiles, pids, verify). Input: the record's value.
//! Rollups name their stacks by their process's vocabulary (format 3) or by dictionary id
//! (format 2); `NamesAreStacks` gives every thread a process of its own number and every name
//! the stack of that number, so both formats decode, to tables sorted by entry.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loupe_store::samples::codec;

fuzz_target!(|data: &[u8]| {
    let header = codec::decode_rollup_row(data);
    let Ok((row, table)) = codec::decode_rollup(data, &loupe_fuzz::NamesAreStacks) else { return };
    // What the readers rely on: the header alone says the same, the counts add up to it, and
    // the table is one partition of sorted, distinct entries.
    assert_eq!(header, Ok(row));
    assert_eq!(table.counts.iter().sum::<u64>(), row.samples);
    assert!(table.parts.len() <= 1);
    assert!(table.entries.windows(2).all(|w| w[0] < w[1]));
    assert!(row.batches > 0 && row.first <= row.end);
    assert_eq!(
        codec::decode_rollup(&codec::encode_rollup(&row, &table, None), &loupe_fuzz::NamesAreStacks),
        Ok((row, table.clone()))
    );
    let locals: Vec<u32> = table.entries.iter().map(|e| e.stack).collect();
    assert_eq!(
        codec::decode_rollup(&codec::encode_rollup(&row, &table, Some(&locals)), &loupe_fuzz::NamesAreStacks),
        Ok((row, table))
    );
});
