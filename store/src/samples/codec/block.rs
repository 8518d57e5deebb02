//! The per-CPU block: one CPU's samples of one batch, as times and indexes into the batch's
//! table: each block of a batch record (`batch_record`), or a `b` record of its own in batches
//! written before blocks moved into that record. The codes a batch record's blocks share
//! ([`SharedCodes`]) are here too: they are codes for this file's columns, and `batch_record`
//! builds on this file, never the other way.
//!
//! One CPU's samples of one batch in time order: the imported entries (sorted, gap-coded),
//! then which entry of "own partition ++ imports" each sample is, then the times. Every entry
//! of that local list is used, so the entries are written as first uses apart (a flag per
//! sample; a first use's rank among the entries not used yet; another sample's move-to-front
//! position among those used: a CPU that keeps running the same thing gives runs of zeros),
//! or, where shorter, as one column of local positions or move-to-front positions (the only
//! coding of blocks written before). Blocks written now also take two things from the table
//! (see `INDEX_GROUPED`): an entry is not repeated more often than its count, and a CPU's
//! next new entry is usually of the thread it runs or of another, which the table's threads
//! say.
//!
//! Times use a *grid* model: perf's timer fires every `P` ns (100 ms at 10 Hz) plus an
//! interrupt latency of microseconds, so each time is stored as `t0 + k·P + base + r` with the
//! step `k − k_prev` (almost always 1, which the sparse code makes nearly free) and a small
//! non-negative residual `r` (a few µs: ~3 bits with a Rice code, ~13 if kept to the ns).
//! `P` is fitted per block by least squares (trying round values too); when the samples do not
//! look periodic, plain deltas are used if shorter. Before any of this, times are divided by their *unit*: the
//! largest step they are all whole multiples of from the batch's start, 1,000 ns since the
//! store keeps sample times to the microsecond (`StackSample::TIME_UNIT_NS`), which takes ten
//! bits off every residual. Any input (duplicate times, gaps, `u64::MAX`, any unit)
//! round-trips exactly.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::table::{Entry, Table};
use crate::encoding::bits::{self, BitReader, BitWriter, column_bits, gaps, ungap_strict, zigzag};
use crate::encoding::msgpack::{Blob, from_msgpack, to_msgpack};

#[derive(Serialize, Deserialize)]
pub(super) struct BlockRow<'a> {
    /// Samples in the block.
    pub(super) n: u32,
    #[serde(borrow)]
    pub(super) bits: Blob<'a>,
    /// Every time is `batch_start + unit · v`: the bits hold the `v`. Absent (1) in blocks
    /// written before the store kept times to the microsecond; always written now, as a field
    /// follows it.
    #[serde(default = "one")]
    pub(super) unit: u64,
    /// How the bits name each sample's entry: [`INDEX_LIST`] (absent: blocks written before
    /// first uses were coded apart), [`INDEX_FIRST_USE`] or [`INDEX_GROUPED`].
    #[serde(default, skip_serializing_if = "is_list")]
    pub(super) index: u8,
}

/// Each sample's entry as one column: its place in the local list (own partition ++ imports)
/// or, when the block's first bit says so, its move-to-front position.
pub(super) const INDEX_LIST: u8 = 0;
/// First uses apart. Every entry of the local list is used by the block, so each is used a
/// first time: a flag per sample after the first says whether it is a first use; a first use
/// is written as its rank among the entries not used yet (in ⌈log2 unused⌉ bits: the order
/// of first uses is all it carries), any other sample as its move-to-front position among the
/// entries used so far. Measured on the benchmark's day: 5.45 bits a sample against 6.14 for
/// the move-to-front column.
pub(super) const INDEX_FIRST_USE: u8 = 1;

/// First uses apart, told by the table. As [`INDEX_FIRST_USE`], with two things the table
/// says: an entry is used at most its count times, so once this block has used it that often
/// it leaves the move-to-front list (later positions shrink); and a first use is written as a
/// bit "of the previous sample's `(thread, idle)` group or not" (only where both are
/// possible), then its rank among the entries not used yet of that side. A CPU that keeps its
/// thread takes the new stack from the few entries of that thread; one that switches rarely
/// picks its own thread's. Measured on the benchmark's day (101 batches): repeats 1.39 → 1.14
/// bits a sample, ranks 2.97 → 2.40 with the group bits.
pub(super) const INDEX_GROUPED: u8 = 2;

fn is_list(v: &u8) -> bool {
    *v == INDEX_LIST
}

/// [`INDEX_FIRST_USE`]'s columns for local-list positions `idx` (< `m`, every one of `0..m`
/// present): flags (after the first sample), move-to-front positions of repeats, ranks of
/// first uses.
struct FirstUses {
    flags: Vec<u64>,
    repeats: Vec<u64>,
    ranks: Vec<u64>,
    rank_bits: u64,
}

fn first_uses(idx: &[u64], m: usize) -> FirstUses {
    let mut out =
        FirstUses { flags: Vec::with_capacity(idx.len()), repeats: Vec::new(), ranks: Vec::new(), rank_bits: 0 };
    let mut used: Vec<u64> = Vec::with_capacity(m);
    let mut unused: Vec<u64> = (0..m as u64).collect();
    for (i, &v) in idx.iter().enumerate() {
        let pos = used.iter().position(|&u| u == v);
        if i > 0 {
            out.flags.push(u64::from(pos.is_none()));
        }
        match pos {
            Some(p) => {
                out.repeats.push(p as u64);
                used[..=p].rotate_right(1);
            }
            None => {
                let r = unused.binary_search(&v).expect("every position is below m");
                out.rank_bits += u64::from(bits::below_bits(unused.len() as u64));
                out.ranks.push(r as u64);
                unused.remove(r);
                used.insert(0, v);
            }
        }
    }
    out
}

/// What [`INDEX_GROUPED`] codes against, kept alike by the writer and the reader: the local
/// list in group order (`slots`: the block's entries sorted by `(thread, idle)`, then table
/// index, so an import lands beside its thread's own entries), each one's group and the uses
/// the table's counts leave it, the positions not used yet (ascending), those used that may
/// come again (most recent first), and the previous sample's group. A group's positions not
/// used yet are one stretch of `unused`, found in `before` (kept up to date: a first use takes
/// one from every later group's, a few dozen at most), so a rank costs no search. (Two binary
/// searches for the stretch instead: ~42 ns a sample to decode a block against ~36, measured
/// on the benchmark's blocks.)
struct Grouped {
    slots: Vec<Slot>,
    /// For each group and one past the last, how many positions not used yet lie before it:
    /// group `g`'s are `unused[before[g]..before[g + 1]]`.
    before: Vec<u32>,
    unused: Vec<u32>,
    used: Vec<u32>,
    prev: Option<u32>,
}

/// One entry of the local list, in group order.
struct Slot {
    /// `thread << 1 | idle`.
    key: u64,
    /// Its table index.
    entry: u32,
    group: u32,
    left: u64,
}

