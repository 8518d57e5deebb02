//! The merge contract, held against the real example analyses (wasm built from `udf-sdk`) in the
//! real sandbox, over random data:
//!
//! - merging is independent of order and grouping: random permutations of the hosts' partials
//!   and random trees of merges (each inner node one `merge` call on the results below it) all
//!   give the same result;
//! - merging the per-host partials equals running the analysis once over one store holding all
//!   the hosts' data (`rack-contention`, over synchronized runs of random bursts);
//! - per-host hot-function counts survive any merge tree exactly (`fleet-hot-functions`);
//! - a tree of leaves as a fleet of NATS leaf nodes merges it — random groups each merged into
//!   one encoded partial (what a leaf's coordinator sends up), decoded, then merged — equals the
//!   flat merge, for both analyses (their partials are columnar);
//! - a group of partials of one shape is merged as one batch (`merge-batch`), any other by
//!   `merge-columns`: trees over partials where one has a column more (a newer agent's) give
//!   the same answers, so both paths merge alike;
//! - a columnar module built before `merge-batch` existed (the `fleet-columns` world) still
//!   merges, its partials as a list;
//! - a module without `merge` is refused for fleet use, `merge` cannot read data, and a
//!   malformed columnar result is refused with what it broke.

use loupe_api::model::AnalysisOutput;
use loupe_core::analyses::host_info;
use loupe_sandbox::{
    UdfError,
    bindings::{HostInfo, wit},
    merge_world::Merger,
    output,
    partial::{self, Decoded},
    runtime::{Allocation, Compiled, Runtime},
    sandbox::Limits,
};
use loupe_store::{Counter, CpuColumns, Frame, NewRun, Retention, RunSource, StackSample, Store, TimeRange};
use rand::{Rng, SeedableRng, rngs::StdRng, seq::SliceRandom};
use serde_json::{Map, Value, json};

const T0: u64 = 1_795_392_000_000_000_000;
const MS: u64 = 1_000_000;
const CASES: u64 = 12;

fn wasm(name: &str) -> Vec<u8> {
    std::fs::read(loupe_testbed::wasm_component(name)).unwrap()
}

fn store(dir: &std::path::Path) -> Store {
    Store::open(dir, Retention { max_age: std::time::Duration::from_secs(100 * 365 * 86400), max_bytes: 1 << 40 })
        .unwrap()
}

/// One host's synchronized run: 300 slots of 1 ms from T0, quiet traffic with random bursts in
/// and out, on two CPUs.
fn run(host: &str, rng: &mut StdRng) -> NewRun {
    let per_cpu = (0..2)
        .map(|c| {
            let mut col = CpuColumns::zeroed(c, 300);
            for i in 0..300 {
                for (counter, p) in [(Counter::InBytes, 0.05), (Counter::OutBytes, 0.04)] {
                    let v = if rng.random_bool(p) { rng.random_range(8_000..30_000) } else { rng.random_range(0..900) };
                    col.counter_mut(counter)[i] = v;
                }
                col.counter_mut(Counter::InCeBytes)[i] = rng.random_range(0..3) * 100;
            }
            col
        })
        .collect();
    NewRun {
        iface: "eth0".into(),
        host: host.into(),
        rack: Some("r1".into()),
        start_unix_ns: T0,
        interval_ns: MS,
        samples: 300,
        local_prefixes: vec![],
        source: RunSource::Agent,
        per_cpu,
        conn_counts: None,
        clock: None,
    }
}

struct Sandbox {
    runtime: Runtime,
    _dirs: Vec<tempfile::TempDir>,
}

impl Sandbox {
    fn new() -> Sandbox {
        Sandbox { runtime: Runtime::new(Limits::default(), Allocation::OnDemand).unwrap(), _dirs: Vec::new() }
    }

    fn store(&mut self) -> Store {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path());
        self._dirs.push(dir);
        s
    }

    fn compile(&self, name: &str, store: &Store) -> Compiled {
        self.runtime.compile(&wasm(name), store, &info(store, "asker")).unwrap().0
    }
}

fn info(store: &Store, host: &str) -> HostInfo {
    let mut info = host_info(store).unwrap();
    info.hostname = host.into();
    info
}

/// Merges `parts` as a random tree: random groups of 1 to 5 merged first, then their results,
/// until one is left.
fn random_tree(
    sb: &Sandbox,
    c: &Compiled,
    store: &Store,
    params: &Map<String, Value>,
    mut parts: Vec<Decoded>,
    rng: &mut StdRng,
) -> Decoded {
    let info = info(store, "asker");
    while parts.len() > 1 {
        parts = random_groups(parts, 5, rng)
            .into_iter()
            .map(|group| sb.runtime.merge_group(c, "t", store, &info, TimeRange::ALL, params, group).unwrap())
            .collect();
    }
    parts.pop().unwrap()
}

