//! `flame`: the flame graph of a range, as weighted stacks (frames leaf first, identical stacks
//! merged) that the host folds into the same tree `loupe profile` draws. With `off_cpu`, of the
//! waits off the CPU instead, each stack weighed by the nanoseconds threads waited in it — the
//! tree `loupe profile --off-cpu` draws.

use std::collections::BTreeMap;

use loupe_udf::{Analysis, Context, Description, Flamegraph, Output, Param, ResultKind, Stacks};

struct Flame;

impl Analysis for Flame {
    fn describe() -> Description {
        Description::new("flame", ResultKind::Flamegraph)
            .summary("Flame graph of the stack samples (or, with off_cpu, the waits off the CPU) of a range")
            .param(Param::unsigned("pid", "only this process (0: all)").default(0u64))
            .param(Param::text("comm", "only this command name (empty: all)").default(""))
            .param(Param::flag("include_idle", "also count idle CPUs").default(false))
            .param(Param::flag("off_cpu", "where threads waited, in ns waited, instead of CPU samples").default(false))
    }

    fn run(ctx: &Context) -> Result<Output, String> {
        let (pid, comm) = (ctx.params.nonzero_u32("pid")?, ctx.params.nonempty_text("comm")?);
        let mut weights: BTreeMap<u32, u64> = BTreeMap::new();
        if ctx.params.flag("off_cpu")? {
            for w in ctx.waits().pid(pid).comm(comm).open()? {
                let weight = weights.entry(w.stack).or_default();
                *weight = weight.saturating_add(w.weight_ns());
            }
        } else {
            let samples = ctx.samples().pid(pid).comm(comm).include_idle(ctx.params.flag("include_idle")?).open()?;
            for s in samples {
                *weights.entry(s.stack).or_default() += 1;
            }
        }
        let mut stacks = Stacks::new();
        stacks.resolve(weights.keys().copied())?;
        let mut flame = Flamegraph::new();
        for (id, weight) in weights {
            flame.add(stacks.get(id).unwrap_or_default(), weight);
        }
        Ok(flame.into())
    }
}

loupe_udf::export_analysis!(Flame);
