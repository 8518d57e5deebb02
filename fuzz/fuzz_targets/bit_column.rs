//! The bit-packed integer columns under every block and table: `bits::read_column` of `n`
//! values, and re-encoding what it read (up to 65,536 values). Input: `n` as 4 little-endian bytes, then the stream.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loupe_store::encoding::bits::{BitReader, BitWriter, read_column, write_column};

fuzz_target!(|data: &[u8]| {
    let (n, stream) = data.split_at(data.len().min(4));
    let mut le = [0u8; 4];
    le[..n.len()].copy_from_slice(n);
    let n = u32::from_le_bytes(le) as usize;
    let Ok(values) = read_column(&mut BitReader::new(stream), n) else { return };
    assert_eq!(values.len(), n);
    // Re-encoding chooses among every code by exact size: costly for the multi-million-value
    // columns a few zero-width bytes describe, so only shorter ones round-trip here.
    if n > 1 << 16 {
        return;
    }
    let mut w = BitWriter::new();
    write_column(&mut w, &values);
    assert_eq!(read_column(&mut BitReader::new(&w.finish()), n), Ok(values));
});
