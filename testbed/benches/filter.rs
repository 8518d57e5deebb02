//! What Loupe's tc filter costs, on a real kernel. Two measurements, printed as plain lines (no
//! timing assertions: the numbers are for people and for the record, not a pass/fail gate):
//!
//! 1. **Per-packet cost via `BPF_PROG_TEST_RUN`.** The kernel runs a loaded program on a packet
//!    we hand it, `repeat` times in a row, and reports the mean time per run. We run Loupe's
//!    ingress and egress programs (loaded and attached by a real [`TrafficSampler`], so they have
//!    their real maps) on an IPv4/TCP and an IPv6/UDP frame, in three states:
//!    * *idle* — no run configured: the filter does one array lookup and returns, which is what
//!      every packet pays on a host running Loupe between runs;
//!    * *run* — a run active: clock read, slot lookup, header parsing, counters, sketch, and for
//!      TCP the retransmission logic;
//!    * *noop floor* — the testbed's empty tc program `tb_noop`, i.e. what the test-run loop
//!      itself costs; the filter's own cost is the difference over this floor;
//!    * *clock* — the testbed's `tb_clock`, one `bpf_ktime_get_ns` and nothing else: the part
//!      of the run figure any program that puts packets into time slots pays, measured alone.
//!
//!    Every state is measured several times, interleaved (noop, idle, run, noop, …) on one
//!    pinned CPU, and the medians are printed. The difference over the floor is the median of
//!    the per-call differences to the noop call made just before, which cancels the slow drift
//!    of a shared VM better than subtracting two medians. A short run afterwards checks that the
//!    test-run packets really went through the counting path (so "run" measures what it claims).
//!
//! 2. **TCP throughput over a veth pair** in five configurations: no filter (no tc hook at all),
//!    the empty program on both hooks of both ends (attached with tcx as Loupe attaches, and
//!    once more through clsact and cls_bpf, Loupe's fallback on kernels without tcx), Loupe
//!    attached on both ends but idle, and Loupe with a run active on both ends. This is the end-to-end view: with GSO the filter sees one skb of
//!    up to 64 KiB where the wire would carry ~45 segments, so its share of the stack's cost is
//!    much smaller than (1) alone suggests. Sender and receiver run on one CPU
//!    ([`TRANSFER_CPU`]): left to the scheduler, a 2-CPU VM's transfers swing between 10 and
//!    23 Gbit/s depending on where the two threads land, which buries a 1 % effect. Each
//!    transfer starts 300 ms after its configuration was attached ([`settle`]).
//!    Configurations are interleaved over 21 rounds (rotating their order; set
//!    `LOUPE_FILTER_ROUNDS` for more), and each round's own ratios are printed as a median with
//!    a distribution-free 95 % confidence interval, interquartile range and range: the
//!    transfers of a round ran back to back, so the host's drift cancels. empty/none is what
//!    the tc hook costs whatever runs on it, run/empty the filter's own cost above that floor,
//!    run/idle the run's alone. A last line puts the ratios in proportion: filter invocations
//!    per transfer × the per-packet cost of (1), against the transfer's duration — the slowdown
//!    the filter's own CPU time can explain.
//!
//! Known limits:
//! * `BPF_PROG_TEST_RUN` gives the skb a dummy socket that is not a TCP socket, so on egress
//!   `bpf_tcp_sock` returns NULL and the `snd_nxt` comparison of the retransmission path is not
//!   exercised (the `skb->sk` / `bpf_sk_fullsock` / `bpf_tcp_sock` calls are). The throughput
//!   measurement does exercise it.
//! * Test-run reuses one skb: on ingress, the same TCP segment repeated is a retransmission from
//!   the second run on, so the ingress TCP figure includes the flow-table lookup every time (the
//!   first run of each measurement also inserts the flow).
//! * The kernel reports the mean in whole nanoseconds; differences of 1–2 ns are at resolution.
//! * No local-region prefixes are configured (`SamplerOptions::default()`), so the LPM-trie
//!   lookup for cross-region bytes is not part of any figure.
//! * Throughput on veth is CPU-bound (sender, receiver and softirq share one CPU here); with 21
//!   rounds the confidence interval of a ratio is about ±2 % on this VM, with 101 about ±1 %.

