//! The stack sampler: the perf-event program on every online CPU's clock, its deny list, and
//! draining its ring buffer into [`RawStack`]s (instruction pointers, not yet symbolized).

use std::{
    os::fd::{AsFd, AsRawFd},
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::Duration,
};

use aya::{
    Ebpf, EbpfLoader,
    maps::{HashMap, MapData, PerCpuArray, RingBuf},
    programs::{
        PerfEvent,
        perf_event::{HardwareEvent, PerfEventConfig, PerfEventScope, SamplePolicy, SoftwareEvent},
    },
    util::online_cpus,
};
use loupe_bpf_common::{
    python::{MAP_PY_PROCS, MAP_PY_THREADS},
    stacks::{
        FLAG_IDLE, FLAG_OFF_CPU, MAP_DENY_CGROUPS, MAP_DENY_COMMS, MAP_DENY_PIDS, MAP_OFF_CPU_PENDING,
        MAP_OFF_CPU_TASKS, MAP_STACK_EVENTS, MAP_STACK_LOST, OFF_CPU_PENDING_ENTRIES, OFF_CPU_TASKS_ENTRIES,
        PROG_STACKS, StackEvent, user_end,
    },
    unwind::{MAP_UNWIND_MAPPINGS, MAP_UNWIND_PAGES, MAP_UNWIND_ROWS, MAP_UNWIND_WANTED},
};

use crate::{
    SamplerError,
    clock::ClockPair,
    map_mut,
    off_cpu::{OffCpu, OffCpuOptions, OffCpuRate},
    python::{PyEnd, PyFrameRef, PythonStack, Pythons},
    unwinding::{DEFAULT_TABLE_ROWS, LoaderStop, TABLE_PAGES, UnwindStats, Unwinder},
};

/// Sampling frequencies accepted, per CPU.
pub const MIN_FREQUENCY: u64 = 1;
pub const MAX_FREQUENCY: u64 = 1000;

/// Seconds of samples, at the full rate on every CPU, the ring buffer holds. The reader drains
/// every 500 ms and is woken early once a quarter is waiting, so 2 s leaves it 1.5 s of slack.
const RING_SECONDS: u64 = 2;
/// Bounds of the ring buffer: a power of two between 256 KiB and 64 MiB.
const RING_MIN: u64 = 256 << 10;
const RING_MAX: u64 = 64 << 20;

/// The ring buffer's size for `cpus` CPUs sampled at `hz`: `RING_SECONDS` of samples, a
/// power of two (the kernel requires one) within `RING_MIN..=RING_MAX`.
///
/// Why not one fixed size: every sample reserves a whole [`StackEvent`] (~2.4 KB, 0.8 of it
/// for Python frames), and the
/// ring's pages are all touched once it has wrapped, so a fixed 4 MiB was 8 MiB of the agent's
/// resident memory (user space maps the data twice) on a 2-CPU host that needs 64 KB, while a
/// 96-CPU host at 100 Hz fills 4 MiB in under 0.3 s and loses samples between two drains.
///
/// Off-CPU samples share the ring: `extra_per_second` more records a second at most.
pub fn ring_bytes(cpus: usize, hz: u64, extra_per_second: u64) -> u32 {
    let record = (size_of::<StackEvent>() as u64 + 8).next_multiple_of(8); // + the ring's header
    let per_second = (cpus as u64).saturating_mul(hz).saturating_add(extra_per_second);
    let want = per_second.saturating_mul(record).saturating_mul(RING_SECONDS);
    want.clamp(RING_MIN, RING_MAX).next_power_of_two().min(RING_MAX) as u32
}

/// Workloads that must never be profiled.
#[derive(Clone, Debug, Default)]
pub struct DenyList {
    /// Task names (`comm`, at most 15 bytes; longer names are cut as the kernel cuts them).
    pub comms: Vec<String>,
    pub pids: Vec<u32>,
    /// cgroup v2 directories (e.g. `/sys/fs/cgroup/system.slice/secret.service`): the cgroup and
    /// everything below it.
    pub cgroups: Vec<PathBuf>,
}

