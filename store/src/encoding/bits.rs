//! Bit-level integer columns: the innermost layer of the sample and timeline codecs (and of
//! the off-CPU waits), with the transforms that make their values small first (zigzag, gap
//! coding).
//!
//! *Why bits and not MessagePack integers:* a stack sample carries little information — a
//! timer latency of a few microseconds, "which of ~50 things this CPU ran" — and the goal is a
//! few bytes per sample. MessagePack spends at least one byte per integer and three on anything
//! from 256 to 65,535, so a column of small numbers would cost 2–3× its information. Each
//! column is therefore written with whichever of four codes is shortest for *that* column:
//!
//! - **fixed width** `w` (0..=64 bits each; `w = 0` is free when every value is 0),
//! - **Exp-Golomb of order `k`** (0..=63): small values short, outliers cost about twice their
//!   bit length instead of widening every value,
//! - **Rice of parameter `k`**: like Exp-Golomb but a unary quotient; the shortest code for
//!   geometric-looking columns such as timer latencies (used only when no quotient exceeds 48),
//! - **sparse**: the count of non-zero values, then their gaps and values (each a column of its
//!   own): for columns that are almost all zero.
//!
//! The chooser computes every candidate's exact size (cheap: no trial encoding) and writes a
//! 2-bit mode and its parameter first. The value count is never stored here: the caller knows
//! it from context. Bits are written least-significant first. The reader checks every bound
//! and returns an error, never panics, on truncated or hostile input. Decoding keeps a 64-bit
//! cache of the stream, so a value costs a few nanoseconds.

/// Appends bits, least-significant first.
#[derive(Default)]
pub struct BitWriter {
    out: Vec<u8>,
    acc: u128,
    filled: u32,
}

impl BitWriter {
    pub fn new() -> BitWriter {
        BitWriter::default()
    }

    /// Writes the low `n` bits of `v` (`n` ≤ 64).
    #[inline]
    pub fn put(&mut self, v: u64, n: u32) {
        debug_assert!(n <= 64);
        if n == 0 {
            return;
        }
        let v = if n == 64 { v } else { v & ((1u64 << n) - 1) };
        self.acc |= (v as u128) << self.filled;
        self.filled += n;
        if self.filled >= 64 {
            self.out.extend_from_slice(&(self.acc as u64).to_le_bytes());
            self.acc >>= 64;
            self.filled -= 64;
        }
    }

    /// Exp-Golomb of order `k` (`k` ≤ 63): `L - k` zeros, a one, then the low `L` bits of
    /// `v + 2^k`, where `L = floor(log2(v + 2^k))`. Total `2L - k + 1` bits.
    #[inline]
    pub fn put_eg(&mut self, v: u64, k: u32) {
        let x = v as u128 + (1u128 << k);
        let l = 127 - x.leading_zeros();
        let zeros = l - k;
        // zeros ≤ 64: write them in two pieces if needed, then the marker bit.
        if zeros >= 64 {
            self.put(0, 63);
            self.put(0, zeros - 63);
        } else {
            self.put(0, zeros);
        }
        self.put(1, 1);
        let low = x & ((1u128 << l) - 1);
        if l > 64 {
            self.put(low as u64, 64);
            self.put((low >> 64) as u64, l - 64);
        } else {
            self.put(low as u64, l);
        }
    }

    /// Rice (Golomb with `2^k`) of parameter `k` ≤ 63: `v >> k` zeros, a one, then the low `k`
    /// bits. Callers guarantee `v >> k` ≤ [`RICE_MAX_QUOTIENT`].
    #[inline]
    pub fn put_rice(&mut self, v: u64, k: u32) {
        let q = (v >> k) as u32;
        debug_assert!(q <= RICE_MAX_QUOTIENT);
        if q > 32 {
            self.put(0, 32);
            self.put(0, q - 32);
        } else {
            self.put(0, q);
        }
        self.put(1, 1);
        self.put(v, k);
    }

    /// A value below `n` (≥ 1) in truncated binary: with `b = ⌈log2 n⌉`, the first
    /// `2^b − n` values take `b − 1` bits and the others `b`. For values spread evenly over
    /// `0..n` that saves up to a bit on `⌈log2 n⌉` fixed bits, ~0.39 on average over `n`.
    #[inline]
    pub fn put_below(&mut self, v: u64, n: u64) {
        debug_assert!(v < n);
        let b = below_bits(n);
        if b == 0 {
            return;
        }
        let short = ((1u128 << b) - u128::from(n)) as u64;
        if v < short {
            self.put(v, b - 1);
        } else {
            let x = v + short;
            self.put(x >> 1, b - 1);
            self.put(x & 1, 1);
        }
    }

