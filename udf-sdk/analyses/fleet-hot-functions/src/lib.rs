//! `fleet-hot-functions` (ByteDance's hot functions and "datacenter tax"): stack samples of a
//! range counted by their leaf frame — per function, per shared library (the leaf's module: how
//! much CPU goes to libc, zlib, the kernel, …) and per host, and over all hosts (host `*`), each
//! with its percent of the host's (or all hosts') samples.
//!
//! Every figure is a count, so `merge` sums them: exact, in any order and grouping. Each host
//! keeps its `top` functions and libraries and counts the rest as `[other]` (exact when no host
//! has more). The algorithm is [`loupe_detect::fleet_hot`]. Partials are columnar (the
//! `fleet-batches` world): a datacenter's thousand partials cross into the merging sandbox as
//! one batch of whole lists, their names coded once per partial.

use std::collections::BTreeMap;

use loupe_detect::fleet_hot::{self, Counts, Kind};
use loupe_udf::{
    ColumnarAnalysis, Columns, Context, Description, FastMap, Interner, Param, Partial, ResultKind, Stacks,
};

struct FleetHotFunctions;

/// Kind, function, module, host: the names as ids of [`Merging::names`].
type Key = (Kind, u32, u32, u32);

/// Counts being merged, by interned names: each partial's dictionaries are looked up once, its
/// rows then add numbers only, and the result is sorted and written from the ids. Measured
/// natively on 1,000 partials: string-keyed maps and sorts spent half the merge in `memcmp`.
#[derive(Default)]
struct Merging {
    names: Interner,
    counts: FastMap<Key, u64>,
}

impl Merging {
    /// One host's counts, as [`fleet_hot::host_counts`] makes them.
    fn of_counts(counts: &Counts) -> Merging {
        let mut m = Merging::default();
        for ((kind, function, module, host), &n) in counts {
            let key = (*kind, m.names.id(function), m.names.id(module), m.names.id(host));
            *m.counts.entry(key).or_default() += n;
        }
        m
    }

    /// Adds a partial made by [`Merging::columns`], here or on another host.
    fn add(&mut self, c: &Partial) -> Result<(), String> {
        let text = |name: &str| c.require(name).and_then(|v| v.text());
        let (kind, function, module, host) = (text("kind")?, text("function")?, text("module")?, text("host")?);
        let samples = c.require("samples")?.u64s()?;
        let n = samples.len();
        if [kind.codes, function.codes, module.codes, host.codes].iter().any(|codes| codes.len() != n) {
            return Err("a fleet-hot-functions partial with columns of different lengths".into());
        }
        let kinds: Vec<Option<Kind>> = kind.dictionary.iter().map(Kind::parse).collect();
        let functions = self.names.ids(function.dictionary.iter());
        let modules = self.names.ids(module.dictionary.iter());
        let hosts = self.names.ids(host.dictionary.iter());
        for i in 0..n {
            let bad = || format!("row {i} of a fleet-hot-functions partial codes past its dictionary");
            let k = kinds.get(kind.codes[i] as usize).copied().ok_or_else(bad)?.ok_or("an unknown row kind")?;
            let f = *functions.get(function.codes[i] as usize).ok_or_else(bad)?;
            let m = *modules.get(module.codes[i] as usize).ok_or_else(bad)?;
            let h = *hosts.get(host.codes[i] as usize).ok_or_else(bad)?;
            *self.counts.entry((k, f, m, h)).or_default() += samples[i];
        }
        Ok(())
    }

