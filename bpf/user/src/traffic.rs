//! The Millisampler tc filter on one interface: attach, run, read, clear.
//!
//! Each [`TrafficSampler`] loads its own copy of the programs and maps, so interfaces are
//! sampled independently (a run on `eth0` and one on `eth1` may overlap) while one interface is
//! only ever sampled by one run at a time (an [`InterfaceLock`] is held while attached).

use std::{net::IpAddr, str::FromStr, thread, time::Duration};

use aya::{
    Ebpf, EbpfLoader,
    maps::{Array, LpmTrie, MapData, PerCpuArray, PerCpuValues, lpm_trie::Key},
    programs::{
        LinkOrder, SchedClassifier, TcAttachType,
        tc::{self, NlOptions, TcAttachOptions},
    },
    util::{nr_cpus, online_cpus},
};
use ipnet::IpNet;
use loupe_bpf_common::{
    FLAG_CLOCK_TAI, FLAG_REGION_CONFIGURED, MAP_LOCAL_PREFIXES, MAP_RUN_CONFIG, MAP_SLOTS, PROG_EGRESS, PROG_INGRESS,
    RunConfig, SlotCounters,
};

use crate::{
    EBPF_OBJECT, Interface, SamplerError,
    clock::{ClockPair, ClockQuality, monotonic_ns},
    iface::InterfaceLock,
};

pub use loupe_bpf_common::{MAX_INTERVAL, MIN_INTERVAL};
/// Most slots one sampler can hold (the per-CPU array is sized at attach time).
pub const MAX_CAPACITY: u32 = 100_000;
/// Priority of Loupe's tc filters where it falls back to cls_bpf: early, so filters that drop
/// packets run after we counted.
const TC_PRIORITY: u16 = 1;
/// Extra time after a run's last slot before the counters are read, so a packet that took its
/// slot number just before the end has finished adding.
const END_GRACE: Duration = Duration::from_millis(2);

/// The kernel hook a [`TrafficSampler`]'s programs are attached to.
///
/// *Why tcx first:* tcx programs run before a clsact qdisc's filters and Loupe's links are
/// first among them, so Loupe counts a packet before another tcx program (a CNI's) can redirect
/// or drop it, and before any filter that drops. Neither hook was measurably cheaper end to end
/// on a veth (`docs/hot-paths.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcHook {
    /// tcx links (Linux 6.6+): `bpftool net show dev <iface>` lists them; they go away with the
    /// process that made them.
    Tcx,
    /// clsact qdisc + cls_bpf through netlink, priority 1 (kernels without tcx): `tc filter
    /// show dev <iface> ingress|egress` lists them.
    ClsBpf,
}

impl std::fmt::Display for TcHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TcHook::Tcx => "tcx",
            TcHook::ClsBpf => "clsact + cls_bpf",
        })
    }
}

/// How to set up a sampler.
#[derive(Clone, Debug)]
pub struct SamplerOptions {
    /// Most samples a run on this sampler may have.
    pub capacity: u32,
    /// Prefixes of the local region; remote addresses outside them count as cross-region.
    pub local_prefixes: Vec<IpNet>,
}

impl Default for SamplerOptions {
    fn default() -> Self {
        Self { capacity: 2_000, local_prefixes: Vec::new() }
    }
}

/// When a run starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartAt {
    /// As soon as the configuration is written.
    Now,
    /// At this wall-clock instant (Unix ns): hosts with synchronised clocks that are given the
    /// same instant sample the same time window. The filter then counts slots on `CLOCK_TAI`
    /// from that instant, so each slot's boundaries are the same on every host by construction,
    /// however late each agent wrote its configuration (wake-ups of a rack's agents differ by
    /// ~1 ms p99 on a loaded 2-core host, ten 100 µs slots).
    UnixNs(u64),
}

/// One run: `samples` slots of `interval` each.
#[derive(Clone, Copy, Debug)]
pub struct RunRequest {
    pub interval: Duration,
    pub samples: u32,
    pub start: StartAt,
}

impl RunRequest {
    /// Checks the request against the bounds and a sampler's capacity, before anything is loaded.
    pub fn validate(&self, capacity: u32) -> Result<(), SamplerError> {
        if self.interval < MIN_INTERVAL || self.interval > MAX_INTERVAL {
            return Err(SamplerError::IntervalOutOfBounds(self.interval));
        }
        if self.samples == 0 || self.samples > capacity {
            return Err(SamplerError::SamplesOutOfBounds { samples: self.samples, max: capacity });
        }
        Ok(())
    }
}