    #[cfg(test)]
    pub fn bit_len(&self) -> u64 {
        self.out.len() as u64 * 8 + u64::from(self.filled)
    }

    pub fn finish(mut self) -> Vec<u8> {
        let bytes = self.filled.div_ceil(8) as usize;
        self.out.extend_from_slice(&self.acc.to_le_bytes()[..bytes]);
        self.out
    }
}

/// Reads what [`BitWriter`] wrote: a 64-bit cache refilled from the bytes as it drains.
pub struct BitReader<'a> {
    buf: &'a [u8],
    /// Next byte of `buf` to load into the cache.
    next: usize,
    cache: u64,
    /// Valid bits in `cache` (the low ones).
    avail: u32,
}

impl<'a> BitReader<'a> {
    pub fn new(buf: &'a [u8]) -> BitReader<'a> {
        BitReader { buf, next: 0, cache: 0, avail: 0 }
    }

    /// Tops the cache up to at least 57 bits, or to whatever is left.
    #[inline]
    fn refill(&mut self) {
        if self.next + 8 <= self.buf.len() {
            let take = (63 - self.avail) / 8; // whole bytes that fit: ≤ 7
            let w = u64::from_le_bytes(self.buf[self.next..self.next + 8].try_into().unwrap());
            // Keep the bits above `avail` zero (the unary reader relies on it).
            self.cache |= (w & ((1u64 << (take * 8)) - 1)) << self.avail;
            self.next += take as usize;
            self.avail += take * 8;
        } else {
            while self.avail <= 56 && self.next < self.buf.len() {
                self.cache |= u64::from(self.buf[self.next]) << self.avail;
                self.next += 1;
                self.avail += 8;
            }
        }
    }

    /// Reads `n` ≤ 56 bits.
    #[inline]
    fn get_small(&mut self, n: u32) -> Result<u64, String> {
        if self.avail < n {
            self.refill();
            if self.avail < n {
                return Err(format!("bit stream truncated: need {n} bits, {} left", self.avail));
            }
        }
        let v = self.cache & ((1u64 << n) - 1);
        self.cache >>= n;
        self.avail -= n;
        Ok(v)
    }

    /// Reads `n` ≤ 64 bits.
    #[inline]
    pub fn get(&mut self, n: u32) -> Result<u64, String> {
        if n <= 56 {
            self.get_small(n)
        } else {
            let lo = self.get_small(32)?;
            let hi = self.get_small(n - 32)?;
            Ok(lo | (hi << 32))
        }
    }

    /// Counts zero bits up to the next one bit and consumes them and the one; at most `max`.
    #[inline]
    fn unary(&mut self, max: u32) -> Result<u32, String> {
        let mut zeros = 0u32;
        loop {
            if self.avail == 0 || self.cache == 0 {
                // Everything cached is zero: consume it and load more.
                zeros += self.avail;
                self.cache = 0;
                self.avail = 0;
                if zeros > max {
                    return Err(format!("unary prefix longer than {max}"));
                }
                self.refill();
                if self.avail == 0 {
                    return Err("bit stream truncated inside a unary prefix".into());
                }
                continue;
            }
            let tz = self.cache.trailing_zeros(); // < avail, since bits above avail are zero
            zeros += tz;
            if zeros > max {
                return Err(format!("unary prefix longer than {max}"));
            }
            self.cache >>= tz;
            self.cache >>= 1;
            self.avail -= tz + 1;
            return Ok(zeros);
        }
    }

    /// Reads an Exp-Golomb value of order `k`; see [`BitWriter::put_eg`].
    #[inline]
    pub fn get_eg(&mut self, k: u32) -> Result<u64, String> {
        let zeros = self.unary(64)?;
        let l = zeros + k;
        if l > 64 {
            return Err(format!("Exp-Golomb value of {l} bits does not fit 64"));
        }
        let low = self.get(l)?;
        let x = (1u128 << l) | u128::from(low);
        u64::try_from(x - (1u128 << k)).map_err(|_| "Exp-Golomb value exceeds 64 bits".to_string())
    }

    /// Reads a Rice value of parameter `k`; see [`BitWriter::put_rice`].
    #[inline]
    /// A value written by [`BitWriter::put_below`] with the same `n` (≥ 1): always below `n`,
    /// whatever the bits.
    pub fn get_below(&mut self, n: u64) -> Result<u64, String> {
        let b = below_bits(n);
        if b == 0 {
            return Ok(0);
        }
        let short = ((1u128 << b) - u128::from(n)) as u64;
        let y = self.get(b - 1)?;
        if y < short { Ok(y) } else { Ok(((y << 1) | self.get(1)?) - short) }
    }

    pub fn get_rice(&mut self, k: u32) -> Result<u64, String> {
        let q = u64::from(self.unary(RICE_MAX_QUOTIENT)?);
        let low = self.get(k)?;
        Ok((q << k) | low)
    }

    /// Appends `n` Exp-Golomb values of order `k`: a fast path on the cached bits for values
    /// whose code fits in them, the checked reader otherwise.
    fn eg_column(&mut self, n: usize, k: u32, out: &mut Vec<u64>) -> Result<(), String> {
        out.reserve(n);
        for _ in 0..n {
            if self.avail < 57 {
                self.refill();
            }
            let c = self.cache;
            let tz = c.trailing_zeros();
            let l = tz + k;
            let need = tz + 1 + l;
            if c != 0 && need <= self.avail && need < 64 {
                let low = (c >> (tz + 1)) & ((1u64 << l) - 1);
                self.cache >>= need;
                self.avail -= need;
                out.push(((1u64 << l) | low) - (1u64 << k));
            } else {
                out.push(self.get_eg(k)?);
            }
        }
        Ok(())
    }

    /// Appends `n` Rice values of parameter `k` (fast path as in `eg_column`).
    fn rice_column(&mut self, n: usize, k: u32, out: &mut Vec<u64>) -> Result<(), String> {
        out.reserve(n);
        for _ in 0..n {
            if self.avail < 57 {
                self.refill();
            }
            let c = self.cache;
            let q = c.trailing_zeros();
            let need = q + 1 + k;
            if c != 0 && need <= self.avail && need < 64 {
                let low = (c >> (q + 1)) & ((1u64 << k) - 1);
                self.cache >>= need;
                self.avail -= need;
                out.push((u64::from(q) << k) | low);
            } else {
                out.push(self.get_rice(k)?);
            }
        }
        Ok(())
    }

    /// Appends `n` values of `w` ≤ 64 bits each.
    fn fixed_column(&mut self, n: usize, w: u32, out: &mut Vec<u64>) -> Result<(), String> {
        out.reserve(n);
        if w == 0 {
            out.resize(out.len() + n, 0);
            return Ok(());
        }
        if w > 56 {
            for _ in 0..n {
                out.push(self.get(w)?);
            }
            return Ok(());
        }
        let mask = (1u64 << w) - 1;
        for _ in 0..n {
            if self.avail < w {
                self.refill();
                if self.avail < w {
                    return Err(format!("bit stream truncated: need {w} bits, {} left", self.avail));
                }
            }
            out.push(self.cache & mask);
            self.cache >>= w;
            self.avail -= w;
        }
        Ok(())
    }

    /// Bits not yet read.
    pub fn remaining(&self) -> u64 {
        u64::from(self.avail) + (self.buf.len() - self.next) as u64 * 8
    }
}

/// Rice codes are only used when every quotient is at most this (so no value costs more than
/// ~64 bits over its remainder, and the unary reader stays bounded).
pub const RICE_MAX_QUOTIENT: u32 = 48;

/// Bits of `v` written as Exp-Golomb of order `k`.
#[inline]
pub fn eg_bits(v: u64, k: u32) -> u64 {
    let x = v as u128 + (1u128 << k);
    let l = u64::from(127 - x.leading_zeros());
    2 * l - u64::from(k) + 1
}

/// `⌈log2 n⌉`: the bits of a value below `n` written in fixed width (0 for `n` ≤ 1).
pub fn below_bits(n: u64) -> u32 {
    if n <= 1 { 0 } else { 64 - (n - 1).leading_zeros() }
}

fn bit_width(max: u64) -> u32 {
    64 - max.leading_zeros()
}

const MODE_FIXED: u64 = 0;
const MODE_EG: u64 = 1;
const MODE_SPARSE: u64 = 2;
const MODE_RICE: u64 = 3;
const MODE_BITS: u32 = 2;
const PARAM_BITS: u32 = 7;

/// The cheapest dense code for `values`: `(mode, param, bits)` without the header.
fn best_dense(values: &[u64]) -> (u64, u32, u64) {
    let max = values.iter().copied().max().unwrap_or(0);
    let w = bit_width(max);
    let mut best = (MODE_FIXED, w, values.len() as u64 * u64::from(w));
    if w == 0 {
        return best;
    }
    // Exp-Golomb sizes for every k at once: one pass over the values, bucketed by bit length
    // (the size of v under order k depends only on v's bit length and k).
    let mut by_len = [0u64; 65];
    for &v in values {
        by_len[bit_width(v) as usize] += 1;
    }
    for k in 0..w.min(63) {
        let mut bits = 0u64;
        for (len, &count) in by_len.iter().enumerate() {
            if count == 0 {
                continue;
            }
            // L = floor(log2(v + 2^k)) is k when v < 2^k, and otherwise len - 1 except for the
            // top 2^k values of the bucket (len): a close estimate, made exact below.
            let l = if (len as u32) <= k { u64::from(k) } else { len as u64 - 1 };
            bits += count * (2 * l - u64::from(k) + 1);
        }
        if bits < best.2 {
            best = (MODE_EG, k, bits);
        }
    }
    if best.0 == MODE_EG {
        // Exact size of the chosen k; fall back to fixed width if the estimate misled.
        let k = best.1;
        let exact = values.iter().map(|&v| eg_bits(v, k)).sum();
        best = if exact < values.len() as u64 * u64::from(w) {
            (MODE_EG, k, exact)
        } else {
            (MODE_FIXED, w, values.len() as u64 * u64::from(w))
        };
    }
    // Rice codes: best for geometric-like columns (timer latencies), when no value is so large
    // that its quotient would run long.
    let max = values.iter().copied().max().unwrap_or(0);
    for k in w.saturating_sub(6)..w.min(63) {
        if max >> k > u64::from(RICE_MAX_QUOTIENT) {
            continue;
        }
        let bits = values.len() as u64 * u64::from(k + 1) + values.iter().map(|&v| v >> k).sum::<u64>();
        if bits < best.2 {
            best = (MODE_RICE, k, bits);
        }
    }
    best
}

/// Size in bits of `values` written by [`write_column`] (header included).
pub fn column_bits(values: &[u64]) -> u64 {
    plan(values).0
}

enum Plan {
    Dense,
    Sparse,
}

fn plan(values: &[u64]) -> (u64, Plan) {
    let (_, _, bits) = best_dense(values);
    let dense = u64::from(MODE_BITS + PARAM_BITS) + bits;
    let nonzero = values.iter().filter(|&&v| v != 0).count();
    if nonzero * 4 < values.len() {
        let (gaps, vals) = sparse_parts(values);
        let sparse = u64::from(MODE_BITS)
            + eg_bits(nonzero as u64, 0)
            + u64::from(2 * (MODE_BITS + PARAM_BITS))
            + best_dense(&gaps).2
            + best_dense(&vals).2;
        if sparse < dense {
            return (sparse, Plan::Sparse);
        }
    }
    (dense, Plan::Dense)
}

fn sparse_parts(values: &[u64]) -> (Vec<u64>, Vec<u64>) {
    let mut gaps = Vec::new();
    let mut vals = Vec::new();
    let mut last = 0usize;
    for (i, &v) in values.iter().enumerate() {
        if v != 0 {
            gaps.push((i - last) as u64);
            vals.push(v - 1);
            last = i + 1;
        }
    }
    (gaps, vals)
}

fn write_dense(w: &mut BitWriter, values: &[u64]) {
    let (mode, param, _) = best_dense(values);
    w.put(mode, MODE_BITS);
    w.put(u64::from(param), PARAM_BITS);
    write_dense_body(w, mode, param, values);
}

/// `values` in the dense code `mode` of parameter `param`, without a header.
fn write_dense_body(w: &mut BitWriter, mode: u64, param: u32, values: &[u64]) {
    match mode {
        MODE_FIXED => values.iter().for_each(|&v| w.put(v, param)),
        MODE_RICE => values.iter().for_each(|&v| w.put_rice(v, param)),
        _ => values.iter().for_each(|&v| w.put_eg(v, param)),
    }
}

/// Writes a column with the cheapest code; the reader must know `values.len()`.
pub fn write_column(w: &mut BitWriter, values: &[u64]) {
    match plan(values).1 {
        Plan::Dense => write_dense(w, values),
        Plan::Sparse => {
            let (gaps, vals) = sparse_parts(values);
            w.put(MODE_SPARSE, MODE_BITS);
            w.put_eg(gaps.len() as u64, 0);
            write_dense(w, &gaps);
            write_dense(w, &vals);
        }
    }
}

fn read_dense(r: &mut BitReader<'_>, n: usize, out: &mut Vec<u64>) -> Result<(), String> {
    let mode = r.get(MODE_BITS)?;
    let param = r.get(PARAM_BITS)? as u32;
    read_dense_body(r, mode, param, n, out)
}

fn read_dense_body(r: &mut BitReader<'_>, mode: u64, param: u32, n: usize, out: &mut Vec<u64>) -> Result<(), String> {
    match mode {
        MODE_FIXED => {
            if param > 64 {
                return Err(format!("fixed width {param} > 64"));
            }
            if (n as u64).saturating_mul(u64::from(param)) > r.remaining() {
                return Err(format!("column of {n} × {param} bits is longer than the stream"));
            }
            r.fixed_column(n, param, out)?;
        }
        MODE_EG => {
            if param > 63 {
                return Err(format!("Exp-Golomb order {param} > 63"));
            }
            // Each value takes at least one bit: refuse absurd counts before allocating.
            if n as u64 > r.remaining() {
                return Err(format!("column of {n} values is longer than the stream"));
            }
            r.eg_column(n, param, out)?;
        }
        MODE_RICE => {
            if param > 63 {
                return Err(format!("Rice parameter {param} > 63"));
            }
            if (n as u64).saturating_mul(u64::from(param) + 1) > r.remaining() {
                return Err(format!("column of {n} values is longer than the stream"));
            }
            r.rice_column(n, param, out)?;
        }
        m => return Err(format!("unknown column mode {m}")),
    }
    Ok(())
}

/// The longest column a reader accepts (a corrupt count must not allocate without bound);
/// writers never produce longer ones (see `MAX_BATCH_SAMPLES`).
///
/// Why this number: columns compress to nothing when their values are equal (fixed width 0),
/// so a header of a few bytes may legitimately describe a column this long, and a batch table
/// has nine of them. At 2^22 the worst record decodes in ~300 MB; at the former 2^26 a 30-byte
/// table asked for over 2 GB (the `sample_table` fuzz target's out-of-memory crash).
pub const MAX_COLUMN: usize = 1 << 22;

/// Reads `n` values written by [`write_column`], appending them to `out`.
pub fn read_column_into(r: &mut BitReader<'_>, n: usize, out: &mut Vec<u64>) -> Result<(), String> {
    if n > MAX_COLUMN {
        return Err(format!("column of {n} values is longer than the limit of {MAX_COLUMN}"));
    }
    let mode = r.get(MODE_BITS)?;
    if mode != MODE_SPARSE {
        let param = r.get(PARAM_BITS)? as u32;
        return read_dense_body(r, mode, param, n, out);
    }
    let count = r.get_eg(0)?;
    if count > n as u64 {
        return Err(format!("sparse column has {count} non-zero values but only {n} slots"));
    }
    let count = count as usize;
    let mut gaps = Vec::with_capacity(count);
    read_dense(r, count, &mut gaps)?;
    let mut vals = Vec::with_capacity(count);
    read_dense(r, count, &mut vals)?;
    let base = out.len();
    out.resize(base + n, 0);
    let mut pos = 0usize;
    for (g, v) in gaps.into_iter().zip(vals) {
        let at = usize::try_from(g).ok().and_then(|g| pos.checked_add(g)).filter(|&p| p < n);
        let Some(at) = at else {
            return Err(format!("sparse gap {g} after slot {pos} passes {n} slots"));
        };
        out[base + at] = v.checked_add(1).ok_or("sparse value overflows")?;
        pos = at + 1;
    }
    Ok(())
}

/// Reads `n` values written by [`write_column`].
pub fn read_column(r: &mut BitReader<'_>, n: usize) -> Result<Vec<u64>, String> {
    let mut out = Vec::new();
    read_column_into(r, n, &mut out)?;
    Ok(out)
}

/// A dense code (mode and parameter) that many short columns of one kind share, written once
/// instead of in each column's header.
///
/// *Why:* a batch's 96 per-CPU blocks each hold ~100 samples in five or six columns, and each
/// column's header (mode and parameter, 9 bits) cost ~0.5 bits a sample on the benchmark's day.
/// Columns of one kind (the first-use flags of every CPU, say) are alike, so the batch writes
/// one code per kind and a column says in one bit whether it uses it or its own header
/// ([`write_column_with`]): whichever is shorter, so sharing never costs more than that bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharedCode {
    mode: u64,
    param: u32,
}