    /// The result as columns — kind, function, module and host coded as text, samples and
    /// percent — in [`fleet_hot::rows`]' order: host rows, then libraries, then functions,
    /// each by samples (descending) then names; each row's percent of its host's samples.
    fn columns(mut self) -> Columns {
        let empty = self.names.id("");
        let totals: FastMap<u32, u64> = self
            .counts
            .iter()
            .filter(|((k, f, m, _), _)| *k == Kind::Host && *f == empty && *m == empty)
            .map(|(&(_, _, _, h), &n)| (h, n))
            .collect();
        let rank = self.names.ranks();
        let mut rows: Vec<(Key, u64)> = self.counts.into_iter().collect();
        let names = |&(_, f, m, h): &Key| (rank[f as usize], rank[m as usize], rank[h as usize]);
        rows.sort_unstable_by(|a, b| a.0.0.cmp(&b.0.0).then(b.1.cmp(&a.1)).then_with(|| names(&a.0).cmp(&names(&b.0))));
        let percent = rows
            .iter()
            .map(|&((.., h), n)| match totals.get(&h) {
                Some(&of) if of > 0 => n as f64 * 100.0 / of as f64,
                _ => 0.0,
            })
            .collect::<Vec<f64>>();
        let mut kinds = Interner::new();
        let kind_ids: Vec<u32> = rows.iter().map(|((k, ..), _)| kinds.id(k.name())).collect();
        Columns::new()
            .column("kind", "", kinds.column(kind_ids))
            .column("function", "", self.names.column(rows.iter().map(|((_, f, _, _), _)| *f)))
            .column("module", "", self.names.column(rows.iter().map(|((_, _, m, _), _)| *m)))
            .column("host", "", self.names.column(rows.iter().map(|((.., h), _)| *h)))
            .column("samples", "samples", rows.iter().map(|(_, n)| *n).collect::<Vec<u64>>())
            .column("percent", "%", percent)
    }
}

impl ColumnarAnalysis for FleetHotFunctions {
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

    fn run_columns(ctx: &Context) -> Result<Columns, String> {
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
        let counts = fleet_hot::host_counts(&host, leaves, top, ctx.params.flag("per_host_functions")?);
        Ok(Merging::of_counts(&counts).columns())
    }

    fn merge_columns(_ctx: &Context, partials: &[Partial]) -> Result<Columns, String> {
        let mut merging = Merging::default();
        for p in partials {
            merging.add(p)?;
        }
        Ok(merging.columns())
    }
}

loupe_udf::export_fleet_columns!(FleetHotFunctions);

#[cfg(test)]
mod tests {
    use super::*;

    /// A columnar result's rows, decoded.
    fn rows(c: &Columns) -> Vec<(String, String, String, String, u64, f64)> {
        let text = |name: &str, i: usize| c.get(name).unwrap().text().unwrap().get(i).unwrap().to_string();
        let samples = c.get("samples").unwrap().u64s().unwrap();
        let Some(loupe_udf::types::ColumnValues::Float(percent)) = c.get("percent") else { panic!("percent") };
        (0..c.rows())
            .map(|i| (text("kind", i), text("function", i), text("module", i), text("host", i), samples[i], percent[i]))
            .collect()
    }

    fn host(h: usize) -> Counts {
        let leaves: Vec<(String, String, u64)> = (0..40)
            .map(|i| (format!("f{}", (i * 7 + h) % 50), format!("lib{}.so", (i + h) % 6), (i * h % 9) as u64 + 1))
            .collect();
        fleet_hot::host_counts(
            &format!("h{h}"),
            leaves.iter().map(|(f, m, n)| (f.as_str(), m.as_str(), *n)),
            30,
            h % 2 == 0,
        )
    }

    /// The merge in ids writes what the string-keyed algorithm does: the same rows, in the same
    /// order, with the same percents — for one host (as `run-columns` answers) and for many.
    #[test]
    fn the_merge_in_ids_equals_the_algorithm_over_names() {
        let parts: Vec<Counts> = (0..12).map(host).collect();
        let expect = |counts: &Counts| -> Vec<_> {
            fleet_hot::rows(counts)
                .into_iter()
                .map(|((k, f, m, h), n, p)| (k.name().to_string(), f.clone(), m.clone(), h.clone(), n, p))
                .collect()
        };
        assert_eq!(rows(&Merging::of_counts(&parts[3]).columns()), expect(&parts[3]));
        let mut merging = Merging::default();
        for p in &parts {
            merging.add(&Partial::of(&Merging::of_counts(p).columns())).unwrap();
        }
        let merged = rows(&merging.columns());
        assert!(merged.len() > 100, "{} rows", merged.len());
        assert_eq!(merged, expect(&fleet_hot::merge(parts)));
    }
}
