//! A synthetic host for stack-sample tests and the benchmark.
//!
//! Processes are instances of a few dozen programs, picked with Zipf-like popularity; each
//! program has its own pool of stacks (depth 5–40, user frames from its binary and shared
//! libraries, sometimes kernel frames on top) drawn from a global set of frame names, again
//! Zipf-like. Each CPU is a small Markov chain: idle periods persist (≈30 % idle overall,
//! swapper with one of a few idle stacks), a busy CPU often keeps the same thread and
//! sometimes the same stack for the next tick. Timestamps sit on a per-CPU 100 ms grid (random
//! phase) plus an interrupt latency of ~1–5 µs, with rare outliers up to 50 µs.

use loupe_store::{Frame, StackSample};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[derive(Clone, Debug)]
pub struct SynthParams {
    pub cpus: u32,
    pub hz: u64,
    pub programs: usize,
    pub processes: usize,
    pub frames: usize,
    /// Average stacks per program (the total is about programs × this).
    pub stacks_per_program: usize,
    pub idle_fraction: f64,
    /// Chance that a sample has an empty stack (unwinding failed).
    pub empty_stack: f64,
    /// Put some non-ASCII names in.
    pub unicode: bool,
    /// Make this fraction of user frames unnamed ones located in one real file (`loupe
    /// symbolize`'s benchmark: a library whose debug file names them).
    pub unnamed: Option<UnnamedFrames>,
}

/// Unnamed frames at random addresses of one file's text.
#[derive(Clone, Debug)]
pub struct UnnamedFrames {
    pub fraction: f64,
    pub module: String,
    pub build_id: Vec<u8>,
    pub text: std::ops::Range<u64>,
}

impl SynthParams {
    /// The benchmark's 96-CPU host.
    pub fn day_host() -> SynthParams {
        SynthParams {
            cpus: 96,
            hz: 10,
            programs: 40,
            processes: 300,
            frames: 20_000,
            stacks_per_program: 100,
            idle_fraction: 0.3,
            empty_stack: 0.002,
            unicode: false,
            unnamed: None,
        }
    }

    /// A small host for tests, with every odd case.
    pub fn small(cpus: u32) -> SynthParams {
        SynthParams {
            cpus,
            hz: 10,
            programs: 6,
            processes: 20,
            frames: 300,
            stacks_per_program: 15,
            idle_fraction: 0.3,
            empty_stack: 0.03,
            unicode: true,
            unnamed: None,
        }
    }
}

struct Proc {
    pid: u32,
    tids: Vec<(u32, String)>,
    cgroup: u64,
    program: usize,
}

struct CpuState {
    phase_ns: u64,
    idle: bool,
    current: Option<(usize, usize, usize)>, // proc, thread, stack
}

pub struct Synth {
    pub params: SynthParams,
    rng: StdRng,
    stacks: Vec<Vec<Frame>>,
    idle_stacks: Vec<usize>,
    program_stacks: Vec<Vec<usize>>,
    procs: Vec<Proc>,
    proc_cdf: Vec<f64>,
    cpus: Vec<CpuState>,
    /// Next tick index (ticks since `t0`).
    tick: u64,
    t0: u64,
}

/// Cumulative weights 1/(i+1)^s.
fn zipf_cdf(n: usize, s: f64) -> Vec<f64> {
    let mut acc = 0.0;
    let mut cdf: Vec<f64> = (0..n)
        .map(|i| {
            acc += 1.0 / ((i + 1) as f64).powf(s);
            acc
        })
        .collect();
    for c in &mut cdf {
        *c /= acc;
    }
    cdf
}

fn pick(cdf: &[f64], rng: &mut StdRng) -> usize {
    let u: f64 = rng.random();
    cdf.partition_point(|&c| c < u).min(cdf.len() - 1)
}

const KERNEL_NAMES: &[&str] = &[
    "entry_SYSCALL_64_after_hwframe",
    "do_syscall_64",
    "__x64_sys_read",
    "__x64_sys_write",
    "__x64_sys_epoll_wait",
    "__x64_sys_futex",
    "vfs_read",
    "vfs_write",
    "tcp_sendmsg",
    "tcp_recvmsg",
    "asm_sysvec_apic_timer_interrupt",
    "copy_user_enhanced_fast_string",
    "_raw_spin_lock",
    "schedule",
    "__schedule",
    "finish_task_switch.isra.0",
    "exc_page_fault",
    "handle_mm_fault",
];

