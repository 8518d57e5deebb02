//! The reader: find ring files ([`discover`]), tail one ([`Tailer`]), tell when its writer has
//! exited. For the agent, which polls every few tens of milliseconds.
//!
//! # Hostile files
//! Any user's program can write a ring file, so every size, count, offset and string in it is
//! checked before use: the magic and version first ([`ReadError::NotTimeline`],
//! [`ReadError::UnsupportedVersion`]), then every capacity against the format's limits and the
//! layout against the file's real size ([`ReadError::Truncated`], [`ReadError::Corrupt`]).
//! Nothing is allocated from a number in the file except within those limits and the
//! per-poll budget ([`Tailer::set_budget`]). The file is read with `pread`, never mapped: a
//! writer that truncates its file under us makes a read come up short (an error), where a
//! mapping would raise SIGBUS in the agent. Records naming an undefined event or thread 0
//! are counted in [`PollStats::corrupt`] and dropped.
//!
//! # Never slowing the writer
//! The reader only reads: the writer never waits for it and never learns it exists. The cost
//! it does impose is cache-line traffic on the ring heads and records it reads, so poll every
//! 20–50 ms, not every millisecond (a reader polling every 1 ms slowed a writer under stress by
//! 28 %; `benches/timeline.rs` measures it at 20–50 ms, `docs/hot-paths.md` keeps the figures).
//!
//! # Losses
//! Each ring is a window of its last `N` records. A record the writer overwrote before we read
//! it, or may have been overwriting while we copied it (index `≤ head_after_copy − N`), is
//! never returned and is counted in [`PollStats::lost`]; `read + lost` over all polls equals
//! the records ever published in the rings. The oldest slot of a full ring is never taken
//! and counts as lost: the writer may be overwriting it with the next record — or may have been
//! killed half-way through doing so, which the file cannot tell from a clean exit. So a ring
//! yields at most `N − 1` records at once, and the count errs only towards loss.
//!
//! # Time
//! Records carry TSC ticks (or `CLOCK_MONOTONIC` ns). On the writer's boot the reader converts
//! ticks with its own calibration: the slope between this process's first sample and one taken
//! at every poll (both sampling the same TSC and `CLOCK_MONOTONIC`), with the writer's start
//! sample as an older first point when it is older; a baseline under 20 ms is waited out once.
//! Wall-clock time is `real + (ts − raw) × ns_per_tick` from the calibration sample nearest to
//! the record (the writer's start sample, its latest, or the reader's sample of this poll). The
//! error is the sample's ±50 ns plus the slope's relative error times the distance to the
//! sample; `tests/clock.rs` holds it under the documented bound.
//!
//! Neighbouring records can fall either side of the switch to a nearer sample (a new one every
//! poll, each ±50 ns), and a thread's records are often a few ns apart: converted alone, the
//! later record could come out earlier. So a thread's record is never given a time before its
//! previous one's (taking that time instead, which stays inside the same error bound): sorted
//! by time, a thread's events keep the order it wrote them in.

use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::clock::{self, Sample};
use crate::format::{self, ev, hdr, ring};

/// Why a ring file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{0}: not a timeline file (not a regular file, or bad magic)")]
    NotTimeline(PathBuf),
    #[error("{path}: timeline format version {version} not supported (this reader reads version {})", format::VERSION)]
    UnsupportedVersion { path: PathBuf, version: u32 },
    #[error("{path}: truncated: {what} needs {need} bytes, the file has {have}")]
    Truncated { path: PathBuf, what: &'static str, need: u64, have: u64 },
    #[error("{path}: corrupt: {what}")]
    Corrupt { path: PathBuf, what: String },
}

/// The record clock of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockSource {
    /// CPU time-stamp counter ticks (constant, nonstop).
    Tsc,
    /// `CLOCK_MONOTONIC` nanoseconds.
    Monotonic,
}

