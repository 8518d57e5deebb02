//! Encoding of sample records: per-CPU blocks, batch tables, batch metadata, dictionaries.
//!
//! Every value is MessagePack (rmp-serde, structs as arrays); the integer columns of blocks
//! and tables are packed by [`super::bits`] into one `bin` field. See [`super`] for why the
//! data is split this way; this module only turns rows into bytes and back, and checks
//! everything on the way back (it never panics on a corrupt record).
//!
//! ## Batch table (`h` record)
//! The distinct *entries* of a batch — `(thread id, idle, stack id)` — with their sample
//! counts across all CPUs: the batch's pre-aggregated histogram. Entries are grouped in
//! *partitions* by the lowest-numbered CPU that used them, and sorted within a partition, so:
//! - a CPU's block lists only the few entries it shares with lower CPUs ("imports"); the
//!   entries of its own partition are implied (most entries are used by one CPU only: a
//!   100-ms sample of a thread's stack is rarely repeated elsewhere in the same 10 s);
//! - within a partition, runs of entries of one `(thread, idle)` form a *group*: thread ids
//!   are gap-coded between groups, stack ids between the entries of a group.
//!
//! Columns: partition CPU gaps and sizes; per group the thread (absolute for a partition's
//! first group, else the gap), idle flag, entry count − 1 and first stack; per entry the
//! stack gap − 1 and count − 1.
//!
//! A stack is written as its dictionary id (format 2: batches and hour rollups written before
//! format 3) or as the name the entry's process gives it in its vocabulary (format 3, batches
//! and hour rollups): the decoder looks up the thread's pid and the process's name through a
//! [`Vocabulary`], the dictionary cache. Within a group, entries are then sorted by name. A
//! process uses few stacks, named in order of first use, so names are small and a group's
//! gaps short.
//!
//! ## Per-CPU block (`b` record)
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
//!
//! ## Batch record (`h` record with blocks)
//! A batch's blocks follow its table in one record, with a directory saying where each CPU's
//! lies (see `BlocksRow`). What the ~96 blocks of a batch have alike is written once for the
//! batch ([`SharedCodes`]): a column code for each kind of block column, which a column takes
//! (one bit) instead of its own 9-bit header when that is shorter; the timer period most
//! blocks have, which a block on it takes (one bit), writing its first time as whole periods
//! and a remainder; and the fewest samples a block has, from which the directory counts. In
//! such a record a first use's rank is in truncated binary. Records written before have no
//! shared codes and their blocks carry everything themselves; both read.

use std::borrow::Cow;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use super::bits::{self, BitReader, BitWriter, column_bits, read_column, write_column, zigzag};
use super::model::{Frame, ObjectAddress};

/// Bytes serialized as a MessagePack `bin` (rmp-serde would write a `Vec<u8>` as an array),
/// borrowed from the record when decoding.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Blob<'a>(pub Cow<'a, [u8]>);

impl Serialize for Blob<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Blob<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Blob<'a>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Blob<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("bytes")
            }
            fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> Result<Blob<'de>, E> {
                Ok(Blob(Cow::Borrowed(v)))
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Blob<'de>, E> {
                Ok(Blob(Cow::Owned(v.to_vec())))
            }
            fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Blob<'de>, E> {
                Ok(Blob(Cow::Owned(v)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Blob<'de>, A::Error> {
                let mut out = Vec::new();
                while let Some(b) = seq.next_element::<u8>()? {
                    out.push(b);
                }
                Ok(Blob(Cow::Owned(out)))
            }
        }
        d.deserialize_bytes(V)
    }
}

fn to_msgpack<T: Serialize>(v: &T) -> Vec<u8> {
    rmp_serde::to_vec(v).expect("MessagePack encoding of plain data into memory")
}

fn from_msgpack<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, String> {
    rmp_serde::from_slice(bytes).map_err(|e| format!("MessagePack: {e}"))
}

// ---------------------------------------------------------------------------------------------
// Batch table

/// One distinct `(thread, idle, stack)` of a batch. Field order is the sort order within a
/// partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Entry {
    /// Thread dictionary id: `(pid, tid, comm, cgroup)`.
    pub thread: u32,
    pub idle: bool,
    pub stack: u32,
}

/// A batch's entries with their sample counts (all ≥ 1), in partitions: partition `p` holds
/// the entries whose lowest-numbered CPU is `parts[p].cpu`, sorted and distinct.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Table {
    pub entries: Vec<Entry>,
    pub counts: Vec<u64>,
    pub parts: Vec<Part>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    pub cpu: u32,
    pub start: u32,
    pub len: u32,
}

impl Table {
    /// The entries first used by `cpu` (an empty range if none).
    pub fn own_range(&self, cpu: u32) -> std::ops::Range<usize> {
        match self.parts.binary_search_by_key(&cpu, |p| p.cpu) {
            Ok(i) => {
                let p = self.parts[i];
                p.start as usize..(p.start + p.len) as usize
            }
            Err(_) => 0..0,
        }
    }
}

#[derive(Serialize, Deserialize)]
struct TableRow<'a> {
    format: u8,
    entries: u32,
    groups: u32,
    parts: u32,
    #[serde(borrow)]
    bits: Blob<'a>,
    /// The batch's per-CPU blocks (see [`encode_batch_record`]); absent from rollups and from
    /// batches written before, whose blocks are `b` records of their own.
    #[serde(default, borrow, skip_serializing_if = "Option::is_none")]
    blocks: Option<BlocksRow<'a>>,
}

/// A batch's per-CPU blocks in its table record: one record a batch instead of one a CPU.
/// Measured on the benchmark's day: a `b` record's key and MessagePack header took 21 + ~9
/// bytes for ~100 samples (~2.4 bits a sample); here a block costs its directory entry (CPU
/// gap, samples, index coding, unit, payload bytes: ~2 bytes) and the padding of its payload
/// to a whole byte.
#[derive(Serialize, Deserialize)]
struct BlocksRow<'a> {
    count: u32,
    /// The distinct time units of the blocks (almost always one: 1,000 ns).
    units: Vec<u64>,
    /// Bit-packed columns of `count` values each, in CPU order: the CPU (the first, then gaps
    /// − 1), samples − 1, index coding, unit (its place in `units`), payload bytes.
    #[serde(borrow)]
    dir: Blob<'a>,
    /// The payloads one after another: each is what a `b` record's `bits` holds, or, with
    /// `shared`, what it holds written against those codes.
    #[serde(borrow)]
    bits: Blob<'a>,
    /// [`SharedCodes`], bit-packed; absent from records written before blocks shared codes.
    #[serde(default, borrow, skip_serializing_if = "Option::is_none")]
    shared: Option<Blob<'a>>,
}

/// Format 2 names each entry's stack by its dictionary id; format 3 by its place in the
/// vocabulary of the entry's process (`d v` records), which [`decode_table`] resolves through
/// a [`Vocabulary`]. Batches are written in format 3, hour rollups in format 2; both decode.
const TABLE_FORMAT_IDS: u8 = 2;
const TABLE_FORMAT_VOCAB: u8 = 3;

/// What a format-3 table needs to name its stacks: each thread's process, and each process's
/// stack vocabulary. The store's dictionary cache is one.
pub trait Vocabulary {
    /// The pid of a thread dictionary id.
    fn pid_of(&self, thread: u32) -> Option<u32>;
    /// The stack id `pid`'s vocabulary names `local`.
    fn stack_named(&self, pid: u32, local: u32) -> Option<u32>;
}

/// No vocabulary at all: enough for format-2 tables (hour rollups); a format-3 table is
/// refused.
pub struct NoVocabulary;

impl Vocabulary for NoVocabulary {
    fn pid_of(&self, _: u32) -> Option<u32> {
        None
    }
    fn stack_named(&self, _: u32, _: u32) -> Option<u32> {
        None
    }
}

