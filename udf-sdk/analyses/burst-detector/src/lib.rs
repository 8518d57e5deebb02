//! `burst-detector`: ingress bursts — maximal stretches of consecutive slots whose rate is above
//! `threshold_bps` — in every run of the range, oldest run first.
//!
//! The algorithm ([`detect`]) is plain Rust; the wasm glue is behind the default `guest`
//! feature, so `burst-detector = { path = …, default-features = false }` gives native code the
//! exact same detection without the SDK.

pub mod detect;

pub use detect::{Burst, detect, rate_bps};

#[cfg(feature = "guest")]
mod guest {
    use loupe_udf::{Analysis, Context, Description, Output, Param, ResultKind, Table, row};

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
            for run in ctx.runs().open()? {
                for b in super::detect(run.start_ns, run.interval_ns, &run.metrics.in_bytes, threshold_bps, min_samples)
                {
                    table.push_row(row![run.id, b.start_ns, b.samples, b.duration_ns, b.bytes, b.peak_bps]);
                }
            }
            Ok(table.into())
        }
    }

    loupe_udf::export_analysis!(BurstDetector);
}
