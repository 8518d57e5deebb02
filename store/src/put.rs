//! The put methods: each kind's write, then retention, under the one writer lock.
//!
//! *Why here, above both:* a put must apply retention before it returns, sparing what it just
//! stored, and retention deletes every kind of record (runs, sample batches, timeline batches,
//! probe sessions). If each kind's writer called retention itself, the two would name each
//! other. So each kind's writer stores its records and then runs a `retain` step it is handed
//! (still under the writer lock, flushing what that step deleted), knowing nothing of
//! retention, and this module, above the kinds and retention alike, hands it the retention
//! pass that protects the new record (`Protect`).

use crate::probes::model::ProbeSession;
use crate::retention::Protect;
use crate::samples::model::{OffCpuSample, SampleBatchMeta, SampleKind, StackSample};
use crate::timeline::model::{TimelineBatchMeta, TimelineEvent, TimelineSource};
use crate::{NewRun, RunMeta, Store, StoreError};

impl Store {
    /// Validates and stores a run atomically, flushes it to disk, then applies retention
    /// (which never deletes the run just written).
    ///
    /// Errors: [`StoreError::InvalidRun`] or [`StoreError::TooLarge`] with nothing written.
    /// A storage error raised by the retention pass comes after the run was durably stored.
    pub fn put_run(&self, run: NewRun, now_unix_ns: u64) -> Result<RunMeta, StoreError> {
        let inner = &*self.inner;
        inner.write_run(run, |id| inner.enforce_retention(now_unix_ns, Some(Protect::Run(id))))
    }

    /// Appends a batch of samples (any CPUs, any order; typically ~10 s of every CPU)
    /// atomically, flushes it, then applies retention (which never deletes this batch).
    ///
    /// `lost` is the number of samples the kernel dropped since the previous batch; it is
    /// recorded at this batch's time (its earliest sample, or `now_unix_ns` when the batch has
    /// no sample). An empty batch with nothing lost is a no-op and returns a meta with `id 0`.
    ///
    /// Errors: [`StoreError::TooLarge`] when the batch and its new dictionary entries alone
    /// exceed the byte cap (nothing written); a storage error from the retention pass comes
    /// after the batch was durably stored.
    pub fn put_samples(
        &self,
        samples: &[StackSample],
        lost: u64,
        now_unix_ns: u64,
    ) -> Result<SampleBatchMeta, StoreError> {
        let inner = &*self.inner;
        inner.write_batch(
            SampleKind::OnCpu,
            samples,
            lost,
            now_unix_ns,
            |_| None,
            |id| inner.enforce_retention(now_unix_ns, Some(Protect::Batch(id))),
        )
    }

    /// Appends a batch of waits off the CPU (any CPUs, any order; typically ~10 s of them)
    /// atomically, flushes it, then applies retention (which never deletes this batch). An
    /// empty batch is a no-op and returns a meta with `id 0`. Samples the sampler lost are
    /// recorded with the CPU samples ([`Store::put_samples`]): the two share one ring.
    ///
    /// Errors: [`StoreError::InvalidSamples`] for a wait with `one_in` 0 or of the idle task
    /// (nothing written); otherwise as [`Store::put_samples`].
    pub fn put_off_cpu(&self, waits: &[OffCpuSample], now_unix_ns: u64) -> Result<SampleBatchMeta, StoreError> {
        let inner = &*self.inner;
        inner.write_off_cpu(waits, now_unix_ns, |id| inner.enforce_retention(now_unix_ns, Some(Protect::Batch(id))))
    }

    /// Appends one batch of one source's events (any order; typically the last few seconds),
    /// atomically with its dictionary entry and the totals; flushes; applies retention (which
    /// never deletes this batch). `lost` = records the writer overwrote before they were read;
    /// it is recorded at the batch's time (its earliest event, or `now_unix_ns` when it has
    /// none). An empty batch with nothing lost is a no-op and returns a meta with `id 0`.
    ///
    /// Errors: [`StoreError::InvalidTimeline`] (an event naming no definition, more than
    /// [`MAX_BATCH_EVENTS`](crate::timeline::codec::MAX_BATCH_EVENTS) events, a source beyond
    /// the codec's limits) and [`StoreError::TooLarge`] leave nothing written.
    pub fn put_timeline(
        &self,
        source: &TimelineSource,
        events: &[TimelineEvent],
        lost: u64,
        now_unix_ns: u64,
    ) -> Result<TimelineBatchMeta, StoreError> {
        let inner = &*self.inner;
        inner.write_timeline(source, events, lost, now_unix_ns, |id| {
            inner.enforce_retention(now_unix_ns, Some(Protect::Timeline(id)))
        })
    }

    /// Stores a whole probe session under a fresh id (ids start at 1 and are never reused;
    /// `session.id` is ignored) and returns the id: its metadata, its calls in chunks of
    /// [`CHUNK_CALLS`](crate::probes::codec::CHUNK_CALLS), its index entry and the updated
    /// totals in one atomic batch, flushed before returning. Then applies the retention byte
    /// cap (never to this session); age is applied by the next write that knows the time
    /// (`put_run`, `put_samples`, `put_timeline`) or [`Store::enforce_retention`].
    ///
    /// Errors: [`StoreError::InvalidProbeSession`] (too many functions, calls or buckets, an
    /// index out of range, a parent after its child, an exit before its entry, an end before
    /// the start, a string over [`MAX_NAME`](crate::probes::codec::MAX_NAME) bytes, …) and
    /// [`StoreError::TooLarge`] leave nothing written and no id used.
    pub fn put_probe_session(&self, session: ProbeSession) -> Result<u64, StoreError> {
        let inner = &*self.inner;
        // `now` = 0: the byte cap only (no cutoff); see above.
        inner.write_probe_session(session, |id| inner.enforce_retention(0, Some(Protect::Probe(id))))
    }
}
