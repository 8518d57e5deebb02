//! The function probes' contract: the maps an entry probe and a return probe share, the record a
//! sampled call sends to userspace, and the latency histogram's bucket math — here so the kernel
//! and userspace can never disagree on what bucket 417 means.
//!
//! **Buckets are log-linear**: exact below 32 ns, then 16 sub-buckets per power of two, so a
//! bucket spans at most 1/16 of its lower bound and a percentile read at a bucket's midpoint is
//! within ±3.2 % of the true value. 976 buckets cover every `u64` nanosecond count.

/// Entry probes: the uprobe program.
pub const PROG_ENTRY: &str = "loupe_fn_entry";
/// Return probes: the uretprobe program.
pub const PROG_RETURN: &str = "loupe_fn_return";
/// Both at once, on a uprobe session link: the kernel runs it at entry and, only when the entry
/// returned 0, again at the return — so calls sampling skips pay no return trap.
pub const PROG_SESSION: &str = "loupe_fn_session";

/// `Array<u64>` of [`CONFIG_SLOTS`]: [`CONFIG_SAMPLE_EVERY`], [`CONFIG_RECORD_CALLS`],
/// [`CONFIG_NESTED`], [`CONFIG_COUNT_ONLY`].
pub const MAP_PROBE_CONFIG: &str = "PROBE_CONFIG";
/// `LruHashMap<u64 pid_tgid, ThreadCalls>`: each thread's stack of open probed calls.
pub const MAP_PROBE_THREADS: &str = "PROBE_THREADS";
/// `PerCpuArray<FunctionCounters>`, one entry per probed function (the attach cookie).
pub const MAP_PROBE_COUNTERS: &str = "PROBE_COUNTERS";
/// `PerCpuArray<u64>`, `MAX_FUNCTIONS * BUCKETS` entries: function `f`'s bucket `b` at
/// `f * BUCKETS + b`.
pub const MAP_PROBE_HISTOGRAMS: &str = "PROBE_HISTOGRAMS";
/// Ring buffer of [`CallRecord`]s (only when calls are recorded).
pub const MAP_PROBE_CALLS: &str = "PROBE_CALLS";

/// Index in [`MAP_PROBE_CONFIG`]: time 1 outermost call in N (0 or 1: every call).
pub const CONFIG_SAMPLE_EVERY: u32 = 0;
/// Index in [`MAP_PROBE_CONFIG`]: non-zero sends each timed call to [`MAP_PROBE_CALLS`].
pub const CONFIG_RECORD_CALLS: u32 = 1;
/// Index in [`MAP_PROBE_CONFIG`]: non-zero when several functions are probed, so calls can nest
/// and an untimed outermost call must still be followed to its return (to know which later
/// calls are inside it). With one function every call is sampled on its own, and on a session
/// link an untimed call then pays the entry trap alone.
pub const CONFIG_NESTED: u32 = 2;
/// Index in [`MAP_PROBE_CONFIG`]: non-zero counts entries only — no call is pushed or timed and
/// no return is asked for. For Go, whose moving goroutine stacks a return probe's rewritten
/// return address would corrupt.
pub const CONFIG_COUNT_ONLY: u32 = 3;
pub const CONFIG_SLOTS: u32 = 4;

/// Functions one program instance can tell apart (the attach cookie indexes them).
pub const MAX_FUNCTIONS: u32 = 64;
/// Open probed calls a thread can nest before deeper ones are counted but not timed.
pub const MAX_DEPTH: usize = 32;
/// Threads tracked at once (least recently used beyond that: a thread that died inside a
/// probed call leaves an entry the LRU eventually drops).
pub const MAX_THREADS: u32 = 8_192;

/// Histogram buckets per function.
pub const BUCKETS: u32 = 976;
/// Exact buckets below `1 << (SUB_BITS + 1)` ns.
const SUB_BITS: u32 = 4;
const SUB: u64 = 1 << SUB_BITS;

/// One thread's open probed calls, innermost last.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ThreadCalls {
    /// Calls open (may exceed [`MAX_DEPTH`]; only the first `MAX_DEPTH` are timed).
    pub depth: u32,
    /// Non-zero while the outermost open call was chosen for timing: its whole subtree is
    /// timed, so a sampled call's children are always there to rebuild it.
    pub sampled: u32,
    pub entry_ns: [u64; MAX_DEPTH],
    /// The stack pointer at entry (where the return address is): a session program knows its
    /// return by the stack pointer 8 bytes higher, in the same function.
    pub sp: [u64; MAX_DEPTH],
    pub function: [u32; MAX_DEPTH],
}

