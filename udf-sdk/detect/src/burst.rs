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

/// The fewest bytes that make a slot of `interval_ns` hot (its [`rate_bps`] strictly above
/// `threshold_bps`), or `None` when no `u64` is enough (or the interval is 0).
///
/// *Why:* the rate floors `bytes · 10⁹ / interval_ns`, and a floored quotient exceeds `t`
/// exactly when `bytes · 10⁹ ≥ (t + 1) · interval_ns`. One division per run then replaces one
/// per slot — a 128-bit division, which wasm has no instruction for (a library call there:
/// half of what the burst detector cost in wasm).
pub fn hot_bytes(threshold_bps: u64, interval_ns: u64) -> Option<u64> {
    if interval_ns == 0 {
        return None;
    }
    // (2⁶⁴) · (2⁶⁴ − 1) < 2¹²⁸: no overflow.
    let need = (threshold_bps as u128 + 1) * interval_ns as u128;
    u64::try_from(need.div_ceil(1_000_000_000)).ok()
}

/// Every burst of a run, in slot order. A slot is hot when its rate is strictly greater than
/// `threshold_bps`; a burst is a maximal stretch of hot slots at least `min_samples` long
/// (`min_samples` 0 counts as 1). A run with `interval_ns` 0 has no bursts.
pub fn detect(start_ns: u64, interval_ns: u64, in_bytes: &[u64], threshold_bps: u64, min_samples: u64) -> Vec<Burst> {
    let mut bursts = Vec::new();
    let Some(hot) = hot_bytes(threshold_bps, interval_ns) else { return bursts };
    let min_samples = min_samples.max(1);
    let mut from = 0;
    while let Some(f) = in_bytes[from..].iter().position(|&b| b >= hot).map(|p| from + p) {
        let end = in_bytes[f..].iter().position(|&b| b < hot).map_or(in_bytes.len(), |p| f + p);
        from = end;
        let n = (end - f) as u64;
        if n < min_samples {
            continue;
        }
        let slots = &in_bytes[f..end];
        // The rate grows with the bytes: the peak is the fullest slot's.
        let peak = rate_bps(slots.iter().copied().max().unwrap_or(0), interval_ns);
        bursts.push(Burst {
            first_slot: f,
            start_ns: start_ns.wrapping_add((f as u64).wrapping_mul(interval_ns)),
            samples: n,
            duration_ns: n.saturating_mul(interval_ns),
            bytes: slots.iter().fold(0u64, |s, &b| s.saturating_add(b)),
            peak_bps: u64::try_from(peak).unwrap_or(u64::MAX),
        });
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

    /// The definition, slot by slot: what `detect` must agree with.
    fn by_definition(interval_ns: u64, in_bytes: &[u64], threshold_bps: u64) -> Vec<(usize, u64)> {
        let hot: Vec<bool> = in_bytes.iter().map(|&b| rate_bps(b, interval_ns) > threshold_bps as u128).collect();
        let mut out = Vec::new();
        let mut i = 0;
        while i < hot.len() {
            if hot[i] {
                let f = i;
                while i < hot.len() && hot[i] {
                    i += 1;
                }
                out.push((f, (i - f) as u64));
            } else {
                i += 1;
            }
        }
        out
    }

    #[test]
    fn hot_slots_match_the_rate_definition_at_every_edge() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..2000 {
            let interval_ns = [1, 3, 999, 1_000, MS, 100_000, 7 * MS + 1, next() >> (next() % 64)][next() as usize % 8];
            let threshold_bps =
                [0, 1, 999_999, 1_000_000, 1_000_000_001, u64::MAX, next() >> (next() % 64)][next() as usize % 7];
            // Bytes around the boundary, where floor rounding decides.
            let edge = hot_bytes(threshold_bps, interval_ns).unwrap_or(u64::MAX);
            let bytes: Vec<u64> = (0..40)
                .map(|_| match next() % 4 {
                    0 => edge.saturating_sub(next() % 3),
                    1 => edge.saturating_add(next() % 3),
                    2 => next() >> (next() % 64),
                    _ => 0,
                })
                .collect();
            let got: Vec<(usize, u64)> =
                detect(0, interval_ns, &bytes, threshold_bps, 1).iter().map(|b| (b.first_slot, b.samples)).collect();
            assert_eq!(got, by_definition(interval_ns, &bytes, threshold_bps), "{interval_ns} ns, {threshold_bps} B/s");
        }
        assert_eq!(hot_bytes(1_000_000, MS), Some(1_001), "1 MB/s over 1 ms: 1,000 bytes is not above it");
        assert_eq!(hot_bytes(u64::MAX, u64::MAX), None);
        assert_eq!(hot_bytes(5, 0), None);
    }

    #[test]
    fn huge_values_do_not_overflow() {
        let b = detect(0, 1, &[u64::MAX, u64::MAX], u64::MAX, 1);
        assert_eq!(b.len(), 1);
        assert_eq!((b[0].bytes, b[0].peak_bps), (u64::MAX, u64::MAX));
    }
}
