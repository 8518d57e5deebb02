//! Compact column encoding of runs, applied before MessagePack.
//!
//! Only runs use these zero-run-length streams, so they stay here rather than in the shared
//! `encoding` (which this module uses for MessagePack).
//!
//! Why: a run holds `samples × (9 + 2)` values per CPU (2000 × 11 × 8–16 bytes ≈ 200 KB per CPU
//! if stored raw), yet most slots are zero — traffic is bursty, retransmits and CE marks rare,
//! an idle CPU sees nothing. Stored runs are kept for days on every host, so we store only what
//! is non-zero and let MessagePack's variable-width integers (1 byte below 128, then 3, 5 or 9)
//! shrink what remains. An all-zero CPU row is 14 bytes.
//!
//! ## Counter columns (`u64`)
//! A flat `Vec<u64>` of *groups* `[zeros, n, v1 … vn]`: skip `zeros` zero slots, then `n`
//! consecutive non-zero values. Trailing zeros are implied by `samples`. Bursts therefore
//! cost two small integers per burst, not per value.
//!
//! ## Sketch columns (`u128` bitmaps)
//! The same groups, but each value is an *item*:
//! - `0` — the same bitmap as the previous non-zero slot of this column (connections are
//!   usually still open one slot later);
//! - `p` in `1..=SPARSE_MAX_BITS` — `p` set bits follow as bit positions (each < 128, so one
//!   MessagePack byte): a sketch with a few connections costs a few bytes, where its two raw
//!   64-bit words would cost up to 18;
//! - `DENSE` — two words follow, high then low.
//!
//! Decoding checks every length and bound and reports what is wrong; it never panics on bad
//! input, and allocates at most [`MAX_RUN_SAMPLES`] slots per column whatever the metadata
//! says (fuzzed by `fuzz/`: `run_meta`, `run_columns`).

use serde::{Deserialize, Serialize};

use crate::encoding::msgpack::{from_msgpack, to_msgpack};
use crate::model::{ConnCounts, CpuColumns, MAX_RUN_SAMPLES};

/// Sketches with at most this many bits set are stored as bit positions.
const SPARSE_MAX_BITS: u64 = 16;
/// Item tag: two raw words follow.
const DENSE: u64 = SPARSE_MAX_BITS + 1;
/// Item tag: same bitmap as the previous non-zero slot.
const REPEAT: u64 = 0;

/// Groups of non-zero runs in `col`: yields `(zeros_before, start, end)`.
fn bursts<T: Copy + PartialEq + Default>(col: &[T]) -> impl Iterator<Item = (u64, usize, usize)> + '_ {
    let zero = T::default();
    let mut pos = 0usize;
    std::iter::from_fn(move || {
        let start = pos + col[pos..].iter().position(|v| *v != zero)?;
        let end = start + col[start..].iter().position(|v| *v == zero).unwrap_or(col.len() - start);
        let zeros = (start - pos) as u64;
        pos = end;
        Some((zeros, start, end))
    })
}

/// Encodes a counter column; see the module docs.
pub fn encode_counter(col: &[u64]) -> Vec<u64> {
    let mut out = Vec::new();
    for (zeros, start, end) in bursts(col) {
        out.push(zeros);
        out.push((end - start) as u64);
        out.extend_from_slice(&col[start..end]);
    }
    out
}

