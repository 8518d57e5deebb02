//! Encoding of timeline records: a batch's events (`e`), its metadata with per-event lag
//! histograms (`E`), and dictionary sources (`n`). Built on the store's shared bit-packed
//! columns (`crate::encoding::bits`): every column takes the shortest of fixed-width,
//! Exp-Golomb, Rice and sparse codes, so a column of zeros costs 9 bits whatever its length.
//! See [`super`] for why the batch is laid out this way and what it costs; this module only
//! turns rows into bytes and back, and checks everything on the way back (every count and
//! length is bounded before anything is allocated; a corrupt record is an error, never a
//! panic).
//!
//! ## Events (`e` record)
//! `[format, n, threads, bits]` (MessagePack), the events in *canonical order*: by thread id,
//! then time (input order breaks ties). `bits` holds, in order:
//!
//! 1. the event ids the batch uses (`u` of them, ascending, gap-coded): an event is then a
//!    *local* id `0..u`;
//! 2. per thread: its id (gap-coded), its event count − 1, its first event's time − batch start;
//! 3. the event ids as *context move-to-front codes*: the context is the thread's previous
//!    local event (or "thread start"); each context keeps its ≤ 16 most recent successors, most
//!    recent first; the code is the successor's position there, or the list's length for an
//!    *escape* (the local id then comes from the escape column, written before the codes). A
//!    loop logs `loop_start, loop_end, loop_start, …`: the code is almost always 0;
//! 4. the CPU per event: 0 when the same as the thread's previous event, else `cpu + 1`;
//! 5. per local event id: the time since the thread's previous event, for every event of
//!    that id but a thread's first (one column per id, so each gets its own code parameter:
//!    a `loop_end` after a whole iteration and a `loop_start` right after it differ by orders
//!    of magnitude);
//! 6. per local event id and argument 0..4: a mode bit (raw, or zigzag delta from the previous
//!    value in the column — whichever is shorter) and the column;
//! 7. lags: a flag per event (1 = no lag), then, for events with a lag, the lag *predicted*
//!    from the batch itself — the time since the thread's previous event of equal or lower
//!    level, when that event is in the batch — is subtracted (zigzag of the wrapping
//!    difference: 0 or ±1 ns of rounding in practice), and the others' lags are stored whole.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::model::{TimelineEventDef, TimelineSource};
use crate::encoding::bits::{
    self, BitReader, BitWriter, column_bits, gaps, read_column, ungap_strict, unzigzag, write_column, zigzag,
};
use crate::encoding::msgpack::{Blob, from_msgpack, to_msgpack};

/// The most event definitions a source may have (the timeline file format's own limit).
pub const MAX_EVENT_DEFS: usize = 4096;
/// The longest name (event, argument, comm) a source may carry, in bytes.
pub const MAX_NAME: usize = 256;
/// Arguments per event.
pub const MAX_ARGS: usize = 4;
/// The most events one batch may hold (every column is at most this long).
pub const MAX_BATCH_EVENTS: usize = bits::MAX_COLUMN;
/// Successors remembered per move-to-front context.
const MTF_LEN: usize = 16;
const BLOCK_FORMAT: u8 = 1;

// ---------------------------------------------------------------------------------------------
// Sources (`n` records)

type DefRow = (String, u8, u8, Vec<String>);
type SourceRow = (u32, u64, String, Vec<DefRow>);

/// Checks a source's sizes: what the writer refuses and the reader rejects.
pub fn check_source(s: &TimelineSource) -> Result<(), String> {
    if s.events.len() > MAX_EVENT_DEFS {
        return Err(format!("{} event definitions, more than {MAX_EVENT_DEFS}", s.events.len()));
    }
    if s.comm.len() > MAX_NAME {
        return Err(format!("comm of {} bytes, more than {MAX_NAME}", s.comm.len()));
    }
    for d in &s.events {
        if d.name.len() > MAX_NAME || d.arg_names.len() > MAX_ARGS || d.arg_names.iter().any(|a| a.len() > MAX_NAME) {
            return Err(format!("event definition {:?}: name or argument names too long or too many", d.name));
        }
    }
    Ok(())
}