/// A run whose configuration is in the kernel.
#[derive(Clone, Copy, Debug)]
pub struct PendingRun {
    /// Slot 0's start on this host's monotonic clock (what userspace sleeps on).
    pub start_mono_ns: u64,
    pub start_unix_ns: u64,
    pub interval_ns: u64,
    pub samples: u32,
    /// Slots are counted on `CLOCK_TAI` (a run that started at a given instant).
    pub on_tai: bool,
    /// The clock discipline's state when the run was configured.
    pub clock: ClockQuality,
}

impl PendingRun {
    pub fn end_mono_ns(&self) -> u64 {
        self.start_mono_ns + self.interval_ns * self.samples as u64
    }

    pub fn end_unix_ns(&self) -> u64 {
        self.start_unix_ns + self.interval_ns * self.samples as u64
    }
}

/// What one CPU counted, one entry per slot.
#[derive(Clone, Debug)]
pub struct CpuCounters {
    pub cpu: u32,
    pub slots: Vec<SlotCounters>,
}

/// The counters of a finished run.
#[derive(Clone, Debug)]
pub struct RunCounters {
    pub iface: String,
    pub start_unix_ns: u64,
    pub interval_ns: u64,
    pub samples: u32,
    pub local_prefixes: Vec<IpNet>,
    /// Online CPUs in ascending order.
    pub per_cpu: Vec<CpuCounters>,
    /// Slots were counted on `CLOCK_TAI` from `start_unix_ns` (a synchronized run).
    pub on_tai: bool,
    /// How far this host's clock may be off (read when the run was configured).
    pub clock: ClockQuality,
}

/// The tc filter attached to one interface.
pub struct TrafficSampler {
    ebpf: Ebpf,
    iface: Interface,
    hook: TcHook,
    capacity: u32,
    local_prefixes: Vec<IpNet>,
    cpus: Vec<u32>,
    possible_cpus: usize,
    _lock: InterfaceLock,
}

impl std::fmt::Debug for TrafficSampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrafficSampler")
            .field("iface", &self.iface.name)
            .field("hook", &self.hook)
            .field("capacity", &self.capacity)
            .finish()
    }
}

impl TrafficSampler {
    /// Loads the filter and attaches it to ingress and egress of `iface` (in the calling
    /// thread's network namespace). The filter stays idle until [`TrafficSampler::begin`].
    pub fn attach(iface: &str, options: &SamplerOptions) -> Result<Self, SamplerError> {
        crate::kernel::RUNS.check()?;
        let capacity = options.capacity;
        if capacity == 0 || capacity > MAX_CAPACITY {
            return Err(SamplerError::SamplesOutOfBounds { samples: capacity, max: MAX_CAPACITY });
        }
        let iface = Interface::lookup(iface)?;
        let lock = InterfaceLock::acquire(&iface)?;
        let mut ebpf = EbpfLoader::new()
            .verifier_log_level(crate::verifier::LOG_LEVEL)
            .map_max_entries(MAP_SLOTS, capacity)
            .load(EBPF_OBJECT)
            .map_err(|e| crate::privilege::classify("load eBPF programs", &e, SamplerError::Load))?;

        let attach_err = |e: &aya::programs::ProgramError| {
            crate::privilege::classify("attach tc filters", e, |reason| SamplerError::Attach {
                iface: iface.name.clone(),
                reason,
            })
        };
        // tcx first (kernels 6.6+); where it is missing, clsact + cls_bpf through netlink.
        let mut hook = TcHook::Tcx;
        for (name, direction) in [(PROG_INGRESS, TcAttachType::Ingress), (PROG_EGRESS, TcAttachType::Egress)] {
            // A Loupe killed with SIGKILL leaves its netlink filters behind (tcx links go with
            // the process); we hold the interface lock, so any filter of ours still there is
            // such an orphan, also from a Loupe that attached with cls_bpf before tcx.
            let _ = tc::qdisc_detach_program(&iface.name, direction, name);
            let prog: &mut SchedClassifier = crate::program_mut(&mut ebpf, name)?;
            prog.load().map_err(|e| crate::verifier::load_failed(name, e))?;
            // First among the hook's tcx programs, so programs that drop run after we counted.
            let tcx = TcAttachOptions::TcxOrder(LinkOrder::first());
            if hook == TcHook::Tcx && prog.attach_with_options(&iface.name, direction, tcx).is_ok() {
                continue;
            }
            // No tcx (a kernel before 6.6): clsact + cls_bpf, for this direction and the next.
            // An existing clsact qdisc is fine; any other failure shows up at attach below.
            hook = TcHook::ClsBpf;
            let _ = tc::qdisc_add_clsact(&iface.name);
            let options = TcAttachOptions::Netlink(NlOptions { priority: TC_PRIORITY, ..Default::default() });
            prog.attach_with_options(&iface.name, direction, options).map_err(|e| attach_err(&e))?;
        }

        let cpus = online_cpus().map_err(|(what, e)| SamplerError::io(format!("reading {what}"), e))?;
        let possible_cpus = nr_cpus().map_err(|(what, e)| SamplerError::io(format!("reading {what}"), e))?;
        let mut sampler =
            Self { ebpf, iface, hook, capacity, local_prefixes: Vec::new(), cpus, possible_cpus, _lock: lock };
        sampler.set_local_prefixes(&options.local_prefixes)?;
        sampler.write_config(RunConfig::default())?;
        Ok(sampler)
    }

