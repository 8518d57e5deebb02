//! `loupe-synth --data-dir D [--wide-stacks N] [--seed S]`: fills a data dir with the testbed's
//! synthetic data (see `loupe_testbed::synthetic`: runs, stack samples, waits, three probe
//! sessions of a packet loop made from the seed, and a program's timeline) so a `loupe serve` over it has known answers — for the
//! web UI's browser tests and for trying the UI without an agent.
//!
//! `--busy-window` adds ten busy minutes of a 16-CPU host (`synthetic::fill_busy_window`, the
//! window view's figure); `--changed` the two ranges with a known change between them
//! (`synthetic::fill_changed`, the comparison's proof).
//!
//! `loupe-synth --wasm-dir` prints where the udf-sdk components are (`loupe_testbed::wasm`), so
//! the browser tests find them the way the Rust tests do.

use std::path::PathBuf;

fn main() {
    let mut args = std::env::args().skip(1);
    let mut dir: Option<PathBuf> = None;
    let mut wide = 0usize;
    let mut seed = loupe_testbed::synthetic::DEFAULT_SEED;
    let mut busy = false;
    let mut changed = false;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--wasm-dir" => match loupe_testbed::find_wasm_component("burst_detector") {
                Ok(path) => {
                    println!("{}", path.parent().expect("a file in a directory").display());
                    return;
                }
                Err(e) => {
                    eprintln!("loupe-synth: {e}");
                    std::process::exit(1);
                }
            },
            "--data-dir" => dir = args.next().map(PathBuf::from),
            "--wide-stacks" => wide = args.next().and_then(|v| v.parse().ok()).expect("--wide-stacks N"),
            "--busy-window" => busy = true,
            "--changed" => changed = true,
            "--seed" => seed = args.next().and_then(|v| v.parse().ok()).expect("--seed S"),
            other => {
                eprintln!(
                    "loupe-synth: unknown argument '{other}'; usage: loupe-synth --data-dir D [--wide-stacks N] [--seed S] [--busy-window] [--changed] | --wasm-dir"
                );
                std::process::exit(2);
            }
        }
    }
    let Some(dir) = dir else {
        eprintln!("loupe-synth: --data-dir D is required");
        std::process::exit(2);
    };
    let (a, b) = loupe_testbed::synthetic::fill_known(&dir);
    let wide = if wide > 0 { loupe_testbed::synthetic::fill_wide_profile(&dir, wide, 3) } else { 0 };
    loupe_testbed::synthetic::fill_probes(&dir, seed);
    loupe_testbed::synthetic::fill_waits(&dir);
    loupe_testbed::synthetic::fill_timeline(&dir);
    if changed {
        loupe_testbed::synthetic::fill_changed(&dir);
    }
    let busy = if busy {
        let (samples, events, calls, runs) = loupe_testbed::synthetic::fill_busy_window(&dir);
        format!("{{\"samples\": {samples}, \"events\": {events}, \"calls\": {calls}, \"runs\": {runs}}}")
    } else {
        "null".into()
    };
    println!("{{\"run_a\": {a}, \"run_b\": {b}, \"wide_samples\": {wide}, \"busy\": {busy}}}");
}
