//! The writer: [`define`], [`breath`] and [`log`], for the program being observed.
//!
//! # Rates
//! Each thread keeps a *threshold* `T ∈ 1..=9`. An event of rate `r` is logged iff `r ≥ T`.
//! [`breath`] rolls `T` afresh: it draws `v` uniformly from `0..5^8` and sets
//! `T = 1 + #{k ∈ 0..=7 : v ≥ 5^k}`, so an event of rate `r ≥ 1` is logged in a breath with
//! probability exactly
//!
//! ```text
//! P(rate r logged) = P(v < 5^(r-1)) = 5^(r-9)     (r = 9: 1, 8: 1/5, 7: 1/25, … 1: 1/390625)
//! P(rate 0 logged) = 0
//! ```
//!
//! and, because one threshold serves the whole breath, whenever an event of rate `r` is logged
//! every event of a higher rate in that breath is too — a sampled iteration keeps its context.
//! Before a thread's first breath `T = 9`: only rate-9 events are logged. The draw is
//! xorshift64* seeded per thread from the TSC, the thread id and a stack address.
//!
//! # The logging path
//! `log` is `#[inline(always)]`: a skipped event is one thread-local byte load and a compare
//! (0.7–1.0 ns measured by `benches/timeline.rs`; see `with_hot` for why it stays inlined).
//! A logged event costs `rdtsc` + 1.4–2.5 ns (12.9–14.1 ns here, `rdtsc` 11.5 ns; `tracing`
//! with a minimal subscriber doing the same work: 33–54 ns). It reads the clock and the CPU
//! (one load from glibc's rseq area), writes six words into the thread's ring with plain
//! stores and publishes them with one release store of the ring's head: no lock, no syscall,
//! no shared cache line but the thread's own ring. A thread claims its ring once, on its first
//! logged event, with a compare-and-swap on the ring table; it gives it back when it exits, for
//! the next new thread (records carry the thread id, so readers never confuse owners). With all
//! rings taken, a thread's events are dropped and counted in the header (`no_ring_drops`).
//!
//! # Memory ordering
//! Writer, per record `n` (head = `n` before): `fence(Release)`; the six words (relaxed
//! stores) into slot `n mod N`; `head.store(n + 1, Release)`. The reader loads head `h1`,
//! copies records `[max(pos, h1 − N), h1)`, then reads head again as `h2` and keeps only
//! records with index `> h2 − N` — anything older may have been overwritten while it was
//! copied (the writer may be writing record `h2` into the slot of `h2 − N`). The leading
//! release fence makes a reader that saw any word of record `n + 1` also see `head ≥ n + 1`.
//! A writer killed at any point leaves `head` at the last record it finished: every published
//! record is whole, the half-written one is never published.
//!
//! # Where the file is
//! `$LOUPE_TIMELINE_DIR` (default `/dev/shm/loupe-timeline`, created mode 1777 like `/tmp`),
//! file `<pid>-<start>.tl` where `<start>` is the process start time in clock ticks after boot
//! (`/proc/<pid>/stat` field 22), mode 0600. It is created under a dot-prefixed temporary name
//! and renamed once its header is complete, so readers never see a half-made header. The
//! writer never removes it: the reader removes it once the process has exited and it has
//! drained it ([`crate::reader::Tailer::remove_file`]). Capacities can be set before the first
//! `define` by `LOUPE_TIMELINE_RING_RECORDS` (records per ring, a power of two, 64..=4194304;
//! default 8192), `LOUPE_TIMELINE_RINGS` (threads, 1..=1024; default 64) and
//! `LOUPE_TIMELINE_EVENTS` (definitions, 1..=4096; default 1024); `LOUPE_TIMELINE_CLOCK=monotonic`
//! forces `CLOCK_MONOTONIC` stamps.
//!
//! # fork
//! A child gets its own file on its first logged event (its event definitions copied); the
//! forking thread's ring is forgotten in the child, never written. A `define` running in
//! another thread at the instant of `fork` can deadlock the child's next `define` (std mutex).

