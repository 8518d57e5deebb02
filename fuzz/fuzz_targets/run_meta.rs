//! A run's `m` record, key and value: `keys::parse_meta_key`, `codec::decode_meta` (what
//! `Store::runs`, `run_meta`, `days` and retention decode). Input: `[key][value]` (see `split`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use loupe_store::{codec, keys};

fuzz_target!(|data: &[u8]| {
    let [key, value] = loupe_fuzz::split::<2>(data);
    if let Some((start, id)) = keys::parse_meta_key(key) {
        assert_eq!(keys::meta_key(start, id).as_slice(), key);
    }
    if let Ok(meta) = codec::decode_meta(value) {
        let _ = meta.end_unix_ns();
        assert_eq!(codec::decode_meta(&codec::encode_meta(&meta)), Ok(meta));
    }
});
