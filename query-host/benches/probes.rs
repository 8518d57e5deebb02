//! What a function probe costs the probed program, on `testbed/fixtures/nf.c`.
//!
//! 1. **Per call.** `nf` with no work in its functions runs 100,000 packets; only `parse` (one
//!    call a packet) is probed. The added time per packet against the same program unprobed,
//!    in the same round, is the cost of one probed call: Loupe timing every call, Loupe timing
//!    1 in 64 (on uprobe session links, and on aya's perf-event uprobes), and bpftrace's classic
//!    latency script (`uprobe` storing `nsecs` by tid,
//!    `uretprobe` adding to a `hist`) — on the plain build (`parse` starts with `push`), the
//!    CET build (`endbr64` first: Loupe probes 4 bytes in, bpftrace at the symbol) and `checksum`
//!    (`mov` first: Loupe probes past it, on the `push`; bpftrace at the symbol).
//! 2. **Throughput.** `nf` with its default work (parse 2 µs, lookup 1 µs, forward 5 µs) and
//!    probes on all four hot functions: packets per second against unprobed.
//! 3. **Reach.** Of libc's and python3.11's functions, the share a probe reaches without
//!    single-stepping: on the first instruction or after `endbr64` (the rule before placement
//!    decoded functions), and after register moves too (`ingest/probes/placement.rs`).
//!
//! Modes alternate within each round and the median of the rounds is reported, so drift on the
//! machine cancels. `cargo bench -p loupe-query-host --bench probes` (root; bpftrace from
//! `scripts/setup`; `LOUPE_BENCH_ROUNDS`, default 7).

use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Child, Command, Stdio},
    time::Duration,
};

use loupe_bpf::{FunctionProbeOptions, FunctionProbes, LinkKind, MAX_SAMPLE_EVERY, ProbePoint};
use loupe_core::ingest::probes::{
    cost::calibration,
    placement::census,
    target::{TargetSpec, resolve},
};
use loupe_testbed::nf::{Build, FUNCS, build_nf, run_nf_no_wait};

const PACKETS: u32 = 100_000;
const ZERO: [&str; 8] = ["--parse-ns", "0", "--lookup-ns", "0", "--forward-ns", "0", "--handle-ns", "0"];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    None,
    /// Loupe timing 1 call in N, on session links or perf-event uprobes.
    Loupe(u32, LinkKind),
    Bpftrace,
}

impl Mode {
    fn name(self) -> String {
        let links = |k| if k == LinkKind::Session { "" } else { "_perf_event" };
        match self {
            Mode::None => "none".into(),
            Mode::Loupe(1, k) => format!("loupe{}", links(k)),
            Mode::Loupe(MAX_SAMPLE_EVERY, k) => format!("loupe{}_entry_only", links(k)),
            Mode::Loupe(n, k) => format!("loupe{}_1_in_{n}", links(k)),
            Mode::Bpftrace => "bpftrace".into(),
        }
    }
}

/// Attaches what `mode` says to `functions` of `exe` (every process of it), runs `nf` with
/// `args`, detaches; returns nanoseconds per packet.
fn run(exe: &Path, dir: &Path, mode: Mode, functions: &[&str], args: &[&str]) -> f64 {
    let probes = match mode {
        Mode::Loupe(every, links) => {
            let spec = TargetSpec {
                binary: Some(exe.to_path_buf()),
                functions: functions.iter().map(|f| f.to_string()).collect(),
                ..Default::default()
            };
            let functions = resolve(&spec).expect("resolve");
            let probes = FunctionProbes::attach(&FunctionProbeOptions {
                functions: functions
                    .into_iter()
                    .map(|f| ProbePoint { file: f.attach_file, file_offset: f.file_offset, name: f.name })
                    .collect(),
                pids: vec![],
                sample_every: every,
                record_calls: false,
                links: Some(links),
                count_only: false,
            })
            .expect("attach");
            Some(probes)
        }
        _ => None,
    };
    let tracer = (mode == Mode::Bpftrace).then(|| bpftrace(exe, functions));
    let (stats, _) = run_nf_no_wait(exe, dir, args, Duration::from_secs(300));
    if let Some(mut t) = tracer {
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(t.id() as i32, libc::SIGINT) };
        let _ = t.wait();
    }
    drop(probes);
    stats.elapsed_ns as f64 / (stats.packets * stats.threads) as f64
}