use std::cell::{Cell, RefCell};
use std::ffi::CString;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering, fence};

use crate::clock::{self, Sample};
use crate::format::{self, RECORD_WORDS, ev, hdr, ring};

/// Default directory of ring files.
pub const DEFAULT_DIR: &str = "/dev/shm/loupe-timeline";

/// The directory ring files go to: `$LOUPE_TIMELINE_DIR`, else [`DEFAULT_DIR`].
pub fn timeline_dir() -> PathBuf {
    std::env::var_os("LOUPE_TIMELINE_DIR").filter(|v| !v.is_empty()).map(PathBuf::from).unwrap_or(DEFAULT_DIR.into())
}

/// Why [`define`] failed.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum DefineError {
    #[error("event name must be 1 to 48 bytes without NUL, got {0:?}")]
    BadName(String),
    #[error("level {0} out of range 0..=9")]
    BadLevel(u32),
    #[error("rate {0} out of range 0..=9")]
    BadRate(u32),
    #[error("at most 4 arguments, each 1 to 16 bytes without NUL or ','; got {0:?}")]
    BadArgs(Vec<String>),
    #[error("event {0:?} already defined with another level, rate or arguments")]
    Redefined(String),
    #[error("the event table is full ({0} events)")]
    TooManyEvents(u32),
    #[error("timeline file unavailable: {0}")]
    Unavailable(String),
}

impl DefineError {
    /// The C ABI's code for this error (`LOUPE_TL_E*` in the header).
    pub fn code(&self) -> i32 {
        match self {
            DefineError::BadName(_) => -1,
            DefineError::BadLevel(_) => -2,
            DefineError::BadRate(_) => -3,
            DefineError::BadArgs(_) => -4,
            DefineError::Redefined(_) => -5,
            DefineError::TooManyEvents(_) => -6,
            DefineError::Unavailable(_) => -7,
        }
    }
}

/// A defined event: id, level and rate packed in 32 bits (the C ABI's `loupe_tl_event`).
/// Bits 0–15 id, 16–19 level, 24–27 rate, bit 31 set. `Event::NONE` (0) has rate 0, so logging
/// it is the skipped path: a failed `define` needs no check at the log sites.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Event(u32);

impl Event {
    /// The handle of no event: never logged.
    pub const NONE: Event = Event(0);

    fn new(id: u16, level: u8, rate: u8) -> Event {
        Event(1 << 31 | (rate as u32) << 24 | (level as u32) << 16 | id as u32)
    }
    /// From the C ABI's integer.
    pub const fn from_raw(raw: u32) -> Event {
        Event(raw)
    }
    /// The C ABI's integer.
    pub const fn raw(self) -> u32 {
        self.0
    }
    /// Index in the file's event table.
    pub const fn id(self) -> u16 {
        self.0 as u16
    }
    pub const fn level(self) -> u8 {
        (self.0 >> 16) as u8 & 0xf
    }
    pub const fn rate(self) -> u8 {
        (self.0 >> 24) as u8 & 0xf
    }
    /// Same as [`log`].
    #[inline(always)]
    pub fn log(self, a0: u64, a1: u64, a2: u64, a3: u64) -> u64 {
        log(self, a0, a1, a2, a3)
    }
}

/// The per-thread state the logging path reads. Const-initialized and without a destructor, so
/// every access is a plain thread-pointer-relative load.
struct Hot {
    threshold: Cell<u8>,
    /// 0: no ring yet; 1: ring claimed; 2: none free (events dropped and counted).
    status: Cell<u8>,
    use_tsc: Cell<bool>,
    ring: Cell<*const AtomicU64>,
    mask: Cell<u64>,
    head: Cell<u64>,
    head_ptr: Cell<*const AtomicU64>,
    tid_hi: Cell<u64>,
    cpu_ptr: Cell<*const u32>,
    rng: Cell<u64>,
    breaths: Cell<u32>,
}

