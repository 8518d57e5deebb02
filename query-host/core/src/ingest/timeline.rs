//! Application timelines: programs that use the timeline library (`timeline/`, C header
//! `loupe_timeline.h`) write their events into one shared-memory ring file per process in a
//! well-known directory (`$LOUPE_TIMELINE_DIR`, default `/dev/shm/loupe-timeline`); the agent
//! finds the files, tails them, and stores the events beside runs and stack samples.
//!
//! *How often:* every [`POLL_EVERY`] (50 ms) while there are rings to read; with none, the
//! collector sleeps until a file appears in the directory ([`DirWatch`]). Reading only ever
//! `pread`s the writer's memory, so it never blocks or slows the writer's logging path; but a
//! reader polling every millisecond slowed a writer by 28 % under stress here (cache lines
//! bouncing between the writer's stores and the reader's loads), and one polling every 20–50 ms
//! by −2 to +2 % (`cargo bench -p loupe-timeline`). A ring of 8,192 records then holds what a program logs in 50 ms at up to
//! ~160,000 events/s per thread; what a faster writer overwrites before it is read is counted
//! as lost and stored with the batch — never hidden.
//!
//! *What is stored:* each event with its wall-clock time (the reader converts the writer's
//! TSC or monotonic stamps with the file's calibration), thread, CPU, arguments and *lag* (time
//! since the previous event of equal or lower level on its thread, computed by the reader,
//! which knows where records were lost), written every [`WRITE_EVERY`] as one batch per
//! program. A program that exits is polled once more and its file removed after its last batch
//! is stored. Files the reader cannot parse (truncated, garbage, another format version) are
//! skipped with one log line each, and the agent keeps going.
//!
//! *Restarts:* after each stored batch the agent records how far it has read each ring (a small
//! file per program under `<data-dir>/timeline-positions/`); a new agent resumes there, so what
//! was overwritten while no agent ran is counted as lost exactly, and it also skips events at
//! or before the last one stored for that process (identified by pid and start time), so
//! nothing is stored twice even if it stopped between a later batch and its positions. (An
//! agent stopped between a program's *first* batch and its first positions leaves none: the
//! next one reads that ring from its start and stores that batch's events again.)

use std::{
    collections::{HashMap, HashSet},
    os::{fd::AsFd, unix::net::UnixStream},
    path::{Path, PathBuf},
    sync::atomic::{AtomicBool, Ordering},
    time::{Duration, Instant},
};

use anyhow::Result;
use loupe_store::{Store, TimeRange, TimelineEvent, TimelineEventDef, TimelineSource};
use loupe_timeline::reader::{self, Tailer, WriterState};
use tracing::{info, warn};

use super::dir_watch::DirWatch;
use loupe_api::clock::now_unix_ns;

/// How often every ring is read.
pub const POLL_EVERY: Duration = Duration::from_millis(50);
/// How often the directory is listed for new programs while it cannot be watched (the agent
/// could not make it, and no program has yet); a watched directory is listed as soon as a
/// file appears in it. (A program that logs more than its ring holds before it is found loses
/// its oldest records, counted.)
pub const DISCOVER_EVERY: Duration = Duration::from_millis(250);
/// How long the collector sleeps with no ring to read and nothing new in the directory (how
/// soon it notices a stop then, unless it was given a stream to stop on: [`STOPPABLE_IDLE_WAIT`]).
pub const IDLE_WAIT: Duration = Duration::from_secs(1);
/// The same when the collector is woken by its stop stream ([`TimelineCollector::stopped_by`]):
/// an idle agent's collector then wakes once a minute, not once a second (~75 µs of CPU each
/// time on this VM).
pub const STOPPABLE_IDLE_WAIT: Duration = Duration::from_secs(60);
/// How often each program's events are written to the store.
pub const WRITE_EVERY: Duration = Duration::from_secs(5);
/// Most events kept per program before a write is forced (bounds the agent's memory whatever
/// a program logs).
pub const MAX_PENDING: usize = 1 << 20;
/// Most programs tailed at once; more are skipped with a log line.
pub const MAX_SOURCES: usize = 4096;
/// Most programs of one user other than root (or the agent's) tailed at once: the directory is
/// everyone's, and one user's thousands of short processes, each with a ring, must not take
/// the slots of everyone else's.
/// (`loupe agent --timeline-per-user`.)
pub const MAX_SOURCES_PER_USER: usize = MAX_SOURCES / 4;

/// What collecting did so far.
#[derive(Clone, Copy, Debug, Default)]
pub struct Collected {
    pub events: u64,
    pub lost: u64,
    pub sources: u64,
    /// Ring files not read because they may not speak for the process they name
    /// (`may_speak_for`).
    pub refused: u64,
}