impl Grouped {
    fn new(table: &Table, local: &[u32]) -> Grouped {
        let mut slots: Vec<Slot> = local
            .iter()
            .map(|&e| {
                let Entry { thread, idle, .. } = table.entries[e as usize];
                Slot {
                    key: u64::from(thread) << 1 | u64::from(idle),
                    entry: e,
                    group: 0,
                    left: table.counts[e as usize],
                }
            })
            .collect();
        // Table indexes are distinct, so the order is total: the format does not depend on
        // how a sort breaks ties. A block without imports is in order already.
        if !slots.is_sorted_by_key(|s| (s.key, s.entry)) {
            slots.sort_unstable_by_key(|s| (s.key, s.entry));
        }
        let mut before = Vec::new();
        for p in 0..slots.len() {
            if p == 0 || slots[p - 1].key != slots[p].key {
                before.push(p as u32);
            }
            slots[p].group = before.len() as u32 - 1;
        }
        before.push(slots.len() as u32);
        Grouped {
            slots,
            before,
            unused: (0..local.len() as u32).collect(),
            used: Vec::with_capacity(local.len()),
            prev: None,
        }
    }

    /// Where the previous sample's group's positions not used yet lie in `unused`.
    fn stretch(&self) -> std::ops::Range<usize> {
        match self.prev {
            None => 0..0,
            Some(g) => self.before[g as usize] as usize..self.before[g as usize + 1] as usize,
        }
    }

    /// Which position not used yet is the `rank`-th on the `inside` side of `stretch`: its
    /// index in `unused`.
    fn find(&self, stretch: &std::ops::Range<usize>, inside: bool, rank: usize) -> Option<usize> {
        let at = match inside {
            true if rank < stretch.len() => stretch.start + rank,
            true => return None,
            false if rank < stretch.start => rank,
            false => rank + stretch.len(),
        };
        (at < self.unused.len()).then_some(at)
    }

    /// Whether `unused[at]` is inside `stretch`, and its rank on that side ([`Grouped::find`]
    /// reversed).
    fn rank_of(stretch: &std::ops::Range<usize>, at: usize) -> (bool, usize) {
        if stretch.contains(&at) {
            (true, at - stretch.start)
        } else if at < stretch.start {
            (false, at)
        } else {
            (false, at - stretch.len())
        }
    }

    /// The first use of `unused[at]`.
    fn first_use(&mut self, at: usize) -> u32 {
        let v = self.unused.remove(at);
        for b in &mut self.before[self.slots[v as usize].group as usize + 1..] {
            *b -= 1;
        }
        if self.took(v) {
            self.used.insert(0, v);
        }
        v
    }

    /// A repeat of `used[p]`.
    fn repeat(&mut self, p: usize) -> u32 {
        let v = self.used[p];
        if self.took(v) {
            self.used[..=p].rotate_right(1);
        } else {
            self.used.remove(p);
        }
        v
    }

    /// Counts a use of `v`; whether the table's counts allow it again.
    fn took(&mut self, v: u32) -> bool {
        let slot = &mut self.slots[v as usize];
        slot.left = slot.left.saturating_sub(1);
        self.prev = Some(slot.group);
        slot.left > 0
    }
}

/// [`INDEX_GROUPED`]'s flags (after the first sample) and repeats columns, and the group bits
/// and ranks of first uses as `(value, n)` (a value below `n`), for a block's `entries`
/// (table indexes, each in `local`). [`grouped_codes`] gives `None` when the block uses an
/// entry more often than the table counts it (never for a table built from the same samples).
struct GroupedCodes {
    flags: Vec<u64>,
    repeats: Vec<u64>,
    codes: Vec<(u64, u64)>,
    code_bits: u64,
}

fn grouped_codes(entries: &[u32], table: &Table, local: &[u32]) -> Option<GroupedCodes> {
    let mut s = Grouped::new(table, local);
    let mut place: Vec<(u32, u32)> = s.slots.iter().enumerate().map(|(p, slot)| (slot.entry, p as u32)).collect();
    place.sort_unstable();
    let mut out =
        GroupedCodes { flags: Vec::with_capacity(entries.len()), repeats: Vec::new(), codes: Vec::new(), code_bits: 0 };
    for (i, &e) in entries.iter().enumerate() {
        let v = place[place.binary_search_by_key(&e, |&(e, _)| e).ok()?].1;
        let pos = s.used.iter().position(|&u| u == v);
        if i > 0 {
            out.flags.push(u64::from(pos.is_none()));
        }
        if let Some(p) = pos {
            out.repeats.push(p as u64);
            s.repeat(p);
            continue;
        }
        // Not used yet, or used as often as the table allows.
        let at = s.unused.binary_search(&v).ok()?;
        let stretch = s.stretch();
        let (inside, outside) = (stretch.len(), s.unused.len() - stretch.len());
        let (is_inside, rank) = Grouped::rank_of(&stretch, at);
        if inside > 0 && outside > 0 {
            out.codes.push((u64::from(is_inside), 2));
        }
        let size = if is_inside { inside } else { outside };
        out.codes.push((rank as u64, size as u64));
        out.code_bits += u64::from(bits::below_bits(size as u64)) + u64::from(inside > 0 && outside > 0);
        s.first_use(at);
    }
    Some(out)
}

fn one() -> u64 {
    1
}

/// The largest unit every time is a whole multiple of, counted from `batch_start` (1 if none
/// is larger): the store keeps times to the microsecond, so this is usually 1,000, and the
/// grid residuals shrink by ten bits.
fn time_unit(batch_start: u64, times: &[u64]) -> u64 {
    fn gcd(mut a: u64, mut b: u64) -> u64 {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    }
    times.iter().fold(0, |g, &t| gcd(g, t - batch_start)).max(1)
}

/// An Exp-Golomb order sized for nanoseconds, lowered for a coarser `unit`.
fn order_for(k: u32, unit: u64) -> u32 {
    k.saturating_sub(unit.ilog2())
}

/// One CPU's samples: times ascending, and for each the index of its batch-table entry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Block {
    pub times: Vec<u64>,
    pub entries: Vec<u32>,
}

/// Times as a grid: `(base, step column, residual column)` for `times[1..]`.
fn grid(times: &[u64], period: u64) -> Option<(i64, Vec<u64>, Vec<u64>)> {
    let t0 = times[0];
    let p = i128::from(period);
    let mut k_prev = 0i128;
    let mut steps = Vec::with_capacity(times.len() - 1);
    let mut e = Vec::with_capacity(times.len() - 1);
    let mut base = 0i128;
    for &t in &times[1..] {
        let d = i128::from(t - t0);
        let k = (d + p / 2) / p;
        let step = u64::try_from(k - k_prev).ok()?;
        // 1 (the usual) → 0, 0 (same tick) → 1, anything else stays.
        steps.push(match step {
            1 => 0,
            0 => 1,
            s => s,
        });
        k_prev = k;
        let r = d - k * p;
        base = base.min(r);
        e.push(r);
    }
    let base64 = i64::try_from(base).ok()?;
    let res = e.into_iter().map(|r| u64::try_from(r - base).ok()).collect::<Option<Vec<u64>>>()?;
    Some((base64, steps, res))
}

