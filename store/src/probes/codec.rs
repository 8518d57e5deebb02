//! Encoding of probe records: a session's metadata (`P`, MessagePack, its functions in a
//! nested blob) and its calls (`p`, chunks of a varint stream). See [`super`] for why they
//! are laid out this way and what they cost; this module only turns rows into bytes and back,
//! and checks everything on the way back: every count is bounded (by the `MAX_*` constants
//! and by the bytes left) before anything is allocated for it, and a corrupt record is an
//! error, never a panic.
//!
//! ## Calls (`p` record)
//! `[format = 1][n: varint]` then `n` calls, each:
//!
//! ```text
//! head: u8                  bit 0 thread changed, bit 1 cpu changed, bit 2 has a parent,
//!                           bit 3 depth not as predicted, bits 4–7 function (15 = escape)
//! [function − 15: varint]   when bits 4–7 are 15
//! [pid Δ, tid Δ: zigzag]    when the thread changed (against the previous call's)
//! [cpu: varint]             when the cpu changed
//! [depth: varint]           when it is not the prediction: the parent's depth + 1 when the
//!                           parent is in this chunk, else 0
//! [parent distance: varint] own index − parent index (≥ 1), when it has a parent
//! entry Δ: zigzag varint    against the previous call's entry when that call is the parent,
//!                           else against its exit (the session start for the chunk's first
//!                           call); wrapping, so any order round-trips
//! duration: varint          exit − entry
//! ```
//!
//! *Why the entry base:* in a thread's calls sorted by entry, a call follows either its parent
//! (it starts a little after the parent started) or a call that already returned (a sibling,
//! or the previous iteration's last call: it starts a little after that one exited), so the
//! delta is the short gap between two probes, not the length of the calls in between.
//!
//! Varints are LEB128 (7 bits a byte). A chunk starts from pid, tid, cpu 0 and the session's
//! start, so it decodes on its own; call indexes are global (`chunk × CHUNK_CALLS + i`), so a
//! parent may sit in an earlier chunk.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::model::{MAX_BUCKETS, MAX_SESSION_CALLS, MAX_SESSION_FUNCTIONS, ProbeCall, ProbeFunction, ProbeSession};
use crate::encoding::bits::{unzigzag, zigzag};
use crate::encoding::msgpack::{Blob, from_msgpack, to_msgpack};

/// Calls per `p` record (the last chunk of a session may hold fewer).
pub const CHUNK_CALLS: usize = 65_536;
/// The most chunks a session has.
pub const MAX_CHUNKS: usize = MAX_SESSION_CALLS.div_ceil(CHUNK_CALLS);
/// The longest string (function name, symbol, binary, note, end reason) a session may carry,
/// in bytes.
pub const MAX_NAME: usize = 4096;
/// The most notes a session may carry.
pub const MAX_NOTES: usize = 256;
/// The most PIDs a session may name.
pub const MAX_PIDS: usize = 65_536;
const CHUNK_FORMAT: u8 = 1;
/// A call takes at least its head, entry delta and duration.
const MIN_CALL_BYTES: usize = 3;
const THREAD: u8 = 1;
const CPU: u8 = 2;
const PARENT: u8 = 4;
const DEPTH: u8 = 8;
const FN_SHIFT: u32 = 4;
const FN_ESCAPE: u32 = 15;

