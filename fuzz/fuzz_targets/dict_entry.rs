//! A dictionary record (`d`: frame, comm, stack, thread or a process's name for a stack), key
//! and value, decoded and loaded into a dictionary cache as `ensure_dict` does. The id counters
//! are those of a store with 65,536 of each kind allocated. Input: `[key][value]`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loupe_store::keys::SampleTotals;
use loupe_store::samples::codec;
use loupe_store::samples::dict::Dict;

fuzz_target!(|data: &[u8]| {
    let [key, value] = loupe_fuzz::split::<2>(data);
    let Ok(record) = codec::decode_dict_record(key, value) else { return };
    let next = 1 << 16;
    let totals =
        SampleTotals { next_frame: next, next_comm: next, next_stack: next, next_thread: next, ..Default::default() };
    let _ = Dict::default().load(record, &totals);
});
