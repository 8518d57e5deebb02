//! `flame`: the flame graph of a range, as weighted stacks (frames leaf first, identical stacks
//! merged) that the host folds into the same tree `loupe profile` draws.

use std::collections::BTreeMap;

use loupe_udf::{Analysis, Context, Description, Flamegraph, Output, Param, ResultKind, Stacks};

struct Flame;

impl Analysis for Flame {
    fn describe() -> Description {
        Description::new("flame", ResultKind::Flamegraph)
            .summary("Flame graph of the stack samples of a range")
            .param(Param::unsigned("pid", "only this process (0: all)").default(0u64))
            .param(Param::text("comm", "only this command name (empty: all)").default(""))
            .param(Param::flag("include_idle", "also count idle CPUs").default(false))
    }

    fn run(ctx: &Context) -> Result<Output, String> {
        let samples = ctx
            .samples()
            .pid(ctx.params.nonzero_u32("pid")?)
            .comm(ctx.params.nonempty_text("comm")?)
            .include_idle(ctx.params.flag("include_idle")?)
            .open()?;
        let mut counts: BTreeMap<u32, u64> = BTreeMap::new();
        for s in samples {
            *counts.entry(s.stack).or_default() += 1;
        }
        let mut stacks = Stacks::new();
        stacks.resolve(counts.keys().copied())?;
        let mut flame = Flamegraph::new();
        for (id, count) in counts {
            flame.add(stacks.get(id).unwrap_or_default(), count);
        }
        Ok(flame.into())
    }
}

loupe_udf::export_analysis!(Flame);