struct Tracked {
    tailer: Tailer,
    pending: Vec<TimelineEvent>,
    lost: u64,
    /// Events at or before this were stored by an earlier agent.
    stored_until: u64,
}

pub struct TimelineCollector {
    dir: PathBuf,
    /// Where read positions are kept across agent restarts.
    positions: PathBuf,
    store: Store,
    tracked: HashMap<PathBuf, Tracked>,
    /// Files that could not be read (each reported once) or were drained, while they exist.
    skipped: HashSet<PathBuf>,
    /// The directory could not be listed, and that was said.
    dir_warned: bool,
    total: Collected,
    buf: Vec<reader::Event>,
    /// Readable or closed when the collector is to stop ([`TimelineCollector::stopped_by`]).
    stop_stream: Option<UnixStream>,
    /// Programs of one user (not root, not the agent's) tailed at most.
    per_user: usize,
}

impl TimelineCollector {
    /// Tails ring files in `dir`; keeps read positions in `data_dir/timeline-positions`.
    pub fn new(dir: PathBuf, data_dir: &Path, store: Store) -> Self {
        info!(dir = %dir.display(), "tailing application timelines");
        // Made now (as a writer would make it) so it can be watched before the first program
        // starts; if it cannot be, it is listed every DISCOVER_EVERY until it appears.
        if let Err(e) = loupe_timeline::make_dir(&dir) {
            info!(dir = %dir.display(), "timeline directory not made ({e}): listing it every {DISCOVER_EVERY:?}");
        }
        Self {
            dir,
            positions: data_dir.join("timeline-positions"),
            store,
            tracked: HashMap::new(),
            skipped: HashSet::new(),
            dir_warned: false,
            total: Collected::default(),
            buf: Vec::new(),
            stop_stream: None,
            per_user: MAX_SOURCES_PER_USER,
        }
    }

    /// Tails at most `n` programs of one user other than root and the agent's (default
    /// [`MAX_SOURCES_PER_USER`]).
    pub fn per_user(mut self, n: usize) -> Self {
        self.per_user = n.min(MAX_SOURCES);
        self
    }

    /// Wakes the collector's waits when `stream` becomes readable or its other end is closed:
    /// the agent closes it as it stops, so an idle collector need not wake to look at the flag.
    /// Set the stop flag before closing it (a closed stream wakes every wait).
    pub fn stopped_by(mut self, stream: UnixStream) -> Self {
        self.stop_stream = Some(stream);
        self
    }