const MODULES: &[&str] = &[
    "libc.so.6",
    "libstdc++.so.6",
    "libpthread.so.0",
    "libssl.so.3",
    "libcrypto.so.3",
    "libz.so.1",
    "ld-linux-x86-64.so.2",
    "libjvm.so",
    "libpython3.11.so.1.0",
];

const PROGRAMS: &[&str] = &[
    "envoy",
    "mysqld",
    "java",
    "python3",
    "nginx",
    "redis-server",
    "postgres",
    "node",
    "memcached",
    "haproxy",
    "kafka",
    "etcd",
    "containerd",
    "kubelet",
    "dockerd",
    "prometheus",
    "grafana",
    "clickhouse",
    "spark",
    "ruby",
];

impl Synth {
    pub fn new(seed: u64, params: SynthParams, t0: u64) -> Synth {
        let mut rng = StdRng::seed_from_u64(seed);
        let p = &params;
        // Frame names: ~10 % kernel, the rest user functions of programs and libraries.
        let n_kernel = (p.frames / 10).max(KERNEL_NAMES.len());
        let mut kernel: Vec<Frame> = KERNEL_NAMES.iter().map(|n| Frame::kernel(*n)).collect();
        while kernel.len() < n_kernel {
            kernel.push(Frame::kernel(format!("kfunc_{}_{}", kernel.len(), rng.random_range(0..1000))));
        }
        let program_name = |i: usize| {
            let base = PROGRAMS[i % PROGRAMS.len()];
            if i < PROGRAMS.len() { base.to_string() } else { format!("{base}{}", i / PROGRAMS.len()) }
        };
        let n_user = p.frames - n_kernel;
        let mut user: Vec<Frame> = Vec::with_capacity(n_user);
        for i in 0..n_user {
            // Half in programs' own binaries, half in shared libraries.
            let module = if i % 2 == 0 {
                program_name(rng.random_range(0..p.programs))
            } else {
                MODULES[rng.random_range(0..MODULES.len())].to_string()
            };
            let function = match rng.random_range(0..20) {
                0 => format!("{module}+0x{:x}", rng.random_range(0x1000..0x4_000_000u64)),
                1 if p.unicode => format!("naïve::λ_{i}<Ω, “ü”>"),
                2..=9 => format!("ns{}::Class{}::method_{i}(int, char const*)", i % 17, i % 101),
                _ => format!("func_{i}_{}", rng.random_range(0..100_000)),
            };
            match &p.unnamed {
                Some(u) if rng.random_bool(u.fraction) => {
                    let address = rng.random_range(u.text.clone());
                    let at = loupe_store::ObjectAddress { build_id: u.build_id.clone(), address };
                    user.push(Frame::unnamed(u.module.clone(), at));
                }
                _ => {
                    user.push(Frame::user(function, module))
                }
            }
        }
        let user_cdf = zipf_cdf(user.len(), 0.8);
        let kernel_cdf = zipf_cdf(kernel.len(), 1.0);

        let mut stacks: Vec<Vec<Frame>> = Vec::new();
        // Idle stacks.
        let idle_tail = ["cpuidle_enter_state", "cpuidle_enter", "do_idle", "cpu_startup_entry", "start_secondary"];
        let mut idle_stacks = Vec::new();
        for leaf in ["intel_idle", "acpi_idle_do_entry", "native_safe_halt"] {
            let mut s = vec![Frame::kernel(leaf)];
            s.extend(idle_tail.iter().map(|n| Frame::kernel(*n)));
            s.push(Frame::kernel("secondary_startup_64_no_verify"));
            idle_stacks.push(stacks.len());
            stacks.push(s);
        }
        // Program stacks: a root chain per program, random paths above it, kernel on top sometimes.
        let mut program_stacks = Vec::new();
        for _ in 0..p.programs {
            let root: Vec<Frame> =
                (0..rng.random_range(2..6)).map(|_| user[pick(&user_cdf, &mut rng)].clone()).collect();
            let n = rng.random_range(p.stacks_per_program / 2..=p.stacks_per_program * 3 / 2).max(1);
            let mut own = Vec::new();
            for _ in 0..n {
                let depth = rng.random_range(5..=40usize);
                let mut s: Vec<Frame> = Vec::with_capacity(depth);
                if rng.random_bool(0.3) {
                    for _ in 0..rng.random_range(1..8) {
                        s.push(kernel[pick(&kernel_cdf, &mut rng)].clone());
                    }
                }
                while s.len() + root.len() < depth {
                    s.push(user[pick(&user_cdf, &mut rng)].clone());
                }
                s.extend(root.iter().rev().cloned());
                own.push(stacks.len());
                stacks.push(s);
            }
            program_stacks.push(own);
        }
        // Processes.
        let prog_cdf = zipf_cdf(p.programs, 1.0);
        let cgroups: Vec<u64> = (0..40).map(|_| rng.random_range(1_000..200_000)).collect();
        let mut used_pids = std::collections::HashSet::new();
        let procs: Vec<Proc> = (0..p.processes)
            .map(|_| {
                let program = pick(&prog_cdf, &mut rng);
                let mut pid = rng.random_range(300..4_000_000u32);
                while !used_pids.insert(pid) {
                    pid += 1;
                }
                let name = program_name(program);
                let threads = 1 + (rng.random::<f64>().powi(3) * 64.0) as u32;
                let tids = (0..threads)
                    .map(|t| {
                        let comm = if t == 0 {
                            name.clone()
                        } else if p.unicode && t % 5 == 1 {
                            format!("wörker-{}", t % 4)
                        } else {
                            format!("{}-w{}", &name[..name.len().min(8)], t % 4)
                        };
                        (if t == 0 { pid } else { pid + t * 7 }, comm)
                    })
                    .collect();
                Proc { pid, tids, cgroup: cgroups[pick(&zipf_cdf(cgroups.len(), 1.0), &mut rng)], program }
            })
            .collect();
        let proc_cdf = zipf_cdf(procs.len(), 1.1);
        let period = 1_000_000_000 / p.hz;
        let cpus = (0..p.cpus)
            .map(|_| CpuState {
                phase_ns: rng.random_range(0..period),
                idle: rng.random_bool(p.idle_fraction),
                current: None,
            })
            .collect();
        Synth { params, rng, stacks, idle_stacks, program_stacks, procs, proc_cdf, cpus, tick: 0, t0 }
    }