impl SharedCode {
    /// The code that makes `columns` shortest together, each taking it or its own (whichever
    /// is shorter); `None` when there is no column. Candidates: the best code of them all
    /// concatenated, and each column's own best.
    pub fn choose(columns: &[&[u64]]) -> Option<SharedCode> {
        let columns: Vec<&[u64]> = columns.iter().copied().filter(|c| !c.is_empty()).collect();
        if columns.is_empty() {
            return None;
        }
        let own: Vec<u64> = columns.iter().map(|c| column_bits(c)).collect();
        let all: Vec<u64> = columns.iter().flat_map(|c| c.iter().copied()).collect();
        let code = |(mode, param, _): (u64, u32, u64)| SharedCode { mode, param };
        let mut candidates = vec![code(best_dense(&all))];
        for c in &columns {
            let one = code(best_dense(c));
            if !candidates.contains(&one) {
                candidates.push(one);
            }
        }
        candidates.into_iter().min_by_key(|code| {
            columns.iter().zip(&own).map(|(c, &own)| code.body_bits(c).map_or(own, |b| b.min(own))).sum::<u64>()
        })
    }

    /// Bits of `values` in this code (no header), or `None` when one does not fit it.
    pub fn body_bits(&self, values: &[u64]) -> Option<u64> {
        match self.mode {
            MODE_FIXED => {
                let max = values.iter().copied().max().unwrap_or(0);
                (bit_width(max) <= self.param).then(|| values.len() as u64 * u64::from(self.param))
            }
            MODE_RICE => values.iter().try_fold(0u64, |acc, &v| {
                let q = v >> self.param;
                (q <= u64::from(RICE_MAX_QUOTIENT)).then(|| acc + q + u64::from(self.param) + 1)
            }),
            _ => Some(values.iter().map(|&v| eg_bits(v, self.param)).sum()),
        }
    }