    /// Collects until `stop` is set; then drains and writes everything it holds.
    ///
    /// With rings to read it wakes every [`POLL_EVERY`]; with none it sleeps until a file
    /// appears in the directory (inotify) or [`IDLE_WAIT`] passes. The directory is listed
    /// when it changed, and every [`DISCOVER_EVERY`] while it cannot be watched (not there yet).
    pub fn run(&mut self, stop: &AtomicBool) -> Result<Collected> {
        let mut watch: Option<DirWatch> = None;
        let mut changed = true;
        let mut last_discover: Option<Instant> = None;
        let mut last_write = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            // Made before listing, so a file created in between is not missed; tried only when
            // the directory is there (an inotify instance costs ~100 µs to make and drop).
            if watch.as_ref().is_none_or(DirWatch::is_dead) && self.dir.is_dir() {
                watch = DirWatch::new(&self.dir);
                changed |= watch.is_some();
            }
            if changed || (watch.is_none() && last_discover.is_none_or(|t| t.elapsed() >= DISCOVER_EVERY)) {
                self.discover();
                last_discover = Some(Instant::now());
            }
            self.poll_all();
            if last_write.elapsed() >= WRITE_EVERY {
                self.write_all()?;
                last_write = Instant::now();
            }
            let idle = if self.stop_stream.is_some() { STOPPABLE_IDLE_WAIT } else { IDLE_WAIT };
            let wait = match (self.tracked.is_empty(), &watch) {
                (false, _) => POLL_EVERY,
                (true, Some(_)) => idle,
                (true, None) => DISCOVER_EVERY,
            };
            changed = match watch.as_mut() {
                Some(w) => w.wait(wait, self.stop_stream.as_ref().map(AsFd::as_fd)),
                None => {
                    std::thread::sleep(wait);
                    false
                }
            };
        }
        self.poll_all();
        self.write_all()?;
        Ok(self.total)
    }

    /// Opens ring files not yet tailed.
    pub fn discover(&mut self) {
        let files = match reader::discover(&self.dir) {
            Ok(files) => files,
            Err(e) => {
                if !self.dir_warned {
                    warn!("timeline directory {}: {e}", self.dir.display());
                    self.dir_warned = true;
                }
                return;
            }
        };
        // Files skipped or retired that are gone need no remembering (bounds the set).
        let listed: HashSet<&PathBuf> = files.iter().map(|f| &f.path).collect();
        self.skipped.retain(|p| listed.contains(p));
        for file in files {
            if self.tracked.contains_key(&file.path) || self.skipped.contains(&file.path) {
                continue;
            }
            if self.tracked.len() >= MAX_SOURCES {
                warn!("timeline {} not tailed: already tailing {MAX_SOURCES} programs", file.path.display());
                self.skipped.insert(file.path);
                continue;
            }
            let mut tailer = match Tailer::open(&file.path) {
                Ok(tailer) => tailer,
                Err(e) => {
                    warn!("timeline file skipped: {e}");
                    self.skipped.insert(file.path);
                    continue;
                }
            };
            if let Err(why) =
                may_speak_for(tailer.info(), file.pid).and_then(|()| self.room_for(tailer.info().owner_uid))
            {
                warn!("timeline {} not tailed: {why}", file.path.display());
                self.total.refused += 1;
                self.skipped.insert(file.path);
                continue;
            }
            // Only a program an earlier agent stored events of has positions; only then
            // is the store asked how far it got.
            let mut stored_until = 0;
            if let Some(pos) = read_positions(&self.positions_of(&tailer)) {
                tailer.set_positions(&pos);
                stored_until = self.stored_until(&tailer);
            }
            self.total.sources += 1;
            self.tracked.insert(file.path, Tracked { tailer, pending: Vec::new(), lost: 0, stored_until });
        }
    }

    fn positions_of(&self, tailer: &Tailer) -> PathBuf {
        let info = tailer.info();
        self.positions.join(format!("{}-{}", info.pid, info.start_ticks))
    }

    /// The last event an earlier agent stored for this process, if any.
    fn stored_until(&self, tailer: &Tailer) -> u64 {
        let info = tailer.info();
        match self.store.timeline_sources(TimeRange::ALL) {
            Ok(sources) => sources
                .iter()
                .filter(|s| s.pid == info.pid && s.start_ticks == info.start_ticks)
                .map(|s| s.last_unix_ns)
                .max()
                .unwrap_or(0),
            Err(e) => {
                warn!("reading stored timelines: {e}");
                0
            }
        }
    }

    /// Reads every tailed ring; drains and retires programs that exited.
    pub fn poll_all(&mut self) {
        let mut done = Vec::new();
        for (path, t) in &mut self.tracked {
            // Checked before the poll: a writer that exits after it was checked is drained by
            // the next round.
            let exited = t.tailer.writer_state() == WriterState::Exited;
            loop {
                self.buf.clear();
                match t.tailer.poll(&mut self.buf) {
                    Ok(stats) => {
                        t.lost += stats.lost;
                        self.total.lost += stats.lost;
                        for e in &self.buf {
                            if e.time_unix_ns <= t.stored_until {
                                continue;
                            }
                            t.pending.push(TimelineEvent {
                                time_unix_ns: e.time_unix_ns,
                                tid: e.tid,
                                cpu: u32::from(e.cpu),
                                event: u32::from(e.event),
                                args: e.args,
                                lag_ns: e.lag_ns,
                            });
                        }
                        if !stats.more || t.pending.len() >= MAX_PENDING {
                            break;
                        }
                    }
                    Err(e) => {
                        warn!("timeline {} no longer readable, dropped: {e}", path.display());
                        done.push((path.clone(), false));
                        break;
                    }
                }
            }
            if done.last().is_some_and(|(p, _)| p == path) {
                continue;
            }
            if t.pending.len() >= MAX_PENDING
                && let Err(e) = flush(&self.store, t, &mut self.total, Some(&self.positions))
            {
                warn!("storing events of {}: {e}", path.display());
            }
            if exited {
                done.push((path.clone(), true));
            }
        }
        for (path, writer_exited) in done {
            let Some(mut t) = self.tracked.remove(&path) else { continue };
            let positions = self.positions_of(&t.tailer);
            if let Err(e) = flush(&self.store, &mut t, &mut self.total, None) {
                // Kept (file and events) for the next round: a full disk may clear.
                warn!("storing the last events of {}: {e}", path.display());
                self.tracked.insert(path, t);
                continue;
            }
            let _ = std::fs::remove_file(positions);
            if writer_exited && let Err(e) = t.tailer.remove_file() {
                warn!("removing {}: {e}", path.display());
            }
            // Drained (or unreadable): never opened again.
            self.skipped.insert(path);
        }
    }

    /// Writes every program's pending events as one batch each.
    pub fn write_all(&mut self) -> Result<()> {
        for t in self.tracked.values_mut() {
            flush(&self.store, t, &mut self.total, Some(&self.positions))?;
        }
        Ok(())
    }

    /// Whether a ring of `uid`'s may be tailed beside the ones already tailed: root's and the
    /// agent's own user's always may (within [`MAX_SOURCES`]); any other user's up to
    /// [`Self::per_user`].
    fn room_for(&self, uid: u32) -> Result<(), String> {
        // SAFETY: geteuid(2) only reads the calling process's credentials.
        if uid == 0 || uid == unsafe { libc::geteuid() } {
            return Ok(());
        }
        let of_user = self.tracked.values().filter(|t| t.tailer.info().owner_uid == uid).count();
        if of_user >= self.per_user {
            return Err(format!("uid {uid} already has {of_user} programs tailed, the most one user may"));
        }
        Ok(())
    }

    pub fn collected(&self) -> Collected {
        self.total
    }
}