/// Gap coding of an ascending list: first value, then `next - prev - 1` (strict) or
/// `next - prev` (non-strict).
fn gaps(values: impl IntoIterator<Item = u64>, strict: bool, out: &mut Vec<u64>) {
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
fn ungap_strict(prev: Option<u64>, gap: u64) -> Option<u64> {
    match prev {
        None => Some(gap),
        Some(p) => p.checked_add(gap)?.checked_add(1),
    }
}

/// Encodes a table. With `locals` (entry `i`'s place in its process's vocabulary, for every
/// entry) it is format 3, and each partition must be sorted by `(thread, idle, local)`;
/// without, format 2, each partition sorted by [`Entry`].
pub fn encode_table(t: &Table, locals: Option<&[u32]>) -> Vec<u8> {
    encode_table_row(t, locals, None)
}

/// A batch's record: its table in format 3 (`locals` as for [`encode_table`]) with its
/// per-CPU blocks (ascending CPUs, each encoded by [`encode_block_payload`] against `t`).
pub fn encode_batch_record(t: &Table, locals: &[u32], blocks: &[BlockPayload]) -> Vec<u8> {
    batch_record(t, locals, blocks, Some(&SharedCodes::choose(blocks)))
}

/// [`encode_batch_record`] with the blocks' `shared` codes given (`None`: as records were
/// written before blocks shared codes, which tests need).
fn batch_record(t: &Table, locals: &[u32], blocks: &[BlockPayload], shared: Option<&SharedCodes>) -> Vec<u8> {
    debug_assert!(blocks.windows(2).all(|w| w[0].cpu < w[1].cpu));
    let payloads: Vec<Vec<u8>> = blocks.iter().map(|b| write_payload(&b.columns, b.unit, shared)).collect();
    let fewest = shared.map_or(0, |s| s.fewest);
    let mut units: Vec<u64> = blocks.iter().map(|b| b.unit).collect();
    units.sort_unstable();
    units.dedup();
    let mut cols: [Vec<u64>; 5] = Default::default();
    gaps(blocks.iter().map(|b| u64::from(b.cpu)), true, &mut cols[0]);
    for (b, payload) in blocks.iter().zip(&payloads) {
        cols[1].push(u64::from(b.n) - 1 - fewest);
        cols[2].push(u64::from(b.index));
        cols[3].push(units.binary_search(&b.unit).expect("every unit is listed") as u64);
        cols[4].push(payload.len() as u64);
    }
    let mut w = BitWriter::new();
    for col in &cols {
        write_column(&mut w, col);
    }
    let row = BlocksRow {
        count: blocks.len() as u32,
        units,
        dir: Blob(Cow::Owned(w.finish())),
        bits: Blob(Cow::Owned(payloads.concat())),
        shared: shared.map(|s| Blob(Cow::Owned(s.encode()))),
    };
    encode_table_row(t, Some(locals), Some(row))
}

fn encode_table_row(t: &Table, locals: Option<&[u32]>, blocks: Option<BlocksRow<'_>>) -> Vec<u8> {
    debug_assert!(locals.is_none_or(|l| l.len() == t.entries.len()));
    let named = |i: usize| u64::from(locals.map_or(t.entries[i].stack, |l| l[i]));
    let mut part_cpu = Vec::with_capacity(t.parts.len());
    gaps(t.parts.iter().map(|p| u64::from(p.cpu)), true, &mut part_cpu);
    let part_len: Vec<u64> = t.parts.iter().map(|p| u64::from(p.len) - 1).collect();
    let (mut first_thread, mut thread_gap, mut idle, mut group_len) = (vec![], vec![], vec![], vec![]);
    let (mut first_stack, mut stack_gap) = (vec![], vec![]);
    for p in &t.parts {
        let (lo, hi) = (p.start as usize, (p.start + p.len) as usize);
        let es = &t.entries[lo..hi];
        debug_assert!((lo + 1..hi).all(|i| {
            let key = |i: usize| (t.entries[i].thread, t.entries[i].idle, named(i));
            key(i - 1) < key(i)
        }));
        let mut g = 0;
        while g < es.len() {
            let e = es[g];
            let end = g + es[g..].iter().position(|x| (x.thread, x.idle) != (e.thread, e.idle)).unwrap_or(es.len() - g);
            if g == 0 {
                first_thread.push(u64::from(e.thread));
            } else {
                thread_gap.push(u64::from(e.thread - es[g - 1].thread));
            }
            idle.push(u64::from(e.idle));
            group_len.push((end - g - 1) as u64);
            gaps((lo + g..lo + end).map(named), true, &mut stack_gap);
            first_stack.push(stack_gap.remove(stack_gap.len() - (end - g)));
            g = end;
        }
    }
    let counts: Vec<u64> = t.counts.iter().map(|&c| c - 1).collect();
    let mut w = BitWriter::new();
    let cols = [&part_cpu, &part_len, &first_thread, &thread_gap, &idle, &group_len, &first_stack, &stack_gap, &counts];
    for col in cols {
        write_column(&mut w, col);
    }
    to_msgpack(&TableRow {
        format: if locals.is_some() { TABLE_FORMAT_VOCAB } else { TABLE_FORMAT_IDS },
        entries: t.entries.len() as u32,
        groups: idle.len() as u32,
        parts: t.parts.len() as u32,
        bits: Blob(Cow::Owned(w.finish())),
        blocks,
    })
}

/// A batch's records as batches were written before their blocks moved into the table record.
pub struct RecordPerCpu {
    /// The table record alone.
    pub table: Vec<u8>,
    /// Each CPU's `b` record value, ascending CPUs.
    pub blocks: Vec<(u32, Vec<u8>)>,
}

/// A batch record split as batches were written before their blocks moved into it: what tests
/// of stores written before need, and a tool that converts a store back.
pub fn split_batch_record(record: &[u8]) -> Result<RecordPerCpu, String> {
    let dir = decode_block_dir(record)?.ok_or("the record has no blocks")?;
    let payloads = &record[dir.payloads.clone()];
    let blocks = if dir.shared.is_none() {
        dir.blocks
            .iter()
            .map(|b| {
                let bits = Blob(Cow::Borrowed(&payloads[b.bytes.clone()]));
                (b.cpu, to_msgpack(&BlockRow { n: b.n, bits, unit: b.unit, index: b.index }))
            })
            .collect()
    } else {
        // Payloads written against shared codes do not stand alone: decode each block and
        // write it again on its own. A block's coding depends on the table's threads, idle
        // flags, partitions and counts, never on which stacks its entries name, so the table
        // is read with its stacks left as named, and times relative to any start.
        let table = decode_table(record, &AsNamed)?;
        dir.blocks
            .iter()
            .map(|at| {
                let block = dir.decode(record, at, 0, &table, true)?;
                let b = payload_as(0, &block.times, &block.entries, &table, at.cpu, Some(at.index));
                let bits = Blob(Cow::Owned(write_payload(&b.columns, b.unit, None)));
                Ok((at.cpu, to_msgpack(&BlockRow { n: b.n, bits, unit: b.unit, index: b.index })))
            })
            .collect::<Result<_, String>>()?
    };
    Ok(RecordPerCpu { table: to_msgpack(&TableRow { blocks: None, ..table_row(record)? }), blocks })
}

/// A vocabulary that leaves a format-3 table's stacks as its process vocabulary names them:
/// enough to decode blocks, which never look at stacks.
struct AsNamed;

impl Vocabulary for AsNamed {
    fn pid_of(&self, thread: u32) -> Option<u32> {
        Some(thread)
    }
    fn stack_named(&self, _: u32, local: u32) -> Option<u32> {
        Some(local)
    }
}

/// Where one CPU's block lies in a batch record's payloads, with what its decoder needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockAt {
    pub cpu: u32,
    n: u32,
    unit: u64,
    index: u8,
    bytes: std::ops::Range<usize>,
}

/// The blocks of a batch record, by CPU (ascending), and where their payloads lie in the
/// record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockDir {
    pub blocks: Vec<BlockAt>,
    payloads: std::ops::Range<usize>,
    /// The codes the blocks share (`None`: a record written before they did).
    shared: Option<SharedCodes>,
}

impl BlockDir {
    pub fn cpus(&self) -> impl Iterator<Item = u32> + '_ {
        self.blocks.iter().map(|b| b.cpu)
    }

    pub fn get(&self, cpu: u32) -> Option<&BlockAt> {
        self.blocks.binary_search_by_key(&cpu, |b| b.cpu).ok().map(|i| &self.blocks[i])
    }

    /// Decodes the block `at` of `record` (the one this directory was read from) against its
    /// batch's table, as [`decode_block`] does a `b` record.
    pub fn decode(
        &self,
        record: &[u8],
        at: &BlockAt,
        batch_start: u64,
        table: &Table,
        with_times: bool,
    ) -> Result<Block, String> {
        let payload = record
            .get(self.payloads.clone())
            .and_then(|p| p.get(at.bytes.clone()))
            .ok_or("block payload outside the record")?;
        decode_payload(
            payload,
            at.n as usize,
            at.unit,
            at.index,
            self.shared.as_ref(),
            batch_start,
            table,
            at.cpu,
            with_times,
        )
    }
}