thread_local! {
    static HOT: Hot = const {
        Hot {
            threshold: Cell::new(9),
            status: Cell::new(0),
            use_tsc: Cell::new(false),
            ring: Cell::new(ptr::null()),
            mask: Cell::new(0),
            head: Cell::new(0),
            head_ptr: Cell::new(ptr::null()),
            tid_hi: Cell::new(0),
            cpu_ptr: Cell::new(ptr::null()),
            rng: Cell::new(0),
            breaths: Cell::new(0),
        }
    };
    /// Gives the ring back when the thread exits.
    static GUARD: RefCell<Option<RingGuard>> = const { RefCell::new(None) };
}

/// Runs `f` on this thread's [`Hot`]. The `LocalKey::with` closure only takes the address, so
/// it always inlines to a thread-pointer-relative `lea`; with real work inside, the compiler
/// sometimes kept `with` out of line and every call went through an indirect TLS accessor
/// (measured: a skip 6.8 ns instead of 0.7, a logged event rdtsc + 7 instead of + 3).
#[inline(always)]
fn with_hot<R>(f: impl FnOnce(&Hot) -> R) -> R {
    let p: *const Hot = HOT.with(|h| h as *const Hot);
    // SAFETY: HOT is const-initialized and has no destructor, so its storage is valid for the
    // whole life of this thread, and the reference does not leave this call on this thread.
    f(unsafe { &*p })
}

/// Logs `event` with four arguments if its rate passes this thread's threshold; returns the
/// record's timestamp on the file's clock ([`now`]), or 0 if it was skipped or dropped.
#[inline(always)]
pub fn log(event: Event, a0: u64, a1: u64, a2: u64, a3: u64) -> u64 {
    if with_hot(|h| event.rate() < h.threshold.get()) {
        return 0;
    }
    write_path(event, a0, a1, a2, a3)
}

/// Out of line, arguments in registers: callers (and `loupe_tl_log`) reach it with a tail
/// jump, so their skip path needs no stack frame.
#[inline(never)]
fn write_path(event: Event, a0: u64, a1: u64, a2: u64, a3: u64) -> u64 {
    with_hot(|h| write(h, event, [a0, a1, a2, a3]))
}

#[inline(always)]
fn write(h: &Hot, event: Event, args: [u64; 4]) -> u64 {
    let mut ring = h.ring.get();
    if ring.is_null() {
        if !claim(h) {
            return 0;
        }
        ring = h.ring.get();
    }
    let ts = if h.use_tsc.get() { clock::rdtsc() } else { clock::monotonic_ns() };
    let cpu_ptr = h.cpu_ptr.get();
    let cpu = if cpu_ptr.is_null() {
        clock::sched_cpu()
    } else {
        // SAFETY: cpu_ptr points into this thread's rseq area (clock::rseq_cpu_ptr), alive as
        // long as the thread; the kernel updates it, hence the volatile read.
        unsafe { ptr::read_volatile(cpu_ptr) as u16 }
    };
    let head = h.head.get();
    let meta = h.tid_hi.get() | (cpu as u64) << 16 | event.id() as u64;
    // Makes a reader that sees any of these words also see head ≥ this record (module docs).
    fence(Ordering::Release);
    // SAFETY: `ring` is this thread's claimed ring of mask+1 records of RECORD_WORDS words in
    // the file mapping (alive for the process's life, never unmapped); the index is masked.
    // Only this thread writes it; readers in other processes only read.
    unsafe {
        let rec = ring.add((head & h.mask.get()) as usize * RECORD_WORDS);
        (*rec).store(ts, Ordering::Relaxed);
        (*rec.add(1)).store(meta, Ordering::Relaxed);
        (*rec.add(2)).store(args[0], Ordering::Relaxed);
        (*rec.add(3)).store(args[1], Ordering::Relaxed);
        (*rec.add(4)).store(args[2], Ordering::Relaxed);
        (*rec.add(5)).store(args[3], Ordering::Relaxed);
        h.head.set(head + 1);
        (*h.head_ptr.get()).store(head + 1, Ordering::Release);
    }
    ts
}