/// bpftrace's latency script on `functions`, attached (it says so on stdout).
fn bpftrace(exe: &Path, functions: &[&str]) -> Child {
    let exe = exe.display();
    let script: String = functions
        .iter()
        .map(|f| {
            format!(
                "uprobe:{exe}:{f} {{ @s_{f}[tid] = nsecs; }} \
                 uretprobe:{exe}:{f} /@s_{f}[tid]/ {{ @ns_{f} = hist(nsecs - @s_{f}[tid]); delete(@s_{f}[tid]); }} "
            )
        })
        .collect();
    let mut child = Command::new("bpftrace")
        .args(["-e", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("bpftrace (scripts/setup installs it)");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while out.read_line(&mut line).unwrap() > 0 && !line.contains("Attaching") {
        line.clear();
    }
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    std::thread::sleep(Duration::from_millis(300)); // "Attaching" is printed before the last attach
    child
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn spread(v: &[f64]) -> (f64, f64) {
    (v.iter().copied().fold(f64::INFINITY, f64::min), v.iter().copied().fold(f64::NEG_INFINITY, f64::max))
}

fn main() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("SKIP probes bench: needs root (uprobes)");
        return;
    }
    let rounds: usize = std::env::var("LOUPE_BENCH_ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(7);
    let have_bpftrace = Command::new("bpftrace").arg("--version").output().is_ok_and(|o| o.status.success());
    let dir = tempfile::tempdir().unwrap();
    if let Some(c) = calibration() {
        println!(
            "calibration (an empty function of this process): {:.0} ns a timed call, {:.0} ns an untimed one, bias {} ns",
            c.timed_call_ns, c.untimed_call_ns, c.bias_ns
        );
        println!(r#"BENCH {{"name": "probe_calibrated_timed_call", "value": {:.0}, "unit": "ns"}}"#, c.timed_call_ns);
        println!(r#"BENCH {{"name": "probe_calibrated_bias", "value": {}, "unit": "ns"}}"#, c.bias_ns);
    }
    let packets = PACKETS.to_string();
    let mut zero_args: Vec<&str> = vec!["--packets", &packets];
    zero_args.extend_from_slice(&ZERO);

    println!(
        "\n1. Added cost per probed call (nf, empty functions, one function probed, {PACKETS} calls, median of {rounds} rounds)"
    );
    // (build, function, name): `parse` starts with push (after endbr64 in the CET build);
    // `checksum` with a register move, then push.
    let mut with_checksum = zero_args.clone();
    with_checksum.extend_from_slice(&["--checksum-ns", "0"]);
    for (build, function, build_name) in
        [(Build::Plain, "parse", "plain"), (Build::Cet, "parse", "endbr64"), (Build::Plain, "checksum", "mov")]
    {
        let sub = dir.path().join(build_name);
        std::fs::create_dir_all(&sub).unwrap();
        let exe = build_nf(&sub, build);
        let args = if function == "checksum" { &with_checksum } else { &zero_args };
        // 1 in 2^20 on a session link: almost every call pays the entry trap alone — the floor
        // sampling approaches.
        let mut modes = vec![
            Mode::None,
            Mode::Loupe(1, LinkKind::Session),
            Mode::Loupe(64, LinkKind::Session),
            Mode::Loupe(MAX_SAMPLE_EVERY, LinkKind::Session),
            Mode::Loupe(1, LinkKind::PerfEvent),
            Mode::Loupe(64, LinkKind::PerfEvent),
        ];
        if have_bpftrace {
            modes.push(Mode::Bpftrace);
        }
        let mut per_mode: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
        for _ in 0..rounds {
            let base = run(&exe, &sub, Mode::None, &[function], args);
            per_mode[0].push(base);
            for (i, &mode) in modes.iter().enumerate().skip(1) {
                per_mode[i].push(run(&exe, &sub, mode, &[function], args) - base);
            }
        }
        println!("  {build_name} ({function}): unprobed packet {:.0} ns", median(per_mode[0].clone()));
        let loupe = median(per_mode[1].clone());
        for (i, mode) in modes.iter().enumerate().skip(1) {
            let m = median(per_mode[i].clone());
            let (lo, hi) = spread(&per_mode[i]);
            println!(
                "    {:<16} +{m:>7.0} ns a call (rounds {lo:.0} … {hi:.0}){}",
                mode.name(),
                if *mode == Mode::Bpftrace { format!("; Loupe / bpftrace = {:.2}", loupe / m) } else { String::new() }
            );
            println!(
                r#"BENCH {{"name": "probe_cost_{}_{build_name}", "value": {m:.0}, "unit": "ns/call", "baseline": {:.0}}}"#,
                mode.name(),
                median(per_mode[0].clone())
            );
        }
    }

    println!("\n2. Throughput with probes on the four hot functions (nf default work, 20,000 packets)");
    let sub = dir.path().join("throughput");
    std::fs::create_dir_all(&sub).unwrap();
    let exe = build_nf(&sub, Build::Plain);
    let args = ["--packets", "20000"];
    let modes = [Mode::None, Mode::Loupe(1, LinkKind::Session), Mode::Loupe(64, LinkKind::Session)];
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    for _ in 0..rounds {
        let base = run(&exe, &sub, Mode::None, &FUNCS, &args);
        for (i, &mode) in modes.iter().enumerate().skip(1) {
            ratios[i].push(base / run(&exe, &sub, mode, &FUNCS, &args));
        }
    }
    for (i, mode) in modes.iter().enumerate().skip(1) {
        let m = median(ratios[i].clone());
        let (lo, hi) = spread(&ratios[i]);
        println!("    {:<16} {m:.3} of unprobed packets/s (rounds {lo:.3} … {hi:.3})", mode.name());
        println!(
            r#"BENCH {{"name": "probe_throughput_{}", "value": {m:.3}, "unit": "ratio", "baseline": 1.0}}"#,
            mode.name()
        );
    }

    println!("\n3. Functions a probe reaches without single-stepping");
    for path in ["/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/python3.11"] {
        let c = match census(Path::new(path)) {
            Ok(c) => c,
            Err(e) => {
                println!("    SKIP {path}: {e}");
                continue;
            }
        };
        let name = Path::new(path).file_name().unwrap().to_string_lossy().split(".so").next().unwrap().replace('.', "");
        let share = |n: usize| n as f64 / c.functions.max(1) as f64;
        let (before, after) = (share(c.at_start), share(c.at_start + c.past_moves));
        let refused: Vec<String> = c.refused.iter().map(|(stop, n)| format!("{} {}", stop.as_str(), n)).collect();
        println!(
            "    {path}: {} functions; at the start or after endbr64 {:.1} %, with placement past register moves {:.1} % \
             (refused: {})",
            c.functions,
            before * 100.0,
            after * 100.0,
            refused.join(", ")
        );
        println!(r#"BENCH {{"name": "probe_reach_before_{name}", "value": {:.3}, "unit": "share"}}"#, before);
        println!(
            r#"BENCH {{"name": "probe_reach_after_{name}", "value": {:.3}, "unit": "share", "baseline": {before:.3}}}"#,
            after
        );
    }
}
