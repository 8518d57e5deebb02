//! Burst detection over one run's per-slot ingress bytes: what `burst-detector` answers, and
//! what `incast-detector` starts from.

/// A maximal stretch of consecutive hot slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Burst {
    /// Index of the first slot of the burst.
    pub first_slot: usize,
    /// `start_ns + first_slot * interval_ns`.
    pub start_ns: u64,
    /// Slots in the burst.
    pub samples: u64,
    /// `samples * interval_ns`.
    pub duration_ns: u64,
    /// Sum of the slots' bytes.
    pub bytes: u64,
    /// The highest slot rate in the burst, bytes per second (saturating at `u64::MAX`).
    pub peak_bps: u64,
}

impl Burst {
    /// The slot indices of the burst.
    pub fn slots(&self) -> std::ops::Range<usize> {
        self.first_slot..self.first_slot + self.samples as usize
    }
}

/// The rate of a slot of `bytes` over `interval_ns`, in bytes per second (`u128` math, floor).
pub fn rate_bps(bytes: u64, interval_ns: u64) -> u128 {
    if interval_ns == 0 { 0 } else { bytes as u128 * 1_000_000_000 / interval_ns as u128 }
}

/// Every burst of a run, in slot order. A slot is hot when its rate is strictly greater than
/// `threshold_bps`; a burst is a maximal stretch of hot slots at least `min_samples` long
/// (`min_samples` 0 counts as 1). A run with `interval_ns` 0 has no bursts.
pub fn detect(start_ns: u64, interval_ns: u64, in_bytes: &[u64], threshold_bps: u64, min_samples: u64) -> Vec<Burst> {
    let mut bursts = Vec::new();
    if interval_ns == 0 {
        return bursts;
    }
    let min_samples = min_samples.max(1);
    let threshold = threshold_bps as u128;
    let mut first: Option<usize> = None;
    // One past the end closes a burst that reaches the run's last slot.
    for i in 0..=in_bytes.len() {
        let hot = in_bytes.get(i).is_some_and(|&b| rate_bps(b, interval_ns) > threshold);
        match (hot, first) {
            (true, None) => first = Some(i),
            (false, Some(f)) => {
                first = None;
                let n = (i - f) as u64;
                if n >= min_samples {
                    let slots = &in_bytes[f..i];
                    let peak = slots.iter().map(|&b| rate_bps(b, interval_ns)).max().unwrap_or(0);
                    bursts.push(Burst {
                        first_slot: f,
                        start_ns: start_ns.wrapping_add((f as u64).wrapping_mul(interval_ns)),
                        samples: n,
                        duration_ns: n.saturating_mul(interval_ns),
                        bytes: slots.iter().fold(0u64, |s, &b| s.saturating_add(b)),
                        peak_bps: u64::try_from(peak).unwrap_or(u64::MAX),
                    });
                }
            }
            _ => {}
        }
    }
    bursts
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn rate_is_bytes_per_second() {
        assert_eq!(rate_bps(1_000, MS), 1_000_000);
        assert_eq!(rate_bps(1, 3), 333_333_333);
        assert_eq!(rate_bps(u64::MAX, 1), u64::MAX as u128 * 1_000_000_000);
        assert_eq!(rate_bps(5, 0), 0);
    }

    #[test]
    fn bursts_with_exact_threshold_cold() {
        // 1 ms slots, threshold 1 MB/s = 1000 bytes per slot; exactly 1000 is not hot.
        let bytes = [0, 1001, 2000, 0, 1000, 1000, 5000, 0, 1001];
        let b = detect(10_000, MS, &bytes, 1_000_000, 1);
        assert_eq!(
            b,
            vec![
                Burst {
                    first_slot: 1,
                    start_ns: 10_000 + MS,
                    samples: 2,
                    duration_ns: 2 * MS,
                    bytes: 3001,
                    peak_bps: 2_000_000
                },
                Burst {
                    first_slot: 6,
                    start_ns: 10_000 + 6 * MS,
                    samples: 1,
                    duration_ns: MS,
                    bytes: 5000,
                    peak_bps: 5_000_000
                },
                // At the run's end.
                Burst {
                    first_slot: 8,
                    start_ns: 10_000 + 8 * MS,
                    samples: 1,
                    duration_ns: MS,
                    bytes: 1001,
                    peak_bps: 1_001_000
                },
            ]
        );
        assert_eq!(b[0].slots(), 1..3);
    }

    #[test]
    fn min_samples_filters_short_bursts() {
        let bytes = [9, 9, 0, 9, 0, 9, 9, 9];
        let starts = |m| detect(0, 100, &bytes, 0, m).iter().map(|b| (b.first_slot, b.samples)).collect::<Vec<_>>();
        assert_eq!(starts(0), vec![(0, 2), (3, 1), (5, 3)]);
        assert_eq!(starts(1), vec![(0, 2), (3, 1), (5, 3)]);
        assert_eq!(starts(2), vec![(0, 2), (5, 3)]);
        assert_eq!(starts(3), vec![(5, 3)]);
        assert_eq!(starts(4), vec![]);
    }

    #[test]
    fn whole_run_and_empty_cases() {
        let b = detect(0, 100_000, &[7; 2000], 0, 1);
        assert_eq!(b.len(), 1);
        assert_eq!((b[0].samples, b[0].duration_ns, b[0].bytes), (2000, 200_000_000, 14_000));
        assert_eq!(b[0].peak_bps, 70_000);
        assert!(detect(0, 100_000, &[], 0, 1).is_empty());
        assert!(detect(0, 100_000, &[0; 10], 0, 1).is_empty(), "zero bytes is never above a threshold");
        assert!(detect(0, 0, &[7; 10], 0, 1).is_empty(), "no interval, no rate");
    }

    #[test]
    fn huge_values_do_not_overflow() {
        let b = detect(0, 1, &[u64::MAX, u64::MAX], u64::MAX, 1);
        assert_eq!(b.len(), 1);
        assert_eq!((b[0].bytes, b[0].peak_bps), (u64::MAX, u64::MAX));
    }
}