/// What the header says about the writing process.
#[derive(Clone, Debug)]
pub struct ProcessInfo {
    pub path: PathBuf,
    pub pid: u32,
    /// Start time in clock ticks after boot (`/proc/<pid>/stat` field 22): with `pid`, the
    /// process's identity across pid reuse.
    pub start_ticks: u64,
    pub comm: String,
    pub clock: ClockSource,
    pub max_rings: u32,
    pub ring_records: u32,
    /// Whether the file was written on this boot (its TSC is ours).
    pub same_boot: bool,
    /// The file's owner: its writer's uid, unless someone else made it (a reader checks it
    /// against the process it claims to be, see `loupe-core`'s timeline ingest).
    pub owner_uid: u32,
}

/// One event definition (the id is its index in [`Tailer::events`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventDef {
    pub name: String,
    pub level: u8,
    pub rate: u8,
    pub arg_names: Vec<String>,
}

/// One record, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// Wall-clock time, ns since the Unix epoch.
    pub time_unix_ns: u64,
    /// The raw stamp (TSC ticks or monotonic ns).
    pub ts: u64,
    pub pid: u32,
    pub tid: u32,
    pub cpu: u16,
    /// Index into [`Tailer::events`].
    pub event: u16,
    pub level: u8,
    pub args: [u64; 4],
    /// Time since the previous event of equal or lower level on the same thread, if that event
    /// was read (none after a loss on the ring, or for the thread's first such event).
    pub lag_ns: Option<u64>,
    /// The same in raw ticks.
    pub lag_ticks: Option<u64>,
    /// Which ring it came from.
    pub ring: u16,
}

/// What one [`Tailer::poll`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PollStats {
    /// Records returned.
    pub read: u64,
    /// Records overwritten before they could be read.
    pub lost: u64,
    /// Records dropped as malformed (undefined event id, thread 0).
    pub corrupt: u64,
    /// The header's running count of events dropped for want of a free ring.
    pub no_ring_drops: u64,
    /// Whether the per-poll budget stopped this poll early (call again soon).
    pub more: bool,
}

/// Whether the writing process is still there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriterState {
    Running,
    /// Gone (or its pid now belongs to another process): one more poll drains it for good.
    Exited,
}

/// A ring file found by [`discover`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RingFile {
    pub path: PathBuf,
    pub pid: u32,
    pub start_ticks: u64,
    pub state: WriterState,
}

/// The ring files in `dir` (see `writer::timeline_dir`), by name; files being created
/// (dot-prefixed) and other names are skipped. A missing directory is an empty list.
pub fn discover(dir: &Path) -> std::io::Result<Vec<RingFile>> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for ent in rd {
        let ent = ent?;
        let name = ent.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some((pid, start)) = parse_name(name) else { continue };
        out.push(RingFile { path: ent.path(), pid, start_ticks: start, state: writer_state(pid, start) });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

fn parse_name(name: &str) -> Option<(u32, u64)> {
    let stem = name.strip_suffix(".tl")?;
    let (pid, start) = stem.split_once('-')?;
    let ok = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !ok(pid) || !ok(start) {
        return None;
    }
    Some((pid.parse().ok()?, start.parse().ok()?))
}

/// Whether process `pid` that started at `start_ticks` still runs.
pub fn writer_state(pid: u32, start_ticks: u64) -> WriterState {
    if pid == 0 || pid > i32::MAX as u32 {
        return WriterState::Exited;
    }
    // SAFETY: signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(pid as i32, 0) };
    if r != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) {
        return WriterState::Exited;
    }
    match clock::proc_start(pid) {
        Some((s, _)) if start_ticks != 0 && s != start_ticks => WriterState::Exited,
        // A zombie has exited too: nothing will write any more.
        _ if is_zombie(pid) => WriterState::Exited,
        _ => WriterState::Running,
    }
}

fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rfind(')').and_then(|i| s.get(i + 2..i + 3)).map(|st| st == "Z" || st == "X"))
        .unwrap_or(false)
}

#[derive(Clone, Copy, Debug)]
struct Layout {
    ev_off: u64,
    max_events: u32,
    ring_tab: u64,
    max_rings: u32,
    rings_off: u64,
    ring_records: u32,
}

#[derive(Clone, Debug, Default)]
struct Cursor {
    pos: u64,
    tid: u32,
    /// recent[k]: stamp of the latest event of level ≤ k on the current thread.
    recent: [Option<u64>; 10],
    /// Wall time given to the current thread's latest record: the next one is never earlier.
    wall: u64,
}

