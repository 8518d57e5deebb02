//! A probe session decoded as the store does: its metadata (`P` value, with the start from its
//! key) and the functions inside it, and one chunk of its calls (`p` value, with the chunk
//! number from its key) against the session's function count. Input:
//! `[metadata key][metadata value][calls key][calls value]`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loupe_store::keys;
use loupe_store::probes::codec;

fuzz_target!(|data: &[u8]| {
    let [meta_key, meta, calls_key, calls] = loupe_fuzz::split::<4>(data);
    let (start, _) = keys::parse_batch_key(meta_key).unwrap_or((0, 0));
    let functions = match codec::decode_meta(meta, start) {
        Ok(row) => {
            // Readers size their vectors with these.
            assert!(row.end >= start && row.names.len() <= loupe_store::MAX_SESSION_FUNCTIONS);
            assert!(row.chunks() <= codec::MAX_CHUNKS);
            if let Ok(fs) = codec::decode_functions(&row.functions.0, &row.names) {
                assert_eq!(fs.len(), row.names.len());
                for f in &fs {
                    assert!(f.buckets.len() <= loupe_store::MAX_BUCKETS);
                    assert!(f.buckets.windows(2).all(|w| w[0].0 < w[1].0));
                }
            }
            row.names.len()
        }
        Err(_) => 5,
    };
    let chunk = keys::parse_probe_calls_key(calls_key).map_or(0, |(_, _, c)| c);
    let Ok(decoded) = codec::decode_chunk(calls, chunk, start, functions) else { return };
    // Readers index the functions and the calls with these.
    let first = chunk as usize * codec::CHUNK_CALLS;
    assert!(!decoded.is_empty() && decoded.len() <= codec::CHUNK_CALLS);
    for (i, c) in decoded.iter().enumerate() {
        assert!((c.function as usize) < functions && c.exit_unix_ns >= c.entry_unix_ns);
        assert!(c.parent.is_none_or(|p| (p as usize) < first + i));
    }
    // What decodes re-encodes to the same calls.
    let again = codec::encode_chunk(&decoded, first, start);
    assert_eq!(codec::decode_chunk(&again, chunk, start, functions).unwrap(), decoded);
});
