//! The sample part of [`crate::Store::verify`]: every batch whole, every block decodable and
//! consistent with its batch table, every referenced dictionary entry present, totals exact.

use std::collections::{BTreeMap, HashSet};

use super::codec::{self, BatchRow, DictRecord};
use super::dict::Dict;
use super::model::SampleKind;
use super::rollup::one_thread_per_process_name;
use crate::keys::{self, SampleTotals};
use crate::{Inner, StoreError, VerifyReport};

#[derive(Default)]
struct BatchSeen {
    /// Of which kind its records were (`None` for only `b` records, which are CPU samples').
    kind: Option<SampleKind>,
    /// Records of both kinds under one batch id.
    mixed: bool,
    meta: Option<BatchRow>,
    table: bool,
    /// An off-CPU batch's `w` record.
    waits: bool,
    cpus: Vec<u32>,
    bytes: u64,
}

impl BatchSeen {
    fn of_kind(&mut self, kind: SampleKind) {
        self.mixed |= self.kind.is_some_and(|k| k != kind);
        self.kind = Some(kind);
    }
}

/// Sample records met during the verify scan.
#[derive(Default)]
pub(crate) struct SampleSeen {
    batches: BTreeMap<(u64, u64), BatchSeen>,
    frames: HashSet<u32>,
    comms: HashSet<u32>,
    stacks: BTreeMap<u32, Vec<u32>>,
    threads: BTreeMap<u32, codec::ThreadRec>,
    /// Vocabulary entries: (pid, local) → stack.
    vocab: BTreeMap<(u32, u32), u32>,
    dict_bytes: u64,
    /// Hour rollups: hour → record bytes.
    rollups: BTreeMap<u64, u64>,
    totals: Option<SampleTotals>,
}

impl SampleSeen {
    /// Takes the record if it is a sample record; `false` if it is not one.
    pub(crate) fn observe(&mut self, k: &[u8], v: &[u8], report: &mut VerifyReport) -> bool {
        let size = (k.len() + v.len()) as u64;
        match k.first().copied() {
            Some(prefix @ (keys::BATCH | keys::TABLE | keys::OFF_BATCH | keys::OFF_TABLE | keys::OFF_WAITS))
                if k.len() == 17 =>
            {
                let (start, id) = keys::parse_batch_key(k).unwrap_or_default();
                let kind = match prefix {
                    keys::BATCH | keys::TABLE => SampleKind::OnCpu,
                    _ => SampleKind::OffCpu,
                };
                let seen = self.batches.entry((start, id)).or_default();
                seen.of_kind(kind);
                seen.bytes += size;
                match prefix {
                    keys::TABLE | keys::OFF_TABLE => seen.table = true,
                    keys::OFF_WAITS => seen.waits = true,
                    _ => match codec::decode_batch(v) {
                        Ok(row) => seen.meta = Some(row),
                        Err(d) => report.problems.push(format!("{} {id} metadata: {d}", kind.batch_name())),
                    },
                }
                true
            }
            Some(keys::BLOCK) if k.len() == 21 => {
                let (start, cpu, id) = keys::parse_block_key(k).unwrap_or_default();
                let seen = self.batches.entry((start, id)).or_default();
                seen.of_kind(SampleKind::OnCpu);
                seen.bytes += size;
                seen.cpus.push(cpu);
                true
            }
            Some(keys::ROLLUP) if k.len() == 9 => {
                self.rollups.insert(keys::parse_rollup_key(k).unwrap_or_default(), size);
                true
            }
            Some(keys::DICT) if k.len() == 6 || k.len() == 10 => {
                self.dict_bytes += size;
                match codec::decode_dict_record(k, v) {
                    Ok(DictRecord::Frame(id, _)) => drop(self.frames.insert(id)),
                    Ok(DictRecord::Comm(id, _)) => drop(self.comms.insert(id)),
                    Ok(DictRecord::Stack(id, s)) => drop(self.stacks.insert(id, s)),
                    Ok(DictRecord::Thread(id, t)) => drop(self.threads.insert(id, t)),
                    Ok(DictRecord::Vocab(pid, local, stack)) => drop(self.vocab.insert((pid, local), stack)),
                    Err(d) => report.problems.push(format!("sample {d}")),
                }
                true
            }
            _ if k == keys::SAMPLE_TOTALS => {
                match SampleTotals::decode(v) {
                    Some(t) => self.totals = Some(t),
                    None => report.problems.push("sample totals record does not decode".into()),
                }
                true
            }
            _ => false,
        }
    }