#[derive(Clone, Debug)]
pub struct StackSamplerOptions {
    /// Samples per second per CPU.
    pub frequency_hz: u64,
    pub deny: DenyList,
    /// Rows of unwind tables the kernel holds (8 bytes each): the bound on their memory.
    pub table_rows: u32,
    /// Where binaries' unwind tables are kept between runs (`None`: parsed every run).
    pub table_cache: Option<PathBuf>,
    /// Unwind user stacks from the binaries' call-frame information; false: by frame pointers
    /// only (the kernel's walker), which stops at the first function built without them.
    pub unwind_tables: bool,
    /// Also take the stacks of threads as they block (`None`: on-CPU samples only).
    pub off_cpu: Option<OffCpuOptions>,
    /// Walk CPython's own frames in the processes that run it (needs `unwind_tables`: Python
    /// processes are found as their tables are loaded).
    pub python_frames: bool,
}

impl StackSamplerOptions {
    /// Checks the options before anything is loaded.
    pub fn validate(&self) -> Result<(), SamplerError> {
        if !(MIN_FREQUENCY..=MAX_FREQUENCY).contains(&self.frequency_hz) {
            return Err(SamplerError::FrequencyOutOfBounds(self.frequency_hz));
        }
        if let Some(off_cpu) = &self.off_cpu {
            off_cpu.validate()?;
        }
        Ok(())
    }
}

impl Default for StackSamplerOptions {
    fn default() -> Self {
        Self {
            frequency_hz: 10,
            deny: DenyList::default(),
            table_rows: DEFAULT_TABLE_ROWS,
            table_cache: None,
            unwind_tables: true,
            off_cpu: None,
            python_frames: true,
        }
    }
}

/// Which clock drives the sampler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampleClock {
    /// Hardware CPU cycles (where the machine exposes a PMU).
    Cycles,
    /// The kernel's software CPU clock (VMs without a virtual PMU).
    CpuClock,
}

/// How a sample's user stack ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UserEnd {
    /// Walked by frame pointers before the process's tables were loaded: whether it is whole
    /// is not known.
    FramePointers,
    /// At the outermost frame: the stack is whole.
    Root,
    /// Cut at the deepest stack recorded.
    Depth,
    /// At a PC no call-frame information covers.
    NoRow,
    /// At a rule the unwinder does not evaluate.
    Unsupported,
    /// At stack memory that could not be read.
    Unreadable,
    /// At a frame that cannot be right (a zero return address, a stack going the wrong way).
    BadFrame,
    /// There is no user stack (a kernel thread, the idle task).
    None,
    /// At a PC in no executable mapping known (the process exec'd or loaded a library since
    /// its mappings were read, or a return address was wrong).
    NoMapping,
    /// At a binary whose table found no room in the table memory (`--unwind-memory-mib`).
    NoRoom,
}

impl UserEnd {
    /// The kernel's code for it (`loupe_bpf_common::stacks::user_end`); unknown codes read as
    /// `BadFrame`.
    pub fn from_code(code: u8) -> UserEnd {
        match code {
            user_end::FRAME_POINTERS => UserEnd::FramePointers,
            user_end::ROOT => UserEnd::Root,
            user_end::DEPTH => UserEnd::Depth,
            user_end::NO_ROW => UserEnd::NoRow,
            user_end::UNSUPPORTED => UserEnd::Unsupported,
            user_end::UNREADABLE => UserEnd::Unreadable,
            user_end::NONE => UserEnd::None,
            user_end::NO_MAPPING => UserEnd::NoMapping,
            user_end::NO_ROOM => UserEnd::NoRoom,
            _ => UserEnd::BadFrame,
        }
    }

    /// Whether the stack stops short of its root, and so ends in a `[truncated]` frame.
    pub fn truncated(self) -> bool {
        !matches!(self, UserEnd::Root | UserEnd::None | UserEnd::FramePointers)
    }

    /// Why the stack stopped, as its `[truncated: …]` frame says.
    pub fn reason(self) -> &'static str {
        match self {
            UserEnd::FramePointers => "frame pointers",
            UserEnd::Root => "root",
            UserEnd::Depth => "too deep",
            UserEnd::NoRow => "no unwind info",
            UserEnd::Unsupported => "unsupported unwind rule",
            UserEnd::Unreadable => "unreadable stack",
            UserEnd::BadFrame => "bad frame",
            UserEnd::None => "no user stack",
            UserEnd::NoMapping => "code outside known mappings",
            UserEnd::NoRoom => "no room for unwind table",
        }
    }
}

