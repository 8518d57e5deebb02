//! `incast-detector`: ingress bursts (exactly as `burst-detector` finds them) during which many
//! connections were active at once: at least `min_conns` in some slot of the burst.
//!
//! The algorithm is [`loupe_detect::incasts`] (plain Rust, shared with `burst-detector`); this
//! crate is only the wasm glue.

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
            for i in loupe_detect::incasts(
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