    pub fn iface(&self) -> &str {
        &self.iface.name
    }

    /// Which tc hook the filter is attached to.
    pub fn hook(&self) -> TcHook {
        self.hook
    }

    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// The loaded program of one direction, e.g. for `BPF_PROG_TEST_RUN` in benchmarks.
    pub fn program(&self, direction: TcAttachType) -> &SchedClassifier {
        let name = if direction == TcAttachType::Ingress { PROG_INGRESS } else { PROG_EGRESS };
        self.ebpf.program(name).and_then(|p| p.try_into().ok()).expect("loaded at attach")
    }

    /// Replaces the local-region prefixes used by the next run.
    pub fn set_local_prefixes(&mut self, prefixes: &[IpNet]) -> Result<(), SamplerError> {
        let mut trie: LpmTrie<&mut MapData, [u8; 16], u8> = self.map_mut(MAP_LOCAL_PREFIXES)?;
        let old: Vec<Key<[u8; 16]>> = trie.keys().filter_map(Result::ok).collect();
        for key in old {
            let _ = trie.remove(&key);
        }
        for net in prefixes {
            let (bytes, len) = match net {
                IpNet::V4(v4) => (v4.network().to_ipv6_mapped().octets(), 96 + v4.prefix_len() as u32),
                IpNet::V6(v6) => (v6.network().octets(), v6.prefix_len() as u32),
            };
            trie.insert(&Key::new(len, bytes), 1, 0)
                .map_err(|e| SamplerError::Read(format!("writing local prefix {net}: {e}")))?;
        }
        self.local_prefixes = prefixes.to_vec();
        Ok(())
    }

    /// Checks a request and writes its configuration: from its start instant on, the filter counts.
    pub fn begin(&mut self, req: &RunRequest) -> Result<PendingRun, SamplerError> {
        req.validate(self.capacity)?;
        let clocks = ClockPair::now();
        let clock = ClockQuality::now();
        // (start on the filter's clock, on the monotonic clock, in Unix ns)
        let (start_ns, start_mono_ns, start_unix_ns) = match req.start {
            StartAt::Now => (clocks.mono_ns, clocks.mono_ns, clocks.unix_ns),
            StartAt::UnixNs(at) => {
                let ahead = at as i128 - clocks.unix_ns as i128;
                if !(0..=86_400_000_000_000).contains(&ahead) {
                    return Err(SamplerError::StartOutOfBounds(format!("{at} ns")));
                }
                (clock.unix_to_tai(at), clocks.unix_to_mono(at), at)
            }
        };
        let on_tai = matches!(req.start, StartAt::UnixNs(_));
        let interval_ns = req.interval.as_nanos() as u64;
        self.clear_slots(req.samples)?;
        let mut flags = if self.local_prefixes.is_empty() { 0 } else { FLAG_REGION_CONFIGURED };
        if on_tai {
            flags |= FLAG_CLOCK_TAI;
        }
        self.write_config(RunConfig {
            start_ns,
            interval_ns,
            samples: req.samples,
            flags,
            l2_len: self.iface.l2_len,
            _pad: 0,
        })?;
        Ok(PendingRun { start_mono_ns, start_unix_ns, interval_ns, samples: req.samples, on_tai, clock })
    }