/// The blocks of a batch record: `None` for a record without blocks (a rollup, or a batch
/// written before, whose blocks are `b` records).
pub fn decode_block_dir(record: &[u8]) -> Result<Option<BlockDir>, String> {
    let Some(row) = table_row(record)?.blocks else { return Ok(None) };
    // The payloads are borrowed from the record: find where.
    let Cow::Borrowed(payloads) = row.bits.0 else { return Err("block payloads not in the record".into()) };
    let offset = (payloads.as_ptr() as usize).wrapping_sub(record.as_ptr() as usize);
    let payloads_at = offset..offset + payloads.len();
    if record.get(payloads_at.clone()).is_none_or(|p| p.as_ptr() != payloads.as_ptr()) {
        return Err("block payloads not in the record".into());
    }
    // Every payload takes a byte at least (two flag bits and a sample), which bounds what a
    // hostile count makes the reader allocate.
    let count = row.count as usize;
    if count > payloads.len() {
        return Err(format!("{count} blocks in {} bytes of payloads", payloads.len()));
    }
    let shared = row.shared.map(|b| SharedCodes::decode(&b.0)).transpose().map_err(|e| format!("shared codes: {e}"))?;
    let fewest = shared.as_ref().map_or(0, |s| s.fewest);
    let mut r = BitReader::new(&row.dir.0);
    let mut col = || read_column(&mut r, count);
    let (cpu_gaps, ns, indexes, units, lens) = (col()?, col()?, col()?, col()?, col()?);
    let (mut out, mut cpu, mut at) = (Vec::with_capacity(count), None::<u64>, 0usize);
    for (i, &gap) in cpu_gaps.iter().enumerate() {
        let c = ungap_strict(cpu, gap).ok_or("block cpu overflows")?;
        cpu = Some(c);
        let n = ns[i].checked_add(fewest).and_then(|n| n.checked_add(1));
        let n = n.filter(|&n| n <= bits::MAX_COLUMN as u64).ok_or("block too long")?;
        let index = u8::try_from(indexes[i]).map_err(|_| format!("index coding {}", indexes[i]))?;
        let unit =
            *row.units.get(units[i] as usize).ok_or_else(|| format!("unit {} of {}", units[i], row.units.len()))?;
        let end = usize::try_from(lens[i]).ok().and_then(|len| at.checked_add(len)).filter(|&e| e <= payloads.len());
        let end = end.ok_or_else(|| format!("block payloads run past the record's {} bytes", payloads.len()))?;
        let cpu = u32::try_from(c).map_err(|_| format!("block cpu {c} out of range"))?;
        out.push(BlockAt { cpu, n: n as u32, unit, index, bytes: at..end });
        at = end;
    }
    if at != payloads.len() {
        return Err(format!("block payloads take {at} of the record's {} bytes", payloads.len()));
    }
    Ok(Some(BlockDir { blocks: out, payloads: payloads_at, shared }))
}

fn table_row(bytes: &[u8]) -> Result<TableRow<'_>, String> {
    let row: TableRow = from_msgpack(bytes)?;
    if row.format != TABLE_FORMAT_IDS && row.format != TABLE_FORMAT_VOCAB {
        return Err(format!("unknown table format {}", row.format));
    }
    Ok(row)
}

/// The thread id of every group of a table (with repeats), decoding only the columns that
/// come before the stacks and counts: what `pids()` needs from a batch wholly in range.
pub fn table_threads(bytes: &[u8]) -> Result<Vec<u32>, String> {
    let row = table_row(bytes)?;
    let (ne, ng, np) = (row.entries as usize, row.groups as usize, row.parts as usize);
    if np > ng || ng > ne {
        return Err(format!("{np} partitions, {ng} groups for {ne} entries"));
    }
    let mut r = BitReader::new(&row.bits.0);
    let _part_cpu = read_column(&mut r, np)?;
    let part_len = read_column(&mut r, np)?;
    let first_thread = read_column(&mut r, np)?;
    let thread_gap = read_column(&mut r, ng - np)?;
    let _idle = read_column(&mut r, ng)?;
    let group_len = read_column(&mut r, ng)?;
    let mut out = Vec::with_capacity(ng);
    let (mut g, mut gaps) = (0usize, thread_gap.into_iter());
    for p in 0..np {
        let want = part_len[p].saturating_add(1);
        let mut have = 0u64;
        let mut thread = first_thread[p];
        while have < want {
            if g >= ng {
                return Err("partitions need more groups than the table has".into());
            }
            if have > 0 {
                thread = thread.saturating_add(gaps.next().ok_or("thread gaps run out")?);
            }
            out.push(u32::try_from(thread).map_err(|_| format!("thread id {thread} out of range"))?);
            have = have.saturating_add(group_len[g].saturating_add(1));
            g += 1;
        }
    }
    Ok(out)
}

/// Decodes a table of either format; a format-3 table's stacks are resolved through `vocab`,
/// and a thread or vocabulary entry it does not know is an error.
pub fn decode_table(bytes: &[u8], vocab: &dyn Vocabulary) -> Result<Table, String> {
    let row = table_row(bytes)?;
    let by_vocab = row.format == TABLE_FORMAT_VOCAB;
    let (ne, ng, np) = (row.entries as usize, row.groups as usize, row.parts as usize);
    if np > ng || ng > ne || (ne > 0 && np == 0) {
        return Err(format!("{np} partitions, {ng} groups for {ne} entries"));
    }
    let mut r = BitReader::new(&row.bits.0);
    let part_cpu = read_column(&mut r, np)?;
    let part_len = read_column(&mut r, np)?;
    let first_thread = read_column(&mut r, np)?;
    let thread_gap = read_column(&mut r, ng - np)?;
    let idle = read_column(&mut r, ng)?;
    let group_len = read_column(&mut r, ng)?;
    let first_stack = read_column(&mut r, ng)?;
    let stack_gap = read_column(&mut r, ne - ng)?;
    let counts = read_column(&mut r, ne)?;
    let small = |v: u64, what: &str| u32::try_from(v).map_err(|_| format!("{what} {v} out of range"));
    let mut entries = Vec::with_capacity(ne);
    let mut parts = Vec::with_capacity(np);
    let (mut g, mut tg, mut sg) = (0usize, thread_gap.into_iter(), stack_gap.into_iter());
    let mut cpu: Option<u64> = None;
    // The vocabulary's pid of the previous group's thread: consecutive groups share it often.
    let mut pid_of: Option<(u32, u32)> = None;
    for p in 0..np {
        let c = ungap_strict(cpu, part_cpu[p]).ok_or("cpu overflows")?;
        cpu = Some(c);
        let len = part_len[p].checked_add(1).ok_or("partition length overflows")?;
        let start = entries.len();
        let mut thread = first_thread[p];
        let mut first = true;
        let mut prev = (0u32, false);
        while ((entries.len() - start) as u64) < len {
            if g >= ng {
                return Err("partitions need more groups than the table has".into());
            }
            if !first {
                // A gap of 0 is another idle flag of the same thread, checked below.
                thread = thread.checked_add(tg.next().ok_or("thread gaps run out")?).ok_or("thread id overflows")?;
            }
            if idle[g] > 1 {
                return Err(format!("idle flag {}", idle[g]));
            }
            // Groups are sorted by (thread, idle) and distinct: a thread's second group is its
            // idle one. A group's stacks rise strictly by construction.
            if !first && thread == u64::from(prev.0) && (prev.1 || idle[g] == 0) {
                return Err(format!("partition {p} is not sorted and distinct"));
            }
            first = false;
            let n_in_group = group_len[g].checked_add(1).ok_or("group length overflows")?;
            if n_in_group > (ne - entries.len()) as u64 {
                return Err("groups hold more entries than the table".into());
            }
            let thread = small(thread, "thread id")?;
            let is_idle = idle[g] == 1;
            prev = (thread, is_idle);
            let pid = match pid_of {
                _ if !by_vocab => 0,
                Some((t, pid)) if t == thread => pid,
                _ => {
                    let pid =
                        vocab.pid_of(thread).ok_or_else(|| format!("thread {thread} is not in the dictionary"))?;
                    pid_of = Some((thread, pid));
                    pid
                }
            };
            let stack_of = |named: u64| -> Result<u32, String> {
                let named = small(named, "stack")?;
                if !by_vocab {
                    return Ok(named);
                }
                vocab
                    .stack_named(pid, named)
                    .ok_or_else(|| format!("process {pid} has no stack {named} in its vocabulary"))
            };
            let mut named = first_stack[g];
            entries.push(Entry { thread, idle: is_idle, stack: stack_of(named)? });
            for _ in 1..n_in_group {
                let gap = sg.next().ok_or("stack gaps run out")?;
                named = named.saturating_add(gap).saturating_add(1);
                entries.push(Entry { thread, idle: is_idle, stack: stack_of(named)? });
            }
            g += 1;
        }
        if (entries.len() - start) as u64 != len {
            return Err(format!("partition {p} holds {} entries, header says {len}", entries.len() - start));
        }
        // Sorted and distinct by (thread, idle, stack as named), as checked above; a format-3
        // table's entries stay distinct once resolved, since a vocabulary names each stack of
        // its process once (the dictionary refuses a second name).
        parts.push(Part { cpu: small(c, "cpu")?, start: start as u32, len: len as u32 });
    }
    if entries.len() != ne || g != ng || tg.next().is_some() || sg.next().is_some() {
        return Err(format!("table holds {} entries in {g} groups, header says {ne} in {ng}", entries.len()));
    }
    Ok(Table { entries, counts: counts.into_iter().map(|c| c.saturating_add(1)).collect(), parts })
}

