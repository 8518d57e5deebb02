//! Off-CPU batches: where threads waited, and for how long.
//!
//! A CPU profile only sees threads that run; a request that is slow because it sleeps on a lock,
//! a pipe or the disk shows nothing there. The sampler therefore also takes a thread's stacks as
//! it blocks and sends them, with how long it stayed off the CPU, when it runs again
//! ([`OffCpuSample`]). An off-CPU profile ([`Store::profile`] of [`SampleKind::OffCpu`]) sums
//! those waits per stack.
//!
//! # Layout
//! An off-CPU batch is a sample batch in every way the CPU samples' are — the same table of
//! distinct `(thread, stack)` entries, the same per-CPU blocks of times and entries, the same
//! dictionary — under keys of its own (`O` metadata, `o` table and blocks), plus one record
//! the CPU samples have no use for:
//!
//! ```text
//! w ++ start:u64 ++ batch:u64  → each sample's wait (µs) and 1-in-N, in the blocks' order
//! ```
//!
//! *Why keys of their own:* everything that reads CPU samples — profiles, hour rollups, raw
//! samples, cursors, the PIDs of a range — scans `B`/`h` keys, and a wait summed as a CPU
//! sample would be wrong in a way nobody would notice. Under other keys, no reader of CPU
//! samples can meet one; retention, the dictionary sweep, renaming and `verify` read both.
//! Off-CPU batches have no hour rollups: at 1,000 waits a second (the sampler's default bound is
//! 300) they are as many samples as a 100-CPU host's at 10 Hz, and a day-long off-CPU profile reads each
//! batch's table (about a second a day; see `rollup` for the CPU samples' measurement).
//!
//! *Why the wait to the microsecond:* as sample times are (`StackSample::TIME_UNIT_NS`). A wait
//! is at least the sampler's threshold (1 ms by default), so the microsecond is 0.1 % of the
//! shortest, and the nanoseconds below it would cost ten bits a sample.
//!
//! # Weights
//! The sampler keeps every wait over its threshold while they are rare, and one in `one_in` at
//! random when they are not; a kept wait then stands for `one_in` like it. A profile's value for
//! a stack is the sum of `waited × one_in` over its samples ([`OffCpuSample::weight_ns`]): an
//! unbiased estimate of the time all threads waited there. A wait is counted at the time its
//! thread blocked, wholly in the range holding that instant.

use serde::{Deserialize, Serialize};

use super::MAX_BATCH_SAMPLES;
use super::codec::Entry;
use super::dict::{Dict, FxMap};
use super::model::{IndexedProfile, OffCpuSample, ProfileQuery, SampleBatchMeta, SampleKind, StackSample};
use super::query::Filter;
use super::records::BatchSamples;
use crate::encoding::bits::{self, BitReader, BitWriter};
use crate::encoding::msgpack::{Blob, from_msgpack, to_msgpack};
use crate::keys;
use crate::{Inner, RetentionReport, Store, StoreError, TimeRange};

/// An off-CPU batch to read: where it is, its samples and its CPUs (from its metadata).
#[derive(Clone, Debug)]
pub(super) struct WaitBatch {
    pub start: u64,
    pub id: u64,
    pub samples: u64,
    pub cpus: Vec<u32>,
}

/// The `w` record's format.
const WAITS_FORMAT: u8 = 1;

/// A `w` record: the format, then two bit-packed columns of the batch's samples in the order
/// of its blocks (CPU, then time): the wait in microseconds, and `one_in - 1`.
#[derive(Serialize, Deserialize)]
struct WaitsRecord<'a>(u8, #[serde(borrow)] Blob<'a>);

/// The waits of a batch's samples, in the order of its blocks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Waits {
    /// Off the CPU, in ns (whole microseconds).
    pub waited_ns: Vec<u64>,
    pub one_in: Vec<u32>,
}

/// Encodes `waits` (each `(waited_ns, one_in)`, `one_in ≥ 1`) as a `w` record.
pub fn encode_waits(waits: impl Iterator<Item = (u64, u32)>) -> Vec<u8> {
    let (us, more): (Vec<u64>, Vec<u64>) =
        waits.map(|(ns, one_in)| (ns / StackSample::TIME_UNIT_NS, u64::from(one_in.max(1) - 1))).unzip();
    let mut w = BitWriter::new();
    bits::write_column(&mut w, &us);
    bits::write_column(&mut w, &more);
    to_msgpack(&WaitsRecord(WAITS_FORMAT, Blob(w.finish().into())))
}

