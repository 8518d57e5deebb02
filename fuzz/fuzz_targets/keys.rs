//! Every key parser and the running-totals records (`s`, `x`, `q`). Input: the bytes of a key
//! or of a totals value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loupe_store::keys::{self, ProbeTotals, SampleTotals, Totals};

fuzz_target!(|data: &[u8]| {
    if let Some((start, id)) = keys::parse_meta_key(data) {
        assert_eq!(keys::meta_key(start, id).as_slice(), data);
    }
    if let Some(cpu) = keys::parse_cpu_key(data) {
        assert_eq!(&data[17..], cpu.to_be_bytes());
    }
    if let Some((start, batch)) = keys::parse_batch_key(data) {
        assert_eq!(keys::batch_key(data[0], start, batch).as_slice(), data);
    }
    if let Some((start, cpu, batch)) = keys::parse_block_key(data) {
        assert_eq!(keys::block_key(start, cpu, batch).as_slice(), data);
    }
    if let Some((kind, id)) = keys::parse_dict_key(data) {
        assert_eq!(keys::dict_key(kind, id).as_slice(), data);
    }
    if let Some((start, id, chunk)) = keys::parse_probe_calls_key(data) {
        assert_eq!(keys::probe_calls_key(start, id, chunk).as_slice(), data);
    }
    let _ = keys::decode_u64(data);
    if let Some(t) = Totals::decode(data) {
        assert_eq!(t.encode().as_slice(), data);
    }
    if let Some(t) = SampleTotals::decode(data) {
        assert_eq!(SampleTotals::decode(&t.encode()), Some(t));
    }
    if let Some(t) = ProbeTotals::decode(data) {
        assert_eq!(ProbeTotals::decode(&t.encode()), Some(t));
    }
});
