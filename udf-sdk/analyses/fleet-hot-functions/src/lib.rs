//! `fleet-hot-functions` (ByteDance's hot functions and "datacenter tax"): stack samples of a
//! range counted by their leaf frame — per function, per shared library (the leaf's module: how
//! much CPU goes to libc, zlib, the kernel, …) and per host, and over all hosts (host `*`), each
//! with its percent of the host's (or all hosts') samples.
//!
//! Every figure is a count, so `merge` sums them: exact, in any order and grouping. Each host
//! keeps its `top` functions and libraries and counts the rest as `[other]` (exact when no host
//! has more). The algorithm is [`loupe_detect::fleet_hot`].

use std::collections::BTreeMap;

use loupe_detect::fleet_hot::{self, Counts, Kind};
use loupe_udf::{Analysis, Cell, Context, Description, Merge, Output, Param, ResultKind, Stacks, Table, row};

struct FleetHotFunctions;

const COLUMNS: [(&str, &str); 6] =
    [("kind", ""), ("function", ""), ("module", ""), ("host", ""), ("samples", "samples"), ("percent", "%")];

fn table(counts: &Counts) -> Output {
    let mut t = Table::new();
    for (name, unit) in COLUMNS {
        t = t.column(name, unit);
    }
    for ((kind, function, module, host), n, percent) in fleet_hot::rows(counts) {
        t.push_row(row![kind.name(), function.as_str(), module.as_str(), host.as_str(), n, percent]);
    }
    t.into()
}

/// Adds a partial result (made by [`table`], here or on another host) into `counts`: one map
/// for every partial of a merge, each row's strings moved in, not copied.
fn parse_into(counts: &mut Counts, output: Output) -> Result<(), String> {
    let Output::Table(t) = output else { return Err("a fleet-hot-functions partial is a table".into()) };
    for r in t.rows {
        let [Cell::Text(kind), Cell::Text(function), Cell::Text(module), Cell::Text(host), Cell::Unsigned(n), _] =
            <[Cell; 6]>::try_from(r).map_err(|r| format!("a row of {} cells, not 6", r.len()))?
        else {
            return Err("a fleet-hot-functions row of the wrong types".into());
        };
        let kind = Kind::parse(&kind).ok_or_else(|| format!("unknown row kind {kind:?}"))?;
        *counts.entry((kind, function, module, host)).or_default() += n;
    }
    Ok(())
}

impl Analysis for FleetHotFunctions {
    fn describe() -> Description {
        Description::new("fleet-hot-functions", ResultKind::Table)
            .summary(
                "Samples per function and shared library, per host and over all hosts (run with loupe fleet invoke)",
            )
            .param(Param::unsigned("top", "functions and libraries kept per host (the rest: [other])").default(200u64))
            .param(Param::flag("include_idle", "also count idle CPUs").default(false))
            .param(
                Param::flag(
                    "per_host_functions",
                    "functions per host too, not only over all hosts (a rack: yes; a datacenter: no)",
                )
                .default(true),
            )
    }

    fn run(ctx: &Context) -> Result<Output, String> {
        let top = usize::try_from(ctx.params.u64("top")?).unwrap_or(usize::MAX);
        let mut samples = ctx.samples().include_idle(ctx.params.flag("include_idle")?).open()?;
        let mut per_stack: BTreeMap<u32, u64> = BTreeMap::new();
        for s in samples.by_ref() {
            *per_stack.entry(s.stack).or_default() += 1;
        }
        let mut stacks = Stacks::new();
        stacks.resolve(per_stack.keys().copied())?;
        let leaves = per_stack.iter().map(|(id, &n)| match stacks.get(*id).and_then(|frames| frames.first()) {
            Some(leaf) => (leaf.function.as_str(), leaf.module.as_str(), n),
            None => ("[unknown]", "", n),
        });
        let host = loupe_udf::host_info().hostname;
        Ok(table(&fleet_hot::host_counts(&host, leaves, top, ctx.params.flag("per_host_functions")?)))
    }
}

impl Merge for FleetHotFunctions {
    fn merge(_ctx: &Context, partials: Vec<Output>) -> Result<Output, String> {
        let mut counts = Counts::new();
        for p in partials {
            parse_into(&mut counts, p)?;
        }
        Ok(table(&counts))
    }
}

loupe_udf::export_fleet_analysis!(FleetHotFunctions);
