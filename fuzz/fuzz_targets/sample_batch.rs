//! A sample batch's metadata (`B` record): `decode_batch` (listing, retention, days, cursors).
//! Input: the record's value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loupe_store::samples::codec;

fuzz_target!(|data: &[u8]| {
    if let Ok(row) = codec::decode_batch(data) {
        let again = codec::decode_batch(&codec::encode_batch(&row)).expect("re-encoded batch decodes");
        assert_eq!((again.end, again.samples, again.lost, again.cpus), (row.end, row.samples, row.lost, row.cpus));
    }
});