    /// Waits for the run's end, stops the filter and returns what every CPU counted.
    pub fn finish(&mut self, run: PendingRun) -> Result<RunCounters, SamplerError> {
        let end = run.end_mono_ns() + END_GRACE.as_nanos() as u64;
        let now = monotonic_ns();
        if end > now {
            thread::sleep(Duration::from_nanos(end - now));
        }
        self.write_config(RunConfig::default())?;
        self.read_slots(run)
    }

    /// Stops a run before its end and returns its whole slots so far (none: `None`), as a run
    /// of that many samples. For a periodic run that must make way for a synchronized one.
    pub fn cut(&mut self, mut run: PendingRun) -> Result<Option<RunCounters>, SamplerError> {
        self.write_config(RunConfig::default())?;
        // A packet that took its slot number just before the stop finishes adding meanwhile.
        thread::sleep(END_GRACE);
        let whole = monotonic_ns().saturating_sub(run.start_mono_ns) / run.interval_ns;
        run.samples = whole.min(run.samples as u64) as u32;
        if run.samples == 0 {
            return Ok(None);
        }
        self.read_slots(run).map(Some)
    }

    /// Runs one run from start to end on the calling thread.
    pub fn run(&mut self, req: &RunRequest) -> Result<RunCounters, SamplerError> {
        let pending = self.begin(req)?;
        self.finish(pending)
    }

    /// Stops a run early (e.g. on shutdown) without reading it.
    pub fn abort(&mut self) -> Result<(), SamplerError> {
        self.write_config(RunConfig::default())
    }

    fn read_slots(&mut self, run: PendingRun) -> Result<RunCounters, SamplerError> {
        let cpus = self.cpus.clone();
        let slots: PerCpuArray<&mut MapData, SlotCounters> = self.map_mut(MAP_SLOTS)?;
        let mut per_cpu: Vec<CpuCounters> =
            cpus.iter().map(|&cpu| CpuCounters { cpu, slots: Vec::with_capacity(run.samples as usize) }).collect();
        for slot in 0..run.samples {
            let values = slots.get(&slot, 0).map_err(|e| SamplerError::Read(format!("slot {slot}: {e}")))?;
            for cpu in per_cpu.iter_mut() {
                cpu.slots.push(values[cpu.cpu as usize]);
            }
        }
        Ok(RunCounters {
            iface: self.iface.name.clone(),
            start_unix_ns: run.start_unix_ns,
            interval_ns: run.interval_ns,
            samples: run.samples,
            local_prefixes: self.local_prefixes.clone(),
            per_cpu,
            on_tai: run.on_tai,
            clock: run.clock,
        })
    }

    /// Zeroes the first `samples` slots on every CPU (before a run, so a run never sees leftovers
    /// of an aborted one).
    fn clear_slots(&mut self, samples: u32) -> Result<(), SamplerError> {
        let possible = self.possible_cpus;
        let mut slots: PerCpuArray<&mut MapData, SlotCounters> = self.map_mut(MAP_SLOTS)?;
        for slot in 0..samples {
            let zeros = PerCpuValues::try_from(vec![SlotCounters::default(); possible])
                .map_err(|e| SamplerError::Read(format!("building zero slot: {e}")))?;
            slots.set(slot, zeros, 0).map_err(|e| SamplerError::Read(format!("clearing slot {slot}: {e}")))?;
        }
        Ok(())
    }

    fn write_config(&mut self, config: RunConfig) -> Result<(), SamplerError> {
        let mut array: Array<&mut MapData, RunConfig> = self.map_mut(MAP_RUN_CONFIG)?;
        array.set(0, config, 0).map_err(|e| SamplerError::Read(format!("writing run config: {e}")))
    }

    fn map_mut<'a, T>(&'a mut self, name: &str) -> Result<T, SamplerError>
    where
        T: TryFrom<&'a mut aya::maps::Map>,
        <T as TryFrom<&'a mut aya::maps::Map>>::Error: std::fmt::Display,
    {
        crate::map_mut(&mut self.ebpf, name)
    }
}

impl Drop for TrafficSampler {
    fn drop(&mut self) {
        // Links detach when `ebpf` drops; make sure nothing counts in between.
        let _ = self.abort();
    }
}

/// Parses a local-region prefix given on the command line.
pub fn parse_prefix(text: &str) -> Result<IpNet, SamplerError> {
    IpNet::from_str(text)
        .or_else(|_| IpAddr::from_str(text).map(IpNet::from))
        .map_err(|_| SamplerError::BadPrefix(text.into()))
}