use std::{
    io,
    mem::size_of,
    net::{TcpListener, TcpStream},
    os::fd::{AsFd, BorrowedFd},
    time::Duration,
};

use anyhow::{Context, Result, bail};
use aya::programs::{SchedClassifier, TcAttachType};
use loupe_bpf::{
    FILTER_STEPS, FilterSteps, RunCounters, RunRequest, SamplerOptions, SlotCounters, StartAt, TrafficSampler,
};
use loupe_testbed::{
    faults::{Fault, FaultConfig, FaultKind},
    test_run::{self, Segment, test_run},
    topology::{A_IF, A_MAC, A_V4, A_V6, B_IF, B_MAC, B_V4, B_V6, VethPair},
    traffic::{self, ECT0},
};

/// Runs per `BPF_PROG_TEST_RUN` call; the kernel reports the mean time of one.
const REPEAT: u32 = 1_000_000;
/// Test-run measurements per state; the median is printed.
const TEST_RUN_REPS: usize = 7;
/// Bytes per TCP transfer.
const TRANSFER_BYTES: u64 = 1 << 30;
/// Rounds of the throughput comparison (each round measures every configuration once).
const ROUNDS: usize = 21;
/// The CPU both ends of a transfer run on (see [`traffic::tcp_transfer_pinned`]): one CPU
/// serializes sender, receiver and softirq, and that is also where a veth transfer's
/// throughput comes from (measured here: ~17 Gbit/s pinned to one CPU or spread over two, but
/// per-transfer spread 15.6–18.2 instead of 10–23 Gbit/s).
const TRANSFER_CPU: usize = 1;

/// Wait between attaching a configuration and its transfer, so the transfer measures the
/// steady state rather than the attach: loading Loupe's object parses the kernel's BTF and
/// allocates its maps, and attaching flips static keys and waits for RCU.
/// `LOUPE_FILTER_SETTLE_MS` overrides the 300 ms.
fn settle() -> Duration {
    let ms = std::env::var("LOUPE_FILTER_SETTLE_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(300);
    Duration::from_millis(ms)
}

/// [`ROUNDS`], or `LOUPE_FILTER_ROUNDS` for a longer, tighter measurement.
fn rounds() -> usize {
    std::env::var("LOUPE_FILTER_ROUNDS").ok().and_then(|v| v.parse().ok()).filter(|&n| n > 0).unwrap_or(ROUNDS)
}
/// A run long enough to cover every measurement made while it is active: 10 ms × 2000 = 20 s.
const LONG_RUN: RunRequest = RunRequest { interval: Duration::from_millis(10), samples: 2000, start: StartAt::Now };
/// Ethernet frame size of the test-run packets (a full 1500-byte MTU frame).
const FRAME_LEN: usize = 1514;

fn main() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("SKIP filter bench: needs root");
        return;
    }
    // `cargo bench -p loupe-testbed --bench filter -- per-packet`: the test-run figures only.
    let per_packet_only = std::env::args().any(|a| a == "per-packet");
    let result = per_packet_cost().and_then(|cost| if per_packet_only { Ok(()) } else { throughput(cost) });
    if let Err(e) = result {
        eprintln!("filter bench failed: {e:#}");
        std::process::exit(1);
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Per-packet cost via BPF_PROG_TEST_RUN
// ---------------------------------------------------------------------------------------------

fn prog_fd(prog: &SchedClassifier) -> Result<BorrowedFd<'_>> {
    Ok(prog.fd().context("program not loaded")?.as_fd())
}

/// Ethernet (a0 → b0) + IPv4 (ECT(0), DF) + TCP (ACK|PSH, timestamp option) + payload, as a
/// bulk-transfer data segment looks on the wire.
fn ipv4_tcp_frame() -> Vec<u8> {
    test_run::ipv4_tcp_frame(&Segment {
        src_mac: test_run::mac(A_MAC),
        dst_mac: test_run::mac(B_MAC),
        saddr: A_V4,
        daddr: B_V4,
        tos: ECT0,
        sport: 40_000,
        dport: 5_001,
        seq: 1_000_000,
        frame_len: FRAME_LEN,
    })
}