/// Least-squares period of sorted `times` (None when they do not look periodic).
fn fit_period(times: &[u64]) -> Option<f64> {
    if times.len() < 3 {
        return None;
    }
    let mut deltas: Vec<u64> = times.windows(2).map(|w| w[1] - w[0]).filter(|&d| d > 0).collect();
    if deltas.len() < 2 {
        return None;
    }
    let mid = deltas.len() / 2;
    let rough = *deltas.select_nth_unstable(mid).1;
    let t0 = times[0];
    let (mut sk, mut st, mut skk, mut skt) = (0f64, 0f64, 0f64, 0f64);
    let n = times.len() as f64;
    for &t in times {
        let d = (t - t0) as f64;
        let k = (d / rough as f64).round();
        sk += k;
        st += d;
        skk += k * k;
        skt += k * d;
    }
    let var = skk - sk * sk / n;
    if var <= 0.0 {
        return Some(rough as f64);
    }
    let p = (skt - sk * st / n) / var;
    (p.is_finite() && p >= 1.0).then_some(p)
}

/// Exp-Golomb orders of the block header fields (sized for 100 ms and µs).
const T0_K: u32 = 20;
const PERIOD_K: u32 = 24;
const BASE_K: u32 = 8;

/// Encodes CPU `cpu`'s samples. `times` ascending and ≥ `batch_start`; `entries` are
/// indexes into the batch's `table`, which counts each at least as often as `entries` uses it.
pub fn encode_block(batch_start: u64, times: &[u64], entries: &[u32], table: &Table, cpu: u32) -> Vec<u8> {
    encode_block_as(batch_start, times, entries, table, cpu, None)
}

/// One CPU's block as `encode_batch_record` takes it: its columns, not yet written (the
/// record chooses the codes its blocks share first), and what its directory entry holds.
#[derive(Clone, Debug)]
pub struct BlockPayload {
    pub cpu: u32,
    pub(super) n: u32,
    pub(super) unit: u64,
    pub(super) index: u8,
    pub(super) columns: Columns,
}

/// A block's values as its payload writes them, in order.
#[derive(Clone, Debug)]
pub(super) struct Columns {
    /// The index column is move-to-front positions ([`INDEX_LIST`] only).
    use_mtf: bool,
    /// The first time, in units from the batch's start.
    t0: u64,
    /// The imported entries, gap-coded.
    imports: Vec<u64>,
    index: IndexColumns,
    times: TimeColumns,
}

#[derive(Clone, Debug)]
enum IndexColumns {
    /// [`INDEX_LIST`]: one column.
    List(Vec<u64>),
    /// [`INDEX_FIRST_USE`] and [`INDEX_GROUPED`]: flags, repeats, then values `(v, n)` below
    /// `n` each (group bits and ranks): in `⌈log2 n⌉` bits each, or, in a record whose blocks
    /// share codes, in truncated binary ([`BitWriter::put_below`]). Measured on the benchmark's
    /// day (generation 11, 101 batches): ranks 2.03 → 1.88 bits a sample.
    FirstUses { flags: Vec<u64>, repeats: Vec<u64>, codes: Vec<(u64, u64)> },
}

#[derive(Clone, Debug)]
enum TimeColumns {
    Deltas(Vec<u64>),
    /// [`grid`]'s model: `period` in units.
    Grid {
        period: u64,
        base: i64,
        steps: Vec<u64>,
        residuals: Vec<u64>,
    },
}

/// The kinds of block column a batch record shares a code for, as indexes of
/// [`SharedCodes::codes`].
const KIND_IMPORTS: usize = 0;
const KIND_LIST: usize = 1;
const KIND_FLAGS: usize = 2;
const KIND_REPEATS: usize = 3;
const KIND_STEPS: usize = 4;
const KIND_RESIDUALS: usize = 5;
const KIND_DELTAS: usize = 6;
const KINDS: usize = 7;

/// What the blocks of a batch record share, written once in the record: a column code for
/// each kind of column (see [`bits::SharedCode`]) and the timer period in nanoseconds (0:
/// none). A block says in one bit per column whether it uses its kind's code, and in one bit
/// whether its period is the batch's. Records written before have none, and their blocks
/// carry every header themselves.
///
/// Measured on the benchmark's day (generation 9, 101 batch records re-encoded): a block's
/// ~100 samples paid ~9 bits for each of five columns' headers and ~19 for its period.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SharedCodes {
    pub(super) codes: [Option<bits::SharedCode>; KINDS],
    pub(super) period_ns: u64,
    /// The fewest samples a block has, less one: the directory's samples column counts from
    /// it (most blocks of a busy host have the same number, so the column is all zeros).
    pub(super) fewest: u64,
}

impl SharedCodes {
    /// The codes that make `blocks` shortest (each column taking its kind's code or its own,
    /// whichever is shorter), and the period most of them have.
    pub(super) fn choose(blocks: &[BlockPayload]) -> SharedCodes {
        let mut by_kind: [Vec<&[u64]>; KINDS] = Default::default();
        let mut periods: Vec<u64> = Vec::new();
        for b in blocks {
            let c = &b.columns;
            by_kind[KIND_IMPORTS].push(&c.imports);
            match &c.index {
                IndexColumns::List(col) => by_kind[KIND_LIST].push(col),
                IndexColumns::FirstUses { flags, repeats, .. } => {
                    by_kind[KIND_FLAGS].push(flags);
                    by_kind[KIND_REPEATS].push(repeats);
                }
            }
            match &c.times {
                TimeColumns::Deltas(d) => by_kind[KIND_DELTAS].push(d),
                TimeColumns::Grid { period, steps, residuals, .. } => {
                    by_kind[KIND_STEPS].push(steps);
                    by_kind[KIND_RESIDUALS].push(residuals);
                    periods.extend(period.checked_mul(b.unit));
                }
            }
        }
        periods.sort_unstable();
        let period_ns = periods.chunk_by(|a, b| a == b).max_by_key(|run| run.len()).map_or(0, |run| run[0]);
        let fewest = blocks.iter().map(|b| u64::from(b.n) - 1).min().unwrap_or(0);
        SharedCodes { codes: by_kind.map(|cols| bits::SharedCode::choose(&cols)), period_ns, fewest }
    }

    fn code(&self, kind: usize) -> Option<&bits::SharedCode> {
        self.codes[kind].as_ref()
    }

    pub(super) fn encode(&self) -> Vec<u8> {
        let mut w = BitWriter::new();
        for code in &self.codes {
            w.put(u64::from(code.is_some()), 1);
            if let Some(code) = code {
                code.write(&mut w);
            }
        }
        w.put_eg(self.period_ns, PERIOD_K);
        w.put_eg(self.fewest, 0);
        w.finish()
    }

