//! Function probes, from a request to a stored session: [`target`] resolves and checks the
//! functions, [`placement`] proves where on each the entry probe can go, [`session`] attaches the kernel's probes and watches them (cost budget, the
//! target's exit, the clock), [`calls`] rebuilds nested calls from per-call records, and
//! [`cost`] measures what a probe costs on this host. `docs/probes.md` has the figures.

pub mod calls;
pub mod cost;
pub mod placement;
pub mod session;
pub mod target;

pub use session::{Ended, ProbeError, ProbeOptions, ProbeRun};

/// The median of a log-linear histogram, read at its bucket's midpoint.
pub fn median_of(buckets: &[(u32, u64)]) -> Option<u64> {
    quantile_of(buckets, 0.5)
}

/// The `q` quantile (0–1) of a log-linear histogram, read at its bucket's midpoint.
pub fn quantile_of(buckets: &[(u32, u64)], q: f64) -> Option<u64> {
    use loupe_bpf::{bucket_high, bucket_low};
    let total: u64 = buckets.iter().map(|b| b.1).sum();
    if total == 0 {
        return None;
    }
    let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
    let mut seen = 0;
    for &(bucket, count) in buckets {
        seen += count;
        if seen >= rank {
            let (low, high) = (bucket_low(bucket), bucket_high(bucket));
            return Some(low + (high.saturating_sub(low)) / 2);
        }
    }
    buckets.last().map(|b| bucket_low(b.0))
}