// ---------------------------------------------------------------------------------------------
// Per-CPU block

#[derive(Serialize, Deserialize)]
struct BlockRow<'a> {
    /// Samples in the block.
    n: u32,
    #[serde(borrow)]
    bits: Blob<'a>,
    /// Every time is `batch_start + unit · v`: the bits hold the `v`. Absent (1) in blocks
    /// written before the store kept times to the microsecond; always written now, as a field
    /// follows it.
    #[serde(default = "one")]
    unit: u64,
    /// How the bits name each sample's entry: [`INDEX_LIST`] (absent: blocks written before
    /// first uses were coded apart), [`INDEX_FIRST_USE`] or [`INDEX_GROUPED`].
    #[serde(default, skip_serializing_if = "is_list")]
    index: u8,
}

/// Each sample's entry as one column: its place in the local list (own partition ++ imports)
/// or, when the block's first bit says so, its move-to-front position.
const INDEX_LIST: u8 = 0;
/// First uses apart. Every entry of the local list is used by the block, so each is used a
/// first time: a flag per sample after the first says whether it is a first use; a first use
/// is written as its rank among the entries not used yet (in ⌈log2 unused⌉ bits: the order
/// of first uses is all it carries), any other sample as its move-to-front position among the
/// entries used so far. Measured on the benchmark's day: 5.45 bits a sample against 6.14 for
/// the move-to-front column.
const INDEX_FIRST_USE: u8 = 1;

/// First uses apart, told by the table. As [`INDEX_FIRST_USE`], with two things the table
/// says: an entry is used at most its count times, so once this block has used it that often
/// it leaves the move-to-front list (later positions shrink); and a first use is written as a
/// bit "of the previous sample's `(thread, idle)` group or not" (only where both are
/// possible), then its rank among the entries not used yet of that side. A CPU that keeps its
/// thread takes the new stack from the few entries of that thread; one that switches rarely
/// picks its own thread's. Measured on the benchmark's day (101 batches): repeats 1.39 → 1.14
/// bits a sample, ranks 2.97 → 2.40 with the group bits.
const INDEX_GROUPED: u8 = 2;

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

/// One CPU's block as [`encode_batch_record`] takes it: its columns, not yet written (the
/// record chooses the codes its blocks share first), and what its directory entry holds.
#[derive(Clone, Debug)]
pub struct BlockPayload {
    pub cpu: u32,
    n: u32,
    unit: u64,
    index: u8,
    columns: Columns,
}

/// A block's values as its payload writes them, in order.
#[derive(Clone, Debug)]
struct Columns {
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
    codes: [Option<bits::SharedCode>; KINDS],
    period_ns: u64,
    /// The fewest samples a block has, less one: the directory's samples column counts from
    /// it (most blocks of a busy host have the same number, so the column is all zeros).
    fewest: u64,
}