/// Walks the groups of an encoded column, calling `item` once per non-zero slot with the slot
/// index; `item` consumes that slot's encoding from the stream.
fn walk_groups(
    enc: &[u64],
    samples: usize,
    mut item: impl FnMut(usize, &mut std::slice::Iter<'_, u64>) -> Result<(), String>,
) -> Result<(), String> {
    let mut it = enc.iter();
    let mut slot = 0usize;
    while let Some(&zeros) = it.next() {
        let n = *it.next().ok_or_else(|| format!("group at slot {slot} has no length"))?;
        let start = usize::try_from(zeros)
            .ok()
            .and_then(|z| slot.checked_add(z))
            .filter(|s| *s <= samples)
            .ok_or_else(|| format!("zero run of {zeros} after slot {slot} passes {samples} samples"))?;
        let end = usize::try_from(n)
            .ok()
            .and_then(|n| start.checked_add(n))
            .filter(|e| *e <= samples && n > 0)
            .ok_or_else(|| format!("burst of {n} at slot {start} is empty or passes {samples} samples"))?;
        for s in start..end {
            item(s, &mut it)?;
        }
        slot = end;
    }
    Ok(())
}

/// Decodes a counter column to exactly `samples` values.
pub fn decode_counter(enc: &[u64], samples: usize) -> Result<Vec<u64>, String> {
    let mut out = vec![0u64; samples];
    walk_groups(enc, samples, |s, it| {
        out[s] = *it.next().ok_or_else(|| format!("value for slot {s} missing"))?;
        Ok(())
    })?;
    Ok(out)
}

/// Encodes a sketch column; see the module docs.
pub fn encode_sketch(col: &[u128]) -> Vec<u64> {
    let mut out = Vec::new();
    let mut prev = 0u128;
    for (zeros, start, end) in bursts(col) {
        out.push(zeros);
        out.push((end - start) as u64);
        for &v in &col[start..end] {
            let bits = u64::from(v.count_ones());
            if v == prev {
                out.push(REPEAT);
            } else if bits <= SPARSE_MAX_BITS {
                out.push(bits);
                let mut rest = v;
                while rest != 0 {
                    out.push(u64::from(rest.trailing_zeros()));
                    rest &= rest - 1;
                }
            } else {
                out.push(DENSE);
                out.push((v >> 64) as u64);
                out.push(v as u64);
            }
            prev = v;
        }
    }
    out
}

/// Decodes a sketch column to exactly `samples` bitmaps.
pub fn decode_sketch(enc: &[u64], samples: usize) -> Result<Vec<u128>, String> {
    let mut out = vec![0u128; samples];
    let mut prev = 0u128;
    walk_groups(enc, samples, |s, it| {
        let mut next = || it.next().copied().ok_or_else(|| format!("sketch for slot {s} truncated"));
        let tag = next()?;
        let v = match tag {
            REPEAT if prev == 0 => return Err(format!("slot {s} repeats a sketch before any")),
            REPEAT => prev,
            1..=SPARSE_MAX_BITS => {
                let mut v = 0u128;
                for _ in 0..tag {
                    let bit = next()?;
                    if bit >= 128 {
                        return Err(format!("slot {s} sets bit {bit} of a 128-bit sketch"));
                    }
                    v |= 1u128 << bit;
                }
                v
            }
            DENSE => {
                let hi = next()?;
                let lo = next()?;
                (u128::from(hi) << 64) | u128::from(lo)
            }
            _ => return Err(format!("slot {s} has unknown sketch tag {tag}")),
        };
        if v == 0 {
            return Err(format!("slot {s} holds an empty sketch inside a burst"));
        }
        out[s] = v;
        prev = v;
        Ok(())
    })?;
    Ok(out)
}

/// On-disk form of one CPU's columns (the CPU number is in the key).
#[derive(Serialize, Deserialize)]
struct CpuRow {
    counters: [Vec<u64>; 9],
    in_conns: Vec<u64>,
    out_conns: Vec<u64>,
}

/// On-disk form of [`ConnCounts`].
#[derive(Serialize, Deserialize)]
struct ConnCountsRow {
    in_conns: Vec<u64>,
    out_conns: Vec<u64>,
}

/// Encodes one CPU's columns into its stored value.
pub fn encode_cpu(cols: &CpuColumns) -> Vec<u8> {
    to_msgpack(&CpuRow {
        counters: std::array::from_fn(|i| encode_counter(&cols.counters[i])),
        in_conns: encode_sketch(&cols.in_conns),
        out_conns: encode_sketch(&cols.out_conns),
    })
}

/// `samples` from a run's metadata, checked before anything is allocated for it.
fn slots(samples: u32) -> Result<usize, String> {
    if samples > MAX_RUN_SAMPLES {
        return Err(format!("{samples} samples, more than the limit of {MAX_RUN_SAMPLES}"));
    }
    Ok(samples as usize)
}

/// Decodes a stored CPU row of a run of `samples` slots.
pub fn decode_cpu(cpu: u32, bytes: &[u8], samples: u32) -> Result<CpuColumns, String> {
    let n = slots(samples)?;
    let row: CpuRow = from_msgpack(bytes)?;
    let mut counters: [Vec<u64>; 9] = Default::default();
    for (i, (enc, out)) in row.counters.iter().zip(counters.iter_mut()).enumerate() {
        let name = crate::Counter::ALL[i].name();
        *out = decode_counter(enc, n).map_err(|e| format!("column {name}: {e}"))?;
    }
    Ok(CpuColumns {
        cpu,
        counters,
        in_conns: decode_sketch(&row.in_conns, n).map_err(|e| format!("column in_conns: {e}"))?,
        out_conns: decode_sketch(&row.out_conns, n).map_err(|e| format!("column out_conns: {e}"))?,
    })
}

pub fn encode_conn_counts(c: &ConnCounts) -> Vec<u8> {
    to_msgpack(&ConnCountsRow { in_conns: encode_counter(&c.in_conns), out_conns: encode_counter(&c.out_conns) })
}

pub fn decode_conn_counts(bytes: &[u8], samples: u32) -> Result<ConnCounts, String> {
    let n = slots(samples)?;
    let row: ConnCountsRow = from_msgpack(bytes)?;
    Ok(ConnCounts {
        in_conns: decode_counter(&row.in_conns, n).map_err(|e| format!("in_conns: {e}"))?,
        out_conns: decode_counter(&row.out_conns, n).map_err(|e| format!("out_conns: {e}"))?,
    })
}

pub fn encode_meta(meta: &crate::RunMeta) -> Vec<u8> {
    to_msgpack(meta)
}

pub fn decode_meta(bytes: &[u8]) -> Result<crate::RunMeta, String> {
    from_msgpack(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_roundtrip_shapes() {
        let cases: Vec<Vec<u64>> = vec![
            vec![0; 10],
            vec![1; 10],
            vec![0, 0, 5, 6, 0, 0, 0, 7, 0, 0],
            vec![u64::MAX, 0, 1, 0, 0, 0, 0, 0, 0, 3],
            vec![],
        ];
        for col in cases {
            let enc = encode_counter(&col);
            assert_eq!(decode_counter(&enc, col.len()).unwrap(), col, "{enc:?}");
        }
        assert!(encode_counter(&[0; 2000]).is_empty());
        assert_eq!(encode_counter(&[0, 0, 5, 6, 0]), vec![2, 2, 5, 6]);
    }

    #[test]
    fn sketch_roundtrip_shapes() {
        let dense = u128::MAX - 12345;
        let col = vec![0, 1, 1, 1u128 << 127, 0, dense, dense, 0, (1 << 3) | (1 << 64) | (1 << 100), 0];
        let enc = encode_sketch(&col);
        assert_eq!(decode_sketch(&enc, col.len()).unwrap(), col, "{enc:?}");
        // A few bits cost a few bytes each.
        assert_eq!(encode_sketch(&[0, 1 << 100]), vec![1, 1, 1, 100]);
        assert_eq!(encode_sketch(&[1 << 100, 1 << 100]), vec![0, 2, 1, 100, REPEAT]);
    }

    #[test]
    fn decode_rejects_bad_streams() {
        // Burst runs past the end.
        assert!(decode_counter(&[8, 3, 1, 1, 1], 10).is_err());
        // Zero-length burst.
        assert!(decode_counter(&[0, 0], 10).is_err());
        // Missing value.
        assert!(decode_counter(&[0, 2, 1], 10).is_err());
        // Huge skip.
        assert!(decode_counter(&[u64::MAX, 1, 1], 10).is_err());
        // Bit out of range, unknown tag, repeat with nothing before.
        assert!(decode_sketch(&[0, 1, 1, 128], 4).is_err());
        assert!(decode_sketch(&[0, 1, 99], 4).is_err());
        assert!(decode_sketch(&[0, 1, REPEAT], 4).is_err());
        assert!(decode_sketch(&[0, 1, DENSE, 0, 0], 4).is_err());
    }

    /// A crash of the `run_columns` fuzz target (its input is kept as
    /// `fuzz/corpus/run_columns/regress-huge-samples`): metadata claiming 2^32 - 1 samples made
    /// the reader ask for 32 GB for the first column of a 4-slot row (an abort) instead of
    /// reporting the record corrupt.
    #[test]
    fn huge_sample_count_is_refused_before_allocating() {
        let row = encode_cpu(&CpuColumns::zeroed(0, 4));
        let err = decode_cpu(0, &row, u32::MAX).unwrap_err();
        assert!(err.contains("more than the limit"), "{err}");
        let counts = encode_conn_counts(&ConnCounts { in_conns: vec![1; 4], out_conns: vec![0; 4] });
        assert!(decode_conn_counts(&counts, MAX_RUN_SAMPLES + 1).is_err());
        assert!(decode_cpu(0, &encode_cpu(&CpuColumns::zeroed(0, MAX_RUN_SAMPLES)), MAX_RUN_SAMPLES).is_ok());
    }

    #[test]
    fn zero_cpu_row_is_tiny() {
        let cols = CpuColumns::zeroed(3, 2000);
        let bytes = encode_cpu(&cols);
        assert!(bytes.len() <= 14, "{} bytes", bytes.len());
        assert_eq!(decode_cpu(3, &bytes, 2000).unwrap(), cols);
    }
}
