//! The encodings every kind of record shares: bit-packed integer columns (`bits`), MessagePack
//! (`msgpack`), and metadata records that count their own bytes (`self_counting_record`).
//!
//! *Why a module of its own:* runs, stack samples, timeline events and probe sessions each have
//! a codec of their own (`codec` at the top for runs, a `codec` in each of `samples`,
//! `timeline` and `probes`), but they build on the same few primitives. Kept here, below all of
//! them and naming none of them, each primitive is written once, and no kind reaches into
//! another's codec for it.

pub mod bits;
pub mod msgpack;

/// The value of a metadata record that counts its own batch's bytes: `encode(stored_bytes)`
/// where `stored_bytes` = `others` + this record's key and value. The value's size depends on
/// the number it holds, so this climbs to the fixed point (the encoded size only grows with
/// the value, so it stops within a few rounds). Returns the bytes counted and the value.
pub(crate) fn self_counting_record(
    others: u64,
    key_len: usize,
    mut encode: impl FnMut(u64) -> Vec<u8>,
) -> (u64, Vec<u8>) {
    let mut guess = others + key_len as u64;
    loop {
        let v = encode(guess);
        let total = others + (key_len + v.len()) as u64;
        if total == guess {
            return (guess, v);
        }
        guess = total;
    }
}
