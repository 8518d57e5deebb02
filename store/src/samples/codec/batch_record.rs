//! The batch record (`h` record with blocks): one record holding a batch's table and all its
//! per-CPU blocks, where batches written before kept a table and a `b` record per CPU.
//!
//! A batch's blocks follow its table in one record, with a directory saying where each CPU's
//! lies (see `BlocksRow`). What the ~96 blocks of a batch have alike is written once for the
//! batch ([`SharedCodes`]): a column code for each kind of block column, which a column takes
//! (one bit) instead of its own 9-bit header when that is shorter; the timer period most
//! blocks have, which a block on it takes (one bit), writing its first time as whole periods
//! and a remainder; and the fewest samples a block has, from which the directory counts. In
//! such a record a first use's rank is in truncated binary. Records written before have no
//! shared codes and their blocks carry everything themselves; both read.

use std::borrow::Cow;

use super::block::{Block, BlockPayload, BlockRow, SharedCodes, decode_payload, payload_as, write_payload};
use super::table::{BlocksRow, Table, TableRow, Vocabulary, decode_table, encode_table_row, table_row};
use crate::encoding::bits::{self, BitReader, BitWriter, gaps, read_column, ungap_strict, write_column};
use crate::encoding::msgpack::{Blob, to_msgpack};

/// A batch's record: its table in format 3 (`locals` as for
/// [`encode_table`](super::encode_table)) with its per-CPU blocks (ascending CPUs, each encoded
/// by [`encode_block_payload`](super::encode_block_payload) against `t`).
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
    /// batch's table, as [`decode_block`](super::decode_block) does a `b` record.
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

#[cfg(test)]
mod tests {
    use super::super::block::{INDEX_FIRST_USE, INDEX_GROUPED, INDEX_LIST, decode_block, encode_block_payload};
    use super::super::table::{encode_table, table_threads};
    use super::*;
    use crate::samples::codec::testing::{TestVocabulary, counted, lcg, periodic_block, table, with_one_bit_flipped};

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
}