/// Tails one ring file. Cheap to poll; never writes to the file.
pub struct Tailer {
    file: File,
    info: ProcessInfo,
    layout: Layout,
    events: Vec<EventDef>,
    cursors: Vec<Cursor>,
    cal_start: Sample,
    budget: usize,
    next_ring: usize,
    ns_per_tick: f64,
    table: Vec<u8>,
    table2: Vec<u8>,
    copy: Vec<u8>,
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    b.get(off..off + 4).map_or(0, |s| u32::from_le_bytes(s.try_into().unwrap_or([0; 4])))
}
fn u64_at(b: &[u8], off: usize) -> u64 {
    b.get(off..off + 8).map_or(0, |s| u64::from_le_bytes(s.try_into().unwrap_or([0; 8])))
}
fn cstr(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

impl Tailer {
    /// Opens a ring file and checks its header. Reading starts at record 0 of every ring
    /// (records already overwritten then count as lost at the first poll); use
    /// [`Tailer::set_positions`] to resume, [`Tailer::seek_to_end`] to skip the past.
    pub fn open(path: impl AsRef<Path>) -> Result<Tailer, ReadError> {
        let path = path.as_ref().to_path_buf();
        let io = |source| ReadError::Io { path: path.clone(), source };
        // Anyone can put a name here: never follow a symlink, never block on a FIFO, and read
        // only regular files.
        let file = File::options()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&path)
            .map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        if !meta.is_file() {
            return Err(ReadError::NotTimeline(path));
        }
        let have = meta.len();
        let mut magic = [0u8; 8];
        if have < 8 {
            return Err(ReadError::Truncated { path, what: "the magic", need: 8, have });
        }
        file.read_exact_at(&mut magic, 0).map_err(io)?;
        if magic != format::MAGIC {
            return Err(ReadError::NotTimeline(path));
        }
        if have < 16 {
            return Err(ReadError::Truncated { path, what: "the version", need: 16, have });
        }
        let mut h = vec![0u8; format::HEADER_SIZE];
        let n = (have as usize).min(format::HEADER_SIZE);
        file.read_exact_at(&mut h[..n], 0).map_err(io)?;
        let version = u32_at(&h, hdr::VERSION);
        if version != format::VERSION {
            return Err(ReadError::UnsupportedVersion { path, version });
        }
        if have < format::HEADER_SIZE as u64 {
            return Err(ReadError::Truncated { path, what: "the header", need: format::HEADER_SIZE as u64, have });
        }
        let corrupt = |what: String| ReadError::Corrupt { path: path.clone(), what };
        if u32_at(&h, hdr::HEADER_SIZE) as usize != format::HEADER_SIZE {
            return Err(corrupt(format!(
                "header size {} (expected {})",
                u32_at(&h, hdr::HEADER_SIZE),
                format::HEADER_SIZE
            )));
        }
        if u32_at(&h, hdr::RECORD_SIZE) as usize != format::RECORD_SIZE {
            return Err(corrupt(format!(
                "record size {} (expected {})",
                u32_at(&h, hdr::RECORD_SIZE),
                format::RECORD_SIZE
            )));
        }
        let max_events = u32_at(&h, hdr::MAX_EVENTS);
        let max_rings = u32_at(&h, hdr::MAX_RINGS);
        let ring_records = u32_at(&h, hdr::RING_RECORDS);
        if !(1..=format::LIMIT_EVENTS).contains(&max_events) {
            return Err(corrupt(format!("{max_events} event slots (limit {})", format::LIMIT_EVENTS)));
        }
        if !(1..=format::LIMIT_RINGS).contains(&max_rings) {
            return Err(corrupt(format!("{max_rings} rings (limit {})", format::LIMIT_RINGS)));
        }
        if !ring_records.is_power_of_two()
            || !(format::MIN_RING_RECORDS..=format::LIMIT_RING_RECORDS).contains(&ring_records)
        {
            return Err(corrupt(format!(
                "{ring_records} records per ring (a power of two up to {})",
                format::LIMIT_RING_RECORDS
            )));
        }
        let (ev_off, ring_tab, rings_off, size) =
            format::layout(max_events, max_rings, ring_records).ok_or_else(|| corrupt("layout overflows".into()))?;
        if u32_at(&h, hdr::EVENT_TABLE_OFF) as u64 != ev_off
            || u32_at(&h, hdr::RING_TABLE_OFF) as u64 != ring_tab
            || u64_at(&h, hdr::RINGS_OFF) != rings_off
            || u64_at(&h, hdr::FILE_SIZE) != size
        {
            return Err(corrupt("table offsets or file size disagree with the capacities".into()));
        }
        if have < size {
            return Err(ReadError::Truncated { path, what: "the rings", need: size, have });
        }
        let clock = match u32_at(&h, hdr::CLOCK) {
            format::CLOCK_TSC => ClockSource::Tsc,
            format::CLOCK_MONOTONIC => ClockSource::Monotonic,
            c => return Err(corrupt(format!("clock source {c}"))),
        };
        let boot: [u8; 16] = h[hdr::BOOT_ID..hdr::BOOT_ID + 16].try_into().unwrap_or([0; 16]);
        let info = ProcessInfo {
            path: path.clone(),
            pid: u32_at(&h, hdr::PID),
            start_ticks: u64_at(&h, hdr::PROC_START),
            comm: cstr(&h[hdr::COMM..hdr::COMM + 16]),
            clock,
            max_rings,
            ring_records,
            same_boot: boot != [0; 16] && boot == clock::boot_id(),
            owner_uid: meta.uid(),
        };
        let cal_start = Sample {
            raw: u64_at(&h, hdr::CAL_START),
            mono_ns: u64_at(&h, hdr::CAL_START + 8),
            real_ns: u64_at(&h, hdr::CAL_START + 16),
        };
        let layout = Layout { ev_off, max_events, ring_tab, max_rings, rings_off, ring_records };
        let mut t = Tailer {
            file,
            info,
            layout,
            events: Vec::new(),
            cursors: vec![Cursor::default(); max_rings as usize],
            cal_start,
            budget: 1 << 18,
            next_ring: 0,
            ns_per_tick: 1.0,
            table: Vec::new(),
            table2: Vec::new(),
            copy: Vec::new(),
        };
        t.load_events()?;
        Ok(t)
    }

    fn read_at(&self, buf: &mut [u8], off: u64, what: &'static str) -> Result<(), ReadError> {
        self.file.read_exact_at(buf, off).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                let have = self.file.metadata().map(|m| m.len()).unwrap_or(0);
                ReadError::Truncated { path: self.info.path.clone(), what, need: off + buf.len() as u64, have }
            } else {
                ReadError::Io { path: self.info.path.clone(), source: e }
            }
        })
    }

    /// Reads definitions published since the last look.
    fn load_events(&mut self) -> Result<(), ReadError> {
        let mut b = [0u8; 4];
        self.read_at(&mut b, hdr::EVENT_COUNT as u64, "the event count")?;
        let count = u32::from_le_bytes(b).min(self.layout.max_events) as usize;
        let mut e = [0u8; format::EVENT_ENTRY_SIZE];
        while self.events.len() < count {
            let off = self.layout.ev_off + (self.events.len() * format::EVENT_ENTRY_SIZE) as u64;
            self.read_at(&mut e, off, "an event definition")?;
            let nargs = (e[ev::NARGS] as usize).min(format::MAX_ARGS);
            let arg_names = (0..nargs)
                .map(|i| cstr(&e[ev::ARG_NAMES + i * format::MAX_ARG_NAME..][..format::MAX_ARG_NAME]))
                .collect();
            self.events.push(EventDef {
                name: cstr(&e[ev::NAME..ev::NAME + format::MAX_NAME]),
                level: e[ev::LEVEL],
                rate: e[ev::RATE],
                arg_names,
            });
        }
        Ok(())
    }

    /// The writing process, per the header.
    pub fn info(&self) -> &ProcessInfo {
        &self.info
    }

    /// Event definitions known so far, by id (refreshed by [`Tailer::poll`]).
    pub fn events(&self) -> &[EventDef] {
        &self.events
    }

    /// Whether the writer still runs ([`WriterState::Exited`]: poll once more, then it's done).
    pub fn writer_state(&self) -> WriterState {
        writer_state(self.info.pid, self.info.start_ticks)
    }

    /// The ns-per-tick slope the last poll used (1.0 for a monotonic clock).
    pub fn ns_per_tick(&self) -> f64 {
        self.ns_per_tick
    }

    /// Caps the records one poll returns (default 262,144); the rest wait for the next poll
    /// ([`PollStats::more`]), or are lost if the writer laps them first.
    pub fn set_budget(&mut self, records: usize) {
        self.budget = records.max(1);
    }

    /// The next record index to read in each ring (to resume after a restart).
    pub fn positions(&self) -> Vec<u64> {
        self.cursors.iter().map(|c| c.pos).collect()
    }

    /// Resumes at saved positions (extra entries ignored, missing ones left as they are).
    pub fn set_positions(&mut self, pos: &[u64]) {
        for (c, &p) in self.cursors.iter_mut().zip(pos) {
            *c = Cursor { pos: p, ..Cursor::default() };
        }
    }

    /// Skips everything already published.
    pub fn seek_to_end(&mut self) -> Result<(), ReadError> {
        let mut table = std::mem::take(&mut self.table);
        self.read_table(&mut table)?;
        for (i, c) in self.cursors.iter_mut().enumerate() {
            *c = Cursor { pos: u64_at(&table, i * format::RING_ENTRY_SIZE + ring::HEAD), ..Cursor::default() };
        }
        self.table = table;
        Ok(())
    }

    /// Removes the file (once its writer has exited and it has been drained).
    pub fn remove_file(self) -> std::io::Result<()> {
        std::fs::remove_file(&self.info.path)
    }

    fn read_table(&self, buf: &mut Vec<u8>) -> Result<(), ReadError> {
        buf.resize(self.layout.max_rings as usize * format::RING_ENTRY_SIZE, 0);
        self.read_at(buf, self.layout.ring_tab, "the ring table")
    }

    /// The writer's latest calibration sample (seqlock: seq, data, seq, each its own read).
    fn latest_sample(&self) -> Result<Option<Sample>, ReadError> {
        for _ in 0..4 {
            let mut s1 = [0u8; 8];
            let mut d = [0u8; 24];
            let mut s2 = [0u8; 8];
            self.read_at(&mut s1, hdr::CAL_LATEST as u64, "the clock sample")?;
            self.read_at(&mut d, hdr::CAL_LATEST as u64 + 8, "the clock sample")?;
            self.read_at(&mut s2, hdr::CAL_LATEST as u64, "the clock sample")?;
            if s1 == s2 && u64::from_le_bytes(s1) & 1 == 0 {
                return Ok(Some(Sample { raw: u64_at(&d, 0), mono_ns: u64_at(&d, 8), real_ns: u64_at(&d, 16) }));
            }
        }
        Ok(None)
    }

    /// Appends the records published since the last poll to `out`, in ring order (each ring's
    /// records in the order its thread wrote them; sort by time to merge threads). Reads only,
    /// with `pread`: the ring table (twice), the header's clock sample and the new records. The
    /// first poll of a TSC file in a process may
    /// sleep up to 20 ms, once, to calibrate the TSC (see the module docs).
    pub fn poll(&mut self, out: &mut Vec<Event>) -> Result<PollStats, ReadError> {
        let mut stats = PollStats::default();
        let conv = self.converter()?;
        self.ns_per_tick = conv.ns_per_tick;
        let cap = self.layout.ring_records as u64;
        let mut table = std::mem::take(&mut self.table);
        let mut table2 = std::mem::take(&mut self.table2);
        let mut copy = std::mem::take(&mut self.copy);
        let res = (|| {
            self.read_table(&mut table)?;
            stats.no_ring_drops = {
                let mut b = [0u8; 8];
                self.read_at(&mut b, hdr::NO_RING_DROPS as u64, "the drop count")?;
                u64::from_le_bytes(b)
            };
            // Pass 1: copy each ring's new records into `copy` (bounded by the budget).
            let rings = self.layout.max_rings as usize;
            let mut spans: Vec<(usize, u64, u64, usize)> = Vec::new(); // ring, lo, h1, offset in copy
            let mut left = self.budget as u64;
            copy.clear();
            let first = self.next_ring % rings;
            for k in 0..rings {
                let r = (first + k) % rings;
                let h1 = u64_at(&table, r * format::RING_ENTRY_SIZE + ring::HEAD);
                let pos = self.cursors[r].pos;
                if h1 <= pos {
                    if h1 < pos {
                        // A head going backwards: not written by our writer. Resynchronize.
                        stats.corrupt += 1;
                        self.cursors[r] = Cursor { pos: h1, ..Cursor::default() };
                    }
                    continue;
                }
                if left == 0 {
                    stats.more = true;
                    continue;
                }
                let lo = pos.max(h1.saturating_sub(cap));
                let hi = h1.min(lo + left);
                left -= hi - lo;
                if hi < h1 {
                    stats.more = true;
                }
                let at = copy.len();
                copy.resize(at + ((hi - lo) as usize) * format::RECORD_SIZE, 0);
                let base = self.layout.rings_off + r as u64 * cap * format::RECORD_SIZE as u64;
                // One or two contiguous pieces (the ring may wrap).
                let mut i = lo;
                while i < hi {
                    let slot = i % cap;
                    let n = (cap - slot).min(hi - i);
                    let dst = at + ((i - lo) as usize) * format::RECORD_SIZE;
                    let len = n as usize * format::RECORD_SIZE;
                    self.read_at(&mut copy[dst..dst + len], base + slot * format::RECORD_SIZE as u64, "a ring")?;
                    i += n;
                }
                spans.push((r, lo, hi, at));
            }
            self.next_ring = (first + 1) % rings;
            if spans.is_empty() {
                return Ok(());
            }
            // Pass 2: heads again; drop what the writer may have overwritten while we copied.
            self.read_table(&mut table2)?;
            for (r, lo, hi, at) in spans {
                let h2 = u64_at(&table2, r * format::RING_ENTRY_SIZE + ring::HEAD);
                let pos = self.cursors[r].pos;
                let h1 = u64_at(&table, r * format::RING_ENTRY_SIZE + ring::HEAD);
                let valid_lo = if h2 < h1 {
                    stats.corrupt += 1; // head went backwards: trust nothing copied
                    hi
                } else {
                    // Record h2 may be half-written into the slot of h2 − cap, even by a writer
                    // that has since been killed: that slot is never taken.
                    lo.max((h2 + 1).saturating_sub(cap))
                };
                let valid_lo = valid_lo.min(hi);
                let lost = valid_lo - pos;
                stats.lost += lost;
                let c = &mut self.cursors[r];
                if lost > 0 {
                    c.recent = [None; 10];
                }
                c.pos = hi;
                for i in valid_lo..hi {
                    let off = at + ((i - lo) as usize) * format::RECORD_SIZE;
                    let rec = &copy[off..off + format::RECORD_SIZE];
                    let ts = u64_at(rec, 0);
                    let (id, cpu, tid) = format::unpack_meta(u64_at(rec, 8));
                    if id as usize >= self.events.len() {
                        self.load_events()?;
                    }
                    let c = &mut self.cursors[r];
                    let Some(def) = self.events.get(id as usize).filter(|d| d.level <= format::MAX_LEVEL) else {
                        stats.corrupt += 1;
                        continue;
                    };
                    if tid == 0 {
                        stats.corrupt += 1;
                        continue;
                    }
                    if tid != c.tid {
                        c.tid = tid;
                        c.recent = [None; 10];
                        c.wall = 0;
                    }
                    let level = def.level;
                    let lag_ticks = c.recent[level as usize].map(|p| ts.saturating_sub(p));
                    for k in level as usize..10 {
                        c.recent[k] = Some(ts);
                    }
                    c.wall = conv.wall(ts).max(c.wall);
                    out.push(Event {
                        time_unix_ns: c.wall,
                        ts,
                        pid: self.info.pid,
                        tid,
                        cpu,
                        event: id,
                        level,
                        args: [u64_at(rec, 16), u64_at(rec, 24), u64_at(rec, 32), u64_at(rec, 40)],
                        lag_ns: lag_ticks.map(|t| conv.ticks_to_ns(t)),
                        lag_ticks,
                        ring: r as u16,
                    });
                    stats.read += 1;
                }
            }
            Ok(())
        })();
        self.table = table;
        self.table2 = table2;
        self.copy = copy;
        res.map(|()| stats)
    }

    fn converter(&self) -> Result<Converter, ReadError> {
        let tsc = self.info.clock == ClockSource::Tsc;
        let now = clock::sample(tsc && self.info.same_boot);
        let latest = self.latest_sample()?;
        let mut anchors = vec![self.cal_start];
        anchors.extend(latest);
        let ns_per_tick = if !tsc {
            1.0
        } else if self.info.same_boot {
            anchors.push(now);
            host_slope(self.cal_start)
        } else {
            // Another boot's TSC: only the writer's own samples can convert it.
            let l = latest.unwrap_or(self.cal_start);
            let (dt, dm) = (l.raw.wrapping_sub(self.cal_start.raw), l.mono_ns.wrapping_sub(self.cal_start.mono_ns));
            if dt == 0 || dm == 0 || dt > 1 << 62 || dm > 1 << 62 {
                return Err(ReadError::Corrupt {
                    path: self.info.path.clone(),
                    what: "written on another boot without a usable clock calibration".into(),
                });
            }
            dm as f64 / dt as f64
        };
        if !tsc {
            anchors.push(now);
        }
        Ok(Converter { anchors, ns_per_tick, mono: !tsc })
    }
}