/// `parts` shuffled and cut into groups of 1 to `most`.
fn random_groups(mut parts: Vec<Decoded>, most: usize, rng: &mut StdRng) -> Vec<Vec<Decoded>> {
    parts.shuffle(rng);
    let mut groups = Vec::new();
    while !parts.is_empty() {
        let take = rng.random_range(1..=most).min(parts.len());
        groups.push(parts.drain(..take).collect());
    }
    groups
}

/// Merges `parts` as a fleet of leaf nodes does: random groups (leaves), each merged into one
/// partial and encoded for the wire, decoded at the top and merged there.
fn leaf_tree(
    sb: &Sandbox,
    c: &Compiled,
    store: &Store,
    params: &Map<String, Value>,
    parts: Vec<Decoded>,
    rng: &mut StdRng,
) -> AnalysisOutput {
    let info = info(store, "top");
    let leaves = random_groups(parts, 4, rng)
        .into_iter()
        .map(|group| {
            let (bytes, _log) =
                sb.runtime.merge_to_partial(c, "t", store, &info, TimeRange::ALL, params, group).unwrap();
            partial::decode(&bytes).unwrap()
        })
        .collect();
    sb.runtime.merge(c, "t", store, &info, TimeRange::ALL, params, leaves).unwrap().output
}

/// `parts` with a column more on the first — a partial of another shape (a newer agent's),
/// which the analysis ignores: a group holding it is merged by `merge-columns`, any other one
/// by `merge-batch`.
fn one_of_another_shape(mut parts: Vec<Decoded>) -> Vec<Decoded> {
    let Some(Decoded::Columns(c)) = parts.first_mut() else { panic!("columnar partials") };
    let rows = match &c.columns[0].values {
        wit::ColumnValues::Unsigned(v) => v.len(),
        wit::ColumnValues::Signed(v) => v.len(),
        wit::ColumnValues::Float(v) => v.len(),
        wit::ColumnValues::Text(t) => t.codes.len(),
    };
    let values = wit::ColumnValues::Unsigned(vec![7; rows]);
    c.columns.push(wit::NamedColumn { name: "added_later".into(), unit: String::new(), values });
    parts
}

fn view(d: Decoded) -> AnalysisOutput {
    let o = match d {
        Decoded::Output(o) => o,
        Decoded::Columns(c) => output::columns_output(c),
    };
    output::bounded(o, 64 << 20).unwrap()
}

#[test]
fn rack_contention_merges_in_any_order_and_grouping_to_the_all_hosts_answer() {
    let mut sb = Sandbox::new();
    let mut rng = StdRng::seed_from_u64(7);
    let params: Map<String, Value> = json!({"threshold_bps": 8_000_000, "min_senders": 2}).as_object().unwrap().clone();
    for case in 0..CASES {
        let hosts = rng.random_range(2..9);
        let all = sb.store();
        let mut partials = Vec::new();
        let mut compiled = None;
        for h in 0..hosts {
            let mine = sb.store();
            let r = run(&format!("h{h}"), &mut rng);
            all.put_run(r.clone(), T0).unwrap();
            mine.put_run(r, T0).unwrap();
            let c = compiled.get_or_insert_with(|| sb.compile("rack_contention", &mine)).clone();
            let (bytes, _) = sb
                .runtime
                .invoke_partial(&c, "t", &mine, &info(&mine, &format!("h{h}")), TimeRange::ALL, &params)
                .unwrap();
            // Through the wire form, as between hosts.
            partials.push(partial::decode(&bytes).unwrap());
        }
        let c = compiled.unwrap();
        let whole = sb.runtime.invoke(&c, "t", &all, &info(&all, "all"), TimeRange::ALL, &params).unwrap().output;
        let merged =
            sb.runtime.merge(&c, "t", &all, &info(&all, "asker"), TimeRange::ALL, &params, partials.clone()).unwrap();
        assert_eq!(merged.output, whole, "case {case}: merged per-host partials vs one run over all hosts");
        let mixed = one_of_another_shape(partials.clone());
        let merged = sb.runtime.merge(&c, "t", &all, &info(&all, "asker"), TimeRange::ALL, &params, mixed.clone());
        assert_eq!(merged.unwrap().output, whole, "case {case}: merged by merge-columns");
        for _ in 0..3 {
            let tree = random_tree(&sb, &c, &all, &params, partials.clone(), &mut rng);
            assert_eq!(view(tree), whole, "case {case}: a random merge tree");
            let tree = random_tree(&sb, &c, &all, &params, mixed.clone(), &mut rng);
            assert_eq!(view(tree), whole, "case {case}: a random tree of both kinds of merge");
            assert_eq!(leaf_tree(&sb, &c, &all, &params, partials.clone(), &mut rng), whole, "case {case}: leaves");
        }
        let AnalysisOutput::Table { rows, .. } = &whole else { panic!("a table") };
        assert!(!rows.is_empty(), "case {case}: no slots");
    }
}