pub fn encode_source(s: &TimelineSource) -> Vec<u8> {
    let defs: Vec<DefRow> = s.events.iter().map(|d| (d.name.clone(), d.level, d.rate, d.arg_names.clone())).collect();
    to_msgpack(&(s.pid, s.start_ticks, &s.comm, defs))
}

pub fn decode_source(bytes: &[u8]) -> Result<TimelineSource, String> {
    let (pid, start_ticks, comm, defs): SourceRow = from_msgpack(bytes)?;
    let s = TimelineSource {
        pid,
        start_ticks,
        comm,
        events: defs
            .into_iter()
            .map(|(name, level, rate, arg_names)| TimelineEventDef { name, level, rate, arg_names })
            .collect(),
    };
    check_source(&s)?;
    Ok(s)
}

// ---------------------------------------------------------------------------------------------
// Lag histograms

/// Sub-buckets per power of two, as a power of two: 2^5 = 32, so a bucket spans 1/32 of its
/// lower bound and its midpoint is within 1/64 of any value in it.
const SUB_BITS: u32 = 5;
/// Buckets: values below 32 exactly, then 32 per power of two up to 2^64.
pub const BUCKETS: usize = ((64 - SUB_BITS as usize) + 1) << SUB_BITS;

/// The bucket of a value.
pub fn bucket(v: u64) -> usize {
    if v < (1 << SUB_BITS) {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // ≥ SUB_BITS
    let shift = e - SUB_BITS;
    (((shift + 1) as usize) << SUB_BITS) + ((v >> shift) as usize & ((1 << SUB_BITS) - 1))
}

/// `[low, high]`: the values that fall into bucket `b` (`b < BUCKETS`).
pub fn bucket_bounds(b: usize) -> (u64, u64) {
    let (major, sub) = (b >> SUB_BITS, (b & ((1 << SUB_BITS) - 1)) as u64);
    if major == 0 {
        return (sub, sub);
    }
    let shift = major as u32 - 1;
    let low = ((1u64 << SUB_BITS) + sub) << shift;
    (low, low + ((1u64 << shift) - 1))
}

/// Counts of one event's lags in a batch (or summed over batches), sparse.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hist {
    /// Events of this id.
    pub count: u64,
    /// `(bucket, count)`, buckets ascending and distinct, counts ≥ 1: the events with a lag.
    pub buckets: Vec<(u32, u64)>,
    /// The largest lag (0 when none).
    pub max: u64,
}

impl Hist {
    pub fn lagged(&self) -> u64 {
        self.buckets.iter().map(|b| b.1).sum()
    }
}

/// A histogram that sums [`Hist`]s and exact lags (sparse: a query may hold one per process
/// and event).
#[derive(Clone, Debug, Default)]
pub struct SumHist {
    pub count: u64,
    pub lagged: u64,
    pub max: Option<u64>,
    pub counts: std::collections::BTreeMap<u32, u64>,
}

impl SumHist {
    pub fn add_lag(&mut self, lag: Option<u64>) {
        self.count += 1;
        if let Some(l) = lag {
            self.lagged += 1;
            *self.counts.entry(bucket(l) as u32).or_default() += 1;
            self.max = Some(self.max.map_or(l, |m| m.max(l)));
        }
    }

    pub fn add(&mut self, h: &Hist) {
        self.count = self.count.saturating_add(h.count);
        for &(b, c) in &h.buckets {
            let slot = self.counts.entry(b).or_default();
            *slot = slot.saturating_add(c);
            self.lagged = self.lagged.saturating_add(c);
        }
        if !h.buckets.is_empty() {
            self.max = Some(self.max.map_or(h.max, |m| m.max(h.max)));
        }
    }