/// Per function, per CPU.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FunctionCounters {
    /// Every entry, timed or not.
    pub calls: u64,
    /// Returns timed (the histogram's population).
    pub timed: u64,
    pub total_ns: u64,
    pub max_ns: u64,
    /// Timed calls whose record found the ring buffer full.
    pub records_lost: u64,
    /// Returns that did not match the thread's innermost open call (a `longjmp` or an exception
    /// unwound past a probed frame): the thread's stack was reset.
    pub mismatched: u64,
    /// Calls nested deeper than [`MAX_DEPTH`]: counted, not timed.
    pub too_deep: u64,
}

/// One timed call, sent at its return.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallRecord {
    /// `bpf_ktime_get_ns` (`CLOCK_MONOTONIC`) at entry and at return.
    pub entry_ns: u64,
    pub exit_ns: u64,
    pub pid: u32,
    pub tid: u32,
    /// The CPU it returned on.
    pub cpu: u32,
    pub function: u16,
    /// Probed calls open around it on its thread (0: outermost).
    pub depth: u16,
}

/// The histogram bucket of a duration in nanoseconds. Branches only, no loops (the verifier
/// and the return probe's budget both like it so).
#[inline(always)]
pub fn bucket_of(ns: u64) -> u32 {
    if ns < 2 * SUB {
        return ns as u32;
    }
    let exp = log2_floor(ns);
    let sub = (ns >> (exp - SUB_BITS)) & (SUB - 1);
    (exp - SUB_BITS + 1) * SUB as u32 + sub as u32
}

/// The smallest duration that falls in `bucket` (saturating past the last bucket).
pub fn bucket_low(bucket: u32) -> u64 {
    if bucket < 2 * SUB as u32 {
        return bucket as u64;
    }
    let exp = bucket / SUB as u32 + SUB_BITS - 1;
    if exp > 63 {
        return u64::MAX;
    }
    let sub = (bucket % SUB as u32) as u64;
    (1u64 << exp) | (sub << (exp - SUB_BITS))
}

/// One past the largest duration in `bucket`.
pub fn bucket_high(bucket: u32) -> u64 {
    if bucket + 1 >= BUCKETS { u64::MAX } else { bucket_low(bucket + 1) }
}

/// ⌊log₂ v⌋ for v ≥ 1, by binary search over the bit width.
#[inline(always)]
fn log2_floor(mut v: u64) -> u32 {
    let mut r = 0;
    if v >= 1 << 32 {
        v >>= 32;
        r += 32;
    }
    if v >= 1 << 16 {
        v >>= 16;
        r += 16;
    }
    if v >= 1 << 8 {
        v >>= 8;
        r += 8;
    }
    if v >= 1 << 4 {
        v >>= 4;
        r += 4;
    }
    if v >= 1 << 2 {
        v >>= 2;
        r += 2;
    }
    if v >= 1 << 1 {
        r += 1;
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_exact_below_32_and_within_a_sixteenth_above() {
        for ns in 0..32 {
            assert_eq!(bucket_of(ns), ns as u32);
            assert_eq!(bucket_low(ns as u32), ns);
        }
        let mut ns = 32u64;
        while ns < u64::MAX / 3 {
            for v in [ns, ns + 1, ns * 3 / 2, ns * 2 - 1] {
                let b = bucket_of(v);
                assert!(b < BUCKETS, "{v}");
                let (low, high) = (bucket_low(b), bucket_high(b));
                assert!(low <= v && v < high, "{v} in [{low}, {high}) bucket {b}");
                assert!((high - low) * 16 <= low, "bucket {b} [{low}, {high}) wider than 1/16");
            }
            ns = ns * 2 + 7;
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn buckets_are_monotonic_and_contiguous() {
        for b in 1..BUCKETS {
            assert_eq!(bucket_high(b - 1), bucket_low(b));
            assert!(bucket_low(b) > bucket_low(b - 1));
            assert_eq!(bucket_of(bucket_low(b)), b);
            assert_eq!(bucket_of(bucket_low(b) - 1), b - 1);
        }
    }
}
