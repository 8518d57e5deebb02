//! A batch's blocks decoded as the store does: against its batch's table, with and without
//! times. Input: `[key][table record][block value]`. With a `b` key (a batch written before
//! its blocks moved into its record), the block value is that CPU's block; with an `h` key,
//! the table record's own blocks are decoded, each CPU's through the record's directory.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loupe_store::keys;
use loupe_store::samples::codec::{self, Block, Table};

/// What readers rely on: entries index the table (`table.entries[e]`, counted per entry),
/// times are ascending and not before the batch, and the entries decode alike without times.
fn check(table: &Table, start: u64, entries: Result<Block, String>, full: Result<Block, String>) {
    let Ok(full) = full else { return };
    assert!(full.entries.iter().all(|&e| (e as usize) < table.entries.len()));
    assert_eq!(full.times.len(), full.entries.len());
    assert!(full.times.windows(2).all(|w| w[0] <= w[1]) && full.times.first().is_none_or(|&t| t >= start));
    assert_eq!(entries.expect("entries decode when the whole block does").entries, full.entries);
}

fuzz_target!(|data: &[u8]| {
    let [key, record, block] = loupe_fuzz::split::<3>(data);
    let Ok(table) = codec::decode_table(record, &loupe_fuzz::NamesAreStacks) else { return };
    if let Some((start, cpu, _)) = keys::parse_block_key(key) {
        let entries = codec::decode_block(block, start, &table, cpu, false);
        check(&table, start, entries, codec::decode_block(block, start, &table, cpu, true));
        return;
    }
    let (start, _) = keys::parse_batch_key(key).unwrap_or((0, 0));
    let Ok(Some(dir)) = codec::decode_block_dir(record) else { return };
    assert!(dir.blocks.windows(2).all(|w| w[0].cpu < w[1].cpu), "CPUs ascending and distinct");
    for at in &dir.blocks {
        assert_eq!(dir.get(at.cpu), Some(at));
        let entries = dir.decode(record, at, start, &table, false);
        check(&table, start, entries, dir.decode(record, at, start, &table, true));
    }
});