    pub(super) fn decode(bytes: &[u8]) -> Result<SharedCodes, String> {
        let mut r = BitReader::new(bytes);
        let mut out = SharedCodes::default();
        for code in &mut out.codes {
            if r.get(1)? == 1 {
                *code = Some(bits::SharedCode::read(&mut r)?);
            }
        }
        out.period_ns = r.get_eg(PERIOD_K)?;
        out.fewest = r.get_eg(0)?;
        Ok(out)
    }
}

/// [`encode_block`]'s block as a payload for a batch record.
pub fn encode_block_payload(batch_start: u64, times: &[u64], entries: &[u32], table: &Table, cpu: u32) -> BlockPayload {
    payload_as(batch_start, times, entries, table, cpu, None)
}

fn encode_block_as(
    batch_start: u64,
    times: &[u64],
    entries: &[u32],
    table: &Table,
    cpu: u32,
    force: Option<u8>,
) -> Vec<u8> {
    let b = payload_as(batch_start, times, entries, table, cpu, force);
    let bits = write_payload(&b.columns, b.unit, None);
    to_msgpack(&BlockRow { n: b.n, bits: Blob(Cow::Owned(bits)), unit: b.unit, index: b.index })
}

/// A block's columns with the index coding given (tests: blocks as written before) or chosen
/// (`None`: the shortest).
pub(super) fn payload_as(
    batch_start: u64,
    times: &[u64],
    entries: &[u32],
    table: &Table,
    cpu: u32,
    force: Option<u8>,
) -> BlockPayload {
    let own = table.own_range(cpu);
    debug_assert_eq!(times.len(), entries.len());
    debug_assert!(!times.is_empty() && times.windows(2).all(|w| w[0] <= w[1]) && times[0] >= batch_start);
    let unit = time_unit(batch_start, times);
    // From here on, times are counted in units from the batch's start.
    let times: Vec<u64> = times.iter().map(|&t| (t - batch_start) / unit).collect();
    let times = times.as_slice();
    // Local list: the own partition, then the entries imported from other partitions.
    let mut imports: Vec<u32> = entries.iter().copied().filter(|&e| !own.contains(&(e as usize))).collect();
    imports.sort_unstable();
    imports.dedup();
    let own_len = own.len();
    let idx: Vec<u64> = entries
        .iter()
        .map(|&e| {
            if own.contains(&(e as usize)) {
                (e as usize - own.start) as u64
            } else {
                (own_len + imports.binary_search(&e).unwrap()) as u64
            }
        })
        .collect();
    let m = own_len + imports.len();
    let local: Vec<u32> = (own.start as u32..own.end as u32).chain(imports.iter().copied()).collect();
    let mtf = move_to_front(&idx, m);
    let use_mtf = column_bits(&mtf) < column_bits(&idx);
    let firsts = first_uses(&idx, m);
    let grouped = grouped_codes(entries, table, &local);
    let sizes = [
        (column_bits(if use_mtf { &mtf } else { &idx }), INDEX_LIST),
        (column_bits(&firsts.flags) + column_bits(&firsts.repeats) + firsts.rank_bits, INDEX_FIRST_USE),
        (
            grouped.as_ref().map_or(u64::MAX, |g| column_bits(&g.flags) + column_bits(&g.repeats) + g.code_bits),
            INDEX_GROUPED,
        ),
    ];
    let index = force.unwrap_or(sizes.iter().min().expect("three sizes").1);
    let mut import_col = Vec::with_capacity(imports.len());
    gaps(imports.iter().map(|&e| u64::from(e)), true, &mut import_col);
    let index_columns = match index {
        INDEX_GROUPED => {
            let g = grouped.expect("the table counts every entry at least as often as the block uses it");
            IndexColumns::FirstUses { flags: g.flags, repeats: g.repeats, codes: g.codes }
        }
        INDEX_FIRST_USE => {
            let codes = firsts.ranks.iter().enumerate().map(|(j, &r)| (r, (m - j) as u64)).collect();
            IndexColumns::FirstUses { flags: firsts.flags, repeats: firsts.repeats, codes }
        }
        _ => IndexColumns::List(if use_mtf { mtf } else { idx }),
    };

    // Times: plain deltas, or the best of a few grid periods.
    let deltas: Vec<u64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    let mut best = (column_bits(&deltas), TimeColumns::Deltas(deltas));
    if let Some(p) = fit_period(times) {
        let exact = p.round() as u64;
        let mut candidates = vec![exact];
        // Round periods in nanoseconds (a µs, a ms), where the unit divides them.
        let p_ns = p * unit as f64;
        for round in [1_000u64, 1_000_000] {
            let c = ((p_ns / round as f64).round() as u64).saturating_mul(round);
            if c > 0 && c % unit == 0 && !candidates.contains(&(c / unit)) {
                candidates.push(c / unit);
            }
        }
        for period in candidates {
            if let Some((base, steps, residuals)) = grid(times, period) {
                let size = column_bits(&steps)
                    + column_bits(&residuals)
                    + bits::eg_bits(zigzag(base), order_for(BASE_K, unit))
                    + bits::eg_bits(period, order_for(PERIOD_K, unit));
                if size < best.0 {
                    best = (size, TimeColumns::Grid { period, base, steps, residuals });
                }
            }
        }
    }
    let columns = Columns {
        use_mtf: use_mtf && index == INDEX_LIST,
        t0: times[0],
        imports: import_col,
        index: index_columns,
        times: best.1,
    };
    BlockPayload { cpu, n: times.len() as u32, unit, index, columns }
}

