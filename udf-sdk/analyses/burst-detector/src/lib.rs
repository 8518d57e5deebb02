//! `burst-detector`: ingress bursts — maximal stretches of consecutive slots whose rate is above
//! `threshold_bps` — in every run of the range, oldest run first.
//!
//! The algorithm is [`loupe_detect::detect`] (plain Rust, shared with `incast-detector` and run
//! natively by the host's benchmark); this crate is only the wasm glue.

use loupe_udf::{Analysis, Context, Description, Output, Param, ResultKind, SeriesSet, Table, row};

struct BurstDetector;

impl Analysis for BurstDetector {
    fn describe() -> Description {
        Description::new("burst-detector", ResultKind::Table)
            .summary("Ingress bursts: stretches of consecutive slots above a rate threshold")
            .param(Param::unsigned("threshold_bps", "ingress rate threshold, bytes per second"))
            .param(Param::unsigned("min_samples", "shortest burst reported, in slots").default(1u64))
    }

    fn run(ctx: &Context) -> Result<Output, String> {
        let threshold_bps = ctx.params.u64("threshold_bps")?;
        let min_samples = ctx.params.u64("min_samples")?;
        let mut table = Table::new()
            .column("run_id", "")
            .column("start_ns", "ns")
            .column("samples", "samples")
            .column("duration_ns", "ns")
            .column("bytes", "bytes")
            .column("peak_bps", "bytes/s");
        // Only the ingress bytes: the host then neither sums nor copies the other ten series.
        for run in ctx.runs().series(SeriesSet::IN_BYTES).open()? {
            for b in
                loupe_detect::detect(run.start_ns, run.interval_ns, &run.metrics.in_bytes, threshold_bps, min_samples)
            {
                table.push_row(row![run.id, b.start_ns, b.samples, b.duration_ns, b.bytes, b.peak_bps]);
            }
        }
        Ok(table.into())
    }
}

loupe_udf::export_analysis!(BurstDetector);