    pub fn period_ns(&self) -> u64 {
        1_000_000_000 / self.params.hz
    }

    /// Distinct stacks the generator can produce.
    pub fn stack_pool(&self) -> usize {
        self.stacks.len()
    }

    /// The next `ticks` ticks of every CPU, appended to `out` (reusing its allocations).
    /// Returns how many samples were written; `out` is truncated to that.
    pub fn next_batch(&mut self, ticks: u64, out: &mut Vec<StackSample>) -> usize {
        let period = self.period_ns();
        let p_stay_idle = 0.8;
        let p_go_idle = self.params.idle_fraction * (1.0 - p_stay_idle) / (1.0 - self.params.idle_fraction);
        let mut n = 0;
        for k in self.tick..self.tick + ticks {
            for cpu in 0..self.params.cpus {
                let rng = &mut self.rng;
                let st = &mut self.cpus[cpu as usize];
                let mut latency = 1_000 + (-(1.0 - rng.random::<f64>()).ln() * 2_000.0) as u64;
                if rng.random_bool(0.01) {
                    latency += rng.random_range(0..50_000);
                }
                let time = self.t0 + st.phase_ns + k * period + latency;
                st.idle = if st.idle { rng.random_bool(p_stay_idle) } else { rng.random_bool(p_go_idle) };
                if n == out.len() {
                    out.push(StackSample {
                        time_unix_ns: 0,
                        cpu: 0,
                        pid: 0,
                        tid: 0,
                        comm: String::new(),
                        cgroup_id: 0,
                        idle: false,
                        frames: Vec::new(),
                    });
                }
                let s = &mut out[n];
                n += 1;
                s.time_unix_ns = time;
                s.cpu = cpu;
                s.idle = st.idle;
                if st.idle {
                    s.pid = 0;
                    s.tid = 0;
                    s.comm.clear();
                    use std::fmt::Write;
                    let _ = write!(s.comm, "swapper/{cpu}");
                    s.cgroup_id = 1;
                    let which = self.idle_stacks[rng.random_range(0..self.idle_stacks.len())];
                    s.frames.clone_from(&self.stacks[which]);
                    continue;
                }
                let (proc_i, thread_i, mut stack_i) = match st.current {
                    Some(cur) if rng.random_bool(0.5) => cur,
                    _ => {
                        let pi = pick(&self.proc_cdf, rng);
                        let nt = self.procs[pi].tids.len();
                        let ti = ((rng.random::<f64>().powi(2)) * nt as f64) as usize;
                        (pi, ti.min(nt - 1), usize::MAX)
                    }
                };
                let pr = &self.procs[proc_i];
                if stack_i == usize::MAX || !rng.random_bool(0.3) {
                    let own = &self.program_stacks[pr.program];
                    let pos = ((rng.random::<f64>().powi(3)) * own.len() as f64) as usize;
                    stack_i = own[pos.min(own.len() - 1)];
                }
                st.current = Some((proc_i, thread_i, stack_i));
                let (tid, comm) = &pr.tids[thread_i];
                s.pid = pr.pid;
                s.tid = *tid;
                s.comm.clone_from(comm);
                s.cgroup_id = pr.cgroup;
                if rng.random_bool(self.params.empty_stack) {
                    s.frames.clear();
                } else {
                    s.frames.clone_from(&self.stacks[stack_i]);
                }
            }
        }
        self.tick += ticks;
        out.truncate(n);
        n
    }
}

