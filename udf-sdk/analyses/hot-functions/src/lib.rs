//! `hot-functions`: the functions the CPUs were running in a range. `self` counts the samples
//! where a function is the leaf frame; `total` the samples where it is anywhere on the stack
//! (once per sample, however deep the recursion).
//!
//! Samples are streamed and counted per stack id; the distinct stacks are then resolved once.

use std::collections::BTreeMap;

use loupe_udf::{Analysis, Context, Description, Frame, Output, Param, ResultKind, Stacks, Table, row};

/// The function name given to samples with an empty stack.
pub const UNKNOWN: &str = "[unknown]";

#[derive(Clone, Debug, PartialEq)]
pub struct HotFunction {
    pub function: String,
    /// The module of the function's first frame seen (stacks in the order given, leaf first).
    pub module: String,
    pub self_samples: u64,
    pub total_samples: u64,
    /// `self_samples / samples * 100`.
    pub self_percent: f64,
}

/// The hot-function table of `samples` samples given as (frames leaf first, count) per distinct
/// stack: sorted by self samples (descending), then function name; at most `top` rows.
pub fn hot_functions<'a>(
    stacks: impl IntoIterator<Item = (&'a [Frame], u64)>,
    samples: u64,
    top: u64,
) -> Vec<HotFunction> {
    // name → (module, self, total)
    let mut by_name: BTreeMap<&str, (&str, u64, u64)> = BTreeMap::new();
    let mut seen: Vec<&str> = Vec::new();
    for (frames, count) in stacks {
        if frames.is_empty() {
            let e = by_name.entry(UNKNOWN).or_insert(("", 0, 0));
            e.1 += count;
            e.2 += count;
            continue;
        }
        by_name.entry(&frames[0].function).or_insert((&frames[0].module, 0, 0)).1 += count;
        seen.clear();
        for f in frames {
            if !seen.contains(&f.function.as_str()) {
                seen.push(&f.function);
                by_name.entry(&f.function).or_insert((&f.module, 0, 0)).2 += count;
            }
        }
    }
    let mut rows: Vec<HotFunction> = by_name
        .into_iter()
        .map(|(function, (module, s, t))| HotFunction {
            function: function.to_string(),
            module: module.to_string(),
            self_samples: s,
            total_samples: t,
            self_percent: if samples == 0 { 0.0 } else { s as f64 / samples as f64 * 100.0 },
        })
        .collect();
    // by_name is in name order and the sort is stable: ties stay sorted by name.
    rows.sort_by_key(|r| std::cmp::Reverse(r.self_samples));
    rows.truncate(usize::try_from(top).unwrap_or(usize::MAX));
    rows
}

struct HotFunctions;

impl Analysis for HotFunctions {
    fn describe() -> Description {
        Description::new("hot-functions", ResultKind::Table)
            .summary("Hot functions of a range: samples where each function is the leaf (self) or on the stack (total)")
            .param(Param::unsigned("top", "rows at most").default(20u64))
            .param(Param::unsigned("pid", "only this process (0: all)").default(0u64))
            .param(Param::text("comm", "only this command name (empty: all)").default(""))
            .param(Param::flag("include_idle", "also count idle CPUs").default(false))
    }

    fn run(ctx: &Context) -> Result<Output, String> {
        let top = ctx.params.u64("top")?;
        let mut samples = ctx
            .samples()
            .pid(ctx.params.nonzero_u32("pid")?)
            .comm(ctx.params.nonempty_text("comm")?)
            .include_idle(ctx.params.flag("include_idle")?)
            .open()?;
        let mut counts: BTreeMap<u32, u64> = BTreeMap::new();
        let mut n = 0u64;
        for s in samples.by_ref() {
            *counts.entry(s.stack).or_default() += 1;
            n += 1;
        }
        let mut stacks = Stacks::new();
        stacks.resolve(counts.keys().copied())?;
        loupe_udf::debug!("{n} samples ({} lost), {} distinct stacks", samples.lost(), counts.len());
        let rows = hot_functions(counts.iter().map(|(id, c)| (stacks.get(*id).unwrap_or_default(), *c)), n, top);
        let mut table = Table::new()
            .column("function", "")
            .column("module", "")
            .column("self_samples", "samples")
            .column("total_samples", "samples")
            .column("self_percent", "%");
        for r in rows {
            table.push_row(row![r.function, r.module, r.self_samples, r.total_samples, r.self_percent]);
        }
        Ok(table.into())
    }
}

loupe_udf::export_analysis!(HotFunctions);

#[cfg(test)]
mod tests {
    use super::*;

    fn stack(names: &[&str]) -> Vec<Frame> {
        names.iter().map(|n| Frame::new(n, "app", false)).collect()
    }

    #[test]
    fn self_total_recursion_unknown_and_order() {
        let a = stack(&["hot", "work", "main"]);
        let b = stack(&["work", "main"]);
        let c = stack(&["rec", "rec", "main"]);
        let d = stack(&["alpha", "main"]);
        let stacks: Vec<(&[Frame], u64)> = vec![(&a, 3), (&b, 2), (&c, 1), (&[], 2), (&d, 2)];
        let rows = hot_functions(stacks.clone(), 10, 20);
        let got: Vec<(&str, u64, u64)> =
            rows.iter().map(|r| (r.function.as_str(), r.self_samples, r.total_samples)).collect();
        assert_eq!(
            got,
            vec![("hot", 3, 3), ("[unknown]", 2, 2), ("alpha", 2, 2), ("work", 2, 5), ("rec", 1, 1), ("main", 0, 8)]
        );
        assert_eq!(rows[0].self_percent, 30.0);
        assert_eq!(rows[0].module, "app");
        assert_eq!(rows[1].module, "");
        assert_eq!(hot_functions(stacks.clone(), 10, 2).len(), 2);
        assert_eq!(hot_functions(stacks, 10, 0).len(), 0);
        assert!(hot_functions(Vec::<(&[Frame], u64)>::new(), 0, 20).is_empty());
    }
}