    /// Cross-checks everything seen. Reads tables and blocks again, one batch at a time.
    pub(crate) fn finish(self, inner: &Inner, report: &mut VerifyReport) -> Result<(), StoreError> {
        let totals = self.totals.unwrap_or_default();
        let p = &mut report.problems;
        for (id, stack) in &self.stacks {
            if let Some(f) = stack.iter().find(|f| !self.frames.contains(f)) {
                p.push(format!("sample stack {id} refers to missing frame {f}"));
            }
        }
        for (id, t) in &self.threads {
            if !self.comms.contains(&t.comm) {
                p.push(format!("sample thread {id} refers to missing comm {}", t.comm));
            }
        }
        let mut named: HashSet<(u32, u32)> = HashSet::new();
        for (&(pid, local), &stack) in &self.vocab {
            if !self.stacks.contains_key(&stack) {
                p.push(format!("sample vocabulary of process {pid} names missing stack {stack} as {local}"));
            }
            if !named.insert((pid, stack)) {
                p.push(format!("sample vocabulary of process {pid} names stack {stack} twice"));
            }
            if u64::from(local) >= totals.next_stack {
                p.push(format!("sample vocabulary of process {pid}: local id {local} is not below the stack counter"));
            }
        }
        // Format-3 tables name stacks through the vocabulary: decode them against what this
        // scan found, so a missing entry is reported here rather than trusted to the cache.
        let mut vocab = Dict::default();
        for (&id, t) in &self.threads {
            vocab.insert_thread(id, *t);
        }
        for (&(pid, local), &stack) in &self.vocab {
            vocab.insert_vocab(pid, local, stack);
        }
        let mut max_span = 0;
        let mut lost = 0u64;
        for (&(start, id), seen) in &self.batches {
            let kind = seen.kind.unwrap_or_default();
            let name = kind.batch_name();
            if seen.mixed {
                p.push(format!("sample batch {id}: records of CPU samples and of waits off the CPU under one id"));
                continue;
            }
            let Some(meta) = &seen.meta else {
                p.push(format!("{name} {id}: records without metadata (half-written or half-deleted)"));
                continue;
            };
            if seen.waits != (kind == SampleKind::OffCpu && meta.samples > 0) {
                p.push(format!("{name} {id}: {} waits record", if seen.waits { "a" } else { "no" }));
            }
            report.sample_batches += 1;
            report.samples += meta.samples;
            report.sample_bytes += meta.stored_bytes;
            lost = lost.saturating_add(meta.lost);
            max_span = max_span.max(meta.end.saturating_sub(start));
            if seen.bytes != meta.stored_bytes {
                p.push(format!("{name} {id}: records take {} bytes, metadata says {}", seen.bytes, meta.stored_bytes));
            }
            let cpus_differ = |p: &mut Vec<String>, cpus: &[u32]| {
                if cpus != meta.cpus {
                    p.push(format!("{name} {id}: metadata lists cpus {:?}, blocks exist for {cpus:?}", meta.cpus));
                }
            };
            if meta.samples == 0 {
                cpus_differ(p, &seen.cpus);
                if seen.table {
                    p.push(format!("{name} {id}: a table but no samples"));
                }
                continue;
            }
            if !seen.table {
                cpus_differ(p, &seen.cpus);
                p.push(format!("{name} {id}: no table"));
                continue;
            }
            let batch = match inner.read_batch(kind, start, id, &vocab) {
                Ok(b) => b,
                Err(e) => {
                    p.push(e.to_string());
                    continue;
                }
            };
            if kind == SampleKind::OffCpu
                && let Err(e) = inner.read_waits(&batch, meta.samples)
            {
                p.push(e.to_string());
            }
            // Blocks in the batch's record, or (written before) one `b` record a CPU.
            let cpus: Vec<u32> = match &batch.blocks {
                Some(dir) => {
                    if !seen.cpus.is_empty() {
                        p.push(format!("{name} {id}: blocks in its record and in records of their own"));
                    }
                    dir.cpus().collect()
                }
                None => seen.cpus.clone(),
            };
            cpus_differ(p, &cpus);
            let table = &batch.table;
            for e in &table.entries {
                if !self.stacks.contains_key(&e.stack) {
                    p.push(format!("{name} {id} refers to missing stack {}", e.stack));
                }
                if !self.threads.contains_key(&e.thread) {
                    p.push(format!("{name} {id} refers to missing thread {}", e.thread));
                }
            }
            if table.counts.iter().sum::<u64>() != meta.samples {
                p.push(format!("{name} {id}: table counts do not add up to {} samples", meta.samples));
            }
            let mut tally = vec![0u64; table.entries.len()];
            for &cpu in &cpus {
                match inner.read_block(&batch, cpu, true) {
                    Ok(b) => {
                        if b.times.first().is_some_and(|&t| t < start) || b.times.last().is_some_and(|&t| t > meta.end)
                        {
                            p.push(format!("{name} {id} cpu {cpu}: times outside the batch"));
                        }
                        b.entries.iter().for_each(|&e| tally[e as usize] += 1);
                    }
                    Err(e) => p.push(e.to_string()),
                }
            }
            if tally != table.counts {
                p.push(format!("{name} {id}: blocks disagree with the table's counts"));
            }
        }
        // Each rollup must be exactly the sum of its hour's stored batches (a rollup written
        // before threads of one process name were merged, merged the same way).
        for &hour in self.rollups.keys() {
            let stored = inner.read_rollup(hour, &vocab).map(|(row, table)| {
                let sums = table.entries.iter().copied().zip(table.counts.iter().copied()).collect();
                (row, one_thread_per_process_name(sums, &vocab))
            });
            match (stored, inner.sum_hour(hour, &vocab)) {
                (Err(e), _) | (_, Err(e)) => p.push(e.to_string()),
                (Ok(stored), Ok(Some(summed))) if stored == summed => {}
                (Ok(_), Ok(None)) => p.push(format!(
                    "sample rollup of hour {hour}: its batches cannot be summed (there are none, or too many distinct entries)"
                )),
                (Ok((row, _)), Ok(Some((sum, _)))) => p.push(format!(
                    "sample rollup of hour {hour} says {row:?} and its tables, the hour's batches add up to {sum:?}"
                )),
            }
        }
        let rollup_bytes: u64 = self.rollups.values().sum();
        if rollup_bytes != totals.rollup_bytes {
            p.push(format!(
                "sample totals say {} bytes of hour rollups, records take {rollup_bytes}",
                totals.rollup_bytes
            ));
        }
        let dict_counts = (
            self.stacks.len() as u64,
            self.frames.len() as u64,
            self.comms.len() as u64,
            self.threads.len() as u64,
            self.vocab.len() as u64,
        );
        let counted = (report.sample_batches, report.samples, report.sample_bytes, self.dict_bytes, dict_counts);
        let recorded = (
            totals.batches,
            totals.samples,
            totals.batch_bytes,
            totals.dict_bytes,
            (totals.stacks, totals.frames, totals.comms, totals.threads, totals.vocab),
        );
        if counted != recorded {
            p.push(format!(
                "sample totals say (batches, samples, batch bytes, dictionary bytes, (stacks, frames, comms, threads, \
                 vocabulary)) = \
                 {recorded:?}, records add up to {counted:?}"
            ));
        }
        let over = |ids: &mut dyn Iterator<Item = &u32>, next: u64| ids.map(|&i| u64::from(i)).max() >= Some(next);
        if over(&mut self.stacks.keys(), totals.next_stack)
            || over(&mut self.frames.iter(), totals.next_frame)
            || over(&mut self.comms.iter(), totals.next_comm)
            || over(&mut self.threads.keys(), totals.next_thread)
        {
            p.push("a sample dictionary id is not below its counter (ids could be reused)".into());
        }
        if self.totals.is_some() && totals.lost != Some(lost) {
            p.push(format!("sample totals say {:?} lost samples, batches add up to {lost}", totals.lost));
        }
        if max_span > totals.max_span_ns {
            p.push(format!(
                "a sample batch spans {max_span} ns, more than the recorded maximum {}",
                totals.max_span_ns
            ));
        }
        Ok(())
    }
}