    /// The nearest-rank `q` quantile (`0 < q ≤ 1`), as the midpoint of its bucket clamped to
    /// the maximum: within 1/64 of the exact value.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.lagged == 0 {
            return None;
        }
        let rank = ((q * self.lagged as f64).ceil() as u64).clamp(1, self.lagged);
        let mut seen = 0u64;
        for (&b, &c) in &self.counts {
            seen = seen.saturating_add(c);
            if seen >= rank {
                let (lo, hi) = bucket_bounds((b as usize).min(BUCKETS - 1));
                let mid = lo + (hi - lo) / 2;
                return Some(self.max.map_or(mid, |m| mid.min(m)));
            }
        }
        self.max
    }

    pub fn sparse(&self) -> Hist {
        Hist {
            count: self.count,
            buckets: self.counts.iter().map(|(&b, &c)| (b, c)).collect(),
            max: self.max.unwrap_or(0),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Batch metadata (`E` record)

/// A batch's metadata: what listing, retention, sources and stats read without the events.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlBatchRow<'a> {
    pub end: u64,
    pub events: u64,
    pub lost: u64,
    /// Source dictionary id.
    pub source: u32,
    pub stored_bytes: u64,
    /// Per event id: count and lag histogram (see [`encode_hists`]); decoded on demand.
    #[serde(borrow)]
    pub hists: Blob<'a>,
}

impl TlBatchRow<'_> {
    pub fn into_owned(self) -> TlBatchRow<'static> {
        TlBatchRow { hists: Blob(Cow::Owned(self.hists.0.into_owned())), ..self }
    }
}

pub fn encode_batch(row: &TlBatchRow<'_>) -> Vec<u8> {
    to_msgpack(row)
}

pub fn decode_batch(bytes: &[u8]) -> Result<TlBatchRow<'_>, String> {
    from_msgpack(bytes)
}

/// Per-event histograms: `(event id, hist)` with ids ascending, as columns: ids (gap-coded),
/// counts, maxima, buckets per id, then every id's bucket gaps and counts − 1.
pub fn encode_hists(hists: &[(u32, Hist)]) -> Vec<u8> {
    let mut w = BitWriter::new();
    w.put_eg(hists.len() as u64, 0);
    let mut ids = Vec::new();
    let mut prev: Option<u32> = None;
    for (id, _) in hists {
        ids.push(match prev {
            None => u64::from(*id),
            Some(p) => u64::from(id - p - 1),
        });
        prev = Some(*id);
    }
    let counts: Vec<u64> = hists.iter().map(|(_, h)| h.count).collect();
    let maxes: Vec<u64> = hists.iter().map(|(_, h)| h.max).collect();
    let nb: Vec<u64> = hists.iter().map(|(_, h)| h.buckets.len() as u64).collect();
    let (mut gaps, mut bc) = (Vec::new(), Vec::new());
    for (_, h) in hists {
        let mut prev: Option<u32> = None;
        for &(b, c) in &h.buckets {
            gaps.push(match prev {
                None => u64::from(b),
                Some(p) => u64::from(b - p - 1),
            });
            bc.push(c - 1);
            prev = Some(b);
        }
    }
    w.put_eg(gaps.len() as u64, 0);
    for col in [&ids, &counts, &maxes, &nb, &gaps, &bc] {
        write_column(&mut w, col);
    }
    w.finish()
}