    /// 9 bits: what a dense column's header holds.
    pub fn write(&self, w: &mut BitWriter) {
        w.put(self.mode, MODE_BITS);
        w.put(u64::from(self.param), PARAM_BITS);
    }

    pub fn read(r: &mut BitReader<'_>) -> Result<SharedCode, String> {
        let mode = r.get(MODE_BITS)?;
        let param = r.get(PARAM_BITS)? as u32;
        let limit = match mode {
            MODE_FIXED => 64,
            MODE_EG | MODE_RICE => 63,
            m => return Err(format!("shared column code of mode {m}: only dense codes are shared")),
        };
        if param > limit {
            return Err(format!("shared column code's parameter {param} > {limit}"));
        }
        Ok(SharedCode { mode, param })
    }
}

/// Size in bits of `values` written by [`write_column_with`].
pub fn column_bits_with(values: &[u64], shared: Option<&SharedCode>) -> u64 {
    let own = column_bits(values);
    match shared {
        None => own,
        Some(code) => 1 + code.body_bits(values).map_or(own, |b| b.min(own)),
    }
}

/// Writes a column as [`write_column`] does, or, given a code shared by its kind, a bit saying
/// which follows: the values in the shared code (no header), or the column with its own.
pub fn write_column_with(w: &mut BitWriter, values: &[u64], shared: Option<&SharedCode>) {
    let Some(code) = shared else { return write_column(w, values) };
    match code.body_bits(values) {
        Some(b) if b <= column_bits(values) => {
            w.put(1, 1);
            write_dense_body(w, code.mode, code.param, values);
        }
        _ => {
            w.put(0, 1);
            write_column(w, values);
        }
    }
}