/// Writes a block's payload: on its own (`shared` is `None`: a `b` record, or a batch record
/// written before), or against the codes its batch record's blocks share.
pub(super) fn write_payload(c: &Columns, unit: u64, shared: Option<&SharedCodes>) -> Vec<u8> {
    let code = |kind: usize| shared.and_then(|s| s.code(kind));
    let mut w = BitWriter::new();
    w.put(u64::from(c.use_mtf), 1);
    w.put(u64::from(matches!(c.times, TimeColumns::Grid { .. })), 1);
    // With shared codes, a grid block says first whether its period is the batch's; if so,
    // its first time is written as whole periods and a remainder of the period's width.
    let batch_period = match (&c.times, shared) {
        (TimeColumns::Grid { period, .. }, Some(s)) if s.period_ns != 0 => {
            let same = period.checked_mul(unit) == Some(s.period_ns);
            w.put(u64::from(same), 1);
            same.then_some(*period)
        }
        _ => None,
    };
    match batch_period {
        Some(p) => {
            w.put_eg(c.t0 / p, 0);
            w.put(c.t0 % p, bits::below_bits(p));
        }
        None => w.put_eg(c.t0, order_for(T0_K, unit)),
    }
    w.put_eg(c.imports.len() as u64, 0);
    bits::write_column_with(&mut w, &c.imports, code(KIND_IMPORTS));
    match &c.index {
        IndexColumns::List(col) => bits::write_column_with(&mut w, col, code(KIND_LIST)),
        IndexColumns::FirstUses { flags, repeats, codes } => {
            bits::write_column_with(&mut w, flags, code(KIND_FLAGS));
            bits::write_column_with(&mut w, repeats, code(KIND_REPEATS));
            for &(v, n) in codes {
                match shared {
                    Some(_) => w.put_below(v, n),
                    None => w.put(v, bits::below_bits(n)),
                }
            }
        }
    }
    match &c.times {
        TimeColumns::Grid { period, base, steps, residuals } => {
            if batch_period.is_none() {
                w.put_eg(*period, order_for(PERIOD_K, unit));
            }
            w.put_eg(zigzag(*base), order_for(BASE_K, unit));
            bits::write_column_with(&mut w, steps, code(KIND_STEPS));
            bits::write_column_with(&mut w, residuals, code(KIND_RESIDUALS));
        }
        TimeColumns::Deltas(d) => bits::write_column_with(&mut w, d, code(KIND_DELTAS)),
    }
    w.finish()
}

/// Reads a group bit's or rank's value below `n`: truncated binary in a record whose blocks
/// share codes, `⌈log2 n⌉` bits before.
fn read_below(r: &mut BitReader<'_>, n: u64, shared: Option<&SharedCodes>) -> Result<u64, String> {
    match shared {
        Some(_) => r.get_below(n),
        None => r.get(bits::below_bits(n)),
    }
}

/// Reads a block column of `n` values of `kind`, with the code its batch shares for that kind.
fn block_column(
    r: &mut BitReader<'_>,
    n: usize,
    shared: Option<&SharedCodes>,
    kind: usize,
) -> Result<Vec<u64>, String> {
    let mut out = Vec::new();
    bits::read_column_with(r, n, shared.and_then(|s| s.code(kind)), &mut out)?;
    Ok(out)
}

/// The first-use flags of `n` samples (one each after the first) and how many first uses they
/// say, at most `m` (the local list's entries): the first column of [`INDEX_FIRST_USE`] and
/// [`INDEX_GROUPED`].
fn first_use_flags(
    r: &mut BitReader<'_>,
    n: usize,
    m: usize,
    shared: Option<&SharedCodes>,
) -> Result<(Vec<u64>, usize), String> {
    let flags = block_column(r, n - 1, shared, KIND_FLAGS)?;
    let mut firsts = 1usize;
    for &f in &flags {
        match f {
            0 => {}
            1 => firsts += 1,
            _ => return Err(format!("first-use flag {f}")),
        }
    }
    if firsts > m {
        return Err(format!("{firsts} first uses of a local list of {m} entries"));
    }
    Ok((flags, firsts))
}

/// Reads [`INDEX_FIRST_USE`]'s columns for `n` samples against the block's local list.
fn decode_first_uses(
    r: &mut BitReader<'_>,
    n: usize,
    local: &[u32],
    shared: Option<&SharedCodes>,
    entries: &mut Vec<u32>,
) -> Result<(), String> {
    let m = local.len();
    let (flags, firsts) = first_use_flags(r, n, m, shared)?;
    let repeats = block_column(r, n - firsts, shared, KIND_REPEATS)?;
    let mut ranks = Vec::with_capacity(firsts);
    for j in 0..firsts {
        ranks.push(read_below(r, (m - j) as u64, shared)?);
    }
    let (mut ranks, mut repeats) = (ranks.into_iter(), repeats.into_iter());
    // Positions in `local`: those used, most recent first, and those not used yet, in order.
    let mut used: Vec<u32> = Vec::with_capacity(m);
    let mut unused: Vec<u32> = (0..m as u32).collect();
    for i in 0..n {
        let v = if i == 0 || flags[i - 1] == 1 {
            let rank = ranks.next().ok_or("first-use ranks run out")? as usize;
            if rank >= unused.len() {
                return Err(format!("first-use rank {rank} ≥ {} entries not used yet", unused.len()));
            }
            let v = unused.remove(rank);
            used.insert(0, v);
            v
        } else {
            let p = repeats.next().ok_or("repeats run out")? as usize;
            if p >= used.len() {
                return Err(format!("move-to-front position {p} ≥ {} entries used", used.len()));
            }
            let v = used[p];
            used[..=p].rotate_right(1);
            v
        };
        entries.push(local[v as usize]);
    }
    Ok(())
}

/// Reads [`INDEX_GROUPED`]'s columns and codes for `n` samples against the block's local list.
fn decode_grouped(
    r: &mut BitReader<'_>,
    n: usize,
    table: &Table,
    local: &[u32],
    shared: Option<&SharedCodes>,
    entries: &mut Vec<u32>,
) -> Result<(), String> {
    let m = local.len();
    let (flags, firsts) = first_use_flags(r, n, m, shared)?;
    let mut repeats = block_column(r, n - firsts, shared, KIND_REPEATS)?.into_iter();
    let mut s = Grouped::new(table, local);
    for i in 0..n {
        let v = if i == 0 || flags[i - 1] == 1 {
            let stretch = s.stretch();
            let (inside, outside) = (stretch.len(), s.unused.len() - stretch.len());
            let is_inside = if inside > 0 && outside > 0 { r.get(1)? == 1 } else { inside > 0 };
            let size = if is_inside { inside } else { outside };
            let rank = read_below(r, size as u64, shared)? as usize;
            let at = (rank < size).then(|| s.find(&stretch, is_inside, rank)).flatten().ok_or_else(|| {
                let side = if is_inside { "in" } else { "outside" };
                format!("first-use rank {rank} ≥ {size} entries not used yet {side} the previous sample's group")
            })?;
            s.first_use(at)
        } else {
            let p = repeats.next().ok_or("repeats run out")? as usize;
            if p >= s.used.len() {
                return Err(format!(
                    "move-to-front position {p} ≥ {} entries used that the table's counts allow again",
                    s.used.len()
                ));
            }
            s.repeat(p)
        };
        entries.push(s.slots[v as usize].entry);
    }
    Ok(())
}

fn move_to_front(idx: &[u64], m: usize) -> Vec<u64> {
    let mut order: Vec<u64> = (0..m as u64).collect();
    idx.iter()
        .map(|&v| {
            let pos = order.iter().position(|&o| o == v).unwrap();
            order[..=pos].rotate_right(1);
            pos as u64
        })
        .collect()
}

/// Decodes a block of CPU `cpu` against its batch's table; with `with_times == false` only
/// the entries are decoded (enough to count a block that lies wholly inside a query).
pub fn decode_block(
    bytes: &[u8],
    batch_start: u64,
    table: &Table,
    cpu: u32,
    with_times: bool,
) -> Result<Block, String> {
    let row: BlockRow = from_msgpack(bytes)?;
    decode_payload(&row.bits.0, row.n as usize, row.unit, row.index, None, batch_start, table, cpu, with_times)
}