pub fn decode_hists(bytes: &[u8]) -> Result<Vec<(u32, Hist)>, String> {
    let mut r = BitReader::new(bytes);
    let k = r.get_eg(0)?;
    if k > MAX_EVENT_DEFS as u64 {
        return Err(format!("histograms of {k} events, more than {MAX_EVENT_DEFS}"));
    }
    let total = r.get_eg(0)?;
    if total > k * BUCKETS as u64 {
        return Err(format!("{total} buckets for {k} events"));
    }
    let (k, total) = (k as usize, total as usize);
    let ids = read_column(&mut r, k)?;
    let counts = read_column(&mut r, k)?;
    let maxes = read_column(&mut r, k)?;
    let nb = read_column(&mut r, k)?;
    if nb.iter().try_fold(0u64, |a, &b| a.checked_add(b)) != Some(total as u64) {
        return Err("bucket counts do not add up".into());
    }
    let gaps = read_column(&mut r, total)?;
    let bc = read_column(&mut r, total)?;
    let mut out = Vec::with_capacity(k);
    let mut id: Option<u64> = None;
    let (mut gi, mut bi) = (gaps.into_iter(), bc.into_iter());
    for i in 0..k {
        let this = match id {
            None => ids[i],
            Some(p) => p.checked_add(ids[i]).and_then(|x| x.checked_add(1)).ok_or("event id overflows")?,
        };
        if this >= MAX_EVENT_DEFS as u64 {
            return Err(format!("event id {this} ≥ {MAX_EVENT_DEFS}"));
        }
        id = Some(this);
        let mut buckets = Vec::with_capacity(nb[i] as usize);
        let mut b: Option<u64> = None;
        let mut lagged = 0u64;
        for _ in 0..nb[i] {
            let g = gi.next().ok_or("bucket gaps run out")?;
            let v = match b {
                None => g,
                Some(p) => p.checked_add(g).and_then(|x| x.checked_add(1)).ok_or("bucket overflows")?,
            };
            if v >= BUCKETS as u64 {
                return Err(format!("bucket {v} ≥ {BUCKETS}"));
            }
            b = Some(v);
            let c = bi.next().ok_or("bucket counts run out")?.checked_add(1).ok_or("bucket count overflows")?;
            lagged = lagged.checked_add(c).ok_or("bucket counts overflow")?;
            buckets.push((v as u32, c));
        }
        if lagged > counts[i] {
            return Err(format!("event {this}: {lagged} lags for {} events", counts[i]));
        }
        out.push((this as u32, Hist { count: counts[i], buckets, max: maxes[i] }));
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Events (`e` record)

/// One event in a batch, with its definition index (what the block stores).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Ev {
    pub time: u64,
    pub tid: u32,
    pub cpu: u32,
    pub event: u32,
    pub args: [u64; 4],
    pub lag: Option<u64>,
}

#[derive(Serialize, Deserialize)]
struct BlockRow<'a> {
    format: u8,
    n: u32,
    threads: u32,
    #[serde(borrow)]
    bits: Blob<'a>,
}

/// Per thread-local context: move-to-front lists of recent successors.
struct Mtf {
    lists: Vec<Vec<u32>>,
}

impl Mtf {
    fn new(contexts: usize) -> Mtf {
        Mtf { lists: vec![Vec::new(); contexts] }
    }

    /// Position of `e` in the context's list (or the list's length: an escape), and the update.
    fn code(&mut self, ctx: usize, e: u32) -> (u64, bool) {
        let list = &mut self.lists[ctx];
        match list.iter().position(|&x| x == e) {
            Some(p) => {
                list[..=p].rotate_right(1);
                (p as u64, false)
            }
            None => {
                let len = list.len() as u64;
                Self::push_front(list, e);
                (len, true)
            }
        }
    }

    fn push_front(list: &mut Vec<u32>, e: u32) {
        if list.len() == MTF_LEN {
            list.pop();
        }
        list.insert(0, e);
    }

    /// Inverse of `code`: `Ok(Some(e))` for a hit, `Ok(None)` for an escape.
    fn decode(&mut self, ctx: usize, code: u64) -> Result<Option<u32>, String> {
        let list = &mut self.lists[ctx];
        let len = list.len() as u64;
        if code < len {
            let p = code as usize;
            let e = list[p];
            list[..=p].rotate_right(1);
            Ok(Some(e))
        } else if code == len {
            Ok(None)
        } else {
            Err(format!("event code {code} past a context of {len}"))
        }
    }
}

/// The lag the batch itself predicts for each event (canonical order): the time since the
/// thread's previous event of equal or lower level, if that event is in the batch.
fn predicted_lags(evs: &[Ev], starts: &[usize], level_of: impl Fn(u32) -> u8) -> Vec<Option<u64>> {
    let mut out = Vec::with_capacity(evs.len());
    for (t, &s) in starts.iter().enumerate() {
        let end = starts.get(t + 1).copied().unwrap_or(evs.len());
        let mut last: [Option<u64>; 256] = [None; 256];
        for e in &evs[s..end] {
            let l = level_of(e.event) as usize;
            let prev = last[..=l].iter().flatten().copied().max();
            out.push(prev.map(|p| e.time.wrapping_sub(p)));
            last[l] = Some(e.time);
        }
    }
    out
}