/// Reads `n` values written by [`write_column_with`] with the same `shared`, appending them
/// to `out`.
pub fn read_column_with(
    r: &mut BitReader<'_>,
    n: usize,
    shared: Option<&SharedCode>,
    out: &mut Vec<u64>,
) -> Result<(), String> {
    match shared {
        Some(code) if r.get(1)? == 1 => {
            if n > MAX_COLUMN {
                return Err(format!("column of {n} values is longer than the limit of {MAX_COLUMN}"));
            }
            read_dense_body(r, code.mode, code.param, n, out)
        }
        _ => read_column_into(r, n, out),
    }
}

/// Gap coding of an ascending list: first value, then `next - prev - 1` (strict) or
/// `next - prev` (non-strict).
pub fn gaps(values: impl IntoIterator<Item = u64>, strict: bool, out: &mut Vec<u64>) {
    let mut prev: Option<u64> = None;
    for v in values {
        out.push(match prev {
            None => v,
            Some(p) => v - p - u64::from(strict),
        });
        prev = Some(v);
    }
}

/// One value back from strict [`gaps`]: the first as it is, then `prev + gap + 1`; `None` if
/// that overflows (hostile input).
pub fn ungap_strict(prev: Option<u64>, gap: u64) -> Option<u64> {
    match prev {
        None => Some(gap),
        Some(p) => p.checked_add(gap)?.checked_add(1),
    }
}