/// Decodes a block's payload of `n` samples (from a `b` record or a batch record).
#[allow(clippy::too_many_arguments)]
pub(super) fn decode_payload(
    payload: &[u8],
    n: usize,
    unit: u64,
    index: u8,
    shared: Option<&SharedCodes>,
    batch_start: u64,
    table: &Table,
    cpu: u32,
    with_times: bool,
) -> Result<Block, String> {
    if n == 0 || n > bits::MAX_COLUMN {
        return Err(format!("block of {n} samples"));
    }
    let table_len = table.entries.len();
    let own = table.own_range(cpu);
    let mut r = BitReader::new(payload);
    if unit == 0 {
        return Err("time unit 0".into());
    }
    let use_mtf = r.get(1)? == 1;
    let is_grid = r.get(1)? == 1;
    let shared_period = shared.map_or(0, |s| s.period_ns);
    let batch_period = if is_grid && shared_period != 0 && r.get(1)? == 1 {
        if !shared_period.is_multiple_of(unit) {
            return Err(format!("the batch's period of {shared_period} ns is not a whole number of {unit}-ns units"));
        }
        Some(shared_period / unit)
    } else {
        None
    };
    let t0_off = match batch_period {
        Some(p) => {
            let whole = r.get_eg(0)?;
            let rest = r.get(bits::below_bits(p))?;
            whole.checked_mul(p).and_then(|t| t.checked_add(rest)).ok_or("first time overflows")?
        }
        None => r.get_eg(order_for(T0_K, unit))?,
    };
    let ni = r.get_eg(0)?;
    if ni > n as u64 {
        return Err(format!("block imports {ni} entries for {n} samples"));
    }
    let import_col = block_column(&mut r, ni as usize, shared, KIND_IMPORTS)?;
    let mut local: Vec<u32> = (own.start as u32..own.end as u32).collect();
    let mut acc: Option<u64> = None;
    for v in import_col {
        let e = ungap_strict(acc, v).ok_or("imported entry overflows")?;
        if e >= table_len as u64 || own.contains(&(e as usize)) {
            return Err(format!("imported entry {e} is in this CPU's own partition or outside a table of {table_len}"));
        }
        local.push(e as u32);
        acc = Some(e);
    }
    let m = local.len();
    let mut entries = Vec::with_capacity(n);
    if index == INDEX_GROUPED {
        decode_grouped(&mut r, n, table, &local, shared, &mut entries)?;
    } else if index == INDEX_FIRST_USE {
        decode_first_uses(&mut r, n, &local, shared, &mut entries)?;
    } else if index != INDEX_LIST {
        return Err(format!("unknown index coding {index}"));
    } else if use_mtf {
        let idx = block_column(&mut r, n, shared, KIND_LIST)?;
        let mut order = local;
        for v in idx {
            let pos = v as usize;
            if pos >= m {
                return Err(format!("move-to-front index {v} ≥ {m}"));
            }
            let e = order[pos];
            order[..=pos].rotate_right(1);
            entries.push(e);
        }
    } else {
        for v in block_column(&mut r, n, shared, KIND_LIST)? {
            entries.push(*local.get(v as usize).ok_or_else(|| format!("local index {v} ≥ {m}"))?);
        }
    }
    if !with_times {
        return Ok(Block { times: Vec::new(), entries });
    }
    // Times in units from the batch's start first, then in nanoseconds.
    let t0 = t0_off;
    let mut times = Vec::with_capacity(n);
    times.push(t0);
    if is_grid {
        let period = match batch_period {
            Some(p) => p,
            None => r.get_eg(order_for(PERIOD_K, unit))?,
        };
        let base = bits::unzigzag(r.get_eg(order_for(BASE_K, unit))?);
        let steps = block_column(&mut r, n - 1, shared, KIND_STEPS)?;
        let res = block_column(&mut r, n - 1, shared, KIND_RESIDUALS)?;
        let p = i128::from(period);
        let mut k = 0i128;
        for (s, rr) in steps.into_iter().zip(res) {
            k += match s {
                0 => 1,
                1 => 0,
                s => i128::from(s),
            };
            let t = i128::from(t0) + k * p + i128::from(base) + i128::from(rr);
            let t = u64::try_from(t).map_err(|_| format!("time {t} out of range"))?;
            if t < *times.last().unwrap() {
                return Err("times go backwards".into());
            }
            times.push(t);
        }
    } else {
        let mut t = t0;
        for d in block_column(&mut r, n - 1, shared, KIND_DELTAS)? {
            t = t.checked_add(d).ok_or("time overflows")?;
            times.push(t);
        }
    }
    for t in &mut times {
        *t = t.checked_mul(unit).and_then(|v| v.checked_add(batch_start)).ok_or("time overflows")?;
    }
    Ok(Block { times, entries })
}

#[cfg(test)]
mod tests {
    use super::super::table::Part;
    use super::*;
    use crate::encoding::bits::write_column;
    use crate::samples::codec::testing::{counted, lcg, periodic_block, table, with_one_bit_flipped};

    /// Round-trips a block in each index coding (against tables counting its entries exactly
    /// and more often) and as the writer chooses; returns the chosen coding's size.
    fn check_block(start: u64, times: &[u64], entries: &[u32], t: &Table, cpu: u32) -> usize {
        for more in [0, 2] {
            let t = &counted(t, entries, more);
            for index in [INDEX_LIST, INDEX_FIRST_USE, INDEX_GROUPED] {
                let bytes = encode_block_as(start, times, entries, t, cpu, Some(index));
                let row: BlockRow = from_msgpack(&bytes).unwrap();
                assert_eq!(row.index, index);
                let b = decode_block(&bytes, start, t, cpu, true).unwrap();
                assert_eq!((b.times.as_slice(), b.entries.as_slice()), (times, entries), "index coding {index}");
            }
        }
        let t = &counted(t, entries, 0);
        let bytes = encode_block(start, times, entries, t, cpu);
        let b = decode_block(&bytes, start, t, cpu, true).unwrap();
        assert_eq!(b.times, times);
        assert_eq!(b.entries, entries);
        let e = decode_block(&bytes, start, t, cpu, false).unwrap();
        assert_eq!(e.entries, entries);
        bytes.len()
    }