/// Encodes a batch's events, which must be in canonical order (thread id, then time), all at
/// or after `start`, with `event < levels.len()`.
pub fn encode_block(start: u64, evs: &[Ev], levels: &[u8]) -> Vec<u8> {
    let mut w = BitWriter::new();
    // 1. Used event ids.
    let mut used: Vec<u32> = evs.iter().map(|e| e.event).collect();
    used.sort_unstable();
    used.dedup();
    let mut local_of = vec![u32::MAX; levels.len()];
    for (i, &e) in used.iter().enumerate() {
        local_of[e as usize] = i as u32;
    }
    w.put_eg(used.len() as u64, 0);
    let mut col = Vec::new();
    gaps(used.iter().map(|&e| u64::from(e)), true, &mut col);
    write_column(&mut w, &col);
    // 2. Threads.
    let mut starts = Vec::new();
    for (i, e) in evs.iter().enumerate() {
        if i == 0 || evs[i - 1].tid != e.tid {
            starts.push(i);
        }
    }
    col.clear();
    gaps(starts.iter().map(|&s| u64::from(evs[s].tid)), true, &mut col);
    write_column(&mut w, &col);
    let lens: Vec<u64> =
        (0..starts.len()).map(|t| (starts.get(t + 1).copied().unwrap_or(evs.len()) - starts[t] - 1) as u64).collect();
    write_column(&mut w, &lens);
    let firsts: Vec<u64> = starts.iter().map(|&s| evs[s].time - start).collect();
    write_column(&mut w, &firsts);
    // 3. Event codes.
    let u = used.len();
    let mut mtf = Mtf::new(u + 1);
    let (mut codes, mut escapes) = (Vec::with_capacity(evs.len()), Vec::new());
    let mut first = vec![false; evs.len()];
    for &s in &starts {
        first[s] = true;
    }
    let mut ctx = u;
    for (i, e) in evs.iter().enumerate() {
        if first[i] {
            ctx = u;
        }
        let local = local_of[e.event as usize];
        let (c, esc) = mtf.code(ctx, local);
        codes.push(c);
        if esc {
            escapes.push(u64::from(local));
        }
        ctx = local as usize;
    }
    w.put_eg(escapes.len() as u64, 0);
    write_column(&mut w, &escapes);
    write_column(&mut w, &codes);
    // 4. CPUs.
    let cpus: Vec<u64> = evs
        .iter()
        .enumerate()
        .map(|(i, e)| if !first[i] && evs[i - 1].cpu == e.cpu { 0 } else { u64::from(e.cpu) + 1 })
        .collect();
    write_column(&mut w, &cpus);
    // 5. Time deltas per local id.
    let mut by_id: Vec<Vec<u64>> = vec![Vec::new(); u];
    for (i, e) in evs.iter().enumerate() {
        if !first[i] {
            by_id[local_of[e.event as usize] as usize].push(e.time - evs[i - 1].time);
        }
    }
    for c in &by_id {
        write_column(&mut w, c);
    }
    // 6. Arguments per local id.
    let mut args_by_id: Vec<[Vec<u64>; 4]> = vec![Default::default(); u];
    for e in evs {
        let cols = &mut args_by_id[local_of[e.event as usize] as usize];
        for (col, &v) in cols.iter_mut().zip(&e.args) {
            col.push(v);
        }
    }
    for cols in &args_by_id {
        for raw in cols {
            let delta = delta_code(raw);
            if column_bits(&delta) < column_bits(raw) {
                w.put(1, 1);
                write_column(&mut w, &delta);
            } else {
                w.put(0, 1);
                write_column(&mut w, raw);
            }
        }
    }
    // 7. Lags.
    let level_of = |e: u32| levels[e as usize];
    let pred = predicted_lags(evs, &starts, level_of);
    let none: Vec<u64> = evs.iter().map(|e| u64::from(e.lag.is_none())).collect();
    write_column(&mut w, &none);
    let (mut res, mut whole) = (Vec::new(), Vec::new());
    for (e, p) in evs.iter().zip(&pred) {
        if let Some(l) = e.lag {
            match p {
                Some(p) => res.push(zigzag(l.wrapping_sub(*p) as i64)),
                None => whole.push(l),
            }
        }
    }
    write_column(&mut w, &res);
    write_column(&mut w, &whole);
    to_msgpack(&BlockRow {
        format: BLOCK_FORMAT,
        n: evs.len() as u32,
        threads: starts.len() as u32,
        bits: Blob(Cow::Owned(w.finish())),
    })
}

