//! `nic-stall-detector`: receive stalls — at least `min_samples` consecutive slots in which the
//! host sent packets but received none (`in_packets == 0 && out_packets > 0`).

/// A maximal stretch of stalled slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stall {
    pub first_slot: usize,
    /// `start_ns + first_slot * interval_ns`.
    pub start_ns: u64,
    pub samples: u64,
    /// `samples * interval_ns`.
    pub duration_ns: u64,
    /// Packets sent during the stall.
    pub out_packets: u64,
}

/// Every stall of a run at least `min_samples` slots long (0 counts as 1), in slot order.
pub fn stalls(
    start_ns: u64,
    interval_ns: u64,
    in_packets: &[u64],
    out_packets: &[u64],
    min_samples: u64,
) -> Vec<Stall> {
    let min_samples = min_samples.max(1);
    let n = in_packets.len().min(out_packets.len());
    let mut out = Vec::new();
    let mut first: Option<usize> = None;
    for i in 0..=n {
        let stalled = i < n && in_packets[i] == 0 && out_packets[i] > 0;
        match (stalled, first) {
            (true, None) => first = Some(i),
            (false, Some(f)) => {
                first = None;
                let len = (i - f) as u64;
                if len >= min_samples {
                    out.push(Stall {
                        first_slot: f,
                        start_ns: start_ns.wrapping_add((f as u64).wrapping_mul(interval_ns)),
                        samples: len,
                        duration_ns: len.saturating_mul(interval_ns),
                        out_packets: out_packets[f..i].iter().fold(0u64, |s, &p| s.saturating_add(p)),
                    });
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(feature = "guest")]
mod guest {
    use loupe_udf::{Analysis, Context, Description, Output, Param, ResultKind, Table, row};

    struct NicStallDetector;

    impl Analysis for NicStallDetector {
        fn describe() -> Description {
            Description::new("nic-stall-detector", ResultKind::Table)
                .summary("Receive stalls: consecutive slots that sent packets but received none")
                .param(Param::unsigned("min_samples", "shortest stall reported, in slots").default(5u64))
        }

        fn run(ctx: &Context) -> Result<Output, String> {
            let min_samples = ctx.params.u64("min_samples")?;
            let mut table = Table::new()
                .column("run_id", "")
                .column("start_ns", "ns")
                .column("samples", "samples")
                .column("duration_ns", "ns")
                .column("out_packets", "packets");
            for run in ctx.runs().open()? {
                let m = &run.metrics;
                for s in super::stalls(run.start_ns, run.interval_ns, &m.in_packets, &m.out_packets, min_samples) {
                    table.push_row(row![run.id, s.start_ns, s.samples, s.duration_ns, s.out_packets]);
                }
            }
            Ok(table.into())
        }
    }

    loupe_udf::export_analysis!(NicStallDetector);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(in_p: &[u64], out_p: &[u64], k: u64) -> Vec<(usize, u64, u64)> {
        stalls(0, 10, in_p, out_p, k).iter().map(|s| (s.first_slot, s.samples, s.out_packets)).collect()
    }

    #[test]
    fn stalls_need_sending_and_no_receiving() {
        let in_p = [0, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        let out_p = [5, 5, 5, 5, 0, 1, 2, 3, 4, 5];
        // Slot 3 received, slot 4 sent nothing: neither is stalled. The last stall ends the run.
        assert_eq!(spans(&in_p, &out_p, 1), vec![(0, 3, 15), (5, 5, 15)]);
        assert_eq!(spans(&in_p, &out_p, 4), vec![(5, 5, 15)]);
        assert_eq!(spans(&in_p, &out_p, 5), vec![(5, 5, 15)]);
        assert_eq!(spans(&in_p, &out_p, 6), vec![]);
        let s = stalls(1_000, 10, &in_p, &out_p, 5)[0];
        assert_eq!((s.start_ns, s.duration_ns), (1_050, 50));
    }

    #[test]
    fn idle_and_empty_runs_have_no_stalls() {
        assert_eq!(spans(&[0; 8], &[0; 8], 1), vec![]);
        assert_eq!(spans(&[], &[], 1), vec![]);
        assert_eq!(spans(&[0, 0], &[1, 1], 0), vec![(0, 2, 2)]);
    }
}