    /// A busy CPU's block: it often keeps running what it ran, and uses each of its 44 entries
    /// a first time somewhere. Coding first uses apart is chosen, and is shorter than the
    /// move-to-front column the block would have had before.
    #[test]
    fn first_uses_apart_are_chosen_for_a_busy_cpu() {
        let mut x = 29;
        let base = 1_700_000_000_000_000_000u64;
        let t = table(132); // CPU 1's partition: entries 44..88
        let (times, _) = periodic_block(base, &mut x);
        let (mut entries, mut unused): (Vec<u32>, Vec<u32>) = (Vec::new(), (44..88).collect());
        for i in 0..100 {
            let e = match lcg(&mut x) % 4 {
                _ if i == 0 || (unused.len() as u64) * 2 > 100 - i => {
                    unused.remove((lcg(&mut x) as usize) % unused.len())
                }
                0 | 1 => entries[i as usize - 1],
                2 if !unused.is_empty() => unused.remove((lcg(&mut x) as usize) % unused.len()),
                _ => entries[(lcg(&mut x) as usize) % entries.len()],
            };
            entries.push(e);
        }
        check_block(base, &times, &entries, &t, 1);
        // Against the table of a batch whose other CPUs used these entries too, so the
        // counts tell nothing, and every entry its own thread, so the groups neither.
        assert_chosen(base, &times, &entries, &counted(&t, &entries, 100), 1, INDEX_FIRST_USE, INDEX_LIST);
    }

    /// The writer chooses index coding `want` for the block, 4 bytes shorter at least than
    /// `over`.
    fn assert_chosen(base: u64, times: &[u64], entries: &[u32], t: &Table, cpu: u32, want: u8, over: u8) {
        let auto = encode_block(base, times, entries, t, cpu);
        let other = encode_block_as(base, times, entries, t, cpu, Some(over));
        assert_eq!(from_msgpack::<BlockRow>(&auto).unwrap().index, want);
        assert!(auto.len() + 4 <= other.len(), "{} bytes against {}", auto.len(), other.len());
    }

    /// A busy CPU whose threads run several stacks each, against its batch's table: it mostly
    /// keeps its thread, so a new entry is told among the few of that thread's, and entries
    /// the table counts once leave the move-to-front list after their use. The grouped coding
    /// is chosen, and is shorter than first uses apart alone.
    #[test]
    fn grouped_first_uses_are_chosen_for_a_busy_cpu() {
        let mut x = 31;
        let base = 1_700_000_000_000_000_000u64;
        // CPU 0's partition: 30 threads of 6 stacks each.
        let entries: Vec<Entry> = (0..180).map(|i| Entry { thread: i / 6, idle: false, stack: i % 6 }).collect();
        let t = Table { counts: vec![1; 180], entries, parts: vec![Part { cpu: 0, start: 0, len: 180 }] };
        let (times, _) = periodic_block(base, &mut x);
        let mut seq: Vec<u32> = Vec::new();
        let mut thread = 0u32;
        for _ in 0..100 {
            if lcg(&mut x).is_multiple_of(5) {
                thread = (lcg(&mut x) % 30) as u32;
            }
            seq.push(thread * 6 + (lcg(&mut x) % 6) as u32);
        }
        // Only entries used belong to the block's table.
        let mut used: Vec<u32> = seq.clone();
        used.sort_unstable();
        used.dedup();
        let t = Table {
            entries: used.iter().map(|&e| t.entries[e as usize]).collect(),
            counts: vec![1; used.len()],
            parts: vec![Part { cpu: 0, start: 0, len: used.len() as u32 }],
        };
        let seq: Vec<u32> = seq.iter().map(|e| used.binary_search(e).unwrap() as u32).collect();
        check_block(base, &times, &seq, &t, 0);
        assert_chosen(base, &times, &seq, &counted(&t, &seq, 0), 0, INDEX_GROUPED, INDEX_FIRST_USE);
    }

    /// A block that uses an entry more often than its table counts it cannot be written in
    /// the grouped coding: the writer chooses another, and the block still reads.
    #[test]
    fn grouped_coding_needs_counts_that_cover_the_block() {
        let t = table(10);
        let (times, entries) = ([1_000, 2_000, 3_000, 4_000], [3, 3, 3, 4]);
        assert!(grouped_codes(&[3, 3, 3, 4], &t, &[3, 4]).is_none());
        let bytes = encode_block(0, &times, &entries, &t, 1);
        assert_ne!(from_msgpack::<BlockRow>(&bytes).unwrap().index, INDEX_GROUPED);
        assert_eq!(decode_block(&bytes, 0, &t, 1, true).unwrap().entries, entries);
    }

    /// Out-of-range grouped codes are errors: a rank past the entries not used yet on its
    /// side, a repeat of an entry the table's counts have used up.
    #[test]
    fn grouped_codes_out_of_range_are_errors() {
        // Local list: entries 0, 1 (thread 0) and 2 (thread 1), each counted once.
        let entries = vec![
            Entry { thread: 0, idle: false, stack: 0 },
            Entry { thread: 0, idle: false, stack: 1 },
            Entry { thread: 1, idle: false, stack: 0 },
        ];
        let t = Table { counts: vec![1; 3], entries, parts: vec![Part { cpu: 0, start: 0, len: 3 }] };
        let run_against = |t: &Table, flags: &[u64], repeats: &[u64], codes: &[(u64, u32)], n: usize| {
            let bytes = first_use_bits(flags, repeats, codes);
            let mut out = Vec::new();
            decode_grouped(&mut BitReader::new(&bytes), n, t, &[0, 1, 2], None, &mut out).map(|_| out)
        };
        let run =
            |flags: &[u64], repeats: &[u64], codes: &[(u64, u32)], n: usize| run_against(&t, flags, repeats, codes, n);
        // 0 (rank 0 of 3: 2 bits); then inside thread 0 (bit 1), rank 0 of 1 (no bits): 1;
        // then thread 0 has none left, so no bit: rank 0 of 1 outside: 2.
        assert_eq!(run(&[1, 1], &[], &[(0, 2), (1, 1)], 3).unwrap(), [0, 1, 2]);
        let err = run(&[1, 1], &[], &[(3, 2), (1, 1)], 3).unwrap_err();
        assert!(err.contains("rank 3 ≥ 3"), "{err}");
        // Entry 0 is counted once: after its use nothing may repeat.
        let err = run(&[0], &[0], &[(0, 2)], 2).unwrap_err();
        assert!(err.contains("position 0 ≥ 0"), "{err}");
        let counted_twice = Table { counts: vec![2, 1, 1], ..t.clone() };
        assert_eq!(run_against(&counted_twice, &[0], &[0], &[(0, 2)], 2).unwrap(), [0, 0]);
    }

    /// A first-use coding's bits: the flags and repeats columns, then the raw `(value, bits)`
    /// codes of the first uses.
    fn first_use_bits(flags: &[u64], repeats: &[u64], codes: &[(u64, u32)]) -> Vec<u8> {
        let mut w = BitWriter::new();
        write_column(&mut w, flags);
        write_column(&mut w, repeats);
        for &(v, b) in codes {
            w.put(v, b);
        }
        w.finish()
    }

