//! An off-CPU batch's waits (`w` record): `decode_waits` (off-CPU profiles and samples,
//! `verify`). Input: the batch's sample count (4 bytes, little-endian; what its `O` record
//! says), then the record's value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loupe_store::samples::off_cpu::{decode_waits, encode_waits};

fuzz_target!(|data: &[u8]| {
    let Some((n, record)) = data.split_first_chunk::<4>() else { return };
    let n = u64::from(u32::from_le_bytes(*n));
    if let Ok(waits) = decode_waits(record, n) {
        assert_eq!(waits.waited_ns.len() as u64, n);
        let pairs = waits.waited_ns.iter().copied().zip(waits.one_in.iter().copied());
        let again = decode_waits(&encode_waits(pairs), n).expect("re-encoded waits decode");
        assert_eq!(again, waits);
    }
});