/// Decodes a `w` record of `n` samples (the batch's count, at most [`MAX_BATCH_SAMPLES`]).
/// Never panics: a record from disk is checked like any input.
pub fn decode_waits(bytes: &[u8], n: u64) -> Result<Waits, String> {
    let n = usize::try_from(n)
        .ok()
        .filter(|&n| n <= MAX_BATCH_SAMPLES)
        .ok_or_else(|| format!("{n} samples, more than a batch holds"))?;
    let WaitsRecord(format, blob) = from_msgpack(bytes)?;
    if format != WAITS_FORMAT {
        return Err(format!("waits format {format}, this build reads {WAITS_FORMAT}"));
    }
    let mut r = BitReader::new(&blob.0);
    let us = bits::read_column(&mut r, n)?;
    let more = bits::read_column(&mut r, n)?;
    let mut waits = Waits { waited_ns: Vec::with_capacity(n), one_in: Vec::with_capacity(n) };
    for (us, more) in us.into_iter().zip(more) {
        let ns = us.checked_mul(StackSample::TIME_UNIT_NS).ok_or_else(|| format!("a wait of {us} µs overflows"))?;
        let one_in = u32::try_from(more + 1).map_err(|_| format!("1 in {} does not fit 32 bits", more + 1))?;
        waits.waited_ns.push(ns);
        waits.one_in.push(one_in);
    }
    Ok(waits)
}

impl Inner {
    /// Checks and stores a batch of waits: [`Store::put_off_cpu`] but for retention, which
    /// `retain` is (as for [`Inner::write_batch`]).
    pub(crate) fn write_off_cpu(
        &self,
        waits: &[OffCpuSample],
        now_unix_ns: u64,
        retain: impl FnOnce(u64) -> Result<RetentionReport, StoreError>,
    ) -> Result<SampleBatchMeta, StoreError> {
        if let Some(w) = waits.iter().find(|w| w.one_in == 0 || w.sample.idle) {
            return Err(StoreError::InvalidSamples(format!(
                "an off-CPU sample of thread {} at {} ns has one_in {} and idle {}: every wait stands for at least \
                 itself (one_in ≥ 1), and the idle task never waits",
                w.sample.tid, w.sample.time_unix_ns, w.one_in, w.sample.idle
            )));
        }
        let extra = |order: &[u32]| {
            let w = |i: &u32| &waits[*i as usize];
            Some(encode_waits(order.iter().map(|i| (w(i).waited_ns, w(i).one_in))))
        };
        self.write_batch(SampleKind::OffCpu, waits, 0, now_unix_ns, extra, retain)
    }
}

impl Store {
    /// The waits matching `query` (whatever its `kind`), in time order (then CPU): meant for
    /// tests, small ranges and finding the one long wait.
    pub fn off_cpu_samples(&self, query: &ProfileQuery) -> Result<Vec<OffCpuSample>, StoreError> {
        let inner = &*self.inner;
        query.range.check()?;
        let _r = inner.read_lock();
        inner.ensure_dict()?;
        let d = inner.dict_read();
        let mut memo = FxMap::default();
        let mut out = Vec::new();
        inner.visit_waits(&d, query, |t, cpu, e, waited_ns, one_in| {
            out.push(OffCpuSample { sample: inner.sample_of(&d, t, cpu, e, &mut memo)?, waited_ns, one_in });
            Ok(())
        })?;
        out.sort_by_key(|w| (w.sample.time_unix_ns, w.sample.cpu));
        Ok(out)
    }
}