/// Ethernet (a0 → b0) + IPv6 (traffic class ECT(0)) + UDP + payload. The UDP checksum is left
/// zero: the filter never reads it.
fn ipv6_udp_frame() -> Vec<u8> {
    let mut f = ethernet(0x86dd);
    let payload_len = (FRAME_LEN - f.len() - 40) as u16;
    let tclass = ECT0 as u32;
    f.extend((6u32 << 28 | tclass << 20).to_be_bytes()); // version, traffic class, flow label
    f.extend(payload_len.to_be_bytes());
    f.extend([17, 64]); // UDP, hop limit
    f.extend(A_V6.octets());
    f.extend(B_V6.octets());
    f.extend(40_000u16.to_be_bytes());
    f.extend(9_000u16.to_be_bytes());
    f.extend(payload_len.to_be_bytes());
    f.extend([0, 0]);
    f.resize(FRAME_LEN, 0x5a);
    f
}

fn ethernet(ethertype: u16) -> Vec<u8> {
    let mut f = Vec::with_capacity(FRAME_LEN);
    f.extend(test_run::mac(B_MAC));
    f.extend(test_run::mac(A_MAC));
    f.extend(ethertype.to_be_bytes());
    f
}

/// The median (the upper one of an even count).
fn median<T: Copy + Ord>(values: &[T]) -> T {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    sorted[sorted.len() / 2]
}

