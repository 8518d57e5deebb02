//! Hostile: a fleet analysis whose result on the host named `big_host` is 1 MiB of text — within
//! the output limit of one host, over the fleet's partial limit (768 KiB) — and a few bytes on
//! every other host. The fleet must refuse that host's partial with a clear error and merge the
//! rest, not wait for a reply NATS would have dropped. With `read_in_merge`, its `merge` tries
//! to read runs, which the host refuses.

use loupe_udf::{Analysis, Context, Description, Merge, Output, Param, ResultKind};

/// 1 MiB.
pub const SIZE: usize = 1 << 20;

struct HugePartial;

impl Analysis for HugePartial {
    fn describe() -> Description {
        Description::new("hostile-huge-partial", ResultKind::Text)
            .summary("1 MiB of text on one host (tests the fleet's partial limit)")
            .param(Param::text("big_host", "the host whose result is too large").default(""))
            .param(Param::flag("read_in_merge", "merge() tries to read runs (which it must not)").default(false))
    }

    fn run(ctx: &Context) -> Result<Output, String> {
        let me = loupe_udf::host_info().hostname;
        if me == ctx.params.text("big_host")? {
            return Ok(Output::text("x".repeat(SIZE)));
        }
        Ok(Output::text("1"))
    }
}

impl Merge for HugePartial {
    /// The number of host results merged (each "1", or a count from an earlier merge).
    fn merge(ctx: &Context, partials: Vec<Output>) -> Result<Output, String> {
        if ctx.params.flag("read_in_merge")? {
            let runs = ctx.runs().open().map_err(|e| format!("reading runs: {e}"))?;
            return Ok(Output::text(format!("read {} runs inside merge", runs.count())));
        }
        let mut n = 0u64;
        for p in partials {
            let Output::Text(t) = p else { return Err("a text partial".into()) };
            n += t.parse::<u64>().map_err(|_| format!("not a count: {} bytes", t.len()))?;
        }
        Ok(Output::text(n.to_string()))
    }
}

loupe_udf::export_fleet_analysis!(HugePartial);