/// Rolls this thread's threshold for the next iteration (see the module docs for the exact
/// probabilities). Call it once per iteration of the program's main loop, before its events.
#[inline]
pub fn breath() {
    with_hot(|h| {
        let mut x = h.rng.get();
        if x == 0 {
            x = seed();
        }
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        h.rng.set(x);
        let r = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
        let v = ((r as u128 * 390_625) >> 64) as u32; // uniform in 0..5^8
        let t = 1
            + (v >= 1) as u8
            + (v >= 5) as u8
            + (v >= 25) as u8
            + (v >= 125) as u8
            + (v >= 625) as u8
            + (v >= 3125) as u8
            + (v >= 15_625) as u8
            + (v >= 78_125) as u8;
        h.threshold.set(t);
        let b = h.breaths.get().wrapping_add(1);
        h.breaths.set(b);
        if b % 1024 == 0 {
            breath_chores(h);
        }
    })
}

/// This thread's current threshold (1..=9): events of a lower rate are skipped.
pub fn threshold() -> u8 {
    HOT.with(|h| h.threshold.get())
}

/// Where this thread's threshold lives, for the C header's inline skip
/// (`loupe_tl_log_inline`): valid for the calling thread's whole life, and only that thread
/// may read it (it is not atomic; only that thread writes it).
pub fn threshold_ptr() -> *const u8 {
    HOT.with(|h| h.threshold.as_ptr() as *const u8)
}

#[cold]
fn breath_chores(h: &Hot) {
    if h.status.get() == 2 {
        h.status.set(0); // retry a ring at the next logged event
    }
    if let Some(sh) = existing() {
        sh.maybe_refresh();
    }
}

fn seed() -> u64 {
    let local = 0u8;
    let mut z = clock::rdtsc() ^ (clock::gettid() as u64) << 40 ^ (&local as *const u8 as u64);
    // splitmix64 finalizer, so nearby seeds give unrelated streams; never 0.
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) | 1
}

/// The record clock now: TSC ticks or `CLOCK_MONOTONIC` ns, whichever this process's file uses.
#[inline]
pub fn now() -> u64 {
    if clock::tsc_usable() { clock::rdtsc() } else { clock::monotonic_ns() }
}

/// Path of this process's ring file, once [`define`] has created it.
pub fn file_path() -> Option<PathBuf> {
    existing().map(|s| s.path.clone())
}

/// Takes a fresh clock calibration sample into the header now (also done every ~2^31 TSC ticks
/// or 1 s by [`breath`], and by [`define`]). For programs that log without breathing.
pub fn sync_clock() {
    if let Some(sh) = existing() {
        sh.refresh();
    }
}

#[derive(Clone)]
struct Def {
    name: String,
    level: u8,
    rate: u8,
    args: Vec<String>,
}

/// One process's mapped file.
struct Shared {
    base: *mut u8,
    path: PathBuf,
    pid: u32,
    tsc: bool,
    max_events: u32,
    max_rings: u32,
    ring_records: u32,
    ring_tab: usize,
    rings_off: usize,
    defs: Mutex<Vec<Def>>,
    next_refresh: AtomicU64,
}

// SAFETY: `base` is a MAP_SHARED mapping that lives until process exit; every field of it that
// is written after creation is accessed through atomics, and the definition table only under
// the `defs` mutex.
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

static GLOBAL: AtomicPtr<Shared> = AtomicPtr::new(ptr::null_mut());
static INIT: Mutex<()> = Mutex::new(());
static ATFORK: AtomicBool = AtomicBool::new(false);