/// Returns the costliest "run" figure over the floor (ns), for [`throughput`].
fn per_packet_cost() -> Result<i64> {
    let mut noop = Fault::load(FaultKind::Noop, FaultConfig::default()).context("loading tb_noop")?;
    let noop_fd = prog_fd(noop.program_mut())?;
    let mut clock = Fault::load(FaultKind::Clock, FaultConfig::default()).context("loading tb_clock")?;
    let clock_fd = prog_fd(clock.program_mut())?;
    let pair = VethPair::new("bench")?;
    let mut sampler = pair.a.run(|| TrafficSampler::attach(A_IF, &SamplerOptions::default()))??;
    let steps =
        FilterSteps::load(LONG_RUN.interval.as_nanos() as u64, LONG_RUN.samples).context("loading the cut filter")?;

    let frames = [("IPv4/TCP", ipv4_tcp_frame()), ("IPv6/UDP", ipv6_udp_frame())];
    let directions = [("ingress", TcAttachType::Ingress), ("egress", TcAttachType::Egress)];

    // Keep every test-run on one CPU: the per-CPU counters, the program and the skb stay in the
    // same caches, and a migration between calls cannot masquerade as a cost difference.
    let pinned = pin_to_current_cpu()?;

    // One `Cell` per (frame, direction): its noop / idle / run figures, call by call.
    let mut cells: Vec<Cell> = Vec::new();
    for (frame_name, _) in &frames {
        for (dir_name, _) in &directions {
            cells.push(Cell { frame: frame_name, direction: dir_name, ..Default::default() });
        }
    }
    for _ in 0..TEST_RUN_REPS {
        for (fi, (_, frame)) in frames.iter().enumerate() {
            for (di, &(_, direction)) in directions.iter().enumerate() {
                let loupe = prog_fd(sampler.program(direction))?;
                let (noop_ret, noop_ns) = test_run(noop_fd, frame, REPEAT).context("test-run tb_noop")?;
                let (clock_ret, clock_ns) = test_run(clock_fd, frame, REPEAT).context("test-run tb_clock")?;
                let (idle_ret, idle_ns) = test_run(loupe, frame, REPEAT).context("test-run idle filter")?;
                sampler.begin(&LONG_RUN)?;
                let (run_ret, run_ns) = test_run(prog_fd(sampler.program(direction))?, frame, REPEAT)
                    .context("test-run filter during a run")?;
                sampler.abort()?;
                // TC_ACT_UNSPEC (-1) from all three: the filter never changes a packet's fate.
                if [noop_ret, clock_ret, idle_ret, run_ret] != [-1; 4] {
                    bail!("unexpected tc verdicts noop={noop_ret} clock={clock_ret} idle={idle_ret} run={run_ret}");
                }
                let cell = &mut cells[fi * directions.len() + di];
                // The cut programs, each against the same noop call as the figures above.
                for step in 0..FILTER_STEPS.len() {
                    let program = prog_fd(steps.program(step, direction == TcAttachType::Ingress))?;
                    let (_, ns) = test_run(program, frame, REPEAT).context("test-run a cut filter")?;
                    cell.steps[step].push(ns);
                }
                cell.noop.push(noop_ns);
                cell.clock.push(clock_ns);
                cell.idle.push(idle_ns);
                cell.run.push(run_ns);
            }
        }
    }

    println!(
        "filter: BPF_PROG_TEST_RUN, {REPEAT} runs per call, median of {TEST_RUN_REPS} calls, {FRAME_LEN}-byte frames, \
         one CPU; \"+N ns\" = median over calls of (filter - noop call just before it)"
    );
    println!(
        "filter: known limit: test-run has no TCP socket attached (a dummy non-TCP skb->sk), so the egress \
         retransmit path via bpf_tcp_sock stops at NULL"
    );
    let mut costliest_run = 0;
    for cell in &cells {
        let floor = median(&cell.noop);
        for (state, values) in [("clock", &cell.clock), ("idle", &cell.idle), ("run", &cell.run)] {
            let above = cell.above_floor(values);
            if state == "run" {
                costliest_run = costliest_run.max(above);
            }
            println!(
                "filter: {state:<4} {:<7} {}: {:>3} ns/packet (noop floor {floor} ns, {above:+} ns)  [filter {values:?}, noop {:?}]",
                cell.direction,
                cell.frame,
                median(values),
                cell.noop,
            );
            let name =
                format!("filter_{state}_{}_{}", cell.direction, cell.frame).to_lowercase().replace(['/', ' '], "_");
            println!(r#"BENCH {{"name": "{name}_above_floor", "value": {above}, "unit": "ns", "baseline": {floor}}}"#);
        }
    }

    print_steps(&cells);

    // Check that "run" really counted: a short run, a known number of test-run packets in each
    // direction, and the counters must show exactly them.
    const CHECK: u32 = 1_000;
    let check = RunRequest { interval: Duration::from_millis(10), samples: 50, start: StartAt::Now };
    let pending = sampler.begin(&check)?;
    let tcp = &frames[0].1;
    test_run(prog_fd(sampler.program(TcAttachType::Ingress))?, tcp, CHECK)?;
    test_run(prog_fd(sampler.program(TcAttachType::Egress))?, tcp, CHECK)?;
    let counted = sampler.finish(pending)?;
    let sum = |run: &RunCounters, f: fn(&SlotCounters) -> u64| -> u64 {
        run.per_cpu.iter().flat_map(|c| c.slots.iter()).map(f).sum()
    };
    let (inp, outp) = (sum(&counted, |s| s.in_packets), sum(&counted, |s| s.out_packets));
    let (inb, retx) = (sum(&counted, |s| s.in_bytes), sum(&counted, |s| s.in_retx_bytes));
    let ok = inp == CHECK as u64 && outp == CHECK as u64 && inb == CHECK as u64 * FRAME_LEN as u64;
    println!(
        "filter: check: a run counted {inp} ingress / {outp} egress packets for {CHECK} test-runs each \
         ({inb} ingress bytes, {retx} ingress retransmitted bytes){}",
        if ok { "" } else { " — MISMATCH: the run figures above may not measure the counting path" }
    );
    drop(sampler);
    drop(pair);
    unpin(&pinned)?;
    Ok(costliest_run)
}

/// The test-run figures of one frame in one direction, one entry per call.
#[derive(Default)]
struct Cell {
    frame: &'static str,
    direction: &'static str,
    noop: Vec<u32>,
    /// `tb_clock`: one `bpf_ktime_get_ns`, the floor of anything that timestamps packets.
    clock: Vec<u32>,
    idle: Vec<u32>,
    run: Vec<u32>,
    /// The cut filter ([`FILTER_STEPS`]), one list per step.
    steps: [Vec<u32>; FILTER_STEPS.len()],
}

impl Cell {
    /// Median over calls of (`values` − the noop call just before each).
    fn above_floor(&self, values: &[u32]) -> i64 {
        let paired: Vec<i64> = values.iter().zip(&self.noop).map(|(&v, &n)| v as i64 - n as i64).collect();
        median(&paired)
    }
}

/// What each step of a packet's path costs: the cut filter's figure after each step above the
/// floor, and what the step added to the one before. The first step is measured against the
/// clock alone (`tb_clock`), so its own share is the configuration lookup and the slot's
/// division; the whole filter's cost above the clock is what the issue's goal is about.
fn print_steps(cells: &[Cell]) {
    println!("filter: steps, ns above the noop floor (what the step added):");
    for cell in cells {
        let clock = cell.above_floor(&cell.clock);
        let mut line = format!("filter: steps {:<7} {}: clock +{clock}", cell.direction, cell.frame);
        let mut before = clock;
        for (step, values) in cell.steps.iter().enumerate() {
            let total = cell.above_floor(values);
            line += &format!(" | {} +{total} ({:+})", FILTER_STEPS[step].0, total - before);
            let name = format!("filter_step{}_{}_{}", step + 1, cell.direction, cell.frame)
                .to_lowercase()
                .replace(['/', ' '], "_");
            println!(
                r#"BENCH {{"name": "{name}_added", "value": {}, "unit": "ns", "baseline": {before}}}"#,
                total - before
            );
            before = total;
        }
        println!("{line}");
        let whole = cell.above_floor(&cell.run);
        let name = format!("filter_run_{}_{}", cell.direction, cell.frame).to_lowercase().replace(['/', ' '], "_");
        println!(
            "filter: {} {}: the filter above the clock: {:+} ns (the attached filter), {:+} ns (the cut one, whole)",
            cell.direction,
            cell.frame,
            whole - clock,
            before - clock
        );
        println!(
            r#"BENCH {{"name": "{name}_above_clock", "value": {}, "unit": "ns", "baseline": {clock}}}"#,
            whole - clock
        );
    }
}

/// Pins the calling thread to the CPU it is on; returns the previous affinity mask.
fn pin_to_current_cpu() -> Result<libc::cpu_set_t> {
    // SAFETY: plain libc calls on the calling thread with a zeroed, correctly sized CPU set.
    unsafe {
        let mut previous: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut previous) != 0 {
            return Err(io::Error::last_os_error()).context("sched_getaffinity");
        }
        let cpu = libc::sched_getcpu();
        if cpu < 0 {
            return Err(io::Error::last_os_error()).context("sched_getcpu");
        }
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut one);
        if libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &one) != 0 {
            return Err(io::Error::last_os_error()).context("sched_setaffinity");
        }
        Ok(previous)
    }
}