/// This process's view of the TSC rate: the slope from its first sample (or the writer's start
/// sample, if older) to a sample taken now; waits once until that baseline is ≥ 20 ms.
fn host_slope(writer_start: Sample) -> f64 {
    static FIRST: Mutex<Option<Sample>> = Mutex::new(None);
    let mut first = FIRST.lock().unwrap_or_else(|e| e.into_inner());
    let mine = *first.get_or_insert_with(|| clock::sample(true));
    let mut base = mine;
    if writer_start.mono_ns < base.mono_ns && writer_start.raw < base.raw && writer_start.raw != 0 {
        base = writer_start;
    }
    let mut now = clock::sample(true);
    let min = 20_000_000;
    if now.mono_ns.saturating_sub(base.mono_ns) < min {
        std::thread::sleep(std::time::Duration::from_nanos(min - now.mono_ns.saturating_sub(base.mono_ns)));
        now = clock::sample(true);
    }
    let (dt, dm) = (now.raw.saturating_sub(base.raw), now.mono_ns.saturating_sub(base.mono_ns));
    if dt == 0 { 1.0 } else { dm as f64 / dt as f64 }
}

struct Converter {
    anchors: Vec<Sample>,
    ns_per_tick: f64,
    mono: bool,
}

impl Converter {
    fn ticks_to_ns(&self, ticks: u64) -> u64 {
        ticks_to_ns(ticks, self.ns_per_tick)
    }

    /// Plain i64/f64 arithmetic: i128 conversions and libm's `round` were a third of the
    /// reader's time per event.
    fn wall(&self, ts: u64) -> u64 {
        let mut best = (u64::MAX, 0u64, 0u64);
        for a in &self.anchors {
            let raw = if self.mono { a.mono_ns } else { a.raw };
            let dist = raw.abs_diff(ts);
            if dist < best.0 {
                best = (dist, raw, a.real_ns);
            }
        }
        let (_, raw, real) = best;
        let d = ts.wrapping_sub(raw) as i64 as f64 * self.ns_per_tick;
        let d = if d >= 0.0 { d + 0.5 } else { d - 0.5 } as i64; // saturating, rounded half away
        (real as i64).saturating_add(d).max(0) as u64
    }
}

/// Converts a raw lag or duration with a given slope, as [`Tailer::poll`] does (for checks):
/// rounded to the nearest nanosecond.
pub fn ticks_to_ns(ticks: u64, ns_per_tick: f64) -> u64 {
    (ticks as f64 * ns_per_tick + 0.5) as u64
}
