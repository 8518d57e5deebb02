//! The host's state behind each cursor an analysis holds (the resources of the
//! `loupe:udf/data` interface): where the next page starts and what is left of the current one.
//! Plain data, bounded as the `host` and `probes` modules describe; the methods handing out
//! batches live there.

use std::collections::VecDeque;

use loupe_store::{
    EventPos, ProbeCall, ProbeCallChunks, ProbePos, RawSample, RawWait, RunMeta, RunPos, StoreError,
    TimeRange as StoreRange, TimelineQuery,
};

use loupe_api::model::SeriesSet;

pub struct RunCursor {
    pub(super) range: StoreRange,
    pub(super) interval_ns: Option<u64>,
    pub(super) iface: Option<String>,
    pub(super) per_cpu: bool,
    /// The series handed out (the others are neither summed nor copied).
    pub(super) series: SeriesSet,
    /// The current page of listings, and the last run listed (where the next page starts).
    pub(super) metas: VecDeque<RunMeta>,
    pub(super) after: Option<RunPos>,
    pub(super) done: bool,
}

/// A store cursor that reads a page (one stored batch) at a time, handed to the guest in
/// smaller pieces: the sample and wait cursors.
pub struct Paged<C: StorePages> {
    pub(super) inner: C,
    /// The rest of the current store page.
    pending: VecDeque<C::Item>,
}

pub type SampleCursor = Paged<loupe_store::SampleCursor>;
pub type WaitCursor = Paged<loupe_store::WaitCursor>;

/// The store cursors [`Paged`] reads.
pub trait StorePages {
    type Item;
    /// The next non-empty page, or `None` when done.
    fn next_page(&mut self) -> Result<Option<Vec<Self::Item>>, StoreError>;
}

impl StorePages for loupe_store::SampleCursor {
    type Item = RawSample;
    fn next_page(&mut self) -> Result<Option<Vec<RawSample>>, StoreError> {
        loupe_store::SampleCursor::next_page(self)
    }
}

impl StorePages for loupe_store::WaitCursor {
    type Item = RawWait;
    fn next_page(&mut self) -> Result<Option<Vec<RawWait>>, StoreError> {
        loupe_store::WaitCursor::next_page(self)
    }
}

impl<C: StorePages> Paged<C> {
    pub fn new(inner: C) -> Self {
        Paged { inner, pending: VecDeque::new() }
    }

    /// The next items, at most `max` (empty when exhausted): the rest of the current store
    /// page, or the next page once it is used up.
    pub fn next(&mut self, max: usize) -> Result<std::collections::vec_deque::Drain<'_, C::Item>, StoreError> {
        if self.pending.is_empty()
            && let Some(page) = self.inner.next_page()?
        {
            self.pending = page.into();
        }
        let n = self.pending.len().min(max);
        Ok(self.pending.drain(..n))
    }
}

pub struct TimelineCursor {
    pub(super) query: TimelineQuery,
    /// Where the next page starts; `done` once the store said there is no more.
    pub(super) after: Option<EventPos>,
    pub(super) done: bool,
}

pub struct ProbeCursor {
    pub(super) range: StoreRange,
    /// The current page of listed sessions, and the last one listed (where the next page
    /// starts); `listed_all` once the store had no more.
    pub(super) listed: VecDeque<ProbePos>,
    pub(super) after: Option<ProbePos>,
    pub(super) listed_all: bool,
    /// The current session's calls: the chunks still to read, the rest of the current chunk.
    pub(super) calls: Option<ProbeCallChunks>,
    pub(super) pending: VecDeque<ProbeCall>,
}