impl Shared {
    fn atomic64(&self, off: usize) -> &AtomicU64 {
        debug_assert!(off.is_multiple_of(8));
        // SAFETY: every caller passes an 8-aligned offset inside the mapping (header fields,
        // ring-table entries); the mapping outlives `self`.
        unsafe { &*(self.base.add(off) as *const AtomicU64) }
    }
    fn atomic32(&self, off: usize) -> &AtomicU32 {
        // SAFETY: as atomic64, 4-aligned.
        unsafe { &*(self.base.add(off) as *const AtomicU32) }
    }

    fn create(defs: Vec<Def>) -> Result<Shared, String> {
        let env_u32 = |name: &str, default: u32, lo: u32, hi: u32| -> u32 {
            std::env::var(name).ok().and_then(|v| v.trim().parse::<u32>().ok()).map_or(default, |v| v.clamp(lo, hi))
        };
        let max_events = env_u32("LOUPE_TIMELINE_EVENTS", format::DEFAULT_EVENTS, 1, format::LIMIT_EVENTS);
        let max_rings = env_u32("LOUPE_TIMELINE_RINGS", format::DEFAULT_RINGS, 1, format::LIMIT_RINGS);
        let ring_records = env_u32(
            "LOUPE_TIMELINE_RING_RECORDS",
            format::DEFAULT_RING_RECORDS,
            format::MIN_RING_RECORDS,
            format::LIMIT_RING_RECORDS,
        )
        .next_power_of_two()
        .min(format::LIMIT_RING_RECORDS);
        let (ev_off, ring_tab, rings_off, size) =
            format::layout(max_events, max_rings, ring_records).ok_or("layout overflows")?;

        let pid = std::process::id();
        let (start, comm) = clock::proc_start(pid).unwrap_or((0, String::new()));
        let dir = timeline_dir();
        make_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let name = format!("{pid}-{start}.tl");
        let path = dir.join(&name);
        let tmp = dir.join(format!(".{name}.tmp"));
        // The directory is world-writable: create the file exclusively and never through a
        // symlink someone left under our temporary name (removed, once, if so).
        let create = || {
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
                .open(&tmp)
        };
        let file = match create() {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let _ = std::fs::remove_file(&tmp);
                create()
            }
            r => r,
        }
        .map_err(|e| format!("{}: {e}", tmp.display()))?;
        file.set_len(size).map_err(|e| format!("{}: {e}", tmp.display()))?;
        // SAFETY: a fresh shared read-write mapping of the whole file we just sized; the kernel
        // chooses the address. It is never unmapped (records must stay writable for the
        // process's life, and readers rely on nothing else).
        let base = unsafe {
            libc::mmap(
                ptr::null_mut(),
                size as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            let e = std::io::Error::last_os_error();
            let _ = std::fs::remove_file(&tmp);
            return Err(format!("mmap {}: {e}", tmp.display()));
        }
        let base = base as *mut u8;
        let tsc = clock::tsc_usable();
        let put = |off: usize, bytes: &[u8]| {
            // SAFETY: header offsets are constants far below HEADER_SIZE ≤ size; nobody else
            // can see the file yet (temporary name).
            unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), base.add(off), bytes.len()) }
        };
        put(hdr::VERSION, &format::VERSION.to_le_bytes());
        put(hdr::HEADER_SIZE, &(format::HEADER_SIZE as u32).to_le_bytes());
        put(hdr::FILE_SIZE, &size.to_le_bytes());
        put(hdr::PID, &pid.to_le_bytes());
        put(hdr::CLOCK, &(if tsc { format::CLOCK_TSC } else { format::CLOCK_MONOTONIC }).to_le_bytes());
        put(hdr::PROC_START, &start.to_le_bytes());
        let mut c = [0u8; 16];
        let cb = comm.as_bytes();
        c[..cb.len().min(15)].copy_from_slice(&cb[..cb.len().min(15)]);
        put(hdr::COMM, &c);
        put(hdr::BOOT_ID, &clock::boot_id());
        put(hdr::EVENT_TABLE_OFF, &(ev_off as u32).to_le_bytes());
        put(hdr::MAX_EVENTS, &max_events.to_le_bytes());
        put(hdr::RING_TABLE_OFF, &(ring_tab as u32).to_le_bytes());
        put(hdr::MAX_RINGS, &max_rings.to_le_bytes());
        put(hdr::RINGS_OFF, &rings_off.to_le_bytes());
        put(hdr::RING_RECORDS, &ring_records.to_le_bytes());
        put(hdr::RECORD_SIZE, &(format::RECORD_SIZE as u32).to_le_bytes());
        let s0 = clock::sample(tsc);
        put(hdr::CAL_START, &s0.raw.to_le_bytes());
        put(hdr::CAL_START + 8, &s0.mono_ns.to_le_bytes());
        put(hdr::CAL_START + 16, &s0.real_ns.to_le_bytes());
        put(hdr::CAL_LATEST + 8, &s0.raw.to_le_bytes());
        put(hdr::CAL_LATEST + 16, &s0.mono_ns.to_le_bytes());
        put(hdr::CAL_LATEST + 24, &s0.real_ns.to_le_bytes());
        put(hdr::MAGIC, &format::MAGIC);
        let sh = Shared {
            base,
            path: path.clone(),
            pid,
            tsc,
            max_events,
            max_rings,
            ring_records,
            ring_tab: ring_tab as usize,
            rings_off: rings_off as usize,
            defs: Mutex::new(Vec::new()),
            next_refresh: AtomicU64::new(s0.raw.saturating_add(refresh_interval(tsc))),
        };
        for d in defs {
            // Copies of a parent's definitions (fork): same ids, as the handles are reused.
            let _ = sh.add_def(d);
        }
        std::fs::rename(&tmp, &path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("rename to {}: {e}", path.display())
        })?;
        Ok(sh)
    }

    /// Writes definition `d` as the next id and publishes it. Caller holds `defs`' lock or is
    /// the creator.
    fn add_def(&self, d: Def) -> Result<Event, DefineError> {
        let mut defs = self.defs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((i, old)) = defs.iter().enumerate().find(|(_, o)| o.name == d.name) {
            return if old.level == d.level && old.rate == d.rate && old.args == d.args {
                Ok(Event::new(i as u16, d.level, d.rate))
            } else {
                Err(DefineError::Redefined(d.name))
            };
        }
        let id = defs.len() as u32;
        if id >= self.max_events {
            return Err(DefineError::TooManyEvents(self.max_events));
        }
        let off = format::HEADER_SIZE + id as usize * format::EVENT_ENTRY_SIZE;
        let mut entry = [0u8; format::EVENT_ENTRY_SIZE];
        entry[ev::NAME..ev::NAME + d.name.len()].copy_from_slice(d.name.as_bytes());
        for (i, a) in d.args.iter().enumerate() {
            let o = ev::ARG_NAMES + i * format::MAX_ARG_NAME;
            entry[o..o + a.len()].copy_from_slice(a.as_bytes());
        }
        entry[ev::LEVEL] = d.level;
        entry[ev::RATE] = d.rate;
        entry[ev::NARGS] = d.args.len() as u8;
        // SAFETY: entry `id` < max_events lies inside the event table; readers only read
        // entries below the published count, which this one is not yet.
        unsafe { ptr::copy_nonoverlapping(entry.as_ptr(), self.base.add(off), entry.len()) };
        self.atomic32(hdr::EVENT_COUNT).store(id + 1, Ordering::Release);
        let e = Event::new(id as u16, d.level, d.rate);
        defs.push(d);
        Ok(e)
    }

    fn maybe_refresh(&self) {
        let now = if self.tsc { clock::rdtsc() } else { clock::monotonic_ns() };
        if now >= self.next_refresh.load(Ordering::Relaxed) {
            self.refresh();
        }
    }

    /// A seqlock write of the latest calibration sample; a thread that finds it taken skips.
    fn refresh(&self) {
        let seq = self.atomic64(hdr::CAL_LATEST);
        let s = seq.load(Ordering::Relaxed);
        if s & 1 == 1 || seq.compare_exchange(s, s + 1, Ordering::Acquire, Ordering::Relaxed).is_err() {
            return;
        }
        fence(Ordering::Release);
        let smp: Sample = clock::sample(self.tsc);
        self.atomic64(hdr::CAL_LATEST + 8).store(smp.raw, Ordering::Relaxed);
        self.atomic64(hdr::CAL_LATEST + 16).store(smp.mono_ns, Ordering::Relaxed);
        self.atomic64(hdr::CAL_LATEST + 24).store(smp.real_ns, Ordering::Relaxed);
        seq.store(s + 2, Ordering::Release);
        self.next_refresh.store(smp.raw.saturating_add(refresh_interval(self.tsc)), Ordering::Relaxed);
    }
}