/// One sample as the kernel recorded it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawStack {
    pub time_unix_ns: u64,
    pub cpu: u32,
    pub pid: u32,
    pub tid: u32,
    pub comm: String,
    pub cgroup_id: u64,
    pub idle: bool,
    /// Instruction pointers, leaf first.
    pub kernel: Vec<u64>,
    pub user: Vec<u64>,
    /// How `user` ended.
    pub user_end: UserEnd,
    /// An off-CPU sample: the stacks as the thread blocked, and how long it stayed off the CPU
    /// (`time_unix_ns` is when it blocked). `None`: a CPU sample.
    pub off_cpu: Option<OffCpu>,
    /// A thread of a process running CPython: its interpreter's frames. `None` otherwise.
    pub python: Option<PythonStack>,
}

/// A sample's Python frames, if its thread's process runs a CPython Loupe walks.
fn python_stack(e: &StackEvent) -> Option<PythonStack> {
    let end = PyEnd::from_code(e.py_end)?;
    let layout = crate::python::layout::for_minor(e.py_minor)?;
    let n = (e.py_frames as usize).min(e.python.len());
    Some(PythonStack { frames: e.python[..n].iter().map(PyFrameRef::from).collect(), end, layout })
}

/// The running stack sampler. Detaches from every CPU when dropped.
pub struct StackSampler {
    ebpf: Ebpf,
    /// Taken out of `ebpf` once: making a `RingBuf` maps its pages, so it is not made per drain.
    ring: RingBuf<MapData>,
    clocks: ClockPair,
    clock: SampleClock,
    frequency_hz: u64,
    /// Shared with the loader thread, which loads tables as the kernel asks for them.
    unwinder: Arc<Mutex<Unwinder>>,
    /// The processes running CPython (found as the unwinder loads processes; their threads read
    /// again by the loader thread when the kernel meets one it does not know).
    pythons: Arc<Mutex<Pythons>>,
    loader: Option<std::thread::JoinHandle<()>>,
    stop: Arc<LoaderStop>,
    unwind_tables: bool,
    /// Off-CPU sampling's rate control, when it is on.
    off_cpu: Option<OffCpuRate>,
    /// Why off-CPU sampling was asked for and is off: the kernel refused its programs.
    off_cpu_refused: Option<String>,
}

impl Drop for StackSampler {
    fn drop(&mut self) {
        self.stop.stop();
        if let Some(loader) = self.loader.take() {
            let _ = loader.join();
        }
    }
}

impl std::fmt::Debug for StackSampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StackSampler").field("clock", &self.clock).field("frequency_hz", &self.frequency_hz).finish()
    }
}

