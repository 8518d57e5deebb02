//! `fleet-hot-functions` (ByteDance's hot functions and "datacenter tax"): stack samples of a
//! range counted by their leaf frame — per function, per shared library (the leaf's module: how
//! much CPU goes to libc, zlib, the kernel, …) and per host, and over all hosts (host `*`), each
//! with its percent of the host's (or all hosts') samples.
//!
//! Every figure is a count, so `merge` sums them: exact, in any order and grouping. Each host
//! keeps its `top` functions and libraries and counts the rest as `[other]` (exact when no host
//! has more). The algorithm is [`loupe_detect::fleet_hot`]. Partials are columnar (the
//! `fleet-columns` world): a datacenter's thousand partials cross into the merging sandbox as
//! whole lists, their names coded once per partial.

use std::collections::{BTreeMap, HashMap};

use loupe_detect::fleet_hot::{self, Counts, Kind};
use loupe_udf::{ColumnarAnalysis, Columns, Context, Description, Param, ResultKind, Stacks, TextColumn};

struct FleetHotFunctions;

/// The result as columns: kind, function, module and host coded as text, samples and percent.
fn columns(counts: &Counts) -> Columns {
    let rows = fleet_hot::rows(counts);
    let (mut kind, mut function, mut module, mut host) =
        (TextColumn::new(), TextColumn::new(), TextColumn::new(), TextColumn::new());
    let mut samples = Vec::with_capacity(rows.len());
    let mut percent = Vec::with_capacity(rows.len());
    for ((k, f, m, h), n, p) in rows {
        kind.push(k.name());
        function.push(f);
        module.push(m);
        host.push(h);
        samples.push(n);
        percent.push(p);
    }
    Columns::new()
        .column("kind", "", kind)
        .column("function", "", function)
        .column("module", "", module)
        .column("host", "", host)
        .column("samples", "samples", samples)
        .column("percent", "%", percent)
}

/// Counts being merged, by interned names: each partial's dictionaries are looked up once,
/// its rows then add numbers only.
#[derive(Default)]
struct Merging {
    names: Vec<String>,
    ids: HashMap<String, u32>,
    counts: HashMap<(Kind, u32, u32, u32), u64>,
}

impl Merging {
    fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(s.to_string());
        self.ids.insert(s.to_string(), id);
        id
    }

    /// Adds a partial made by [`columns`], here or on another host.
    fn add(&mut self, c: &Columns) -> Result<(), String> {
        let text = |name: &str| c.require(name).and_then(|v| v.text());
        let (kind, function, module, host) = (text("kind")?, text("function")?, text("module")?, text("host")?);
        let samples = c.require("samples")?.u64s()?;
        let n = samples.len();
        if [&kind.codes, &function.codes, &module.codes, &host.codes].iter().any(|codes| codes.len() != n) {
            return Err("a fleet-hot-functions partial with columns of different lengths".into());
        }
        let kinds: Vec<Option<Kind>> = kind.dictionary.iter().map(|k| Kind::parse(k)).collect();
        let mut ids = |d: &[String]| d.iter().map(|s| self.intern(s)).collect::<Vec<u32>>();
        let (functions, modules, hosts) = (ids(&function.dictionary), ids(&module.dictionary), ids(&host.dictionary));
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

    fn into_counts(self) -> Counts {
        let name = |id: u32| self.names[id as usize].clone();
        self.counts.iter().map(|(&(k, f, m, h), &n)| ((k, name(f), name(m), name(h)), n)).collect()
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
        Ok(columns(&fleet_hot::host_counts(&host, leaves, top, ctx.params.flag("per_host_functions")?)))
    }

    fn merge_columns(_ctx: &Context, partials: Vec<Columns>) -> Result<Columns, String> {
        let mut merging = Merging::default();
        for p in &partials {
            merging.add(p)?;
        }
        Ok(columns(&merging.into_counts()))
    }
}

loupe_udf::export_fleet_columns!(FleetHotFunctions);