fn refresh_interval(tsc: bool) -> u64 {
    if tsc { 1 << 31 } else { 1_000_000_000 }
}

/// Makes the ring directory if it is missing, as every writer does: sticky and world-writable
/// like `/tmp`, since every user's programs write there. (The agent makes it too, so it can
/// watch it before the first program starts.)
pub fn make_dir(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::create_dir_all(dir)?;
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o1777));
    Ok(())
}

/// This process's file if it has one (not the parent's, in a forked child).
fn existing() -> Option<&'static Shared> {
    let p = GLOBAL.load(Ordering::Acquire);
    // SAFETY: GLOBAL only ever holds pointers from Box::leak, never freed.
    unsafe { p.as_ref() }.filter(|sh| sh.pid == std::process::id())
}

/// This process's file, creating it if needed (or anew in a forked child).
fn current() -> Option<&'static Shared> {
    existing().or_else(|| init().ok())
}

fn init() -> Result<&'static Shared, String> {
    let _g = INIT.lock().unwrap_or_else(|e| e.into_inner());
    let p = GLOBAL.load(Ordering::Acquire);
    // SAFETY: as in `current`.
    let old = unsafe { p.as_ref() };
    if let Some(sh) = old
        && sh.pid == std::process::id()
    {
        return Ok(sh);
    }
    let defs = old.map(|o| o.defs.lock().unwrap_or_else(|e| e.into_inner()).clone()).unwrap_or_default();
    let sh: &'static Shared = Box::leak(Box::new(Shared::create(defs)?));
    GLOBAL.store(sh as *const Shared as *mut Shared, Ordering::Release);
    if !ATFORK.swap(true, Ordering::Relaxed) {
        // SAFETY: registers a plain function; it runs in the child after fork.
        unsafe { libc::pthread_atfork(None, None, Some(after_fork_child)) };
    }
    Ok(sh)
}

