//! A per-CPU block (`b` record) decoded as the store does: against its batch's table, with
//! the batch start and CPU from the block's key, with and without times. Input:
//! `[block key][table value][block value]`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loupe_store::keys;
use loupe_store::samples::codec;

fuzz_target!(|data: &[u8]| {
    let [key, table, block] = loupe_fuzz::split::<3>(data);
    let (start, cpu, _) = keys::parse_block_key(key).unwrap_or((0, 0, 0));
    let Ok(table) = codec::decode_table(table, &loupe_fuzz::NamesAreStacks) else { return };
    let entries = codec::decode_block(block, start, &table, cpu, false);
    let Ok(full) = codec::decode_block(block, start, &table, cpu, true) else { return };
    // Readers index the table with these (`table.entries[e]`) and count them per entry.
    assert!(full.entries.iter().all(|&e| (e as usize) < table.entries.len()));
    assert_eq!(full.times.len(), full.entries.len());
    assert!(full.times.windows(2).all(|w| w[0] <= w[1]) && full.times.first().is_none_or(|&t| t >= start));
    assert_eq!(entries.expect("entries decode when the whole block does").entries, full.entries);
});
