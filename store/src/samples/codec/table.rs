//! The batch table (`h` record), what a profile over a long range reads. Also the table of an
//! hour rollup (`rollup`), and the head of a batch record (`batch_record`): the `h` record's
//! row ([`TableRow`]) is here, with the field that holds the blocks, which `batch_record`
//! fills and reads.
//!
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

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::encoding::bits::{BitReader, BitWriter, gaps, read_column, ungap_strict, write_column};
use crate::encoding::msgpack::{Blob, from_msgpack, to_msgpack};

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
pub(super) struct TableRow<'a> {
    pub(super) format: u8,
    pub(super) entries: u32,
    pub(super) groups: u32,
    pub(super) parts: u32,
    #[serde(borrow)]
    pub(super) bits: Blob<'a>,
    /// The batch's per-CPU blocks (see `encode_batch_record`); absent from rollups and from
    /// batches written before, whose blocks are `b` records of their own.
    #[serde(default, borrow, skip_serializing_if = "Option::is_none")]
    pub(super) blocks: Option<BlocksRow<'a>>,
}

/// A batch's per-CPU blocks in its table record: one record a batch instead of one a CPU.
/// Measured on the benchmark's day: a `b` record's key and MessagePack header took 21 + ~9
/// bytes for ~100 samples (~2.4 bits a sample); here a block costs its directory entry (CPU
/// gap, samples, index coding, unit, payload bytes: ~2 bytes) and the padding of its payload
/// to a whole byte.
#[derive(Serialize, Deserialize)]
pub(super) struct BlocksRow<'a> {
    pub(super) count: u32,
    /// The distinct time units of the blocks (almost always one: 1,000 ns).
    pub(super) units: Vec<u64>,
    /// Bit-packed columns of `count` values each, in CPU order: the CPU (the first, then gaps
    /// − 1), samples − 1, index coding, unit (its place in `units`), payload bytes.
    #[serde(borrow)]
    pub(super) dir: Blob<'a>,
    /// The payloads one after another: each is what a `b` record's `bits` holds, or, with
    /// `shared`, what it holds written against those codes.
    #[serde(borrow)]
    pub(super) bits: Blob<'a>,
    /// `SharedCodes`, bit-packed; absent from records written before blocks shared codes.
    #[serde(default, borrow, skip_serializing_if = "Option::is_none")]
    pub(super) shared: Option<Blob<'a>>,
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

/// Encodes a table. With `locals` (entry `i`'s place in its process's vocabulary, for every
/// entry) it is format 3, and each partition must be sorted by `(thread, idle, local)`;
/// without, format 2, each partition sorted by [`Entry`].
pub fn encode_table(t: &Table, locals: Option<&[u32]>) -> Vec<u8> {
    encode_table_row(t, locals, None)
}

pub(super) fn encode_table_row(t: &Table, locals: Option<&[u32]>, blocks: Option<BlocksRow<'_>>) -> Vec<u8> {
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

pub(super) fn table_row(bytes: &[u8]) -> Result<TableRow<'_>, String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::codec::testing::{TestVocabulary, lcg, with_one_bit_flipped};

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
}