extern "C" fn after_fork_child() {
    // The forking thread's ring belongs to the parent: forget it without giving it back.
    let _ = HOT.try_with(|h| {
        h.ring.set(ptr::null());
        h.status.set(0);
    });
    let _ = GUARD.try_with(|g| {
        if let Ok(mut g) = g.try_borrow_mut()
            && let Some(guard) = g.take()
        {
            std::mem::forget(guard);
        }
    });
}

/// Defines an event (or returns the existing handle of an identical definition): `level`
/// 0..=9 (its place in the loop → phase → step hierarchy; lags are measured to the previous
/// event of equal or lower level), `rate` 0..=9 (see the module docs), up to four argument
/// names. Creates the process's ring file on first use.
pub fn define(name: &str, level: u8, rate: u8, arg_names: &[&str]) -> Result<Event, DefineError> {
    if name.is_empty() || name.len() > format::MAX_NAME || name.contains('\0') {
        return Err(DefineError::BadName(name.to_string()));
    }
    if level > format::MAX_LEVEL {
        return Err(DefineError::BadLevel(level as u32));
    }
    if rate > format::MAX_RATE {
        return Err(DefineError::BadRate(rate as u32));
    }
    if arg_names.len() > format::MAX_ARGS
        || arg_names.iter().any(|a| a.is_empty() || a.len() > format::MAX_ARG_NAME || a.contains(['\0', ',']))
    {
        return Err(DefineError::BadArgs(arg_names.iter().map(|s| s.to_string()).collect()));
    }
    let sh = match current() {
        Some(sh) => sh,
        None => return Err(DefineError::Unavailable(init().err().unwrap_or_default())),
    };
    let e = sh.add_def(Def {
        name: name.to_string(),
        level,
        rate,
        args: arg_names.iter().map(|s| s.to_string()).collect(),
    })?;
    sh.maybe_refresh();
    Ok(e)
}