fn check_text(what: &str, s: &str) -> Result<(), String> {
    if s.len() > MAX_NAME {
        return Err(format!("{what} of {} bytes, more than {MAX_NAME}", s.len()));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Metadata (`P` record)

/// A session's metadata: everything but its calls. What listing, retention and verify read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetaRow<'a> {
    pub end: u64,
    pub pids: Vec<u32>,
    pub binary: Option<String>,
    pub sample_every: u32,
    pub with_calls: bool,
    pub ended: String,
    pub notes: Vec<String>,
    /// Function names, in session order (what a listing shows).
    pub names: Vec<String>,
    /// Every call seen, summed over the functions (saturating).
    pub calls: u64,
    /// Call records stored, in `recorded_calls.div_ceil(CHUNK_CALLS)` chunks.
    pub recorded_calls: u64,
    pub calls_lost: u64,
    /// Key + value bytes of the session's records (`P`, `p`, `j`), this one included.
    pub stored_bytes: u64,
    /// The rest of each function (see [`encode_functions`]), decoded on demand: a listing
    /// never decodes histograms.
    #[serde(borrow)]
    pub functions: Blob<'a>,
    /// The probes' own share of each timed call (see [`ProbeSession::bias_ns`]). Last and
    /// defaulted: a record written before it decodes with 0 (not calibrated).
    #[serde(default)]
    pub bias_ns: u64,
}

impl MetaRow<'_> {
    pub fn into_owned(self) -> MetaRow<'static> {
        MetaRow { functions: Blob(Cow::Owned(self.functions.0.into_owned())), ..self }
    }

    /// Chunks (`p` records) the session's calls take.
    pub fn chunks(&self) -> usize {
        // Bounded by `check_meta`.
        usize::try_from(self.recorded_calls).unwrap_or(usize::MAX).div_ceil(CHUNK_CALLS)
    }
}

/// The metadata of a session (`stored_bytes` still 0).
pub fn meta_row(s: &ProbeSession) -> MetaRow<'static> {
    MetaRow { functions: Blob(Cow::Owned(encode_functions(&s.functions))), ..meta_row_head(s) }
}

/// [`meta_row`] without the functions' details (what [`check_meta`] looks at).
pub fn meta_row_head(s: &ProbeSession) -> MetaRow<'static> {
    MetaRow {
        end: s.end_unix_ns,
        pids: s.pids.clone(),
        binary: s.binary.clone(),
        sample_every: s.sample_every,
        with_calls: s.with_calls,
        ended: s.ended.clone(),
        notes: s.notes.clone(),
        names: s.functions.iter().map(|f| f.name.clone()).collect(),
        calls: s.functions.iter().fold(0u64, |a, f| a.saturating_add(f.calls)),
        recorded_calls: s.calls.len() as u64,
        calls_lost: s.calls_lost,
        bias_ns: s.bias_ns,
        stored_bytes: 0,
        functions: Blob::default(),
    }
}

/// Checks the metadata's sizes and order: what the writer refuses and the reader rejects.
/// `start` is the session's start (from the key).
pub fn check_meta(row: &MetaRow<'_>, start: u64) -> Result<(), String> {
    if row.end < start {
        return Err(format!("ends at {} before it starts at {start}", row.end));
    }
    if row.names.len() > MAX_SESSION_FUNCTIONS {
        return Err(format!("{} functions, more than {MAX_SESSION_FUNCTIONS}", row.names.len()));
    }
    if row.recorded_calls > MAX_SESSION_CALLS as u64 {
        return Err(format!("{} call records, more than {MAX_SESSION_CALLS}", row.recorded_calls));
    }
    if row.pids.len() > MAX_PIDS {
        return Err(format!("{} PIDs, more than {MAX_PIDS}", row.pids.len()));
    }
    if row.notes.len() > MAX_NOTES {
        return Err(format!("{} notes, more than {MAX_NOTES}", row.notes.len()));
    }
    if row.sample_every == 0 {
        return Err("sample_every is 0 (1 means every call)".into());
    }
    check_text("the end reason", &row.ended)?;
    if let Some(b) = &row.binary {
        check_text("the binary's path", b)?;
    }
    for n in &row.notes {
        check_text("a note", n)?;
    }
    for n in &row.names {
        check_text("a function name", n)?;
    }
    Ok(())
}

pub fn encode_meta(row: &MetaRow<'_>) -> Vec<u8> {
    to_msgpack(row)
}