/// `samples` as the store keeps them: times to the microsecond (what brute-force answers must
/// be computed from).
pub fn as_stored(samples: &[StackSample]) -> impl Iterator<Item = StackSample> + '_ {
    samples.iter().map(|s| StackSample { time_unix_ns: StackSample::stored_time(s.time_unix_ns), ..s.clone() })
}

/// Does `s` match `q` (range, pid, comm, cpu, idle)?
pub fn matches(s: &StackSample, q: &loupe_store::ProfileQuery) -> bool {
    q.range.contains(s.time_unix_ns)
        && (q.include_idle || !s.idle)
        && q.pid.is_none_or(|p| p == s.pid)
        && q.comm.as_ref().is_none_or(|c| *c == s.comm)
        && q.cpu.is_none_or(|c| c == s.cpu)
}

/// The profile computed by brute force over every sample written. `batches` holds each
/// batch's time (its earliest sample, or the `now` it was written at) and lost count.
pub fn brute_profile(
    all: &[StackSample],
    batches: &[(u64, u64)],
    q: &loupe_store::ProfileQuery,
) -> loupe_store::Profile {
    let mut per: std::collections::HashMap<&Vec<Frame>, u64> = std::collections::HashMap::new();
    let mut samples = 0;
    for s in all.iter().filter(|s| matches(s, q)) {
        *per.entry(&s.frames).or_default() += 1;
        samples += 1;
    }
    let lost = batches.iter().filter(|(t, _)| q.range.contains(*t)).map(|(_, l)| l).sum();
    let stacks = per.into_iter().map(|(f, n)| (f.clone(), n)).collect();
    normalized(loupe_store::Profile { samples, lost, stacks, span: None })
}

/// Checks `store.profile(q)` against [`brute_profile`], and that its span brackets the matching
/// samples inside the range (to a batch's resolution); returns the samples it counted.
pub fn assert_profile_matches(
    store: &loupe_store::Store,
    all: &[StackSample],
    batches: &[(u64, u64)],
    q: &loupe_store::ProfileQuery,
) -> u64 {
    let want = brute_profile(all, batches, q);
    let mut got = normalized(store.profile(q).unwrap());
    let times = all.iter().filter(|s| matches(s, q)).map(|s| s.time_unix_ns);
    match (times.clone().min(), times.max(), got.span.take()) {
        (Some(first), Some(last), Some((a, b))) => {
            assert!(a <= first && last <= b, "{q:?}: span {a}..{b} misses {first}..{last}");
            assert!(q.range.contains(a) && q.range.contains(b), "{q:?}: span {a}..{b} leaves the range");
        }
        (None, None, None) => {}
        other => panic!("{q:?}: samples and span disagree: {other:?}"),
    }
    assert_eq!(got.samples, want.samples, "{q:?}");
    assert_eq!(got.lost, want.lost, "{q:?}");
    assert_eq!(got, want, "{q:?}");
    want.samples
}

/// Stacks in a fixed order, so profiles compare with `==`.
pub fn normalized(mut p: loupe_store::Profile) -> loupe_store::Profile {
    p.stacks.sort();
    p
}

/// Total order on samples (for comparing lists whose ties may come in any order).
pub fn sort_samples(v: &mut [StackSample]) {
    v.sort_by(|a, b| {
        (a.time_unix_ns, a.cpu, a.pid, a.tid, &a.comm, a.cgroup_id, a.idle, &a.frames).cmp(&(
            b.time_unix_ns,
            b.cpu,
            b.pid,
            b.tid,
            &b.comm,
            b.cgroup_id,
            b.idle,
            &b.frames,
        ))
    });
}

/// A hand-made sample.
pub fn sample(time: u64, cpu: u32, pid: u32, comm: &str, frames: Vec<Frame>) -> StackSample {
    StackSample { time_unix_ns: time, cpu, pid, tid: pid, comm: comm.into(), cgroup_id: 4242, idle: pid == 0, frames }
}