/// Zigzag: signed to unsigned, small magnitudes to small values.
#[inline]
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline]
pub fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(values: &[u64]) -> u64 {
        let mut w = BitWriter::new();
        write_column(&mut w, values);
        w.put(0b101, 3); // trailer: the column must consume exactly its own bits
        let predicted = column_bits(values);
        assert_eq!(w.bit_len(), predicted + 3, "{values:?}");
        let bytes = w.finish();
        let mut r = BitReader::new(&bytes);
        assert_eq!(read_column(&mut r, values.len()).unwrap(), values);
        assert_eq!(r.get(3).unwrap(), 0b101);
        predicted
    }

    #[test]
    fn columns_roundtrip_in_every_mode() {
        roundtrip(&[]);
        assert_eq!(roundtrip(&[0; 100]), 9); // fixed width 0: header only
        roundtrip(&[1; 100]);
        roundtrip(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1000]);
        roundtrip(&[u64::MAX, 0, 1, u64::MAX - 1, 1 << 63]);
        roundtrip(&[5, 5, 5, 5, 5, 5, 5, 5, 5, u64::MAX]); // EG with a 64-bit outlier
        let mut sparse = vec![0u64; 1000];
        sparse[3] = 7;
        sparse[999] = u64::MAX;
        sparse[500] = 1;
        let bits = roundtrip(&sparse);
        assert!(bits < 200, "sparse column took {bits} bits");
        let mut x = 12345u64;
        let noisy: Vec<u64> = (0..5000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % (1 + (x >> 60) * 1000)
            })
            .collect();
        roundtrip(&noisy);
    }

    /// A column written with a shared code reads back with it, takes exactly the bits
    /// predicted, and never more than one bit over its own code; a code that cannot hold a
    /// value (fixed width too narrow, Rice quotient too long) is passed over for the column's own.
    #[test]
    fn columns_with_a_shared_code_roundtrip() {
        let small: Vec<u64> = (0..100).map(|i| i % 3).collect();
        let geometric: Vec<u64> = (0..100).map(|i| (i * 37 % 11) * (i % 5)).collect();
        let wide = vec![0, 1, 1 << 40, 3];
        let columns: [&[u64]; 4] = [&small, &geometric, &wide, &[]];
        let code = SharedCode::choose(&columns).unwrap();
        for c in columns {
            let mut w = BitWriter::new();
            write_column_with(&mut w, c, Some(&code));
            w.put(0b101, 3);
            let bits = column_bits_with(c, Some(&code));
            assert_eq!(w.bit_len(), bits + 3, "{c:?}");
            assert!(bits <= column_bits(c) + 1);
            let bytes = w.finish();
            let mut r = BitReader::new(&bytes);
            let mut out = Vec::new();
            read_column_with(&mut r, c.len(), Some(&code), &mut out).unwrap();
            assert_eq!(out, c);
            assert_eq!(r.get(3).unwrap(), 0b101);
        }
        // Alike columns share: far fewer bits than each with its own header.
        let alike: Vec<Vec<u64>> = (0..50).map(|j| (0..60).map(|i| (i + j) % 4).collect()).collect();
        let refs: Vec<&[u64]> = alike.iter().map(|c| c.as_slice()).collect();
        let code = SharedCode::choose(&refs).unwrap();
        let own: u64 = refs.iter().map(|c| column_bits(c)).sum();
        let with: u64 = refs.iter().map(|c| column_bits_with(c, Some(&code))).sum();
        assert!(with + 50 * 7 <= own, "{with} bits shared against {own} alone");
        assert_eq!(SharedCode::choose(&[&[]]), None);
        // Codes that cannot hold every value.
        let narrow = SharedCode { mode: MODE_FIXED, param: 2 };
        assert_eq!(narrow.body_bits(&[3, 4]), None);
        let rice = SharedCode { mode: MODE_RICE, param: 0 };
        assert_eq!(rice.body_bits(&[u64::from(RICE_MAX_QUOTIENT) + 1]), None);
        for code in [narrow, rice] {
            let mut w = BitWriter::new();
            write_column_with(&mut w, &[1 << 20, 5], Some(&code));
            let bytes = w.finish();
            let mut out = Vec::new();
            read_column_with(&mut BitReader::new(&bytes), 2, Some(&code), &mut out).unwrap();
            assert_eq!(out, [1 << 20, 5]);
        }
    }

    /// A shared code read from hostile bits: sparse mode or an out-of-range parameter is an
    /// error, and a huge count is refused before anything is allocated.
    #[test]
    fn shared_codes_from_garbage_are_errors() {
        let code = |mode: u64, param: u64| {
            let mut w = BitWriter::new();
            w.put(mode, MODE_BITS);
            w.put(param, PARAM_BITS);
            SharedCode::read(&mut BitReader::new(&w.finish()))
        };
        assert!(code(MODE_SPARSE, 0).unwrap_err().contains("only dense"));
        assert!(code(MODE_EG, 64).unwrap_err().contains("64 > 63"));
        assert!(code(MODE_FIXED, 65).unwrap_err().contains("65 > 64"));
        let eg = code(MODE_EG, 3).unwrap();
        let mut out = Vec::new();
        let err = read_column_with(&mut BitReader::new(&[0xff; 8]), usize::MAX / 2, Some(&eg), &mut out).unwrap_err();
        assert!(err.contains("longer than the limit"), "{err}");
        assert!(out.is_empty());
    }

    /// Truncated binary: every value below `n` reads back, the short values take a bit less,
    /// and bits written for another `n` still read as a value below the reader's `n`.
    #[test]
    fn values_below_n_roundtrip_in_truncated_binary() {
        for n in [1u64, 2, 3, 5, 6, 7, 8, 9, 100, 1 << 20, (1 << 20) + 1, u64::MAX] {
            let probe = [0, 1, n / 2, n.saturating_sub(2), n - 1];
            for &v in probe.iter().filter(|&&v| v < n) {
                let mut w = BitWriter::new();
                w.put_below(v, n);
                w.put(0b101, 3);
                let short = ((1u128 << below_bits(n)) - u128::from(n)) as u64;
                let want = if n <= 1 { 0 } else { u64::from(below_bits(n)) - u64::from(v < short) };
                assert_eq!(w.bit_len(), want + 3, "v {v} n {n}");
                let bytes = w.finish();
                let mut r = BitReader::new(&bytes);
                assert_eq!(r.get_below(n).unwrap(), v, "n {n}");
                assert_eq!(r.get(3).unwrap(), 0b101);
            }
        }
        // Five values below 5: 3 short (2 bits), 2 long (3 bits).
        let mut w = BitWriter::new();
        (0..5).for_each(|v| w.put_below(v, 5));
        assert_eq!(w.bit_len(), 3 * 2 + 2 * 3);
        for bytes in [[0xffu8; 8], [0; 8], [0xa5; 8]] {
            let mut r = BitReader::new(&bytes);
            for n in [3u64, 5, 7, 1000] {
                assert!(r.get_below(n).unwrap() < n);
            }
        }
    }

    #[test]
    fn eg_extremes() {
        for k in [0u32, 1, 7, 31, 63] {
            for v in [0u64, 1, 2, 1 << 40, u64::MAX - 1, u64::MAX] {
                let mut w = BitWriter::new();
                w.put_eg(v, k);
                assert_eq!(w.bit_len(), eg_bits(v, k));
                let b = w.finish();
                assert_eq!(BitReader::new(&b).get_eg(k).unwrap(), v, "v {v} k {k}");
            }
        }
    }

    #[test]
    fn reader_rejects_garbage_without_panicking() {
        let mut x = 99u64;
        for len in 0..64 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    (x >> 56) as u8
                })
                .collect();
            for n in [0usize, 1, 10, 1000, usize::MAX / 2] {
                let _ = read_column(&mut BitReader::new(&bytes), n);
            }
        }
        assert!(read_column(&mut BitReader::new(&[]), 1).is_err());
        assert!(read_column(&mut BitReader::new(&[0xff; 4]), 1 << 40).is_err());
    }

    #[test]
    fn zigzag_roundtrip() {
        for v in [0i64, 1, -1, i64::MAX, i64::MIN, 12345, -98765] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
    }
}