/// Decodes and checks a `P` value; `start` is from its key.
pub fn decode_meta(bytes: &[u8], start: u64) -> Result<MetaRow<'_>, String> {
    let row: MetaRow = from_msgpack(bytes)?;
    check_meta(&row, start)?;
    Ok(row)
}

/// A function without its name (the name is in [`MetaRow::names`]).
#[derive(Serialize, Deserialize)]
struct FnRow {
    symbol: String,
    binary: String,
    address: u64,
    probe_offset: u32,
    calls: u64,
    sampled: u64,
    total_ns: u64,
    max_ns: u64,
    buckets: Vec<(u32, u64)>,
}

/// Checks a function's strings and histogram: what the writer refuses and the reader rejects.
pub fn check_function(f: &ProbeFunction) -> Result<(), String> {
    check_text("name", &f.name)?;
    check_text("symbol", &f.symbol)?;
    check_text("binary's path", &f.binary)?;
    if f.buckets.len() > MAX_BUCKETS {
        return Err(format!("{} histogram buckets, more than {MAX_BUCKETS}", f.buckets.len()));
    }
    let mut prev: Option<u32> = None;
    for &(b, c) in &f.buckets {
        if b as usize >= MAX_BUCKETS {
            return Err(format!("histogram bucket {b}, past the last bucket {}", MAX_BUCKETS - 1));
        }
        if prev.is_some_and(|p| p >= b) {
            return Err(format!("histogram buckets not strictly ascending ({} then {b})", prev.unwrap_or(0)));
        }
        if c == 0 {
            return Err(format!("histogram bucket {b} counts 0 (leave empty buckets out)"));
        }
        prev = Some(b);
    }
    Ok(())
}

/// Every function but its name, in session order: the value of [`MetaRow::functions`].
pub fn encode_functions(fs: &[ProbeFunction]) -> Vec<u8> {
    let rows: Vec<FnRow> = fs
        .iter()
        .map(|f| FnRow {
            symbol: f.symbol.clone(),
            binary: f.binary.clone(),
            address: f.address,
            probe_offset: f.probe_offset,
            calls: f.calls,
            sampled: f.sampled,
            total_ns: f.total_ns,
            max_ns: f.max_ns,
            buckets: f.buckets.clone(),
        })
        .collect();
    to_msgpack(&rows)
}