impl Inner {
    /// [`Store::profile`] of waits off the CPU: each stack's value is the nanoseconds threads
    /// waited there ([`OffCpuSample::weight_ns`] summed), `samples` the waits sampled, `lost` 0
    /// (the sampler's losses are counted with the CPU samples). A wait counts where its thread
    /// blocked: at its time. `include_idle` does not apply. Caller holds the read lock.
    pub(super) fn off_cpu_profile(&self, d: &Dict, q: &ProfileQuery) -> Result<IndexedProfile, StoreError> {
        let mut per_stack: Vec<u64> = Vec::new();
        let mut samples = 0u64;
        let mut span: Option<(u64, u64)> = None;
        self.visit_waits(d, q, |t, _, e, waited_ns, one_in| {
            let s = e.stack as usize;
            if per_stack.len() <= s {
                per_stack.resize(s + 1, 0);
            }
            per_stack[s] = per_stack[s].saturating_add(waited_ns.saturating_mul(u64::from(one_in)));
            samples += 1;
            span = Some(span.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
            Ok(())
        })?;
        self.indexed(d, &per_stack, samples, 0, span)
    }

    /// Calls `each(time, cpu, entry, waited_ns, one_in)` for every wait matching `q`, batch by
    /// batch (in each, CPU by CPU, then in time order). Caller holds the read lock.
    fn visit_waits(
        &self,
        d: &Dict,
        q: &ProfileQuery,
        mut each: impl FnMut(u64, u32, &Entry, u64, u32) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let filter = Filter::new(q, d);
        for batch in self.wait_batches(q)? {
            self.visit_wait_batch(d, q, &filter, batch, &mut each)?;
        }
        Ok(())
    }

    /// The off-CPU batches that may hold waits in `q`'s range (and CPU), oldest first. Caller
    /// holds the read lock.
    pub(super) fn wait_batches(&self, q: &ProfileQuery) -> Result<Vec<WaitBatch>, StoreError> {
        let TimeRange { from_unix_ns: from, to_unix_ns: to } = q.range;
        let span = self.sample_totals()?.max_span_ns;
        let mut batches = Vec::new();
        self.for_each_batch_of(SampleKind::OffCpu, from.saturating_sub(span), to, |start, id, row| {
            if row.samples > 0 && row.end >= from && q.cpu.is_none_or(|c| row.cpus.binary_search(&c).is_ok()) {
                batches.push(WaitBatch { start, id, samples: row.samples, cpus: row.cpus.clone() });
            }
            Ok(())
        })?;
        Ok(batches)
    }

    /// [`Inner::visit_waits`] over one batch (one found by [`Inner::wait_batches`]). Caller holds
    /// the read lock.
    pub(super) fn visit_wait_batch(
        &self,
        d: &Dict,
        q: &ProfileQuery,
        filter: &Filter,
        WaitBatch { start, id, samples: n, cpus }: WaitBatch,
        mut each: impl FnMut(u64, u32, &Entry, u64, u32) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let batch = self.read_batch(SampleKind::OffCpu, start, id, d)?;
        let waits = self.read_waits(&batch, n)?;
        let mut at = 0usize;
        for cpu in cpus {
            let block = self.read_block(&batch, cpu, true)?;
            let here = at..at + block.entries.len();
            at = here.end;
            let (Some(waited), Some(one_in)) = (waits.waited_ns.get(here.clone()), waits.one_in.get(here)) else {
                return Err(self.corrupt(format!("off-CPU batch {id} waits"), format!("fewer than its {n} samples")));
            };
            if q.cpu.is_some_and(|c| c != cpu) {
                continue;
            }
            for (i, (&t, &e)) in block.times.iter().zip(&block.entries).enumerate() {
                let e = &batch.table.entries[e as usize];
                if q.range.contains(t) && filter.wants(e) {
                    each(t, cpu, e, waited[i], one_in[i])?;
                }
            }
        }
        if at as u64 != n {
            return Err(self.corrupt(format!("off-CPU batch {id} blocks"), format!("{at} samples, not {n}")));
        }
        Ok(())
    }

    /// A batch's `w` record.
    pub(crate) fn read_waits(&self, batch: &BatchSamples, n: u64) -> Result<Waits, StoreError> {
        let what = || format!("off-CPU batch {} waits", batch.id);
        let v = self
            .runs
            .get(keys::batch_key(keys::OFF_WAITS, batch.start, batch.id))
            .map_err(|e| self.storage("read off-CPU waits", e))?
            .ok_or_else(|| self.corrupt(what(), "missing".into()))?;
        decode_waits(&v, n).map_err(|d| self.corrupt(what(), d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_round_trip_to_the_microsecond() {
        let waits = [(1_000_999, 1), (20_000_000, 1), (3_600_000_000_000, 7), (0, u32::MAX)];
        let bytes = encode_waits(waits.iter().copied());
        let back = decode_waits(&bytes, 4).unwrap();
        assert_eq!(back.waited_ns, vec![1_000_000, 20_000_000, 3_600_000_000_000, 0]);
        assert_eq!(back.one_in, vec![1, 1, 7, u32::MAX]);
    }

    #[test]
    fn hostile_waits_are_refused() {
        let bytes = encode_waits([(5_000, 1), (6_000, 2)].into_iter());
        // More samples than the columns hold, or than a batch may hold.
        assert!(decode_waits(&bytes, 3).is_err());
        assert!(decode_waits(&bytes, MAX_BATCH_SAMPLES as u64 + 1).unwrap_err().contains("more than a batch"));
        // Another format, and bytes that are not a record.
        let other = rmp_serde::to_vec(&WaitsRecord(9, Blob(Vec::new().into()))).unwrap();
        assert!(decode_waits(&other, 0).unwrap_err().contains("format 9"));
        assert!(decode_waits(b"\xff\x00", 1).is_err());
        // A wait whose nanoseconds overflow, and a 1-in-N past 32 bits.
        let mut w = BitWriter::new();
        bits::write_column(&mut w, &[u64::MAX / 10]);
        bits::write_column(&mut w, &[0]);
        let huge = rmp_serde::to_vec(&WaitsRecord(WAITS_FORMAT, Blob(w.finish().into()))).unwrap();
        assert!(decode_waits(&huge, 1).unwrap_err().contains("overflows"));
        let mut w = BitWriter::new();
        bits::write_column(&mut w, &[1]);
        bits::write_column(&mut w, &[u64::from(u32::MAX)]);
        let wide = rmp_serde::to_vec(&WaitsRecord(WAITS_FORMAT, Blob(w.finish().into()))).unwrap();
        assert!(decode_waits(&wide, 1).unwrap_err().contains("32 bits"));
    }
}