impl StackSampler {
    /// Loads the sampler, fills the deny list and starts sampling on every online CPU.
    pub fn start(options: &StackSamplerOptions) -> Result<Self, SamplerError> {
        crate::kernel::STACKS.check()?;
        let hz = options.frequency_hz;
        options.validate()?;
        let cgroup_ids = options.deny.cgroups.iter().map(|p| cgroup_id(p)).collect::<Result<Vec<_>, _>>()?;
        let cpus = online_cpus().map_err(|(what, e)| SamplerError::io(format!("reading {what}"), e))?;
        let off_cpu_rate = options.off_cpu.as_ref().map_or(0, |o| u64::from(o.max_stacks_per_second));
        let mut ebpf = EbpfLoader::new()
            .verifier_log_level(crate::verifier::LOG_LEVEL)
            .map_max_entries(MAP_STACK_EVENTS, ring_bytes(cpus.len(), hz, off_cpu_rate))
            // Held stacks of blocked threads (~2.4 KB each, allocated up front): none when off.
            .map_max_entries(MAP_OFF_CPU_PENDING, if options.off_cpu.is_some() { OFF_CPU_PENDING_ENTRIES } else { 1 })
            // Threads' last waits (an LRU, allocated up front: 1.7 MiB): none when off.
            .map_max_entries(MAP_OFF_CPU_TASKS, if options.off_cpu.is_some() { OFF_CPU_TASKS_ENTRIES } else { 1 })
            .map_max_entries(MAP_UNWIND_ROWS, options.table_rows.max(1))
            .map_max_entries(MAP_UNWIND_PAGES, TABLE_PAGES)
            .load(crate::STACKS_OBJECT)
            .map_err(|e| crate::privilege::classify("load eBPF programs", &e, SamplerError::Load))?;
        {
            let mut comms: HashMap<&mut MapData, [u8; 16], u8> = map_mut(&mut ebpf, MAP_DENY_COMMS)?;
            for comm in &options.deny.comms {
                comms.insert(comm_key(comm), 1, 0).map_err(|e| SamplerError::Load(format!("deny comm {comm}: {e}")))?;
            }
        }
        {
            let mut pids: HashMap<&mut MapData, u32, u8> = map_mut(&mut ebpf, MAP_DENY_PIDS)?;
            for pid in &options.deny.pids {
                pids.insert(pid, 1, 0).map_err(|e| SamplerError::Load(format!("deny pid {pid}: {e}")))?;
            }
        }
        {
            let mut cgroups: HashMap<&mut MapData, u64, u8> = map_mut(&mut ebpf, MAP_DENY_CGROUPS)?;
            for id in &cgroup_ids {
                cgroups.insert(id, 1, 0).map_err(|e| SamplerError::Load(format!("deny cgroup {id}: {e}")))?;
            }
        }
        let program: &mut PerfEvent = crate::program_mut(&mut ebpf, PROG_STACKS)?;
        program.load().map_err(|e| crate::verifier::load_failed(PROG_STACKS, e))?;
        // Cycles where there is a PMU, else the software CPU clock (as in most VMs). The CPU
        // clock gets a fixed period in nanoseconds rather than a frequency: in frequency mode
        // the kernel starts from a tiny period, throttles the event, and only lifts throttling
        // on a scheduler tick — which an idle tickless CPU never has, so it would go unsampled.
        let mut clock = SampleClock::Cycles;
        for cpu in cpus {
            let scope = PerfEventScope::AllProcessesOneCpu { cpu };
            if clock == SampleClock::Cycles
                && program
                    .attach(
                        PerfEventConfig::Hardware(HardwareEvent::CpuCycles),
                        scope,
                        SamplePolicy::Frequency(hz),
                        false,
                    )
                    .is_ok()
            {
                continue;
            }
            clock = SampleClock::CpuClock;
            let period = SamplePolicy::Period(1_000_000_000 / hz);
            program.attach(PerfEventConfig::Software(SoftwareEvent::CpuClock), scope, period, false).map_err(|e| {
                crate::privilege::classify("open perf events", &e, |reason| SamplerError::Attach {
                    iface: format!("cpu {cpu}"),
                    reason,
                })
            })?;
        }
        // A kernel that refuses the off-CPU programs costs the waits, not the CPU samples.
        let mut off_cpu_refused = None;
        let off_cpu = match options.off_cpu.as_ref().map(|o| OffCpuRate::start(&mut ebpf, o)).transpose() {
            Ok(rate) => rate,
            Err(e @ (SamplerError::Refused { .. } | SamplerError::Unsupported { .. })) => {
                // Said once, by whoever started the sampler (the agent's log and health, the
                // CLI's output), from `off_cpu_refused`.
                tracing::debug!("off-CPU sampling is off, CPU samples go on: {e}");
                off_cpu_refused = Some(e.to_string());
                None
            }
            Err(e) => return Err(e),
        };
        // Tables asked for as processes exec, not only at their first sample; without it a
        // new process is still loaded, a sample later.
        if options.unwind_tables
            && let Err(e) = crate::unwinding::ask_at_exec(&mut ebpf)
        {
            tracing::warn!("new processes' unwind tables load at their first sample, not at exec: {e}");
        }
        let ring = ebpf
            .take_map(MAP_STACK_EVENTS)
            .ok_or_else(|| SamplerError::Load(format!("map {MAP_STACK_EVENTS} missing")))
            .and_then(|m| {
                RingBuf::try_from(m).map_err(|e| SamplerError::Load(format!("map {MAP_STACK_EVENTS}: {e}")))
            })?;
        let mut take =
            |name: &str| ebpf.take_map(name).ok_or_else(|| SamplerError::Load(format!("map {name} missing")));
        let unwinder = Arc::new(Mutex::new(Unwinder::new(
            take(MAP_UNWIND_ROWS)?,
            take(MAP_UNWIND_PAGES)?,
            take(MAP_UNWIND_MAPPINGS)?,
            options.table_cache.clone(),
        )?));
        let pythons = Arc::new(Mutex::new(Pythons::new(take(MAP_PY_PROCS)?, take(MAP_PY_THREADS)?)?));
        if options.python_frames {
            unwinder.lock().unwrap_or_else(|e| e.into_inner()).find_pythons(pythons.clone());
        }
        let wanted = RingBuf::try_from(take(MAP_UNWIND_WANTED)?)
            .map_err(|e| SamplerError::Load(format!("map {MAP_UNWIND_WANTED}: {e}")))?;
        let stop = Arc::new(LoaderStop::new()?);
        // Without tables nothing is loaded: every process stays unknown to the kernel program,
        // which then takes the kernel's frame-pointer walk.
        let loader = options
            .unwind_tables
            .then(|| {
                std::thread::Builder::new().name("loupe-unwind".into()).spawn({
                    let (unwinder, stop) = (unwinder.clone(), stop.clone());
                    move || crate::unwinding::load_as_asked(&unwinder, wanted, &stop)
                })
            })
            .transpose()
            .map_err(|e| SamplerError::io("starting the unwind-table loader", e))?;
        Ok(Self {
            ebpf,
            ring,
            clocks: ClockPair::now(),
            clock,
            frequency_hz: hz,
            unwinder,
            pythons,
            loader,
            stop,
            unwind_tables: options.unwind_tables,
            off_cpu,
            off_cpu_refused,
        })
    }

