//! A run's column records decoded as `Store::run` does: the CPU row (`c`) and the connection
//! counts (`k`) against the sample count of the run's metadata (`m`). Input:
//! `[meta value][cpu key][cpu row][conn counts]`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loupe_store::{codec, keys};

fuzz_target!(|data: &[u8]| {
    let [meta, cpu_key, row, counts] = loupe_fuzz::split::<4>(data);
    let Ok(meta) = codec::decode_meta(meta) else { return };
    let cpu = keys::parse_cpu_key(cpu_key).unwrap_or(0);
    let n = meta.samples as usize;
    if let Ok(cols) = codec::decode_cpu(cpu, row, meta.samples) {
        assert!(cols.counters.iter().all(|c| c.len() == n) && cols.in_conns.len() == n && cols.out_conns.len() == n);
        assert_eq!(codec::decode_cpu(cpu, &codec::encode_cpu(&cols), meta.samples), Ok(cols));
    }
    if let Ok(c) = codec::decode_conn_counts(counts, meta.samples) {
        assert!(c.in_conns.len() == n && c.out_conns.len() == n);
    }
});