/// A strictly ascending list back from its gap coding (`bits::gaps`, strict).
fn ungap(col: &[u64], what: &str) -> Result<Vec<u64>, String> {
    let mut out = Vec::with_capacity(col.len());
    let mut prev: Option<u64> = None;
    for &g in col {
        let v = ungap_strict(prev, g).ok_or_else(|| format!("{what} overflows"))?;
        out.push(v);
        prev = Some(v);
    }
    Ok(out)
}

fn delta_code(raw: &[u64]) -> Vec<u64> {
    let mut prev = 0u64;
    raw.iter()
        .map(|&v| {
            let d = zigzag(v.wrapping_sub(prev) as i64);
            prev = v;
            d
        })
        .collect()
}

/// Decodes a batch's events in canonical order. `levels[i]` is the level of the source's
/// event definition `i`; `start` is the batch start from the key.
pub fn decode_block(bytes: &[u8], start: u64, levels: &[u8]) -> Result<Vec<Ev>, String> {
    let row: BlockRow = from_msgpack(bytes)?;
    if row.format != BLOCK_FORMAT {
        return Err(format!("unknown events format {}", row.format));
    }
    let (n, nt) = (row.n as usize, row.threads as usize);
    if n > MAX_BATCH_EVENTS || nt > n || (n > 0 && nt == 0) {
        return Err(format!("{n} events in {nt} threads"));
    }
    let mut r = BitReader::new(&row.bits.0);
    // 1. Used ids.
    let u = r.get_eg(0)?;
    if u > levels.len().min(n) as u64 {
        return Err(format!("{u} distinct events, the source defines {} and the batch holds {n}", levels.len()));
    }
    let u = u as usize;
    let used = ungap(&read_column(&mut r, u)?, "event id")?;
    if used.last().is_some_and(|&e| e >= levels.len() as u64) {
        return Err(format!("event id past the source's {} definitions", levels.len()));
    }
    let used: Vec<u32> = used.into_iter().map(|e| e as u32).collect();
    // 2. Threads.
    let tids = ungap(&read_column(&mut r, nt)?, "thread id")?;
    if tids.last().is_some_and(|&t| t > u64::from(u32::MAX)) {
        return Err("thread id out of range".into());
    }
    let lens = read_column(&mut r, nt)?;
    let firsts = read_column(&mut r, nt)?;
    let mut thread_of = Vec::with_capacity(n);
    let mut first = vec![false; n];
    for (t, &len) in lens.iter().enumerate() {
        let len = len.checked_add(1).filter(|&l| l <= (n - thread_of.len()) as u64);
        let Some(len) = len else {
            return Err(format!("threads hold more than {n} events"));
        };
        first[thread_of.len()] = true;
        thread_of.extend(std::iter::repeat_n(t as u32, len as usize));
    }
    if thread_of.len() != n {
        return Err(format!("threads hold {} events, header says {n}", thread_of.len()));
    }
    // 3. Event codes.
    let ne = r.get_eg(0)?;
    if ne > n as u64 {
        return Err(format!("{ne} escapes for {n} events"));
    }
    let escapes = read_column(&mut r, ne as usize)?;
    let codes = read_column(&mut r, n)?;
    let mut mtf = Mtf::new(u + 1);
    let mut esc = escapes.into_iter();
    let mut local = Vec::with_capacity(n);
    let mut ctx = u;
    for (i, &c) in codes.iter().enumerate() {
        if first[i] {
            ctx = u;
        }
        let l = match mtf.decode(ctx, c)? {
            Some(l) => l,
            None => {
                let l = esc.next().ok_or("escapes run out")?;
                if l >= u as u64 {
                    return Err(format!("local event {l} ≥ {u}"));
                }
                Mtf::push_front(&mut mtf.lists[ctx], l as u32);
                l as u32
            }
        };
        local.push(l);
        ctx = l as usize;
    }
    if esc.next().is_some() {
        return Err("escapes left over".into());
    }
    // 4. CPUs.
    let cpu_codes = read_column(&mut r, n)?;
    let mut cpus = Vec::with_capacity(n);
    for (i, &c) in cpu_codes.iter().enumerate() {
        let cpu = match c {
            0 if !first[i] => cpus[i - 1],
            0 => return Err("a thread's first event has no CPU".into()),
            c => u32::try_from(c - 1).map_err(|_| format!("cpu {} out of range", c - 1))?,
        };
        cpus.push(cpu);
    }
    // 5. Times.
    let mut per_id = vec![0usize; u];
    for (i, &l) in local.iter().enumerate() {
        if !first[i] {
            per_id[l as usize] += 1;
        }
    }
    let mut deltas = Vec::with_capacity(u);
    for &c in &per_id {
        deltas.push(read_column(&mut r, c)?.into_iter());
    }
    let mut times: Vec<u64> = Vec::with_capacity(n);
    for i in 0..n {
        let t = if first[i] {
            start.checked_add(firsts[thread_of[i] as usize]).ok_or("time overflows")?
        } else {
            let d = deltas[local[i] as usize].next().ok_or("time deltas run out")?;
            times[i - 1].checked_add(d).ok_or("time overflows")?
        };
        times.push(t);
    }
    // 6. Arguments.
    let mut count = vec![0usize; u];
    for &l in &local {
        count[l as usize] += 1;
    }
    let mut args: Vec<[std::vec::IntoIter<u64>; 4]> = Vec::with_capacity(u);
    for &c in &count {
        let mut cols: [Vec<u64>; 4] = Default::default();
        for col in &mut cols {
            let delta = r.get(1)? == 1;
            *col = read_column(&mut r, c)?;
            if delta {
                let mut prev = 0u64;
                for v in col.iter_mut() {
                    prev = prev.wrapping_add(unzigzag(*v) as u64);
                    *v = prev;
                }
            }
        }
        args.push(cols.map(|c| c.into_iter()));
    }
    let mut evs = Vec::with_capacity(n);
    for i in 0..n {
        let l = local[i] as usize;
        let a = &mut args[l];
        let mut vals = [0u64; 4];
        for (v, it) in vals.iter_mut().zip(a.iter_mut()) {
            *v = it.next().ok_or("arguments run out")?;
        }
        evs.push(Ev {
            time: times[i],
            tid: tids[thread_of[i] as usize] as u32,
            cpu: cpus[i],
            event: used[l],
            args: vals,
            lag: None,
        });
    }
    // 7. Lags.
    let none = read_column(&mut r, n)?;
    let mut starts = Vec::with_capacity(nt);
    for (i, &f) in first.iter().enumerate() {
        if f {
            starts.push(i);
        }
    }
    let pred = predicted_lags(&evs, &starts, |e| levels[e as usize]);
    let (mut with_pred, mut without) = (0usize, 0usize);
    for (f, p) in none.iter().zip(&pred) {
        match (f, p) {
            (0, Some(_)) => with_pred += 1,
            (0, None) => without += 1,
            (1, _) => {}
            (f, _) => return Err(format!("lag flag {f}")),
        }
    }
    let res = read_column(&mut r, with_pred)?;
    let whole = read_column(&mut r, without)?;
    let (mut res, mut whole) = (res.into_iter(), whole.into_iter());
    for ((e, f), p) in evs.iter_mut().zip(&none).zip(&pred) {
        if *f == 0 {
            e.lag = Some(match p {
                Some(p) => p.wrapping_add(unzigzag(res.next().ok_or("lags run out")?) as u64),
                None => whole.next().ok_or("lags run out")?,
            });
        }
    }
    Ok(evs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(x: &mut u64) -> u64 {
        *x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        *x >> 33
    }

    fn canonical(mut evs: Vec<Ev>) -> Vec<Ev> {
        evs.sort_by_key(|e| (e.tid, e.time));
        evs
    }

    #[test]
    fn block_roundtrips_any_input() {
        let mut x = 5;
        let levels = [0u8, 1, 2, 1, 0, 9, 255];
        for round in 0..200 {
            let n = (lcg(&mut x) % 300) as usize;
            let start = if round % 7 == 0 { 0 } else { lcg(&mut x) << 20 };
            let evs: Vec<Ev> = (0..n)
                .map(|_| Ev {
                    time: if round % 11 == 0 { u64::MAX - lcg(&mut x) % 3 } else { start + lcg(&mut x) % 10_000 },
                    tid: if round % 5 == 0 { u32::MAX - (lcg(&mut x) % 2) as u32 } else { (lcg(&mut x) % 4) as u32 },
                    cpu: [0, 1, u32::MAX][(lcg(&mut x) % 3) as usize],
                    event: (lcg(&mut x) % levels.len() as u64) as u32,
                    args: [lcg(&mut x) % 4, 0, u64::MAX - lcg(&mut x) % 2, lcg(&mut x) << 31 ^ lcg(&mut x)],
                    lag: match lcg(&mut x) % 4 {
                        0 => None,
                        1 => Some(u64::MAX),
                        _ => Some(lcg(&mut x) % 10_000),
                    },
                })
                .collect();
            let evs = canonical(evs);
            let start = evs.iter().map(|e| e.time).min().unwrap_or(start);
            let bytes = encode_block(start, &evs, &levels);
            assert_eq!(decode_block(&bytes, start, &levels).unwrap(), evs, "round {round}");
        }
    }

    #[test]
    fn block_rejects_garbage_without_panicking() {
        let levels = [0u8, 1, 0];
        let evs: Vec<Ev> = (0..100u64)
            .map(|i| Ev { time: 1000 + i * 7, tid: (i % 3) as u32, cpu: 1, event: (i % 3) as u32, ..Ev::default() })
            .collect();
        let evs = canonical(evs);
        let bytes = encode_block(1000, &evs, &levels);
        assert!(decode_block(&bytes, 1000, &levels[..2]).is_err(), "event past the definitions");
        for cut in 0..bytes.len() {
            let _ = decode_block(&bytes[..cut], 1000, &levels);
        }
        let mut x = 9;
        for _ in 0..3000 {
            let mut b = bytes.clone();
            let i = (lcg(&mut x) as usize) % b.len();
            b[i] ^= 1 << (lcg(&mut x) % 8);
            let _ = decode_block(&b, 1000, &levels);
        }
    }

    #[test]
    fn histogram_buckets_and_quantiles() {
        for v in [0u64, 1, 31, 32, 33, 63, 64, 65, 1000, 123_456_789, u64::MAX - 1, u64::MAX] {
            let b = bucket(v);
            assert!(b < BUCKETS);
            let (lo, hi) = bucket_bounds(b);
            assert!(lo <= v && v <= hi, "{v}: bucket {b} = [{lo}, {hi}]");
            assert!((hi - lo) as f64 <= lo as f64 / 32.0, "{v}");
        }
        let mut h = SumHist::default();
        for v in 1..=1000u64 {
            h.add_lag(Some(v * 1000));
        }
        h.add_lag(None);
        let p50 = h.quantile(0.5).unwrap() as f64;
        assert!((p50 - 500_000.0).abs() <= 500_000.0 / 64.0, "{p50}");
        assert_eq!(h.quantile(1.0), Some(1_000_000));
        let sparse = h.sparse();
        let bytes = encode_hists(&[(3, sparse.clone()), (4000, Hist::default())]);
        let back = decode_hists(&bytes).unwrap();
        assert_eq!(back, vec![(3, sparse), (4000, Hist::default())]);
        for cut in 0..bytes.len() {
            let _ = decode_hists(&bytes[..cut]);
        }
    }

    #[test]
    fn sources_roundtrip_and_bounds() {
        let s = TimelineSource {
            pid: 7,
            start_ticks: u64::MAX,
            comm: "pktloop".into(),
            events: vec![TimelineEventDef { name: "rx".into(), level: 1, rate: 7, arg_names: vec!["packets".into()] }],
        };
        assert_eq!(decode_source(&encode_source(&s)).unwrap(), s);
        let mut big = s.clone();
        big.events[0].arg_names = vec!["a".into(); 5];
        assert!(decode_source(&encode_source(&big)).is_err());
    }
}