/// A host's samples: `n` samples over a few stacks whose leaves come from a shared pool, so
/// hosts overlap in functions and libraries.
fn samples(rng: &mut StdRng, n: usize) -> Vec<StackSample> {
    let leaves = [("deflate", "libz.so.1"), ("memcpy", "libc.so.6"), ("parse", "app"), ("tcp_sendmsg", "[kernel]")];
    (0..n)
        .map(|i| {
            let (f, m) = leaves[rng.random_range(0..leaves.len())];
            let leaf = if m == "[kernel]" { Frame::kernel(f) } else { Frame::user(f, m) };
            let frames = vec![leaf, Frame::user("main", "app")];
            StackSample {
                time_unix_ns: T0 + i as u64 * 10 * MS,
                cpu: (i % 2) as u32,
                pid: 100,
                tid: 100,
                comm: "svc".into(),
                cgroup_id: 1,
                idle: false,
                frames,
            }
        })
        .collect()
}

#[test]
fn fleet_hot_functions_merge_exactly_in_any_order_and_grouping() {
    let mut sb = Sandbox::new();
    let mut rng = StdRng::seed_from_u64(11);
    let params: Map<String, Value> = json!({"top": 100}).as_object().unwrap().clone();
    for case in 0..CASES {
        let hosts = rng.random_range(2..9);
        let mut partials = Vec::new();
        let mut compiled = None;
        let mut want_total = 0;
        for h in 0..hosts {
            let mine = sb.store();
            let n = rng.random_range(1..400);
            want_total += n as u64;
            mine.put_samples(&samples(&mut rng, n), 0, T0).unwrap();
            let c = compiled.get_or_insert_with(|| sb.compile("fleet_hot_functions", &mine)).clone();
            let (bytes, _) = sb
                .runtime
                .invoke_partial(&c, "t", &mine, &info(&mine, &format!("h{h}")), TimeRange::ALL, &params)
                .unwrap();
            partials.push(partial::decode(&bytes).unwrap());
        }
        let c = compiled.unwrap();
        let asker = sb.store();
        let flat = view(
            sb.runtime
                .merge_group(&c, "t", &asker, &info(&asker, "a"), TimeRange::ALL, &params, partials.clone())
                .unwrap(),
        );
        let mixed = one_of_another_shape(partials.clone());
        let by_columns =
            sb.runtime.merge_group(&c, "t", &asker, &info(&asker, "a"), TimeRange::ALL, &params, mixed.clone());
        assert_eq!(view(by_columns.unwrap()), flat, "case {case}: merged by merge-columns");
        for _ in 0..3 {
            let tree = random_tree(&sb, &c, &asker, &params, partials.clone(), &mut rng);
            assert_eq!(view(tree), flat, "case {case}: a random merge tree");
            let tree = random_tree(&sb, &c, &asker, &params, mixed.clone(), &mut rng);
            assert_eq!(view(tree), flat, "case {case}: a random tree of both kinds of merge");
            assert_eq!(leaf_tree(&sb, &c, &asker, &params, partials.clone(), &mut rng), flat, "case {case}: leaves");
        }
        let AnalysisOutput::Table { rows, .. } = &flat else { panic!("a table") };
        let total = rows.iter().find(|r| r[0] == json_cell("host") && r[3] == json_cell("*")).unwrap();
        assert_eq!(total[4], loupe_api::model::Cell::Unsigned(want_total), "case {case}: the fleet's samples");
    }
}