/// Gives a thread's ring back when the thread exits.
struct RingGuard {
    shared: &'static Shared,
    ring: u32,
}

impl Drop for RingGuard {
    fn drop(&mut self) {
        if self.shared.pid != std::process::id() {
            return; // a forked child's copy of the parent's guard
        }
        let _ = HOT.try_with(|h| {
            h.ring.set(ptr::null());
            h.status.set(0);
        });
        self.shared
            .atomic32(self.shared.ring_tab + self.ring as usize * format::RING_ENTRY_SIZE + ring::STATE)
            .store(0, Ordering::Release);
    }
}

/// Claims a free ring for this thread (first logged event). False if none: then the event is
/// dropped and counted.
#[cold]
#[inline(never)]
fn claim(h: &Hot) -> bool {
    let Some(sh) = current() else { return false };
    if h.status.get() == 2 {
        sh.atomic64(hdr::NO_RING_DROPS).fetch_add(1, Ordering::Relaxed);
        return false;
    }
    // Without a place to give the ring back at exit (thread already tearing down), don't take one.
    let guard_ok = GUARD.try_with(|_| ()).is_ok();
    for i in 0..sh.max_rings {
        let entry = sh.ring_tab + i as usize * format::RING_ENTRY_SIZE;
        let state = sh.atomic32(entry + ring::STATE);
        if !guard_ok || state.load(Ordering::Relaxed) != 0 {
            continue;
        }
        if state.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed).is_err() {
            continue;
        }
        let tid = clock::gettid();
        sh.atomic32(entry + ring::TID).store(tid, Ordering::Relaxed);
        sh.atomic32(entry + ring::CLAIMS).fetch_add(1, Ordering::Relaxed);
        let head = sh.atomic64(entry + ring::HEAD);
        h.head.set(head.load(Ordering::Relaxed));
        h.head_ptr.set(head as *const AtomicU64);
        h.mask.set(sh.ring_records as u64 - 1);
        h.tid_hi.set((tid as u64) << 32);
        h.cpu_ptr.set(clock::rseq_cpu_ptr());
        h.use_tsc.set(sh.tsc);
        let ring_off = sh.rings_off + i as usize * sh.ring_records as usize * format::RECORD_SIZE;
        // SAFETY: ring `i` lies inside the mapping (layout computed at creation).
        h.ring.set(unsafe { sh.base.add(ring_off) } as *const AtomicU64);
        h.status.set(1);
        GUARD.with(|g| *g.borrow_mut() = Some(RingGuard { shared: sh, ring: i }));
        return true;
    }
    h.status.set(2);
    sh.atomic64(hdr::NO_RING_DROPS).fetch_add(1, Ordering::Relaxed);
    false
}

/// A NUL-free copy for C callers (used by the FFI layer).
pub(crate) fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).unwrap_or_default()
}
