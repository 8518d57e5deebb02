//! A columnar fleet analysis built for the `fleet-columns` world, as columnar analyses were
//! before the host merged in batches: it exports `merge-columns` but not `merge-batch`, and
//! must still run and merge (its partials crossing as a list). Each host's partial is one row,
//! its name and its samples; merging sums the samples per host.

mod bindings {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "fleet-columns",
        with: {
            "loupe:udf/types@0.1.0": loupe_udf::bindings::loupe::udf::types,
            "loupe:udf/data@0.1.0": loupe_udf::bindings::loupe::udf::data,
        },
    });
}

use std::collections::BTreeMap;

use loupe_udf::{
    Columns, Description, Output, Partial, ResultKind, TextColumn,
    types::{Param, TimeRange},
};

struct ColumnsOnly;

/// Samples per host as a partial: one row per host, in name order.
fn columns(per_host: BTreeMap<String, u64>) -> Columns {
    let mut hosts = TextColumn::new();
    for h in per_host.keys() {
        hosts.push(h);
    }
    Columns::new().column("host", "", hosts).column("samples", "samples", per_host.into_values().collect::<Vec<u64>>())
}

impl bindings::Guest for ColumnsOnly {
    fn describe() -> Description {
        Description::new("columns-only", ResultKind::Table).version("0.1.0").summary("samples per host")
    }

    fn run(range: TimeRange, params: Vec<Param>) -> Result<Output, String> {
        Self::run_columns(range, params).map(Output::from)
    }

    fn run_columns(range: TimeRange, _params: Vec<Param>) -> Result<Columns, String> {
        let samples = loupe_udf::samples(range).open()?.count() as u64;
        Ok(columns(BTreeMap::from([(loupe_udf::host_info().hostname, samples)])))
    }

    fn merge_columns(_range: TimeRange, _params: Vec<Param>, partials: Vec<Columns>) -> Result<Columns, String> {
        let mut per_host = BTreeMap::new();
        for c in &partials {
            let p = Partial::of(c);
            let (hosts, samples) = (p.require("host")?.text()?, p.require("samples")?.u64s()?);
            for (i, n) in samples.iter().enumerate() {
                *per_host.entry(hosts.get(i).ok_or("a code past its dictionary")?.to_string()).or_default() += n;
            }
        }
        Ok(columns(per_host))
    }
}

bindings::export!(ColumnsOnly with_types_in bindings);