#[test]
fn a_columnar_module_without_merge_batch_still_merges_its_partials_as_a_list() {
    let mut sb = Sandbox::new();
    let mut rng = StdRng::seed_from_u64(5);
    let params = Map::new();
    let (mut partials, mut want, mut compiled) = (Vec::new(), Vec::new(), None);
    for h in 0..4 {
        let mine = sb.store();
        let n = rng.random_range(1..50);
        mine.put_samples(&samples(&mut rng, n), 0, T0).unwrap();
        let c = compiled.get_or_insert_with(|| sb.compile("columns_only", &mine)).clone();
        let host = format!("h{h}");
        let (bytes, _) =
            sb.runtime.invoke_partial(&c, "t", &mine, &info(&mine, &host), TimeRange::ALL, &params).unwrap();
        partials.push(partial::decode(&bytes).unwrap());
        want.push(vec![json_cell(&host), loupe_api::model::Cell::Unsigned(n as u64)]);
    }
    let c = compiled.unwrap();
    assert!(matches!(c.merge, Some(Merger::Columns { batches: None, .. })), "a module without merge-batch");
    let asker = sb.store();
    let sdk_built = sb.compile("fleet_hot_functions", &asker);
    assert!(matches!(sdk_built.merge, Some(Merger::Columns { batches: Some(_), .. })), "the SDK exports merge-batch");
    partials.reverse();
    let merged = sb.runtime.merge(&c, "t", &asker, &info(&asker, "a"), TimeRange::ALL, &params, partials).unwrap();
    let AnalysisOutput::Table { rows, .. } = merged.output else { panic!("a table") };
    assert_eq!(rows, want, "samples per host, in host order");
}

fn json_cell(s: &str) -> loupe_api::model::Cell {
    loupe_api::model::Cell::Text(s.into())
}

#[test]
fn modules_without_merge_are_refused_and_merge_reads_no_data() {
    let mut sb = Sandbox::new();
    let s = sb.store();
    let plain = sb.compile("hot_functions", &s);
    assert!(!plain.description.mergeable);
    let err = sb.runtime.invoke_partial(&plain, "t", &s, &info(&s, "h"), TimeRange::ALL, &Map::new()).unwrap_err();
    assert!(matches!(err, UdfError::NotMergeable(_)), "{err}");
    assert!(err.to_string().contains("export_fleet_analysis!"), "{err}");
    let fleet = sb.compile("rack_contention", &s);
    assert!(fleet.description.mergeable);
    // A partial that is not this analysis' kind: refused before the guest sees it.
    let text = Decoded::Output(wit::Output::Text("not a table".into()));
    let err = sb.runtime.merge(&fleet, "t", &s, &info(&s, "h"), TimeRange::ALL, &Map::new(), vec![text]).unwrap_err();
    assert!(err.to_string().contains("a table partial for an analysis with columnar partials"), "{err}");
    // Columns of the right kind but another shape: the guest's own error, the host survives.
    let alien = Decoded::Columns(wit::Columns { columns: vec![], series: vec![] });
    let err = sb.runtime.merge(&fleet, "t", &s, &info(&s, "h"), TimeRange::ALL, &Map::new(), vec![alien]).unwrap_err();
    assert!(err.to_string().contains("merge(): a partial without the column \"slot_start_ns\""), "{err}");
    // The data functions refuse inside merge (there is data in this store to read).
    s.put_run(run("h", &mut StdRng::seed_from_u64(1)), T0).unwrap();
    let reader = sb.compile("hostile_huge_partial", &s);
    let params: Map<String, Value> = json!({"read_in_merge": true}).as_object().unwrap().clone();
    let one = Decoded::Output(wit::Output::Text("1".into()));
    let err = sb.runtime.merge(&reader, "t", &s, &info(&s, "h"), TimeRange::ALL, &params, vec![one]).unwrap_err();
    assert!(err.to_string().contains("merge() must not read data"), "{err}");
}

#[test]
fn a_malformed_columnar_result_is_refused_with_what_it_broke() {
    let mut sb = Sandbox::new();
    let s = sb.store();
    let bad = sb.compile("hostile_bad_columns", &s);
    assert!(bad.description.mergeable);
    // Its run-columns codes a string past its dictionary: refused on the host, never sent.
    let err = sb.runtime.invoke_partial(&bad, "t", &s, &info(&s, "h"), TimeRange::ALL, &Map::new()).unwrap_err();
    assert!(matches!(err, UdfError::BadColumns(_)), "{err}");
    assert!(err.to_string().contains("codes 7, past its dictionary of 1"), "{err}");
    // Its merge-columns answers columns of different lengths.
    let fine = Decoded::Columns(wit::Columns { columns: vec![], series: vec![] });
    let err = sb.runtime.merge(&bad, "t", &s, &info(&s, "h"), TimeRange::ALL, &Map::new(), vec![fine]).unwrap_err();
    assert!(err.to_string().contains("has 1 rows, the first 3"), "{err}");
}