/// Restores an affinity mask saved by [`pin_to_current_cpu`].
fn unpin(previous: &libc::cpu_set_t) -> Result<()> {
    // SAFETY: a CPU set obtained from sched_getaffinity, and its size.
    if unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), previous) } != 0 {
        return Err(io::Error::last_os_error()).context("restoring CPU affinity");
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// 2. TCP throughput over veth
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum Config {
    /// No tc filter (and no clsact qdisc) on either end.
    NoFilter,
    /// The testbed's empty program (`tb_noop`) on ingress and egress of a0 and b0, attached
    /// with tcx as Loupe attaches: what the hook itself costs, whatever program it runs.
    EmptyTcx,
    /// The same empty program through a clsact qdisc and cls_bpf, Loupe's fallback where the
    /// kernel has no tcx: what that older path costs.
    EmptyClsBpf,
    /// Loupe attached on a0 and b0, no run.
    Idle,
    /// Loupe attached on a0 and b0, a run active on both.
    Running,
}

const CONFIGS: [Config; 5] = [Config::NoFilter, Config::EmptyTcx, Config::EmptyClsBpf, Config::Idle, Config::Running];

/// What a configuration attached; dropping it detaches the tc filters.
enum Attached {
    Nothing,
    /// Held only so the programs stay attached.
    Empty(#[allow(dead_code)] Vec<Fault>),
    Loupe(Box<(TrafficSampler, TrafficSampler)>),
}

fn set_up(pair: &VethPair, config: Config) -> Result<Attached> {
    // Programs leave their clsact qdisc behind on drop; remove it so every configuration starts
    // with no tc hook at all (absent already on the first round, hence the ignored error).
    for (ns, dev) in [(&pair.a, A_IF), (&pair.b, B_IF)] {
        let _ = ns.exec(&["tc", "qdisc", "del", "dev", dev, "clsact"]);
        let left = ns.exec(&["tc", "qdisc", "show", "dev", dev])?;
        if left.contains("clsact") {
            bail!("clsact qdisc still on {dev}: {left}");
        }
    }
    match config {
        Config::NoFilter => Ok(Attached::Nothing),
        Config::EmptyClsBpf | Config::EmptyTcx => {
            let attach = if config == Config::EmptyTcx { Fault::attach_tcx } else { Fault::attach };
            let mut faults = Vec::new();
            for (ns, dev) in [(&pair.a, A_IF), (&pair.b, B_IF)] {
                for direction in [TcAttachType::Ingress, TcAttachType::Egress] {
                    faults.push(ns.run(|| attach(FaultKind::Noop, dev, direction, FaultConfig::default()))??);
                }
            }
            Ok(Attached::Empty(faults))
        }
        Config::Idle | Config::Running => {
            let options = SamplerOptions::default();
            let mut a = pair.a.run(|| TrafficSampler::attach(A_IF, &options))??;
            let mut b = pair.b.run(|| TrafficSampler::attach(B_IF, &options))??;
            if config == Config::Running {
                a.begin(&LONG_RUN)?;
                b.begin(&LONG_RUN)?;
            }
            Ok(Attached::Loupe(Box::new((a, b))))
        }
    }
}

/// One TCP transfer's outcome.
struct Transfer {
    gbps: f64,
    secs: f64,
    /// skbs the veth driver moved, both directions (data and ACKs): each passes one egress and
    /// one ingress hook, so the filter runs twice per skb.
    skbs: u64,
}

/// Streams [`TRANSFER_BYTES`] from ns a to ns b.
fn transfer(pair: &VethPair, port: u16) -> Result<Transfer> {
    let listener = pair.b.run(|| TcpListener::bind((B_V4, port)))??;
    let client = pair.a.run(|| TcpStream::connect((B_V4, port)))??;
    let (a0, b0) = pair.link_stats()?;
    let report = traffic::tcp_transfer_pinned(listener, client, TRANSFER_BYTES, TRANSFER_CPU, TRANSFER_CPU)?;
    let (a1, b1) = pair.link_stats()?;
    if report.bytes_received_by_peer != TRANSFER_BYTES {
        bail!("peer received {} of {TRANSFER_BYTES} bytes", report.bytes_received_by_peer);
    }
    let secs = report.elapsed.as_secs_f64();
    Ok(Transfer {
        gbps: TRANSFER_BYTES as f64 * 8.0 / secs / 1e9,
        secs,
        skbs: a1.since(&a0).tx_packets + b1.since(&b0).tx_packets,
    })
}

/// A distribution-free 95 % confidence interval for the median of `sorted`: the order
/// statistics n/2 ∓ 0.98·√n (the normal approximation to the binomial; fine from ~20 values).
fn median_ci95(sorted: &[f64]) -> (f64, f64) {
    let n = sorted.len() as f64;
    let half = 0.98 * n.sqrt();
    let at = |r: f64| sorted[(r.round().max(0.0) as usize).min(sorted.len() - 1)];
    (at(n / 2.0 - half - 0.5), at(n / 2.0 + half - 0.5))
}

fn median_f64(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// `run_cost_ns`: the costliest per-packet "run" figure over the floor from part 1, used to put
/// the throughput figures in proportion.
fn throughput(run_cost_ns: i64) -> Result<()> {
    let pair = VethPair::new("bench-tp")?;
    let mut port = 5_000u16;
    let mut next_port = || {
        port += 1;
        port
    };
    // Warm-up (page cache of buffers, socket memory, CPU frequency), not counted.
    transfer(&pair, next_port())?;

    let mut gbps: [Vec<f64>; CONFIGS.len()] = Default::default();
    let mut running: Vec<Transfer> = Vec::new();
    for round in 0..rounds() {
        for k in 0..CONFIGS.len() {
            // Rotate the order each round so no configuration always runs first or last.
            let i = (round + k) % CONFIGS.len();
            let mut attached = set_up(&pair, CONFIGS[i])?;
            std::thread::sleep(settle());
            let t = transfer(&pair, next_port())?;
            gbps[i].push(t.gbps);
            if CONFIGS[i] == Config::Running {
                running.push(t);
            }
            if let Attached::Loupe(samplers) = &mut attached {
                samplers.0.abort()?;
                samplers.1.abort()?;
            }
            drop(attached); // detaches the tc filters
        }
    }

    let rounds = rounds();
    let all = |v: &Vec<f64>| v.iter().map(|g| format!("{g:.1}")).collect::<Vec<_>>().join(" ");
    println!(
        "filter: veth TCP a0 -> b0, {} MiB per transfer, sender and receiver on CPU {TRANSFER_CPU}, median of {rounds} interleaved rounds",
        TRANSFER_BYTES >> 20
    );
    for (i, label) in ["no filter", "empty, tcx", "empty, cls_bpf", "Loupe idle", "Loupe run active"].iter().enumerate()
    {
        println!(
            "filter: throughput, {:<17} {:>5.1} Gbit/s  [{}]",
            format!("{label}:"),
            median_f64(gbps[i].clone()),
            all(&gbps[i])
        );
    }
    // Each round's own ratio (its configurations ran back to back, so slow drift of the host
    // cancels), then the median of those and their spread. empty/none is what the tc hook
    // costs whatever it runs; run/empty is the filter's own cost above that floor, the
    // end-to-end view of part 1's "+N ns"; run/idle is the run's cost alone.
    let pairs = [
        ("empty_over_none", 1, 0),
        ("empty_cls_bpf_over_none", 2, 0),
        ("idle_over_none", 3, 0),
        ("run_over_none", 4, 0),
        ("run_over_empty", 4, 1),
        ("run_over_idle", 4, 3),
    ];
    for (label, i, base) in pairs {
        let mut ratios: Vec<f64> = gbps[i].iter().zip(&gbps[base]).map(|(c, n)| c / n).collect();
        ratios.sort_by(f64::total_cmp);
        let q = |f: f64| ratios[((ratios.len() - 1) as f64 * f).round() as usize];
        let (lo, hi) = median_ci95(&ratios);
        println!(
            "filter: per-round {}: median {:.3} (95 % CI {lo:.3}–{hi:.3}), interquartile {:.3}–{:.3}, range {:.3}–{:.3} ({rounds} rounds)",
            label.replace("_over_", "/"),
            q(0.5),
            q(0.25),
            q(0.75),
            ratios[0],
            ratios[ratios.len() - 1]
        );
        println!(
            r#"BENCH {{"name": "filter_veth_tcp_{label}", "value": {:.3}, "unit": "ratio", "baseline": 1, "iqr": [{:.3}, {:.3}]}}"#,
            q(0.5),
            q(0.25),
            q(0.75)
        );
    }
    // What the filter's own CPU time can explain: invocations × per-packet cost, against the
    // transfer's duration (veth uses GSO/TSO end to end, so one skb carries up to 64 KiB).
    let skbs = running.iter().map(|t| t.skbs).sum::<u64>() / running.len() as u64;
    let secs = running.iter().map(|t| t.secs).sum::<f64>() / running.len() as f64;
    let filter_ms = (2 * skbs) as f64 * run_cost_ns as f64 / 1e6;
    println!(
        "filter: during a run the filter ran ~{} times per transfer ({skbs} skbs both ways, one per {} bytes \
         transferred); at up to {run_cost_ns} ns each that is ~{filter_ms:.1} ms of CPU in a {:.0} ms transfer ({:.1} %)",
        2 * skbs,
        TRANSFER_BYTES / skbs,
        secs * 1e3,
        filter_ms / (secs * 1e3) * 100.0,
    );
    Ok(())
}
