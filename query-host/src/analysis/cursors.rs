//! The host's state behind each cursor an analysis holds (the resources of the
//! `loupe:udf/data` interface): where the next page starts and what is left of the current one.
//! Plain data, bounded as the `host` and `probes` modules describe; the methods handing out
//! batches live there.

use std::collections::VecDeque;

use loupe_store::{
    EventPos, ProbeCall, ProbeCallChunks, ProbePos, RawSample, RawWait, RunMeta, RunPos, TimeRange as StoreRange,
    TimelineQuery,
};

use crate::model::SeriesSet;

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

pub struct SampleCursor {
    pub(super) inner: loupe_store::SampleCursor,
    /// The rest of the current store page, handed out [`SAMPLE_PAGE`] at a time.
    pub(super) pending: VecDeque<RawSample>,
}

pub struct WaitCursor {
    pub(super) inner: loupe_store::WaitCursor,
    /// The rest of the current store page, handed out [`SAMPLE_PAGE`] at a time.
    pub(super) pending: VecDeque<RawWait>,
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