impl SharedCodes {
    /// The codes that make `blocks` shortest (each column taking its kind's code or its own,
    /// whichever is shorter), and the period most of them have.
    fn choose(blocks: &[BlockPayload]) -> SharedCodes {
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

    fn encode(&self) -> Vec<u8> {
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

    fn decode(bytes: &[u8]) -> Result<SharedCodes, String> {
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
fn payload_as(
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
fn write_payload(c: &Columns, unit: u64, shared: Option<&SharedCodes>) -> Vec<u8> {
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
fn decode_payload(
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

// ---------------------------------------------------------------------------------------------
// Hour rollup (`H` record)

/// What an hour rollup sums: the batches whose start lies in its hour (see `rollup`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RollupRow {
    /// Batches summed, those without samples included (their lost counts are in `lost`).
    pub batches: u64,
    /// The earliest start and the latest end of those batches.
    pub first: u64,
    pub end: u64,
    pub samples: u64,
    pub lost: u64,
}

#[derive(Serialize, Deserialize)]
struct RollupRecord<'a> {
    batches: u64,
    first: u64,
    end: u64,
    samples: u64,
    lost: u64,
    /// An encoded [`Table`] with one partition (CPU 0): the hour's entries and their counts.
    #[serde(borrow)]
    table: Blob<'a>,
}

/// A table of distinct entries with their counts as one partition: the shape of a rollup's
/// table. `entries` must be sorted and distinct.
pub fn single_partition(entries: Vec<Entry>, counts: Vec<u64>) -> Table {
    let parts = if entries.is_empty() { vec![] } else { vec![Part { cpu: 0, start: 0, len: entries.len() as u32 }] };
    Table { entries, counts, parts }
}

/// A rollup's record: its table in format 3 when `locals` names each entry's stack in its
/// process's vocabulary (as [`encode_table`]: entries ordered by thread, idle, then name), in
/// format 2 otherwise (a store whose batches were written before vocabularies).
///
/// *Why names:* an hour's rollup holds nearly a process's whole vocabulary in each of its
/// `(thread, idle)` groups, so names are dense small numbers where dictionary ids are
/// scattered among the store's thousands of stacks. Measured on the samples benchmark's day:
/// the stacks' columns 0.205 → 0.026 bits a sample of the day.
pub fn encode_rollup(row: &RollupRow, table: &Table, locals: Option<&[u32]>) -> Vec<u8> {
    to_msgpack(&RollupRecord {
        batches: row.batches,
        first: row.first,
        end: row.end,
        samples: row.samples,
        lost: row.lost,
        table: Blob(Cow::Owned(encode_table(table, locals))),
    })
}

fn rollup_header(r: &RollupRecord) -> Result<RollupRow, String> {
    if r.batches == 0 || r.first > r.end {
        return Err(format!("{} batches from {} to {}", r.batches, r.first, r.end));
    }
    Ok(RollupRow { batches: r.batches, first: r.first, end: r.end, samples: r.samples, lost: r.lost })
}

/// The rollup's header alone (its table stays undecoded): what a query needs to decide
/// whether the rollup serves its range.
pub fn decode_rollup_row(bytes: &[u8]) -> Result<RollupRow, String> {
    rollup_header(&from_msgpack::<RollupRecord>(bytes)?)
}

/// The rollup's header and table (a format-3 table's stacks resolved through `vocab`); the
/// table must be one partition whose counts add up to the header's samples.
pub fn decode_rollup(bytes: &[u8], vocab: &dyn Vocabulary) -> Result<(RollupRow, Table), String> {
    let r: RollupRecord = from_msgpack(bytes)?;
    let row = rollup_header(&r)?;
    let table = decode_table(&r.table.0, vocab)?;
    if table.parts.len() > 1 {
        return Err(format!("a rollup table in {} partitions", table.parts.len()));
    }
    let sum = table.counts.iter().try_fold(0u64, |a, &c| a.checked_add(c));
    if sum != Some(row.samples) {
        return Err(format!("table counts add up to {sum:?}, header says {} samples", row.samples));
    }
    Ok((row, table))
}

// ---------------------------------------------------------------------------------------------
// Batch metadata (`B` record)

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BatchRow {
    pub end: u64,
    pub samples: u64,
    pub lost: u64,
    pub cpus: Vec<u32>,
    pub stored_bytes: u64,
}

/// A `B` record as written: the CPUs as ascending runs `(first, count)` in `cpu_runs`, with
/// `cpus` left empty; batches written before list every CPU in `cpus` and have no runs.
/// Measured on the benchmark's day: 96 CPUs listed took ~99 of a record's ~120 bytes (0.08
/// bits a sample); as one run they take 4.
#[derive(Serialize, Deserialize)]
struct BatchRecord {
    end: u64,
    samples: u64,
    lost: u64,
    cpus: Vec<u32>,
    stored_bytes: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    cpu_runs: Vec<(u32, u32)>,
}

/// Writes the CPUs as runs when the runs say them (ascending, no more than the samples: what
/// a batch written by the store has), as the plain list otherwise, so that whatever
/// [`decode_batch`] accepted writes back to the same row.
pub fn encode_batch(row: &BatchRow) -> Vec<u8> {
    let mut cpu_runs: Vec<(u32, u32)> = Vec::new();
    for &cpu in &row.cpus {
        match cpu_runs.last_mut() {
            Some((first, count)) if first.checked_add(*count) == Some(cpu) => *count += 1,
            _ => cpu_runs.push((cpu, 1)),
        }
    }
    let ascending = row.cpus.windows(2).all(|w| w[0] < w[1]);
    let fits = row.cpus.len() as u64 <= row.samples.min(super::MAX_BATCH_SAMPLES as u64);
    if !(ascending && fits) {
        cpu_runs.clear();
    }
    let cpus = if cpu_runs.is_empty() { row.cpus.clone() } else { Vec::new() };
    to_msgpack(&BatchRecord {
        end: row.end,
        samples: row.samples,
        lost: row.lost,
        cpus,
        stored_bytes: row.stored_bytes,
        cpu_runs,
    })
}

/// Decodes a `B` record of either form. Runs must ascend, and list no more
/// CPUs than the batch has samples (each listed CPU has a block of one at least): a hostile
/// count cannot make the reader allocate beyond what a batch may hold.
pub fn decode_batch(bytes: &[u8]) -> Result<BatchRow, String> {
    let r: BatchRecord = from_msgpack(bytes)?;
    let mut cpus = r.cpus;
    if !r.cpu_runs.is_empty() {
        if !cpus.is_empty() {
            return Err("batch lists its CPUs twice, as a list and as runs".into());
        }
        let total = r.cpu_runs.iter().try_fold(0u64, |acc, &(_, count)| acc.checked_add(u64::from(count)));
        let limit = r.samples.min(super::MAX_BATCH_SAMPLES as u64);
        match total {
            Some(total) if total <= limit => cpus.reserve_exact(total as usize),
            _ => return Err(format!("batch's CPU runs list more CPUs than its {} samples", r.samples)),
        }
        for (first, count) in r.cpu_runs {
            let last = count.checked_sub(1).and_then(|more| first.checked_add(more));
            let ascends = cpus.last().is_none_or(|&prev| first > prev);
            let Some(last) = last.filter(|_| count > 0 && ascends) else {
                return Err(format!(
                    "batch's CPU run ({first}, {count}) is empty, overflows or does not follow the one before"
                ));
            };
            cpus.extend(first..=last);
        }
    }
    Ok(BatchRow { end: r.end, samples: r.samples, lost: r.lost, cpus, stored_bytes: r.stored_bytes })
}

// ---------------------------------------------------------------------------------------------
// Dictionary records (`d` records)

#[derive(Serialize)]
struct FrameRow<'a>(&'a str, &'a str, bool);
#[derive(Serialize)]
struct LocatedFrameRow<'a>(&'a str, &'a str, bool, &'a ObjectAddress);

/// A frame is `[function, module, kernel]`, or `[function, module, kernel, [build_id,
/// address]]` when it carries its location in a file (frames stored before locations existed
/// are the former, and still read). A build ID longer than [`ObjectAddress::MAX_BUILD_ID`] is
/// refused by its decoder.
pub fn encode_frame(f: &Frame) -> Vec<u8> {
    match &f.location {
        None => to_msgpack(&FrameRow(&f.function, &f.module, f.kernel)),
        Some(l) => to_msgpack(&LocatedFrameRow(&f.function, &f.module, f.kernel, l)),
    }
}

pub fn decode_frame(bytes: &[u8]) -> Result<Frame, String> {
    // The array's length says which form it is.
    match bytes.first() {
        Some(0x93) => {
            let (function, module, kernel): (String, String, bool) = from_msgpack(bytes)?;
            Ok(Frame { function: function.into(), module: module.into(), kernel, location: None })
        }
        Some(0x94) => {
            let (function, module, kernel, location): (String, String, bool, ObjectAddress) = from_msgpack(bytes)?;
            Ok(Frame { function: function.into(), module: module.into(), kernel, location: Some(location) })
        }
        _ => Err("a frame is an array of 3 or 4 fields".into()),
    }
}

pub fn encode_comm(c: &str) -> Vec<u8> {
    to_msgpack(&c)
}

pub fn decode_comm(bytes: &[u8]) -> Result<String, String> {
    from_msgpack(bytes)
}

/// A thread as the dictionary stores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ThreadRec {
    pub pid: u32,
    pub tid: u32,
    /// Comm dictionary id.
    pub comm: u32,
    pub cgroup: u64,
}

pub fn encode_thread(t: &ThreadRec) -> Vec<u8> {
    to_msgpack(t)
}

pub fn decode_thread(bytes: &[u8]) -> Result<ThreadRec, String> {
    from_msgpack(bytes)
}

/// One decoded `d` record: the kind and id from its key, the entry from its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DictRecord {
    Frame(u32, Frame),
    Comm(u32, String),
    Stack(u32, Vec<u32>),
    Thread(u32, ThreadRec),
    /// `(pid, local, stack)`: the `local`-th stack of the process's vocabulary.
    Vocab(u32, u32, u32),
}

/// Decodes a dictionary record, key and value: what loading the dictionary cache and
/// `verify` read.
pub fn decode_dict_record(key: &[u8], value: &[u8]) -> Result<DictRecord, String> {
    if let Some((pid, local)) = crate::keys::parse_vocab_key(key) {
        return from_msgpack::<u32>(value)
            .map(|stack| DictRecord::Vocab(pid, local, stack))
            .map_err(|d| format!("vocabulary entry {pid}/{local}: {d}"));
    }
    let (kind, id) = crate::keys::parse_dict_key(key).ok_or_else(|| format!("dictionary key {key:?}"))?;
    let what = |d: String| format!("dictionary entry {}/{id}: {d}", kind.escape_ascii());
    match kind {
        crate::keys::DICT_FRAME => decode_frame(value).map(|f| DictRecord::Frame(id, f)),
        crate::keys::DICT_COMM => decode_comm(value).map(|c| DictRecord::Comm(id, c)),
        crate::keys::DICT_STACK => decode_stack(value).map(|s| DictRecord::Stack(id, s)),
        crate::keys::DICT_THREAD => decode_thread(value).map(|t| DictRecord::Thread(id, t)),
        _ => Err("unknown kind".into()),
    }
    .map_err(what)
}

/// A vocabulary entry's value: the stack id.
pub fn encode_vocab(stack: u32) -> Vec<u8> {
    to_msgpack(&stack)
}

pub fn encode_stack(frames: &[u32]) -> Vec<u8> {
    to_msgpack(&frames)
}

pub fn decode_stack(bytes: &[u8]) -> Result<Vec<u32>, String> {
    from_msgpack(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(x: &mut u64) -> u64 {
        *x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        *x >> 33
    }

    /// Calls `f` on `rounds` copies of `bytes`, each with one bit flipped (decoders must not
    /// panic on them).
    fn with_one_bit_flipped(bytes: &[u8], seed: u64, rounds: usize, mut f: impl FnMut(&[u8])) {
        let mut x = seed;
        for _ in 0..rounds {
            let mut b = bytes.to_vec();
            let i = (lcg(&mut x) as usize) % b.len();
            b[i] ^= 1 << (lcg(&mut x) % 8);
            f(&b);
        }
    }

    /// A table of `n` entries in partitions for CPUs 0, 1 and 5.
    fn table(n: u32) -> Table {
        let entries: Vec<Entry> = (0..n).map(|i| Entry { thread: i, idle: false, stack: 0 }).collect();
        let a = n / 3;
        let b = n / 3;
        let mut parts = vec![Part { cpu: 0, start: 0, len: a }, Part { cpu: 1, start: a, len: b }];
        parts.push(Part { cpu: 5, start: a + b, len: n - a - b });
        parts.retain(|p| p.len > 0);
        Table { counts: vec![1; n as usize], entries, parts }
    }

    /// `t` with each entry counted as often as `entries` uses it (once if not at all) plus
    /// `more`: the table of a batch of this block alone (`more` = 0), or of one whose other
    /// CPUs use the same entries.
    fn counted(t: &Table, entries: &[u32], more: u64) -> Table {
        let mut counts = vec![0; t.entries.len()];
        for &e in entries {
            counts[e as usize] += 1;
        }
        Table { counts: counts.into_iter().map(|c: u64| c.max(1) + more).collect(), ..t.clone() }
    }

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

    /// 100 samples of one CPU at 10 Hz with up to 5 µs of timer latency (nanosecond times),
    /// and their entries, all from CPU 1's partition of a 120-entry `table`.
    fn periodic_block(base: u64, x: &mut u64) -> (Vec<u64>, Vec<u32>) {
        let times = (0..100u64).map(|i| base + 5_000 + i * 100_000_000 + lcg(x) % 5_000).collect();
        let entries = (0..100).map(|_| 40 + (lcg(x) % 40) as u32).collect();
        (times, entries)
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

    #[test]
    fn table_roundtrip() {
        let mut x = 11;
        let mut parts = Vec::new();
        let mut entries = Vec::new();
        for cpu in [0u32, 2, 3, 200, u32::MAX] {
            let mut es: Vec<Entry> = (0..1 + lcg(&mut x) % 700)
                .map(|_| Entry {
                    thread: (lcg(&mut x) % 300) as u32 * 3,
                    idle: lcg(&mut x).is_multiple_of(10),
                    stack: (lcg(&mut x) % 5000) as u32,
                })
                .collect();
            if cpu == u32::MAX {
                es.push(Entry { thread: u32::MAX, idle: true, stack: u32::MAX });
                es.push(Entry { thread: 0, idle: false, stack: 0 });
            }
            es.sort_unstable();
            es.dedup();
            parts.push(Part { cpu, start: entries.len() as u32, len: es.len() as u32 });
            entries.extend(es);
        }
        let counts: Vec<u64> = entries.iter().map(|_| 1 + lcg(&mut x) % 5).collect();
        let t = Table { entries, counts, parts };
        let bytes = encode_table(&t, None);
        assert_eq!(decode_table(&bytes, &NoVocabulary).unwrap(), t);
        let mut threads = table_threads(&bytes).unwrap();
        threads.dedup();
        let mut want: Vec<u32> = t.entries.iter().map(|e| e.thread).collect();
        want.dedup();
        assert_eq!(threads, want);
        let empty = Table::default();
        assert_eq!(decode_table(&encode_table(&empty, None), &NoVocabulary).unwrap(), empty);
        for cut in 0..bytes.len().min(300) {
            let _ = decode_table(&bytes[..cut], &NoVocabulary);
        }
        with_one_bit_flipped(&bytes, 5, 500, |b| drop(decode_table(b, &NoVocabulary)));
    }

    /// Processes are `thread % 7`; each has its stacks in a list.
    struct TestVocabulary(Vec<Vec<u32>>);

    impl Vocabulary for TestVocabulary {
        fn pid_of(&self, thread: u32) -> Option<u32> {
            Some(thread % 7)
        }
        fn stack_named(&self, pid: u32, local: u32) -> Option<u32> {
            self.0.get(pid as usize)?.get(local as usize).copied()
        }
    }

    /// `(cpu, times, entries)`.
    type CpuSamples = (u32, Vec<u64>, Vec<u32>);

    /// A batch of four CPUs (CPU 3 without a partition of its own) as its record with the
    /// blocks in it: the table, each block `(cpu, times, entries)`, the record.
    fn batch_of_four(x: &mut u64) -> (Table, Vec<CpuSamples>, Vec<u8>) {
        let base = 1_700_000_000_000_000_000u64;
        let t = table(120); // partitions of CPUs 0, 1 and 5
        let mut blocks = Vec::new();
        for cpu in [0u32, 1, 3, 5] {
            let (times, _) = periodic_block(base, x);
            let mut entries: Vec<u32> = t.own_range(cpu).map(|e| e as u32).collect();
            while entries.len() < times.len() {
                entries.push((lcg(x) % 120) as u32);
            }
            blocks.push((cpu, times, entries));
        }
        let all: Vec<u32> = blocks.iter().flat_map(|b| b.2.iter().copied()).collect();
        let t = counted(&t, &all, 0);
        let payloads: Vec<BlockPayload> =
            blocks.iter().map(|(cpu, times, entries)| encode_block_payload(base, times, entries, &t, *cpu)).collect();
        let record = encode_batch_record(&t, &vec![0; t.entries.len()], &payloads);
        (t, blocks, record)
    }

    #[test]
    fn batch_record_holds_its_blocks() {
        let mut x = 41;
        let base = 1_700_000_000_000_000_000u64;
        let (t, blocks, record) = batch_of_four(&mut x);
        let vocab = TestVocabulary(vec![vec![0]; 7]);
        assert_eq!(decode_table(&record, &vocab).unwrap(), t);
        assert_eq!(table_threads(&record).unwrap().len(), 120);
        let dir = decode_block_dir(&record).unwrap().unwrap();
        assert_eq!(dir.cpus().collect::<Vec<_>>(), [0, 1, 3, 5]);
        assert!(dir.get(2).is_none());
        for (cpu, times, entries) in &blocks {
            let b = dir.decode(&record, dir.get(*cpu).unwrap(), base, &t, true).unwrap();
            assert_eq!((&b.times, &b.entries), (times, entries), "cpu {cpu}");
        }
        // A table alone (a rollup's, or a batch's written before) has no directory.
        assert_eq!(decode_block_dir(&encode_table(&t, Some(&vec![0; 120]))).unwrap(), None);
        // Split as written before: the same table, and `b` values that decode to the blocks.
        let RecordPerCpu { table: alone, blocks: old } = split_batch_record(&record).unwrap();
        assert_eq!(decode_table(&alone, &vocab).unwrap(), t);
        assert_eq!(decode_block_dir(&alone).unwrap(), None);
        assert_eq!(old.len(), 4);
        for ((cpu, bytes), (want_cpu, times, entries)) in old.iter().zip(&blocks) {
            assert_eq!(cpu, want_cpu);
            let b = decode_block(bytes, base, &t, *cpu, true).unwrap();
            assert_eq!((&b.times, &b.entries), (times, entries));
        }
        // One record takes ~20 bytes a block less than a table and four `b` records.
        let apart = alone.len() + old.iter().map(|(_, v)| v.len() + 21).sum::<usize>();
        assert!(record.len() + 4 * 20 < apart, "{} bytes against {apart}", record.len());
    }

    /// A batch record as written before its blocks shared codes: the same directory without
    /// the offset of the fewest samples, each payload standing alone, no `shared`.
    fn record_before_shared_codes(t: &Table, blocks: &[BlockPayload]) -> Vec<u8> {
        batch_record(t, &vec![0; t.entries.len()], blocks, None)
    }

    /// Blocks of every shape in one record, in each index coding: they decode alike from the
    /// record (times or entries alone), from a record written before blocks shared codes, and
    /// from the `b` records a split writes again on their own. The shapes: the batch's period
    /// (first sample in the first period and three periods late), another period, times
    /// that are no grid, one sample, a unit of 1 ns beside blocks in µs.
    #[test]
    fn blocks_sharing_codes_roundtrip_every_shape() {
        let mut x = 71;
        let base = 1_700_000_000_000_000_000u64;
        let t0 = table(120);
        let mut shapes: Vec<(u32, Vec<u64>)> = Vec::new();
        for cpu in 0..3 {
            shapes.push((cpu, periodic_block(base, &mut x).0.iter().map(|t| t - t % 1000).collect()));
        }
        shapes.push((3, (0..40u64).map(|i| base + 350_000_000 + i * 100_000_000 + (lcg(&mut x) % 9) * 1000).collect()));
        shapes.push((4, (0..60u64).map(|i| base + 7_000 + i * 99_000_000 + (lcg(&mut x) % 9) * 1000).collect()));
        let mut random: Vec<u64> = (0..50).map(|_| base + (lcg(&mut x) % 9_000_000) * 1000).collect();
        random.sort_unstable();
        shapes.push((5, random));
        shapes.push((6, vec![base + 42_000]));
        shapes.push((7, (0..100u64).map(|i| base + 3 + i * 100_000_000 + lcg(&mut x) % 5_000).collect()));
        let blocks: Vec<CpuSamples> = shapes
            .into_iter()
            .map(|(cpu, times)| {
                let own: Vec<u32> = t0.own_range(cpu).map(|e| e as u32).collect();
                let entries = (0..times.len())
                    .map(|i| if own.is_empty() || i % 4 == 3 { (lcg(&mut x) % 120) as u32 } else { own[i % own.len()] })
                    .collect();
                (cpu, times, entries)
            })
            .collect();
        let all: Vec<u32> = blocks.iter().flat_map(|b| b.2.iter().copied()).collect();
        let t = counted(&t0, &all, 1);
        for force in [Some(INDEX_LIST), Some(INDEX_FIRST_USE), Some(INDEX_GROUPED), None] {
            let payloads: Vec<BlockPayload> =
                blocks.iter().map(|(cpu, times, entries)| payload_as(base, times, entries, &t, *cpu, force)).collect();
            let record = encode_batch_record(&t, &vec![0; t.entries.len()], &payloads);
            let before = record_before_shared_codes(&t, &payloads);
            let dir = decode_block_dir(&record).unwrap().unwrap();
            let shared = dir.shared.clone().unwrap();
            assert_eq!(shared.period_ns, 100_000_000, "the period most blocks have");
            assert_eq!(shared.fewest, 0);
            let old_dir = decode_block_dir(&before).unwrap().unwrap();
            assert_eq!(old_dir.shared, None);
            let split = split_batch_record(&record).unwrap();
            for (i, (cpu, times, entries)) in blocks.iter().enumerate() {
                for (dir, record) in [(&dir, &record), (&old_dir, &before)] {
                    let b = dir.decode(record, dir.get(*cpu).unwrap(), base, &t, true).unwrap();
                    assert_eq!((&b.times, &b.entries), (times, entries), "cpu {cpu}, coding {force:?}");
                    let e = dir.decode(record, dir.get(*cpu).unwrap(), base, &t, false).unwrap();
                    assert_eq!(&e.entries, entries);
                }
                assert_eq!(split.blocks[i].0, *cpu);
                let b = decode_block(&split.blocks[i].1, base, &t, *cpu, true).unwrap();
                assert_eq!((&b.times, &b.entries), (times, entries), "split cpu {cpu}, coding {force:?}");
            }
        }
    }

    /// What sharing saves: 48 busy CPUs' blocks alike (each column's header and the period
    /// written once for the batch instead of in every block) take at least 5 bytes a block
    /// less than written before.
    #[test]
    fn alike_blocks_take_less_sharing_codes() {
        let mut x = 73;
        let base = 1_700_000_000_000_000_000u64;
        let t0 = table(120);
        let blocks: Vec<CpuSamples> = (0..48u32)
            .map(|cpu| {
                let (times, entries) = periodic_block(base, &mut x);
                (cpu, times.iter().map(|t| t - t % 1000).collect(), entries)
            })
            .collect();
        let all: Vec<u32> = blocks.iter().flat_map(|b| b.2.iter().copied()).collect();
        let t = counted(&t0, &all, 0);
        let payloads: Vec<BlockPayload> =
            blocks.iter().map(|(cpu, times, entries)| encode_block_payload(base, times, entries, &t, *cpu)).collect();
        let record = encode_batch_record(&t, &vec![0; t.entries.len()], &payloads);
        let before = record_before_shared_codes(&t, &payloads);
        assert!(record.len() + 48 * 5 <= before.len(), "{} bytes sharing codes against {}", record.len(), before.len());
        let dir = decode_block_dir(&record).unwrap().unwrap();
        for (cpu, times, entries) in &blocks {
            let b = dir.decode(&record, dir.get(*cpu).unwrap(), base, &t, true).unwrap();
            assert_eq!((&b.times, &b.entries), (times, entries));
        }
    }

    /// Shared codes from hostile bits: a truncated or garbled blob is an error naming the
    /// shared codes, and a batch period that is no whole number of a block's unit is refused
    /// rather than rounded.
    #[test]
    fn shared_codes_that_do_not_fit_are_errors() {
        let codes = SharedCodes { period_ns: 100_000_000, fewest: 3, ..SharedCodes::default() };
        let bytes = codes.encode();
        assert_eq!(SharedCodes::decode(&bytes).unwrap(), codes);
        assert!(SharedCodes::decode(&[]).is_err());
        assert!(SharedCodes::decode(&bytes[..1]).is_err());
        // Ones everywhere: a Rice code of parameter 127.
        assert!(SharedCodes::decode(&[0xff; 16]).unwrap_err().contains("127 > 63"));
        // A code in sparse mode: only dense codes are shared.
        let mut w = BitWriter::new();
        w.put(1, 1);
        w.put(2, 2);
        w.put(0, 7);
        assert!(SharedCodes::decode(&w.finish()).unwrap_err().contains("only dense codes"));
        // A block in µs written against a 100 ms period, read against a period 1 ns longer.
        let base = 1_000_000_000u64;
        let times: Vec<u64> = (0..20u64).map(|i| base + 2_000 + i * 100_000_000).collect();
        let t = counted(&table(3), &[0; 20], 0);
        let b = payload_as(base, &times, &[0; 20], &t, 0, None);
        let bits = write_payload(&b.columns, b.unit, Some(&codes));
        let ok = decode_payload(&bits, 20, b.unit, b.index, Some(&codes), base, &t, 0, true).unwrap();
        assert_eq!(ok.times, times);
        let odd = SharedCodes { period_ns: 100_000_001, ..codes.clone() };
        let err = decode_payload(&bits, 20, b.unit, b.index, Some(&odd), base, &t, 0, true).unwrap_err();
        assert!(err.contains(&format!("not a whole number of {}-ns units", b.unit)), "{err}");
        // A directory whose fewest-samples offset overflows a block's count.
        let huge = SharedCodes { fewest: u64::MAX, ..codes };
        let payloads = vec![b];
        let mut record = encode_batch_record(&t, &[0; 3], &payloads);
        let row = table_row(&record).unwrap();
        let blocks = row.blocks.unwrap();
        let hostile = BlocksRow { shared: Some(Blob(Cow::Owned(huge.encode()))), ..blocks };
        record = to_msgpack(&TableRow { blocks: Some(hostile), ..table_row(&record).unwrap() });
        assert!(decode_block_dir(&record).unwrap_err().contains("block too long"));
    }

    /// A batch's metadata lists its CPUs as runs: 96 CPUs in a few bytes; metadata written
    /// before (a plain list) still reads; runs that do not ascend, are empty, overflow, list
    /// more CPUs than the batch has samples or come beside a list are errors.
    #[test]
    fn batch_metadata_lists_cpus_as_runs() {
        let row = |cpus: Vec<u32>| BatchRow { end: 9, samples: 9_600, lost: 1, cpus, stored_bytes: 77 };
        for cpus in [(0..96).collect(), vec![0, 1, 3, 5, 6, 7], vec![], vec![u32::MAX - 1, u32::MAX], vec![4]] {
            let bytes = encode_batch(&row(cpus.clone()));
            assert_eq!(decode_batch(&bytes).unwrap().cpus, cpus);
        }
        let all = encode_batch(&row((0..96).collect()));
        assert!(all.len() < 24, "{} bytes", all.len());
        // Rows the runs cannot say (a list read from a hostile record) are written as a list.
        for (samples, cpus) in [(9_600, vec![5, 3]), (9_600, vec![2, 2]), (1, vec![0, 1])] {
            let odd = BatchRow { samples, cpus, ..row(vec![]) };
            assert_eq!(decode_batch(&encode_batch(&odd)).unwrap().cpus, odd.cpus);
        }
        let record = |cpus: Vec<u32>, cpu_runs: Vec<(u32, u32)>| {
            to_msgpack(&BatchRecord { end: 9, samples: 9_600, lost: 1, cpus, stored_bytes: 77, cpu_runs })
        };
        // Written before: no runs.
        assert_eq!(decode_batch(&record((0..96).collect(), vec![])).unwrap().cpus, (0..96).collect::<Vec<_>>());
        for (cpus, runs, want) in [
            (vec![], vec![(0, 0)], "is empty"),
            (vec![], vec![(5, 2), (3, 1)], "does not follow"),
            (vec![], vec![(5, 2), (6, 1)], "does not follow"),
            (vec![], vec![(u32::MAX, 2)], "overflows"),
            (vec![], vec![(0, u32::MAX)], "more CPUs than"),
            (vec![], vec![(0, 9_000), (10_000, 700)], "more CPUs than"),
            (vec![1], vec![(0, 1)], "twice"),
        ] {
            let err = decode_batch(&record(cpus, runs.clone())).unwrap_err();
            assert!(err.contains(want), "{runs:?}: {err}");
        }
    }

    /// A directory that does not fit its record is an error naming what is wrong: more
    /// blocks than payload bytes, payloads past the record's end or short of it, a unit not
    /// listed; and no corruption of the record panics.
    #[test]
    fn batch_record_with_a_bad_directory_is_an_error() {
        let mut x = 43;
        let (t, _, record) = batch_of_four(&mut x);
        let row = table_row(&record).unwrap();
        let blocks = row.blocks.as_ref().unwrap();
        let with = |count: u32, units: Vec<u64>, cols: [Vec<u64>; 5], bits: &[u8]| {
            let mut w = BitWriter::new();
            for col in &cols {
                write_column(&mut w, col);
            }
            let dir = Blob(Cow::Owned(w.finish()));
            let blocks = Some(BlocksRow { count, units, dir, bits: Blob(Cow::Borrowed(bits)), shared: None });
            let r = TableRow { blocks, bits: Blob(Cow::Borrowed(&row.bits.0)), ..table_row(&record).unwrap() };
            decode_block_dir(&to_msgpack(&r))
        };
        let bits = &blocks.bits.0;
        let err = with(u32::MAX, vec![1000], Default::default(), bits).unwrap_err();
        assert!(err.contains("blocks in"), "{err}");
        let cols = || [vec![0, 0], vec![0, 0], vec![0, 0], vec![0, 0], vec![1, 1]];
        assert!(with(2, vec![1000], cols(), &[0, 0]).unwrap().is_some());
        let err = with(2, vec![1000], cols(), &[0, 0, 0]).unwrap_err();
        assert!(err.contains("take 2 of the record's 3 bytes"), "{err}");
        let mut long = cols();
        long[4][1] = 2;
        assert!(with(2, vec![1000], long, &[0, 0]).unwrap_err().contains("run past"));
        let mut unit = cols();
        unit[3][1] = 1;
        assert!(with(2, vec![1000], unit, &[0, 0]).unwrap_err().contains("unit 1 of 1"));
        for cut in 0..record.len() {
            let _ = decode_block_dir(&record[..cut]);
        }
        with_one_bit_flipped(&record, 5, 3000, |b| {
            if let Ok(Some(dir)) = decode_block_dir(b) {
                for at in &dir.blocks {
                    let _ = dir.decode(b, at, 0, &t, true);
                }
            }
        });
    }

    /// Format 3: stacks named by their place in their process's vocabulary decode to the same
    /// table, and take fewer bytes than the dictionary ids when a process uses few of the
    /// store's many stacks (the reason for the format).
    #[test]
    fn table_by_vocabulary_roundtrip() {
        let mut x = 17;
        let mut vocab = TestVocabulary(vec![Vec::new(); 7]);
        let (mut entries, mut locals, mut parts) = (Vec::new(), Vec::new(), Vec::new());
        for cpu in [0u32, 1, 4, 95] {
            let mut es: Vec<(Entry, u32)> = Vec::new();
            for _ in 0..1 + lcg(&mut x) % 400 {
                let thread = (lcg(&mut x) % 60) as u32;
                let pid = thread % 7;
                // Each process draws from its own 30 of 200,000 stacks.
                let stack = pid * 28_571 + (lcg(&mut x) % 30) as u32 * 7;
                let v = &mut vocab.0[pid as usize];
                let local = v.iter().position(|&s| s == stack).unwrap_or_else(|| {
                    v.push(stack);
                    v.len() - 1
                }) as u32;
                es.push((Entry { thread, idle: lcg(&mut x).is_multiple_of(9), stack }, local));
            }
            es.sort_unstable_by_key(|(e, l)| (e.thread, e.idle, *l));
            es.dedup();
            parts.push(Part { cpu, start: entries.len() as u32, len: es.len() as u32 });
            entries.extend(es.iter().map(|p| p.0));
            locals.extend(es.iter().map(|p| p.1));
        }
        let counts: Vec<u64> = entries.iter().map(|_| 1 + lcg(&mut x) % 5).collect();
        let t = Table { entries, counts, parts };
        let by_vocab = encode_table(&t, Some(&locals));
        assert_eq!(decode_table(&by_vocab, &vocab).unwrap(), t);
        // Without the vocabulary, or with one that lacks a stack, it is an error, not a guess.
        let err = decode_table(&by_vocab, &NoVocabulary).unwrap_err();
        assert!(err.contains("not in the dictionary"), "{err}");
        let mut short = TestVocabulary(vocab.0.clone());
        short.0[3].truncate(1);
        let err = decode_table(&by_vocab, &short).unwrap_err();
        assert!(err.contains("process 3 has no stack"), "{err}");
        // Sorted by dictionary id, the same table is format 2 and larger.
        let mut sorted: Vec<usize> = (0..t.entries.len()).collect();
        sorted.sort_by_key(|&i| (t.parts.iter().position(|p| (i as u32) < p.start + p.len), t.entries[i]));
        let by_id = Table {
            entries: sorted.iter().map(|&i| t.entries[i]).collect(),
            counts: sorted.iter().map(|&i| t.counts[i]).collect(),
            parts: t.parts.clone(),
        };
        let by_id_bytes = encode_table(&by_id, None);
        assert_eq!(decode_table(&by_id_bytes, &vocab).unwrap(), by_id);
        assert_eq!(table_threads(&by_vocab).unwrap(), table_threads(&by_id_bytes).unwrap());
        assert!(by_vocab.len() * 10 < by_id_bytes.len() * 9, "{} vs {} bytes", by_vocab.len(), by_id_bytes.len());
        with_one_bit_flipped(&by_vocab, 5, 500, |b| drop(decode_table(b, &vocab)));
    }

    /// Two groups of one `(thread, idle)` in a partition would be two entries that may name
    /// the same stack: refused in both formats.
    #[test]
    fn table_with_a_repeated_group_is_refused() {
        let bytes = |format: u8, idle: [u64; 2]| {
            let mut w = BitWriter::new();
            // part_cpu, part_len − 1, first_thread, thread_gap, idle, group_len − 1,
            // first_stack, stack_gap, count − 1
            let cols: [&[u64]; 9] = [&[0], &[1], &[4], &[0], &idle, &[0, 0], &[5, 5], &[], &[0, 0]];
            for c in cols {
                write_column(&mut w, c);
            }
            let row =
                TableRow { format, entries: 2, groups: 2, parts: 1, bits: Blob(Cow::Owned(w.finish())), blocks: None };
            to_msgpack(&row)
        };
        let vocab = TestVocabulary(vec![vec![0; 8]; 7]);
        for format in [TABLE_FORMAT_IDS, TABLE_FORMAT_VOCAB] {
            assert!(decode_table(&bytes(format, [0, 1]), &vocab).is_ok());
            for idle in [[0, 0], [1, 1], [1, 0]] {
                let err = decode_table(&bytes(format, idle), &vocab).unwrap_err();
                assert!(err.contains("not sorted"), "{format} {idle:?}: {err}");
            }
        }
    }

    /// A crash of the `sample_table` fuzz target (input kept as
    /// `fuzz/corpus/sample_table/regress-huge-table`): a 30-byte table claiming 2^26 entries in
    /// 2^26 partitions, every column of width 0, decoded into over 2 GB before anything failed.
    /// Columns are now capped at `MAX_COLUMN` (2^22) values.
    #[test]
    fn huge_table_header_is_refused() {
        let header = |n: u32| {
            let mut v = vec![0x95, TABLE_FORMAT_IDS];
            for _ in 0..3 {
                v.push(0xce);
                v.extend(n.to_be_bytes());
            }
            v.extend([0xc4, 11]);
            v.extend([0u8; 11]);
            v
        };
        let err = decode_table(&header(1 << 26), &NoVocabulary).unwrap_err();
        assert!(err.contains("limit"), "{err}");
        assert!(table_threads(&header(1 << 26)).is_err());
        // The same shape within the limit is a valid table: one entry per partition.
        let t = decode_table(&header(1000), &NoVocabulary).unwrap();
        assert_eq!((t.entries.len(), t.parts.len(), t.parts[999].cpu), (1000, 1000, 999));
    }

    #[test]
    fn dictionary_records_roundtrip() {
        let f = Frame::user("ƒoo::bär<Ω>", "libß.so");
        assert_eq!(decode_frame(&encode_frame(&f)).unwrap(), f);
        let k = Frame::kernel("do_idle");
        assert_eq!(decode_frame(&encode_frame(&k)).unwrap(), k);
        let u = Frame::unnamed("libc.so.6", ObjectAddress { build_id: vec![0x93, 0xac, 0x61], address: 0x1750ce });
        assert_eq!(&*u.function, "libc.so.6+0x1750ce");
        assert!(u.is_unnamed() && !f.is_unnamed());
        assert_eq!(decode_frame(&encode_frame(&u)).unwrap(), u);
        let named = u.named("__strpbrk_sse42");
        assert!(!named.is_unnamed());
        assert_eq!(decode_frame(&encode_frame(&named)).unwrap(), named);
        // Frames stored before locations existed: a 3-array, still read.
        let old = rmp_serde::to_vec(&("memcpy", "libc.so.6", false)).unwrap();
        assert_eq!(decode_frame(&old).unwrap(), Frame::user("memcpy", "libc.so.6"));
        // A build ID longer than any hash is refused, not kept.
        let long = rmp_serde::to_vec(&("f", "m", false, (vec![7u8; 65], 1u64))).unwrap();
        assert!(decode_frame(&long).unwrap_err().contains("build ID"));
        assert!(decode_frame(&rmp_serde::to_vec(&("f", "m")).unwrap()).is_err());
        assert_eq!(decode_comm(&encode_comm("swapper/0")).unwrap(), "swapper/0");
        assert_eq!(decode_stack(&encode_stack(&[1, 2, u32::MAX])).unwrap(), vec![1, 2, u32::MAX]);
        assert_eq!(decode_stack(&encode_stack(&[])).unwrap(), Vec::<u32>::new());
        let t = ThreadRec { pid: u32::MAX, tid: 0, comm: 7, cgroup: u64::MAX };
        assert_eq!(decode_thread(&encode_thread(&t)).unwrap(), t);
    }
}