    /// A first-use rank past the entries not used yet, a repeat before any use, or a flag
    /// other than 0 or 1 is an error, not a wrong entry or a panic.
    #[test]
    fn first_use_columns_out_of_range_are_errors() {
        let local: Vec<u32> = (10..14).collect();
        let run = |flags: &[u64], repeats: &[u64], ranks: &[(u64, u32)], n: usize| {
            let bytes = first_use_bits(flags, repeats, ranks);
            let mut out = Vec::new();
            decode_first_uses(&mut BitReader::new(&bytes), n, &local, None, &mut out).map(|_| out)
        };
        // Ranks take 2, 2, 1 bits (4, 3, 2 entries not used yet).
        assert_eq!(run(&[0, 1, 1], &[0], &[(3, 2), (0, 2), (1, 1)], 4).unwrap(), [13, 13, 10, 12]);
        let err = run(&[0, 1, 1], &[0], &[(3, 2), (3, 2), (1, 1)], 4).unwrap_err();
        assert!(err.contains("rank 3"), "{err}");
        let err = run(&[0, 1], &[1], &[(0, 2), (0, 2)], 3).unwrap_err();
        assert!(err.contains("move-to-front position 1"), "{err}");
        assert!(run(&[2, 0], &[0], &[(0, 2)], 3).unwrap_err().contains("flag 2"));
        let err = run(&[1, 1, 1, 1], &[], &[(0, 2), (0, 2), (0, 1), (0, 0), (0, 0)], 5).unwrap_err();
        assert!(err.contains("5 first uses"), "{err}");
    }

    #[test]
    fn block_times_roundtrip_any_shape() {
        let mut x = 7;
        let base = 1_700_000_000_000_000_000u64;
        let t = table(120);
        // Periodic with µs jitter: compact.
        let (times, entries) = periodic_block(base, &mut x);
        let size = check_block(base, &times, &entries, &t, 1);
        assert!(size < 260, "periodic block took {size} bytes");
        // Entries from other partitions (imports) too.
        let mixed: Vec<u32> = (0..100).map(|_| (lcg(&mut x) % 120) as u32).collect();
        check_block(base, &times, &mixed, &t, 1);
        check_block(base, &times, &mixed, &t, 3); // a CPU without a partition
        // Missing ticks, duplicate times, a huge gap.
        let mut t2 = times.clone();
        t2.remove(50);
        t2.remove(20);
        t2.insert(10, t2[10]);
        t2.push(u64::MAX - 1);
        t2.push(u64::MAX);
        let e2: Vec<u32> = (0..t2.len()).map(|i| (i % 120) as u32).collect();
        check_block(base, &t2, &e2, &t, 5);
        // Tiny blocks, zero times, all equal.
        let one = table(1);
        check_block(0, &[0], &[0], &one, 0);
        check_block(0, &[0, 0, 0, 0], &[0, 0, 0, 0], &one, 0);
        check_block(0, &[0, 0, 0, 0], &[0, 0, 0, 0], &one, 9);
        check_block(5, &[5, 6], &[3, 0], &table(4), 1);
        check_block(0, &[0, u64::MAX], &[1, 1], &table(2), 5);
        // Random.
        for _ in 0..50 {
            let n = 1 + (lcg(&mut x) % 200) as usize;
            let mut ts: Vec<u64> = (0..n).map(|_| lcg(&mut x) << (lcg(&mut x) % 31)).collect();
            ts.sort_unstable();
            let e: Vec<u32> = (0..n).map(|_| (lcg(&mut x) % 7) as u32).collect();
            check_block(ts[0] - ts[0] % 3, &ts, &e, &table(7), (lcg(&mut x) % 7) as u32);
        }
    }

    #[test]
    fn block_times_in_whole_units() {
        let mut x = 9;
        let base = 1_700_000_000_000_123_000u64;
        let t = table(120);
        let (ns, entries) = periodic_block(base, &mut x);
        let us: Vec<u64> = ns.iter().map(|t| t - t % 1_000).collect();
        let (ns_size, us_size) = (check_block(base, &ns, &entries, &t, 1), check_block(base, &us, &entries, &t, 1));
        // ~10 bits fewer for each of 99 residuals.
        assert!(us_size + 100 < ns_size, "µs times took {us_size} bytes, ns times {ns_size}");
        // Blocks written before units were `[n, bits]`: they still read, in nanoseconds.
        let list = encode_block_as(base, &ns, &entries, &t, 1, Some(INDEX_LIST));
        assert_eq!((list[0], list[list.len() - 1]), (0x93, 1), "[n, bits, unit 1]");
        let mut old = list[..list.len() - 1].to_vec();
        old[0] = 0x92;
        let b = decode_block(&old, base, &t, 1, true).unwrap();
        assert_eq!((b.times, b.entries), (ns.clone(), entries.clone()));
        // Any unit, up to the top of the clock.
        for unit in [2u64, 3, 1_000, 7_919, 1 << 40] {
            let start = (u64::MAX / 2) / unit * unit;
            let mut ts: Vec<u64> = (0..60).map(|_| start + (lcg(&mut x) % 1_000) * unit).collect();
            ts.push(start + (u64::MAX - start) / unit * unit);
            ts.sort_unstable();
            let e: Vec<u32> = (0..ts.len()).map(|i| (i % 120) as u32).collect();
            check_block(start, &ts, &e, &t, 5);
        }
    }

    #[test]
    fn block_with_a_bad_unit_is_an_error() {
        let t = table(10);
        let bytes = encode_block(0, &[1_000, 2_000, 3_000], &[0, 5, 9], &t, 0);
        let row: BlockRow = from_msgpack(&bytes).unwrap();
        assert_eq!(row.unit, 1_000);
        let bad = to_msgpack(&BlockRow { unit: 0, ..from_msgpack(&bytes).unwrap() });
        let err = decode_block(&bad, 0, &t, 0, true).unwrap_err();
        assert!(err.contains("unit 0"), "{err}");
        // Times past the clock's end: units from a batch start near it (a damaged key).
        let err = decode_block(&bytes, u64::MAX - 1_500, &t, 0, true).unwrap_err();
        assert!(err.contains("overflows"), "{err}");
        // Any unit on garbage bits never panics.
        let mut x = 5;
        for _ in 0..2000 {
            let unit = lcg(&mut x) << (lcg(&mut x) % 40);
            let _ = decode_block(&to_msgpack(&BlockRow { unit, ..from_msgpack(&bytes).unwrap() }), 0, &t, 0, true);
        }
    }

    #[test]
    fn block_rejects_out_of_table_entries_and_garbage() {
        let t = table(10);
        let bytes = encode_block(0, &[1, 2, 3], &[0, 5, 9], &t, 0);
        assert!(decode_block(&bytes, 0, &t, 0, true).is_ok());
        assert!(decode_block(&bytes, 0, &table(9), 0, true).is_err());
        for cut in 0..bytes.len() {
            let _ = decode_block(&bytes[..cut], 0, &t, 0, true);
        }
        with_one_bit_flipped(&bytes, 3, 2000, |b| drop(decode_block(b, 0, &t, 0, true)));
    }
}
