//! A sample batch's table (`h` record): `decode_table` (profiles, samples, cursors, verify,
//! sweep) and `table_threads` (`Store::pids`). Input: the record's value. Format-3 tables are
//! decoded with a vocabulary that names every stack by its id.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loupe_store::samples::codec;

fuzz_target!(|data: &[u8]| {
    let threads = codec::table_threads(data);
    let Ok(table) = codec::decode_table(data, &loupe_fuzz::NamesAreStacks) else { return };
    // What the readers rely on: partitions tile the entries, counts match them.
    assert_eq!(table.counts.len(), table.entries.len());
    assert_eq!(table.parts.iter().map(|p| p.len as usize).sum::<usize>(), table.entries.len());
    // `pids()` reads the same table through `table_threads`: it must agree.
    let mut threads = threads.expect("table_threads accepts what decode_table accepts");
    let mut want: Vec<u32> = table.entries.iter().map(|e| e.thread).collect();
    threads.dedup();
    want.dedup();
    assert_eq!(threads, want);
    // Either format gives the same table back (names are the stack ids here).
    let names: Vec<u32> = table.entries.iter().map(|e| e.stack).collect();
    let names_of = codec::encode_table(&table, Some(&names));
    assert_eq!(codec::decode_table(&names_of, &loupe_fuzz::NamesAreStacks).as_ref(), Ok(&table));
    assert_eq!(codec::decode_table(&codec::encode_table(&table, None), &codec::NoVocabulary), Ok(table));
});
