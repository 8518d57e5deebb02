//! Incast: ingress bursts (exactly as [`detect`] finds them) during which many connections were
//! active at once — at least `min_conns` in some slot of the burst.

use crate::burst::{Burst, detect};

/// An incast: a burst and the most connections seen in one of its slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Incast {
    pub burst: Burst,
    pub max_conns: u64,
}

/// The bursts of a run (see [`detect`]) whose peak `in_conns` over the burst's slots is at least
/// `min_conns`.
pub fn incasts(
    start_ns: u64,
    interval_ns: u64,
    in_bytes: &[u64],
    in_conns: &[u64],
    threshold_bps: u64,
    min_conns: u64,
    min_samples: u64,
) -> Vec<Incast> {
    detect(start_ns, interval_ns, in_bytes, threshold_bps, min_samples)
        .into_iter()
        .map(|burst| Incast {
            burst,
            max_conns: burst.slots().filter_map(|i| in_conns.get(i).copied()).max().unwrap_or(0),
        })
        .filter(|i| i.max_conns >= min_conns)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_bursts_with_enough_connections() {
        // 1 ms slots, threshold 1 MB/s (1000 bytes per slot).
        let bytes = [2000, 2000, 0, 3000, 0, 4000, 4000];
        let conns = [3, 9, 50, 2, 0, 8, 1];
        let got: Vec<(usize, u64, u64)> = incasts(0, 1_000_000, &bytes, &conns, 1_000_000, 8, 1)
            .iter()
            .map(|i| (i.burst.first_slot, i.burst.samples, i.max_conns))
            .collect();
        // Slot 2's 50 connections are outside any burst; the burst at slot 3 peaks at 2.
        assert_eq!(got, vec![(0, 2, 9), (5, 2, 8)]);
        assert_eq!(incasts(0, 1_000_000, &bytes, &conns, 1_000_000, 8, 3), vec![]);
        assert_eq!(incasts(0, 1_000_000, &bytes, &conns, 1_000_000, 0, 1).len(), 3);
    }

    #[test]
    fn missing_connection_counts_are_zero() {
        // A run whose in_conns is shorter than in_bytes (or empty): those slots count 0.
        let bytes = [2000, 2000, 2000];
        assert_eq!(incasts(0, 1_000_000, &bytes, &[], 1_000_000, 1, 1), vec![]);
        let got = incasts(0, 1_000_000, &bytes, &[0, 0, 0], 1_000_000, 0, 1);
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].burst.samples, got[0].max_conns), (3, 0));
    }
}