/// Inverse of [`encode_functions`], given the names from the metadata (checked by
/// [`check_meta`]: at most [`MAX_SESSION_FUNCTIONS`]).
pub fn decode_functions(bytes: &[u8], names: &[String]) -> Result<Vec<ProbeFunction>, String> {
    // rmp-serde preallocates at most serde's "cautious" 1 MiB for a declared length, and
    // every element takes at least one byte of input: memory stays within the record's size.
    let rows: Vec<FnRow> = from_msgpack(bytes)?;
    if rows.len() != names.len() {
        return Err(format!("{} functions described, {} named", rows.len(), names.len()));
    }
    let mut out = Vec::with_capacity(rows.len());
    for (row, name) in rows.into_iter().zip(names) {
        let f = ProbeFunction {
            name: name.clone(),
            symbol: row.symbol,
            binary: row.binary,
            address: row.address,
            probe_offset: row.probe_offset,
            calls: row.calls,
            sampled: row.sampled,
            total_ns: row.total_ns,
            max_ns: row.max_ns,
            buckets: row.buckets,
        };
        check_function(&f).map_err(|e| format!("function {name:?}: {e}"))?;
        out.push(f);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Calls (`p` records)

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The zigzag code of the wrapping difference `new − old` of two `u32`s.
fn zigzag32(new: u32, old: u32) -> u64 {
    let d = new.wrapping_sub(old) as i32;
    u64::from(((d << 1) ^ (d >> 31)) as u32)
}

fn unzigzag32(old: u32, code: u64) -> Result<u32, String> {
    let code = u32::try_from(code).map_err(|_| format!("thread delta {code} out of range"))?;
    let d = ((code >> 1) as i32) ^ -((code & 1) as i32);
    Ok(old.wrapping_add(d as u32))
}

/// The depth a call is predicted to have: its parent's + 1 when the parent is in `chunk`
/// (whose first call has index `first`), else 0.
fn predicted_depth(chunk: &[ProbeCall], first: usize, parent: Option<u32>) -> u32 {
    parent
        .and_then(|p| (p as usize).checked_sub(first))
        .and_then(|i| chunk.get(i))
        .map_or(0, |p| p.depth.wrapping_add(1))
}

/// What call `index`'s entry is coded against, given the previous call's entry and exit.
fn entry_base(index: usize, parent: Option<u32>, prev_entry: u64, prev_exit: u64) -> u64 {
    if index > 0 && parent.is_some_and(|p| p as usize == index - 1) { prev_entry } else { prev_exit }
}

/// Encodes one chunk of calls, whose first has index `first` in the session; `start` is the
/// session's start. The calls must be valid (function and parent indexes in range, parent
/// before the call, exit not before entry: what `put_probe_session` checks).
pub fn encode_chunk(calls: &[ProbeCall], first: usize, start: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + calls.len() * 8);
    out.push(CHUNK_FORMAT);
    put_varint(&mut out, calls.len() as u64);
    let (mut pid, mut tid, mut cpu, mut entry, mut exit) = (0u32, 0u32, 0u32, start, start);
    for (j, c) in calls.iter().enumerate() {
        let index = first + j;
        let predicted = predicted_depth(&calls[..j], first, c.parent);
        let mut head = (c.function.min(FN_ESCAPE) as u8) << FN_SHIFT;
        if (c.pid, c.tid) != (pid, tid) {
            head |= THREAD;
        }
        if c.cpu != cpu {
            head |= CPU;
        }
        if c.parent.is_some() {
            head |= PARENT;
        }
        if c.depth != predicted {
            head |= DEPTH;
        }
        out.push(head);
        if c.function >= FN_ESCAPE {
            put_varint(&mut out, u64::from(c.function - FN_ESCAPE));
        }
        if head & THREAD != 0 {
            put_varint(&mut out, zigzag32(c.pid, pid));
            put_varint(&mut out, zigzag32(c.tid, tid));
        }
        if head & CPU != 0 {
            put_varint(&mut out, u64::from(c.cpu));
        }
        if head & DEPTH != 0 {
            put_varint(&mut out, u64::from(c.depth));
        }
        if let Some(p) = c.parent {
            put_varint(&mut out, (index as u64).wrapping_sub(u64::from(p)));
        }
        let base = entry_base(index, c.parent, entry, exit);
        put_varint(&mut out, zigzag(c.entry_unix_ns.wrapping_sub(base) as i64));
        put_varint(&mut out, c.exit_unix_ns.wrapping_sub(c.entry_unix_ns));
        (pid, tid, cpu, entry, exit) = (c.pid, c.tid, c.cpu, c.entry_unix_ns, c.exit_unix_ns);
    }
    out
}

/// Reads a chunk's bytes.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl Reader<'_> {
    fn byte(&mut self) -> Result<u8, String> {
        let (&b, rest) = self.bytes.split_first().ok_or("the record ends early")?;
        self.bytes = rest;
        Ok(b)
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for i in 0..10 {
            let b = self.byte()?;
            if i == 9 && b > 1 {
                return Err("a varint overflows 64 bits".into());
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("a varint runs past 10 bytes".into())
    }

    fn u32(&mut self, what: &str) -> Result<u32, String> {
        let v = self.varint()?;
        u32::try_from(v).map_err(|_| format!("{what} {v} out of range"))
    }
}

/// Decodes chunk number `chunk` of a session starting at `start` with `functions` functions;
/// call indexes (and so parents) are global. The caller checks the count against the
/// metadata.
pub fn decode_chunk(bytes: &[u8], chunk: u32, start: u64, functions: usize) -> Result<Vec<ProbeCall>, String> {
    if chunk as usize >= MAX_CHUNKS {
        return Err(format!("chunk {chunk}, past the last possible {}", MAX_CHUNKS - 1));
    }
    let first = chunk as usize * CHUNK_CALLS;
    let mut r = Reader { bytes };
    let format = r.byte()?;
    if format != CHUNK_FORMAT {
        return Err(format!("unknown calls format {format}"));
    }
    let n = r.varint()?;
    if n == 0 || n > CHUNK_CALLS as u64 {
        return Err(format!("{n} calls in a chunk (1 to {CHUNK_CALLS})"));
    }
    if n > (r.bytes.len() / MIN_CALL_BYTES) as u64 {
        return Err(format!("{n} calls cannot fit in {} bytes ({MIN_CALL_BYTES} or more each)", r.bytes.len()));
    }
    let n = n as usize;
    let mut calls: Vec<ProbeCall> = Vec::with_capacity(n);
    let (mut pid, mut tid, mut cpu, mut entry, mut exit) = (0u32, 0u32, 0u32, start, start);
    for j in 0..n {
        let index = first + j;
        let head = r.byte()?;
        let mut function = u32::from(head) >> FN_SHIFT;
        if function == FN_ESCAPE {
            function = r.u32("function")?.checked_add(FN_ESCAPE).ok_or("function index overflows")?;
        }
        if function as usize >= functions {
            return Err(format!("call {index} names function {function}, the session has {functions}"));
        }
        if head & THREAD != 0 {
            pid = unzigzag32(pid, r.varint()?)?;
            tid = unzigzag32(tid, r.varint()?)?;
        }
        if head & CPU != 0 {
            cpu = r.u32("cpu")?;
        }
        let depth = if head & DEPTH != 0 { Some(r.u32("depth")?) } else { None };
        let parent = if head & PARENT != 0 {
            let d = r.varint()?;
            if d == 0 || d > index as u64 {
                return Err(format!("call {index}'s parent is {d} calls back"));
            }
            Some((index as u64 - d) as u32)
        } else {
            None
        };
        entry = entry_base(index, parent, entry, exit).wrapping_add(unzigzag(r.varint()?) as u64);
        exit = entry.checked_add(r.varint()?).ok_or_else(|| format!("call {index} exits past 2^64 ns"))?;
        let depth = depth.unwrap_or_else(|| predicted_depth(&calls, first, parent));
        calls.push(ProbeCall { function, pid, tid, cpu, entry_unix_ns: entry, exit_unix_ns: exit, depth, parent });
    }
    if !r.bytes.is_empty() {
        return Err(format!("{} bytes after the last call", r.bytes.len()));
    }
    Ok(calls)
}

/// How many calls chunk `chunk` of a session of `recorded` calls holds (0 past the last).
pub fn chunk_len(recorded: u64, chunk: usize) -> usize {
    let before = (chunk as u64).saturating_mul(CHUNK_CALLS as u64);
    recorded.saturating_sub(before).min(CHUNK_CALLS as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(x: &mut u64) -> u64 {
        *x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        *x >> 33
    }

    /// Valid calls of any shape: unsorted, extreme values, parents anywhere before.
    fn random_calls(x: &mut u64, n: usize, functions: u32) -> Vec<ProbeCall> {
        (0..n)
            .map(|i| {
                let entry = match lcg(x) % 5 {
                    0 => u64::MAX - lcg(x) % 3,
                    1 => 0,
                    _ => (1u64 << 60) + lcg(x) * 1000,
                };
                ProbeCall {
                    function: (lcg(x) % u64::from(functions)) as u32,
                    pid: [0, 1, u32::MAX, 4242][(lcg(x) % 4) as usize],
                    tid: [0, u32::MAX, 4243, 4244, 7][(lcg(x) % 5) as usize],
                    cpu: [0, 3, u32::MAX][(lcg(x) % 3) as usize],
                    entry_unix_ns: entry,
                    exit_unix_ns: entry + lcg(x) % (u64::MAX - entry).saturating_add(1).max(1),
                    depth: [0, 1, 2, u32::MAX][(lcg(x) % 4) as usize],
                    parent: (i > 0 && !lcg(x).is_multiple_of(3)).then(|| (lcg(x) % i as u64) as u32),
                }
            })
            .collect()
    }

    #[test]
    fn chunks_roundtrip_any_valid_calls() {
        let mut x = 3;
        for round in 0..300 {
            let functions = [1u32, 2, 15, 16, 64][round % 5];
            let n = 1 + (lcg(&mut x) % 400) as usize;
            let calls = random_calls(&mut x, n, functions);
            let start = if round % 3 == 0 { u64::MAX } else { lcg(&mut x) << 30 };
            // As chunk 0, and as a later chunk (whose parents may sit in an earlier one).
            for (chunk, first) in [(0u32, 0usize), (3, 3 * CHUNK_CALLS)] {
                let calls: Vec<ProbeCall> = calls
                    .iter()
                    .map(|c| ProbeCall {
                        parent: c.parent.map(|p| if p % 2 == 0 { p + first as u32 } else { p }),
                        ..*c
                    })
                    .collect();
                let bytes = encode_chunk(&calls, first, start);
                assert_eq!(decode_chunk(&bytes, chunk, start, functions as usize).unwrap(), calls, "round {round}");
            }
        }
    }

    #[test]
    fn nested_calls_of_one_thread_are_small() {
        // handle → parse, lookup, forward, 10 µs apart: a head, 1–3-byte gaps, 2-byte durations, a
        // 1-byte parent distance.
        let mut calls = Vec::new();
        let mut t = 1_700_000_000_000_000_000u64;
        for _ in 0..1000 {
            let h = calls.len() as u32;
            calls.push(ProbeCall {
                function: 0,
                pid: 10,
                tid: 11,
                cpu: 2,
                entry_unix_ns: t,
                exit_unix_ns: t + 2000,
                depth: 0,
                parent: None,
            });
            for (f, off, dur) in [(1, 100, 400), (2, 600, 300), (3, 1000, 900)] {
                calls.push(ProbeCall {
                    function: f,
                    entry_unix_ns: t + off,
                    exit_unix_ns: t + off + dur,
                    depth: 1,
                    parent: Some(h),
                    ..calls[h as usize]
                });
            }
            t += 10_000;
        }
        let bytes = encode_chunk(&calls, 0, t);
        assert!(bytes.len() <= calls.len() * 6, "{} bytes for {} calls", bytes.len(), calls.len());
        assert_eq!(decode_chunk(&bytes, 0, t, 4).unwrap(), calls);
    }

    #[test]
    fn chunks_reject_garbage_without_panicking() {
        let mut x = 11;
        let calls = random_calls(&mut x, 200, 20);
        let bytes = encode_chunk(&calls, 0, 5);
        if calls.iter().any(|c| c.function == 19) {
            assert!(decode_chunk(&bytes, 0, 5, 19).is_err(), "function past the session's");
        }
        assert!(decode_chunk(&bytes, MAX_CHUNKS as u32, 5, 20).is_err());
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode_chunk(&longer, 0, 5, 20).is_err(), "trailing bytes");
        for cut in 0..bytes.len() {
            assert!(decode_chunk(&bytes[..cut], 0, 5, 20).is_err(), "cut at {cut}");
        }
        // A count the bytes cannot hold is refused before anything is allocated.
        let mut huge = vec![CHUNK_FORMAT];
        put_varint(&mut huge, CHUNK_CALLS as u64);
        huge.extend([0u8; 30]);
        assert!(decode_chunk(&huge, 0, 0, 1).unwrap_err().contains("cannot fit"));
        for _ in 0..5000 {
            let mut b = bytes.clone();
            let i = (lcg(&mut x) as usize) % b.len();
            b[i] ^= 1 << (lcg(&mut x) % 8);
            if let Ok(back) = decode_chunk(&b, 0, 5, 20) {
                assert!(back.iter().enumerate().all(|(i, c)| c.function < 20
                    && c.parent.is_none_or(|p| (p as usize) < i)
                    && c.exit_unix_ns >= c.entry_unix_ns));
            }
        }
        // Overlong varints.
        let mut b = vec![CHUNK_FORMAT, 1, 0];
        b.extend([0xff; 10]);
        assert!(decode_chunk(&b, 0, 0, 1).is_err());
    }

    #[test]
    fn metadata_and_functions_roundtrip_and_bounds() {
        let f = ProbeFunction {
            name: "handle".into(),
            symbol: "_ZN3pkt6handleEv".into(),
            binary: "/usr/bin/pktloop".into(),
            address: 0x401000,
            probe_offset: 4,
            calls: 10,
            sampled: 5,
            total_ns: 5000,
            max_ns: 2000,
            buckets: vec![(0, 1), (500, 3), (MAX_BUCKETS as u32 - 1, 1)],
        };
        let s = ProbeSession {
            id: 0,
            start_unix_ns: 100,
            end_unix_ns: 200,
            pids: vec![1, u32::MAX],
            binary: Some("/usr/bin/pktloop".into()),
            sample_every: 2,
            with_calls: true,
            ended: "duration".into(),
            notes: vec!["budget raised sampling to 1 in 2".into()],
            functions: vec![f.clone(), ProbeFunction { name: "lookup".into(), buckets: vec![], ..f.clone() }],
            calls: vec![],
            calls_lost: 3,
            bias_ns: 410,
        };
        let mut row = meta_row(&s);
        row.stored_bytes = 999;
        let bytes = encode_meta(&row);
        let back = decode_meta(&bytes, 100).unwrap();
        assert_eq!(back, row);
        assert_eq!(decode_functions(&back.functions.0, &back.names).unwrap(), s.functions);
        assert!(decode_meta(&bytes, 201).is_err(), "ends before it starts");
        assert!(decode_functions(&back.functions.0, &back.names[..1]).is_err());
        for cut in 0..bytes.len() {
            let _ = decode_meta(&bytes[..cut], 100);
        }
        for bad in [vec![(3, 1), (3, 1)], vec![(4, 1), (3, 1)], vec![(1, 0)], vec![(MAX_BUCKETS as u32, 1)]] {
            let g = ProbeFunction { buckets: bad.clone(), ..f.clone() };
            assert!(check_function(&g).is_err(), "{bad:?}");
            let names = vec![g.name.clone()];
            assert!(decode_functions(&encode_functions(&[g]), &names).is_err(), "{bad:?}");
        }
        let mut long = row.clone();
        long.notes = vec!["x".repeat(MAX_NAME + 1)];
        assert!(decode_meta(&encode_meta(&long), 100).is_err());
        let mut many = row.clone();
        many.recorded_calls = MAX_SESSION_CALLS as u64 + 1;
        assert!(decode_meta(&encode_meta(&many), 100).is_err());
        // A record from before `bias_ns` (one element fewer) reads as not calibrated.
        let mut short = rmp_serde::to_vec(&row).unwrap();
        assert_eq!(short[0], 0x90 | 14, "a fixarray of the row's 14 fields");
        short[0] = 0x90 | 13;
        let tail = rmp_serde::to_vec(&row.bias_ns).unwrap();
        short.truncate(short.len() - tail.len());
        let old = decode_meta(&short, 100).unwrap();
        assert_eq!(old, MetaRow { bias_ns: 0, ..row.clone() });
    }

    #[test]
    fn chunk_lengths() {
        assert_eq!(chunk_len(0, 0), 0);
        assert_eq!(chunk_len(100_000, 0), CHUNK_CALLS);
        assert_eq!(chunk_len(100_000, 1), 100_000 - CHUNK_CALLS);
        assert_eq!(chunk_len(100_000, 2), 0);
        assert_eq!(MAX_CHUNKS, 16);
    }
}
