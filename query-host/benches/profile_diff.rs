//! What changed between two hours: `GET /api/v1/profile/diff` of two 1-hour ranges of the
//! samples benchmark's synthetic 96-CPU host (`store/tests/common/samples.rs`, ≈ 2.4 M samples
//! an hour: 96 CPUs at 10 Hz, 30 % idle), timed as the server runs it (`Host::profile_diff`,
//! reading both ranges and building the differential flame graph), against the profile of one
//! of the hours in the same run (`Host::profile_view`: one range read, one flame graph built).
//! Goal: ≤ 300 ms.
//!
//! `cargo bench -p loupe-query-host --bench profile_diff`
//! - `LOUPE_BENCH_HOURS` (default 2) sizes the store; the diff is of its last two hours;
//! - the store is kept under `/var/tmp/loupe-bench-diff-…` and reused (`LOUPE_BENCH_REBUILD=1`
//!   rebuilds it).

#[path = "../../store/tests/common/samples.rs"]
#[allow(dead_code)]
mod samples;

use std::{
    path::Path,
    time::{Duration, Instant},
};

use loupe_api::model::ProfileDiffView;
use loupe_core::Host;
use loupe_store::{ProfileQuery, Retention, SampleKind, Store, TimeRange};
use samples::{Synth, SynthParams};

const T0: u64 = 1_700_000_000_000_000_000;
const HOUR: u64 = 3_600_000_000_000;
/// Bump when the generator or the store's encoding changes.
const GENERATION: u32 = 1;
const ROUNDS: usize = 5;

fn retention() -> Retention {
    Retention { max_age: Duration::from_secs(365 * 86_400), max_bytes: u64::MAX }
}

fn build(dir: &Path, hours: u64) {
    let _ = std::fs::remove_dir_all(dir);
    let store = Store::open(dir, retention()).expect("open store");
    let mut synth = Synth::new(42, SynthParams::day_host(), T0);
    let mut batch = Vec::new();
    let started = Instant::now();
    for _ in 0..hours * 360 {
        synth.next_batch(100, &mut batch);
        store.put_samples(&batch, 0, T0).expect("put_samples");
    }
    store.flush().expect("flush");
    eprintln!("profile_diff: built {} in {:.0} s", dir.display(), started.elapsed().as_secs_f64());
}

/// The median wall time of `ROUNDS` calls, and the last answer.
fn median<T>(mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..ROUNDS {
        let t = Instant::now();
        last = Some(f());
        times.push(t.elapsed());
    }
    times.sort();
    (times[ROUNDS / 2], last.unwrap())
}

fn main() {
    let hours = std::env::var("LOUPE_BENCH_HOURS").ok().and_then(|v| v.parse().ok()).unwrap_or(2u64).max(2);
    let dir = std::path::PathBuf::from(format!("/var/tmp/loupe-bench-diff-g{GENERATION}-{hours}h"));
    if std::env::var("LOUPE_BENCH_REBUILD").is_ok_and(|v| v == "1") || !dir.exists() {
        build(&dir, hours);
    }
    let store = Store::open(&dir, retention()).expect("open store");
    let host = Host::new(store.clone());
    let end = T0 + hours * HOUR;
    let now = TimeRange::new(end - HOUR, end).unwrap();
    let base = TimeRange::new(end - 2 * HOUR, end - HOUR).unwrap();
    // Warm the page cache and the dictionary once, as a running server has them.
    host.profile_view(&ProfileQuery::range(now), 0.0).expect("profile");
    let (one, view) = median(|| host.profile_view(&ProfileQuery::range(now), 0.0).expect("profile"));
    let (diff, d) = median(|| host.profile_diff(&ProfileQuery::range(now), base, 0.0).expect("diff"));
    // Where the diff's time goes: reading one range, and building the comparison from two.
    let (read, a) = median(|| store.indexed_profile(&ProfileQuery::range(now)).expect("read"));
    let b = store.indexed_profile(&ProfileQuery::range(base)).expect("read");
    let (build, _) = median(|| ProfileDiffView::new(&a, &b, SampleKind::OnCpu, 0.0));
    println!(
        "profile_diff: reading one hour {:.0} ms; building the comparison of two {:.0} ms",
        read.as_secs_f64() * 1e3,
        build.as_secs_f64() * 1e3
    );
    println!(
        "profile_diff: two 1-hour ranges of a 96-CPU host ({} and {} samples, {} functions): diff {:.0} ms \
         (median of {ROUNDS}); one hour's profile {:.0} ms ({} functions); ratio {:.2} (goal: diff ≤ 300 ms)",
        d.samples,
        d.base_samples,
        d.functions.len(),
        diff.as_secs_f64() * 1e3,
        one.as_secs_f64() * 1e3,
        view.functions.len(),
        diff.as_secs_f64() / one.as_secs_f64()
    );
    println!(
        r#"BENCH {{"name": "profile_diff_two_hours_ms", "value": {:.1}, "unit": "ms"}}"#,
        diff.as_secs_f64() * 1e3
    );
    println!(
        r#"BENCH {{"name": "profile_diff_vs_one_profile", "value": {:.3}, "unit": "ratio"}}"#,
        diff.as_secs_f64() / one.as_secs_f64()
    );
}
