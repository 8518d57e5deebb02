//! Public types of the stack-sample store.

use serde::{Deserialize, Serialize};

use crate::TimeRange;

/// One frame of a symbolized stack.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Frame {
    /// Demangled function name, or `"module+0x1a2b"` when it could not be named.
    pub function: String,
    /// File name of the binary or library (`""` for kernel frames, which are `[kernel]`).
    pub module: String,
    /// A kernel frame.
    pub kernel: bool,
}

impl Frame {
    /// A user-space frame.
    pub fn user(function: impl Into<String>, module: impl Into<String>) -> Frame {
        Frame { function: function.into(), module: module.into(), kernel: false }
    }

    /// A kernel frame (`module` is empty).
    pub fn kernel(function: impl Into<String>) -> Frame {
        Frame { function: function.into(), module: String::new(), kernel: true }
    }
}

/// One CPU-profiling sample (what `perf record -F 10 -a -g` records per tick and CPU).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackSample {
    pub time_unix_ns: u64,
    pub cpu: u32,
    pub pid: u32,
    pub tid: u32,
    pub comm: String,
    pub cgroup_id: u64,
    /// The CPU was idle (swapper, pid 0).
    pub idle: bool,
    /// Leaf first: kernel frames (if any), then user frames. May be empty.
    pub frames: Vec<Frame>,
}

/// What [`crate::Store::profile`], [`crate::Store::samples`] select.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileQuery {
    /// Samples whose time lies in `[from, to)`.
    pub range: TimeRange,
    pub pid: Option<u32>,
    /// Exact match on the thread's command name.
    pub comm: Option<String>,
    pub cpu: Option<u32>,
    /// Count samples taken while the CPU was idle (`idle == true`); off by default.
    pub include_idle: bool,
}

impl Default for ProfileQuery {
    /// Every non-idle sample of all time.
    fn default() -> Self {
        ProfileQuery::range(TimeRange::ALL)
    }
}

impl ProfileQuery {
    /// Every non-idle sample in `range`.
    pub fn range(range: TimeRange) -> ProfileQuery {
        ProfileQuery { range, pid: None, comm: None, cpu: None, include_idle: false }
    }
}

/// An aggregated profile: distinct stacks and how many samples each got.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Profile {
    /// Samples matching the query.
    pub samples: u64,
    /// Samples the sampler reported lost, summed over the batches whose time (first sample)
    /// lies in the range. Not filtered by pid, comm or CPU: a lost sample has none.
    pub lost: u64,
    /// Distinct stacks (leaf first) and their sample counts, in no particular order.
    pub stacks: Vec<(Vec<Frame>, u64)>,
    /// First and last instant of the data (within the range) the samples came from, to the
    /// resolution of a stored batch (10 s); `None` without samples. What a pprof's time and
    /// duration say.
    #[serde(default)]
    pub span: Option<(u64, u64)>,
}

/// Totals of the sample store, from running counters (no scan).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampleStats {
    pub samples: u64,
    pub batches: u64,
    /// Key + value bytes of every sample record: blocks, batch records *and* the stack, frame
    /// and comm dictionaries. This is what counts against the retention byte cap.
    pub stored_bytes: u64,
    /// Distinct stacks in the dictionary.
    pub stacks: u64,
    /// Distinct frames in the dictionary.
    pub frames: u64,
    /// Distinct command names in the dictionary.
    pub comms: u64,
    /// Distinct threads `(pid, tid, comm, cgroup)` in the dictionary.
    pub threads: u64,
    /// The dictionaries' share of `stored_bytes`.
    pub dictionary_bytes: u64,
}

/// What [`crate::Store::put_samples`] stored.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampleBatchMeta {
    /// Unique, never reused; `0` means nothing was stored (an empty batch with nothing lost).
    pub id: u64,
    /// The batch's time: its earliest sample (or, for a batch of only lost samples, the
    /// `now_unix_ns` it was written at). Retention and `lost` accounting use it.
    pub start_unix_ns: u64,
    /// Its latest sample (`start_unix_ns` if it has none).
    pub end_unix_ns: u64,
    pub samples: u64,
    pub lost: u64,
    /// CPUs that have a block in this batch, ascending.
    pub cpus: Vec<u32>,
    /// Key + value bytes of the batch's own records (its blocks, table and this metadata);
    /// dictionary entries it added are counted in [`SampleStats::dictionary_bytes`] instead.
    pub stored_bytes: u64,
}