/// Whether a ring file may speak for the process it names. The directory is writable by
/// everyone (mode 1777, like `/tmp`), and a ring's pid and program name are only what its name
/// and header say: without this check any user could log events "from" sshd. So the file must
/// be root's, the agent's own user's, or the named process's (its real or effective uid), and
/// its header must name the pid its file name does. A ring of a process that is gone is read
/// only if root's (or the agent's user's): its owner cannot be checked any more.
fn may_speak_for(info: &reader::ProcessInfo, named_pid: u32) -> Result<(), String> {
    if info.pid != named_pid {
        return Err(format!("its header names pid {}, its file name pid {named_pid}", info.pid));
    }
    // SAFETY: geteuid(2) only reads the calling process's credentials.
    if info.owner_uid == 0 || info.owner_uid == unsafe { libc::geteuid() } {
        return Ok(());
    }
    match process_uids(named_pid) {
        Some(uids) if uids.contains(&info.owner_uid) => Ok(()),
        Some([_, effective]) => {
            Err(format!("it is uid {}'s file, and process {named_pid} runs as uid {effective}", info.owner_uid))
        }
        None => Err(format!(
            "it is uid {}'s file, and process {named_pid} is gone: only root's rings of a gone process are read",
            info.owner_uid
        )),
    }
}

/// The real and effective uid of `pid` (`/proc/PID/status`), if it runs.
fn process_uids(pid: u32) -> Option<[u32; 2]> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let mut ids = status.lines().find_map(|l| l.strip_prefix("Uid:"))?.split_whitespace().map(|n| n.parse().ok());
    Some([ids.next()??, ids.next()??])
}

/// Stores a program's pending events and losses as one batch, then (if `positions` is given)
/// records how far its rings have been read.
fn flush(
    store: &Store,
    t: &mut Tracked,
    total: &mut Collected,
    positions: Option<&Path>,
) -> Result<(), loupe_store::StoreError> {
    if t.pending.is_empty() && t.lost == 0 {
        return Ok(());
    }
    let info = t.tailer.info();
    let source = TimelineSource {
        pid: info.pid,
        start_ticks: info.start_ticks,
        comm: info.comm.clone(),
        events: t
            .tailer
            .events()
            .iter()
            .map(|d| TimelineEventDef {
                name: d.name.clone(),
                level: d.level,
                rate: d.rate,
                arg_names: d.arg_names.clone(),
            })
            .collect(),
    };
    store.put_timeline(&source, &t.pending, t.lost, now_unix_ns())?;
    total.events += t.pending.len() as u64;
    if let Some(last) = t.pending.iter().map(|e| e.time_unix_ns).max() {
        t.stored_until = t.stored_until.max(last);
    }
    t.pending.clear();
    t.lost = 0;
    if let Some(dir) = positions {
        let file = dir.join(format!("{}-{}", info.pid, info.start_ticks));
        if let Err(e) = write_positions(&file, &t.tailer.positions()) {
            warn!("recording timeline positions in {}: {e}", file.display());
        }
    }
    Ok(())
}

/// Most rings a positions file may list (the library's files have far fewer).
const MAX_RINGS: usize = 65_536;

/// Positions as decimal numbers, one line; written to a temporary file and renamed, so a crash
/// leaves the old or the new list, never half of one.
fn write_positions(file: &Path, pos: &[u64]) -> std::io::Result<()> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let text: Vec<String> = pos.iter().map(u64::to_string).collect();
    let tmp = file.with_extension("tmp");
    std::fs::write(&tmp, text.join(" "))?;
    std::fs::rename(tmp, file)
}

/// A positions file, if present and sane (this agent's own file, but bounded all the same).
fn read_positions(file: &Path) -> Option<Vec<u64>> {
    let meta = std::fs::metadata(file).ok()?;
    if meta.len() > (MAX_RINGS * 21) as u64 {
        return None;
    }
    let text = std::fs::read_to_string(file).ok()?;
    text.split_whitespace().take(MAX_RINGS).map(|n| n.parse().ok()).collect()
}