    pub fn clock(&self) -> SampleClock {
        self.clock
    }

    pub fn frequency_hz(&self) -> u64 {
        self.frequency_hz
    }

    /// Processes whose CPython frames are walked now.
    pub fn python_processes(&self) -> usize {
        self.pythons.lock().unwrap_or_else(|e| e.into_inner()).processes()
    }

    /// What the unwind tables hold.
    pub fn unwind_stats(&self) -> UnwindStats {
        self.unwinder.lock().unwrap_or_else(|e| e.into_inner()).stats()
    }

    /// Loads a process's unwind tables now rather than when the kernel first asks for them
    /// (its first samples are then whole too). Does nothing when unwinding by tables is off.
    pub fn load_process(&mut self, pid: u32) -> Result<(), SamplerError> {
        if !self.unwind_tables {
            return Ok(());
        }
        self.unwinder.lock().unwrap_or_else(|e| e.into_inner()).load_process(pid)
    }

    /// How often the kernel program has run and for how long in all, while the kernel counts
    /// it (`kernel.bpf_stats_enabled` = 1; zeros otherwise): its cost per sample.
    pub fn program_stats(&self) -> Result<(u64, Duration), SamplerError> {
        let program: &PerfEvent = self
            .ebpf
            .program(PROG_STACKS)
            .ok_or_else(|| SamplerError::Load(format!("program {PROG_STACKS} missing")))?
            .try_into()
            .map_err(|e| SamplerError::Load(format!("{PROG_STACKS}: {e}")))?;
        let info = program.info().map_err(|e| SamplerError::Read(format!("{PROG_STACKS}: {e}")))?;
        Ok((info.run_count(), info.run_time()))
    }

    /// Off-CPU sampling's figures (`None` when it is off): blocks seen, and 1 in how many now
    /// have their stacks taken.
    /// Why off-CPU sampling is off although it was asked for (the kernel refused its
    /// programs); `None` when it runs or was not asked for.
    pub fn off_cpu_refused(&self) -> Option<&str> {
        self.off_cpu_refused.as_deref()
    }

    pub fn off_cpu_stats(&self) -> Option<crate::off_cpu::OffCpuStats> {
        self.off_cpu.as_ref().map(OffCpuRate::stats)
    }

    /// How often the off-CPU program has run and for how long in all (see [`Self::program_stats`]).
    pub fn off_cpu_program_stats(&self) -> Result<(u64, Duration), SamplerError> {
        crate::off_cpu::program_stats(&self.ebpf)
    }

