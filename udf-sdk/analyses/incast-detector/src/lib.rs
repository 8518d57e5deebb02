//! `incast-detector`: ingress bursts (exactly as `burst-detector` finds them) during which many
//! connections were active at once: at least `min_conns` in some slot of the burst.

/// burst-detector's algorithm, the same source file.
#[path = "../../burst-detector/src/detect.rs"]
pub mod detect;

pub use detect::Burst;

/// An incast: a burst and the most connections seen in one of its slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Incast {
    pub burst: Burst,
    pub max_conns: u64,
}

/// The bursts of a run (see [`detect::detect`]) whose peak `in_conns` over the burst's slots is
/// at least `min_conns`.
pub fn incasts(
    start_ns: u64,
    interval_ns: u64,
    in_bytes: &[u64],
    in_conns: &[u64],
    threshold_bps: u64,
    min_conns: u64,
    min_samples: u64,
) -> Vec<Incast> {
    detect::detect(start_ns, interval_ns, in_bytes, threshold_bps, min_samples)
        .into_iter()
        .map(|burst| Incast {
            burst,
            max_conns: burst.slots().filter_map(|i| in_conns.get(i).copied()).max().unwrap_or(0),
        })
        .filter(|i| i.max_conns >= min_conns)
        .collect()
}

#[cfg(feature = "guest")]
mod guest {
    use loupe_udf::{Analysis, Context, Description, Output, Param, ResultKind, Table, row};

    struct IncastDetector;

    impl Analysis for IncastDetector {
        fn describe() -> Description {
            Description::new("incast-detector", ResultKind::Table)
                .summary("Incast: ingress bursts with at least `min_conns` connections active in one slot")
                .param(Param::unsigned("threshold_bps", "ingress rate threshold, bytes per second"))
                .param(Param::unsigned("min_conns", "fewest connections in a slot of the burst").default(8u64))
                .param(Param::unsigned("min_samples", "shortest burst reported, in slots").default(1u64))
        }

        fn run(ctx: &Context) -> Result<Output, String> {
            let threshold_bps = ctx.params.u64("threshold_bps")?;
            let min_conns = ctx.params.u64("min_conns")?;
            let min_samples = ctx.params.u64("min_samples")?;
            let mut table = Table::new()
                .column("run_id", "")
                .column("start_ns", "ns")
                .column("samples", "samples")
                .column("bytes", "bytes")
                .column("max_conns", "connections");
            for run in ctx.runs().open()? {
                let m = &run.metrics;
                for i in super::incasts(
                    run.start_ns,
                    run.interval_ns,
                    &m.in_bytes,
                    &m.in_conns,
                    threshold_bps,
                    min_conns,
                    min_samples,
                ) {
                    table.push_row(row![run.id, i.burst.start_ns, i.burst.samples, i.burst.bytes, i.max_conns]);
                }
            }
            Ok(table.into())
        }
    }

    loupe_udf::export_analysis!(IncastDetector);
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
}