    /// Waits up to `timeout` for samples, then moves every sample the ring buffer holds into
    /// `out`; returns how many were added.
    pub fn drain(&mut self, out: &mut Vec<RawStack>, timeout: Duration) -> Result<usize, SamplerError> {
        if let Some(rate) = &mut self.off_cpu {
            rate.adjust(&mut self.ebpf)?;
        }
        let before = out.len();
        let clocks = self.clocks;
        let ring = &mut self.ring;
        let mut fds = libc::pollfd { fd: ring.as_fd().as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut fds, 1, timeout.as_millis().min(i32::MAX as u128) as i32) };
        while let Some(item) = ring.next() {
            if item.len() < size_of::<StackEvent>() {
                continue;
            }
            // SAFETY: the kernel wrote a whole StackEvent; read unaligned from the ring's bytes.
            let e: StackEvent = unsafe { std::ptr::read_unaligned(item.as_ptr().cast()) };
            out.push(RawStack {
                time_unix_ns: clocks.mono_to_unix(e.time_ns),
                cpu: e.cpu,
                pid: e.pid,
                tid: e.tid,
                comm: comm_text(&e.comm),
                cgroup_id: e.cgroup_id,
                idle: e.flags & FLAG_IDLE != 0,
                kernel: e.kernel[..(e.kernel_frames as usize).min(e.kernel.len())].to_vec(),
                user: e.user[..(e.user_frames as usize).min(e.user.len())].to_vec(),
                user_end: UserEnd::from_code(e.user_end),
                off_cpu: (e.flags & FLAG_OFF_CPU != 0)
                    .then(|| OffCpu { waited_ns: e.off_cpu_ns, one_in: e.one_in.max(1) }),
                python: python_stack(&e),
            });
        }
        Ok(out.len() - before)
    }

    /// The ring buffer's size in bytes, as the kernel made it ([`ring_bytes`] asked for it).
    pub fn ring_size(&self) -> Result<u32, SamplerError> {
        let fd =
            self.ring.as_fd().try_clone_to_owned().map_err(|e| SamplerError::io("duplicating the ring's fd", e))?;
        let info = MapData::from_fd(fd)
            .and_then(|map| map.info())
            .map_err(|e| SamplerError::Load(format!("map {MAP_STACK_EVENTS}: {e}")))?;
        Ok(info.max_entries())
    }

    /// Samples lost so far because the ring buffer was full (all CPUs).
    pub fn lost(&self) -> Result<u64, SamplerError> {
        let map: PerCpuArray<&MapData, u64> = self
            .ebpf
            .map(MAP_STACK_LOST)
            .ok_or_else(|| SamplerError::Load(format!("map {MAP_STACK_LOST} missing")))?
            .try_into()
            .map_err(|e| SamplerError::Load(format!("map {MAP_STACK_LOST}: {e}")))?;
        let values = map.get(&0, 0).map_err(|e| SamplerError::Read(format!("lost counter: {e}")))?;
        Ok(values.iter().sum())
    }
}

/// A comm as the kernel stores it: at most 15 bytes, NUL-padded to 16.
pub fn comm_key(comm: &str) -> [u8; 16] {
    let mut key = [0u8; 16];
    for (dst, src) in key.iter_mut().zip(comm.bytes().take(15)) {
        *dst = src;
    }
    key
}

fn comm_text(comm: &[u8; 16]) -> String {
    let end = comm.iter().position(|&b| b == 0).unwrap_or(comm.len());
    String::from_utf8_lossy(&comm[..end]).into_owned()
}

/// The cgroup v2 id of a cgroup directory: its inode number.
pub fn cgroup_id(path: &Path) -> Result<u64, SamplerError> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).map_err(|e| SamplerError::io(format!("cgroup {}", path.display()), e))?;
    if !meta.is_dir() {
        return Err(SamplerError::io(
            format!("cgroup {}", path.display()),
            std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a cgroup directory"),
        ));
    }
    Ok(meta.ino())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_holds_two_seconds_of_samples_within_its_bounds() {
        let record = size_of::<StackEvent>() as u64 + 8;
        for (cpus, hz) in [(1, 1), (2, 10), (8, 99), (96, 10), (128, 10), (96, 100), (400, 1000), (100_000, 1000)] {
            let bytes = u64::from(ring_bytes(cpus, hz, 0));
            assert!(bytes.is_power_of_two(), "{cpus} CPUs at {hz} Hz: {bytes} is not a power of two");
            assert!((RING_MIN..=RING_MAX).contains(&bytes), "{cpus} CPUs at {hz} Hz: {bytes} out of bounds");
            let two_seconds = cpus as u64 * hz * record * RING_SECONDS;
            assert!(bytes >= two_seconds.min(RING_MAX), "{cpus} CPUs at {hz} Hz: {bytes} B holds less than 2 s");
            assert!(bytes == RING_MIN || bytes < 2 * two_seconds, "{cpus} CPUs at {hz} Hz: {bytes} B is oversized");
        }
        assert_eq!(ring_bytes(2, 10, 0), 256 << 10, "a small host keeps the floor, not the old 4 MiB");
        assert_eq!(ring_bytes(96, 100, 0), 64 << 20, "a big, fast host gets more than the old 4 MiB");
        assert!(ring_bytes(2, 10, 1000) >= 2 * 1020 * record as u32, "off-CPU samples are made room for");
    }
}
