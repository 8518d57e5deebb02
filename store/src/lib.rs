//! Loupe's local store for Millisampler runs and CPU stack samples.
//!
//! Stack samples (`perf record -F 10 -a -g`-like profiling) are described in [`samples`]:
//! [`Store::put_samples`], [`Store::profile`], [`Store::samples`], [`Store::pids`],
//! [`Store::sample_stats`]. They share the tree, the writer lock, the totals discipline and the
//! retention policy described below.
//!
//! A *run* is a short burst of per-CPU network counters on one interface: `samples` slots of
//! `interval_ns` each, with nine `u64` counters and two 128-bit connection sketches per slot
//! and CPU (see [`model`]). The agent writes one run at a time; the HTTP API lists runs by time
//! and reads whole runs; retention deletes the oldest. This crate knows nothing of the kernel
//! or of HTTP.
//!
//! # Layout
//! One sled tree, `runs`, holds every record of every run under keys made of a one-byte kind
//! and big-endian integers, so byte order is numeric order and a range scan follows time
//! (details in [`keys`]):
//!
//! ```text
//! m ++ start:u64 ++ id:u64             → RunMeta            (MessagePack)
//! c ++ start:u64 ++ id:u64 ++ cpu:u32  → one CPU's columns  (compact codec, then MessagePack)
//! k ++ start:u64 ++ id:u64             → ConnCounts         (only for runs that carry counts)
//! i ++ id:u64                          → start:u64          (lookup by id)
//! s                                    → runs:u64, stored_bytes:u64 (running totals)
//! ```
//!
//! *Why this shape:* listing runs in a time range ([`Store::runs`]) scans only the small `m`
//! records and never touches columns; reading one run is an index lookup plus one contiguous
//! prefix scan of its `c` rows; deleting the oldest run is "take the first `m` key". A second
//! tree, `meta`, holds the schema version; a store written by an unknown version is refused
//! rather than misread.
//!
//! # Encoding
//! Values are MessagePack (rmp-serde, structs as arrays) of plain integers. Columns are first
//! turned into sparse zero-run-length streams ([`codec`]), because most slots are zero and
//! MessagePack writes small integers in one byte: an idle 2000-sample, 2-CPU run takes about
//! 190 bytes; a busy one costs roughly what its non-zero values need (about 3 bytes per
//! non-zero byte counter, 1 per packet counter, 1–2 per sketch slot), e.g. ~8 KB per CPU
//! when 30 % of the slots carry traffic.
//!
//! # Disk full
//! A failed write leaves every earlier run intact, but sled then refuses further work on that
//! handle, and needs about one free 512 KiB segment to open: free space, then reopen. Closing
//! such a handle is bounded (sled's final flush can otherwise wait forever; see `Inner::drop`).
//!
//! # Atomicity and durability
//! Every record of a run, *and* the updated running totals (`s`), go into one
//! [`sled::Batch`] applied to the one tree, which sled recovers all-or-nothing after a crash;
//! deletes do the same. So after a crash a run is either wholly present or wholly absent, and
//! the totals always equal the sum of the stored runs' `stored_bytes`, which is why
//! [`Store::stats`] and retention need no scan. [`Store::put_run`] flushes before returning,
//! so a returned put survives a crash. Writers (put, delete, retention) are serialized by a
//! mutex (sled already allows only one process per store), and multi-record reads are
//! isolated from batches by a read-write lock, so a reader never sees half of a run.

pub mod codec;
pub mod keys;
pub mod model;
mod retention;
pub mod samples;
mod verify;

use std::collections::BTreeMap;
use std::io;
use std::mem::ManuallyDrop;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

pub use model::{
    ConnCounts, Counter, CpuColumns, DaySummary, NewRun, Retention, RetentionReport, Run, RunId, RunMeta, RunSource,
    StoreStats, TimeRange,
};

use keys::Totals;
pub use samples::{RawSample, SampleCursor};
pub use samples::model::{Frame, Profile, ProfileQuery, SampleBatchMeta, SampleStats, StackSample};
pub use verify::VerifyReport;

/// Schema version written into the `meta` tree; bump when the layout or encoding changes.
pub const SCHEMA_VERSION: u32 = 1;
const SCHEMA_KEY: &[u8] = b"schema_version";
const NS_PER_DAY: u64 = 86_400 * 1_000_000_000;

/// Everything that can go wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store directory could not be created or is not a directory.
    #[error("cannot create store directory {}: {source}", path.display())]
    CreateDir { path: PathBuf, source: io::Error },
    /// sled could not open the store (permissions, lock held by another process, ...).
    #[error("cannot open store at {}: {source}", path.display())]
    Open { path: PathBuf, source: sled::Error },
    /// Another process (normally a running agent) has the store open.
    #[error("store at {} is in use by another process (a running `loupe agent`?)", path.display())]
    Locked { path: PathBuf },
    /// The disk holding the store is full.
    #[error("no space left on device for store at {} ({op}): {source}", path.display())]
    NoSpace { path: PathBuf, op: String, source: sled::Error },
    /// The store was written with a layout this build does not know.
    #[error(
        "store at {} has schema version {found}, but this build only reads version {supported}",
        path.display()
    )]
    UnknownSchema { path: PathBuf, found: String, supported: u32 },
    /// Any other storage failure.
    #[error("store at {} failed to {op}: {source}", path.display())]
    Storage { path: PathBuf, op: String, source: sled::Error },
    /// A stored record does not decode.
    #[error("store at {}: corrupt {record}: {detail}", path.display())]
    Corrupt { path: PathBuf, record: String, detail: String },
    /// The run given to `put_run` is inconsistent; nothing was written.
    #[error("invalid run: {0}")]
    InvalidRun(String),
    /// A sample batch cannot be stored (e.g. a dictionary ran out of ids); nothing was written.
    #[error("invalid sample batch: {0}")]
    InvalidSamples(String),
    /// The run (or sample batch) alone is larger than the retention byte cap; nothing was written.
    #[error("needs {bytes} bytes, more than the store's cap of {max_bytes} bytes; nothing written")]
    TooLarge { bytes: u64, max_bytes: u64 },
    /// A time range whose start is after its end.
    #[error("bad time range: from {from_unix_ns} is after to {to_unix_ns}")]
    BadRange { from_unix_ns: u64, to_unix_ns: u64 },
}

/// A handle on an open store. Cheap to clone; all clones share the same database.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    db: ManuallyDrop<sled::Db>,
    runs: ManuallyDrop<sled::Tree>,
    /// Set once a write failed for lack of space; see the `Drop` impl.
    out_of_space: AtomicBool,
    retention: Retention,
    /// Serializes writers: the running totals are read, updated and written back.
    writer: Mutex<()>,
    /// Held exclusively while a batch is applied and shared by multi-record readers, so a
    /// reader sees a run wholly or not at all (sled batches are crash-atomic, but concurrent
    /// readers could otherwise see part of one).
    visibility: RwLock<()>,
    /// The sample dictionaries, loaded on first use (see [`samples`]). Lock order:
    /// `visibility` before `dict`.
    dict: RwLock<samples::dict::Dict>,
}

/// The records of one run, ready to be written.
struct Records {
    meta: RunMeta,
    writes: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Store {
    /// Opens (creating if needed) the store in `dir`.
    ///
    /// Fails with an error naming `dir` when it cannot be created, is not a directory, cannot
    /// be written, the disk is full, or it holds a store of an unknown schema version.
    pub fn open(dir: &Path, retention: Retention) -> Result<Store, StoreError> {
        let path = dir.to_path_buf();
        if dir.exists() && !dir.is_dir() {
            return Err(StoreError::CreateDir {
                source: io::Error::new(io::ErrorKind::NotADirectory, "it exists and is not a directory"),
                path,
            });
        }
        std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir { path: path.clone(), source })?;
        let open_err = |source: sled::Error| match classify(&source) {
            Fault::NoSpace => StoreError::NoSpace { path: path.clone(), op: "open".into(), source },
            Fault::Locked => StoreError::Locked { path: path.clone() },
            Fault::Other => StoreError::Open { path: path.clone(), source },
        };
        let db = sled::Config::new()
            .path(dir)
            .mode(sled::Mode::LowSpace)
            // Every put flushes before it returns; sled's own timer would only add wakeups.
            .flush_every_ms(None)
            .open()
            .map_err(open_err)?;
        let trees = (|| {
            let runs = db.open_tree("runs").map_err(open_err)?;
            let meta = db.open_tree("meta").map_err(open_err)?;
            match meta.get(SCHEMA_KEY).map_err(open_err)? {
                None => {
                    meta.insert(SCHEMA_KEY, &SCHEMA_VERSION.to_be_bytes()).map_err(open_err)?;
                    db.flush().map_err(open_err)?;
                }
                Some(v) => {
                    let found = <[u8; 4]>::try_from(v.as_ref()).ok().map(u32::from_be_bytes);
                    if found != Some(SCHEMA_VERSION) {
                        return Err(StoreError::UnknownSchema {
                            found: match found {
                                Some(n) => n.to_string(),
                                None => format!("{:?} (unreadable)", v.as_ref()),
                            },
                            path: path.clone(),
                            supported: SCHEMA_VERSION,
                        });
                    }
                }
            }
            Ok(runs)
        })();
        let runs = match trees {
            Ok(runs) => runs,
            Err(e) => {
                if matches!(e, StoreError::NoSpace { .. }) {
                    std::mem::forget(db); // see `Inner::drop`
                }
                return Err(e);
            }
        };
        Ok(Store {
            inner: Arc::new(Inner {
                path,
                db: ManuallyDrop::new(db),
                runs: ManuallyDrop::new(runs),
                retention,
                writer: Mutex::new(()),
                visibility: RwLock::new(()),
                dict: RwLock::new(Default::default()),
                out_of_space: AtomicBool::new(false),
            }),
        })
    }

    /// The directory this store lives in.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The retention policy given at open.
    pub fn retention(&self) -> &Retention {
        &self.inner.retention
    }

    /// Validates and stores a run atomically, flushes it to disk, then applies retention
    /// (which never deletes the run just written).
    ///
    /// Errors: [`StoreError::InvalidRun`] or [`StoreError::TooLarge`] with nothing written.
    /// A storage error raised by the retention pass comes after the run was durably stored.
    pub fn put_run(&self, run: NewRun, now_unix_ns: u64) -> Result<RunMeta, StoreError> {
        validate(&run)?;
        let _w = self.inner.lock_writer();
        let id = RunId(self.inner.db.generate_id().map_err(|e| self.inner.storage("allocate a run id", e))?);
        let records = build_records(run, id);
        let bytes = records.meta.stored_bytes;
        let max_bytes = self.inner.retention.max_bytes;
        if bytes > max_bytes {
            return Err(StoreError::TooLarge { bytes, max_bytes });
        }
        let mut totals = self.inner.totals()?;
        totals.runs += 1;
        totals.stored_bytes += bytes;
        let mut batch = sled::Batch::default();
        for (k, v) in records.writes {
            batch.insert(k, v);
        }
        batch.insert(keys::STATS, &totals.encode());
        self.inner.apply(batch, &format!("write run {id}"))?;
        self.inner.flush(&format!("flush run {id}"))?;
        let report = self.inner.enforce_retention(now_unix_ns, Some(retention::Protect::Run(id)))?;
        if report.deleted_runs > 0 || report.deleted_sample_batches > 0 {
            self.inner.flush("flush retention deletes")?;
        }
        Ok(records.meta)
    }

    /// Metadata of the runs whose start lies in `range`, in start-time order (then id),
    /// optionally only those with this sampling interval and/or on this interface.
    /// Reads only the metadata records, never the columns.
    pub fn runs(
        &self,
        range: TimeRange,
        interval_ns: Option<u64>,
        iface: Option<&str>,
    ) -> Result<Vec<RunMeta>, StoreError> {
        let TimeRange { from_unix_ns, to_unix_ns } = range;
        if from_unix_ns > to_unix_ns {
            return Err(StoreError::BadRange { from_unix_ns, to_unix_ns });
        }
        let mut out = Vec::new();
        if from_unix_ns == to_unix_ns {
            return Ok(out);
        }
        let lo = keys::meta_bound(from_unix_ns);
        let hi = keys::meta_bound(to_unix_ns);
        for item in self.inner.runs.range(lo..hi) {
            let (k, v) = item.map_err(|e| self.inner.storage("list runs", e))?;
            let meta = self.inner.decode_meta_record(&k, &v)?;
            if interval_ns.is_some_and(|i| i != meta.interval_ns) {
                continue;
            }
            if iface.is_some_and(|i| i != meta.iface) {
                continue;
            }
            out.push(meta);
        }
        Ok(out)
    }

    /// Metadata of one run, or `None` if there is no such run.
    pub fn run_meta(&self, id: RunId) -> Result<Option<RunMeta>, StoreError> {
        let _r = self.inner.visibility.read().unwrap_or_else(|e| e.into_inner());
        self.inner.meta_by_id(id)
    }

    /// A whole run, or `None` if there is no such run.
    pub fn run(&self, id: RunId) -> Result<Option<Run>, StoreError> {
        let inner = &self.inner;
        let (meta, rows, counts) = {
            let _r = inner.visibility.read().unwrap_or_else(|e| e.into_inner());
            let Some(meta) = inner.meta_by_id(id)? else {
                return Ok(None);
            };
            let prefix = keys::cpu_prefix(meta.start_unix_ns, id);
            let rows = inner
                .runs
                .scan_prefix(prefix)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| inner.storage(&format!("read run {id}"), e))?;
            let counts = inner
                .runs
                .get(keys::conn_counts_key(meta.start_unix_ns, id))
                .map_err(|e| inner.storage(&format!("read run {id}"), e))?;
            (meta, rows, counts)
        };
        let mut per_cpu = Vec::with_capacity(rows.len());
        for (k, v) in rows {
            let cpu = keys::parse_cpu_key(&k)
                .ok_or_else(|| inner.corrupt(format!("run {id} column key"), format!("{k:?}")))?;
            let cols = codec::decode_cpu(cpu, &v, meta.samples)
                .map_err(|d| inner.corrupt(format!("run {id} cpu {cpu} row"), d))?;
            per_cpu.push(cols);
        }
        let cpus: Vec<u32> = per_cpu.iter().map(|c| c.cpu).collect();
        if cpus != meta.cpus {
            return Err(inner.corrupt(
                format!("run {id}"),
                format!("metadata lists cpus {:?} but rows exist for {cpus:?}", meta.cpus),
            ));
        }
        let conn_counts = counts
            .map(|v| codec::decode_conn_counts(&v, meta.samples))
            .transpose()
            .map_err(|d| inner.corrupt(format!("run {id} connection counts"), d))?;
        Ok(Some(Run { meta, per_cpu, conn_counts }))
    }

    /// Deletes a run and all its records in one atomic batch. `false` if it did not exist.
    pub fn delete_run(&self, id: RunId) -> Result<bool, StoreError> {
        let _w = self.inner.lock_writer();
        let Some(meta) = self.inner.meta_by_id(id)? else {
            return Ok(false);
        };
        self.inner.delete_locked(&meta)?;
        self.inner.flush(&format!("flush delete of run {id}"))?;
        Ok(true)
    }

    /// Deletes runs and sample batches that started before `now - max_age`, then the oldest
    /// of either until the stored bytes (runs, samples and their dictionary) fit the cap. Each
    /// run and each batch goes in one atomic batch.
    pub fn enforce_retention(&self, now_unix_ns: u64) -> Result<RetentionReport, StoreError> {
        let _w = self.inner.lock_writer();
        let report = self.inner.enforce_retention(now_unix_ns, None)?;
        if report.deleted_runs > 0 || report.deleted_sample_batches > 0 {
            self.inner.flush("flush retention deletes")?;
        }
        Ok(report)
    }

    /// Run and sample counts and byte totals, from the running counters (no scan).
    pub fn stats(&self) -> Result<StoreStats, StoreError> {
        let totals = self.inner.totals()?;
        let samples = self.inner.sample_totals()?;
        let disk_bytes = self.inner.db.size_on_disk().map_err(|e| self.inner.storage("measure disk usage", e))?;
        let sample_bytes = samples.batch_bytes + samples.dict_bytes;
        Ok(StoreStats {
            runs: totals.runs,
            stored_bytes: totals.stored_bytes,
            disk_bytes,
            sample_batches: samples.batches,
            samples: samples.samples,
            sample_bytes,
            total_bytes: totals.stored_bytes + sample_bytes,
        })
    }

    /// Per UTC day: how many runs of each interval started that day, their bytes, and the
    /// sample batches (by their first sample) with their samples and bytes. Reads metadata
    /// only. Days with neither runs nor samples are absent; days are in order.
    pub fn days(&self) -> Result<Vec<DaySummary>, StoreError> {
        let mut days: BTreeMap<u64, DaySummary> = BTreeMap::new();
        let day_of = |t: u64| t - t % NS_PER_DAY;
        fn entry(days: &mut BTreeMap<u64, DaySummary>, day: u64) -> &mut DaySummary {
            days.entry(day).or_insert_with(|| DaySummary {
                day_start_unix_ns: day,
                runs_by_interval: BTreeMap::new(),
                stored_bytes: 0,
                sample_batches: 0,
                samples: 0,
                sample_bytes: 0,
            })
        }
        for item in self.inner.runs.scan_prefix([keys::META]) {
            let (k, v) = item.map_err(|e| self.inner.storage("list days", e))?;
            let meta = self.inner.decode_meta_record(&k, &v)?;
            let d = entry(&mut days, day_of(meta.start_unix_ns));
            *d.runs_by_interval.entry(meta.interval_ns).or_default() += 1;
            d.stored_bytes += meta.stored_bytes;
        }
        self.inner.for_each_batch(0, u64::MAX, |start, _, row| {
            let d = entry(&mut days, day_of(start));
            d.sample_batches += 1;
            d.samples += row.samples;
            d.sample_bytes += row.stored_bytes;
            Ok(())
        })?;
        Ok(days.into_values().collect())
    }

    /// Writes everything buffered to disk.
    pub fn flush(&self) -> Result<(), StoreError> {
        self.inner.flush("flush")
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.inner.path)
            .field("retention", &self.inner.retention)
            .finish_non_exhaustive()
    }
}

enum Fault {
    NoSpace,
    Locked,
    Other,
}

fn classify(e: &sled::Error) -> Fault {
    match e {
        sled::Error::Io(io) if io.raw_os_error() == Some(ENOSPC) => Fault::NoSpace,
        sled::Error::Io(io) if io.kind() == io::ErrorKind::StorageFull => Fault::NoSpace,
        // sled's only word for "another process holds the file lock" is this message.
        sled::Error::Io(io) if io.to_string().contains("could not acquire lock") => Fault::Locked,
        _ => Fault::Other,
    }
}

/// ENOSPC on Linux. sled sometimes re-wraps the OS error, keeping only its kind (matched too).
const ENOSPC: i32 = 28;

impl Drop for Inner {
    /// sled flushes when its last handle drops, and after a write failed with ENOSPC that flush
    /// can wait forever for a segment that never becomes stable. Everything a `put_run`
    /// returned for is already durable, so such a handle gets two seconds to close on a helper
    /// thread and is otherwise left behind (with its file lock), so the process can still exit.
    fn drop(&mut self) {
        // SAFETY: taken exactly once, here; the fields are never used again.
        let (runs, db) = unsafe { (ManuallyDrop::take(&mut self.runs), ManuallyDrop::take(&mut self.db)) };
        if !self.out_of_space.load(Ordering::Relaxed) {
            drop(runs);
            drop(db);
            return;
        }
        let (done, closed) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            drop(runs);
            drop(db);
            let _ = done.send(());
        });
        let _ = closed.recv_timeout(std::time::Duration::from_secs(2));
    }
}

impl Inner {
    fn lock_writer(&self) -> MutexGuard<'_, ()> {
        // A panicking writer leaves nothing half-done in sled (batches are atomic), so a
        // poisoned lock is safe to reuse.
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn storage(&self, op: &str, source: sled::Error) -> StoreError {
        let path = self.path.clone();
        let op = op.to_string();
        match classify(&source) {
            Fault::NoSpace => {
                self.out_of_space.store(true, Ordering::Relaxed);
                StoreError::NoSpace { path, op, source }
            }
            Fault::Locked | Fault::Other => StoreError::Storage { path, op, source },
        }
    }

    fn corrupt(&self, record: String, detail: String) -> StoreError {
        StoreError::Corrupt { path: self.path.clone(), record, detail }
    }

    fn apply(&self, batch: sled::Batch, op: &str) -> Result<(), StoreError> {
        let _v = self.visibility.write().unwrap_or_else(|e| e.into_inner());
        self.runs.apply_batch(batch).map_err(|e| self.storage(op, e))
    }

    fn flush(&self, op: &str) -> Result<(), StoreError> {
        self.db.flush().map(drop).map_err(|e| self.storage(op, e))
    }

    fn totals(&self) -> Result<Totals, StoreError> {
        match self.runs.get(keys::STATS).map_err(|e| self.storage("read totals", e))? {
            None => Ok(Totals::default()),
            Some(v) => {
                Totals::decode(&v).ok_or_else(|| self.corrupt("totals record".into(), format!("{} bytes", v.len())))
            }
        }
    }

    fn decode_meta_record(&self, key: &[u8], value: &[u8]) -> Result<RunMeta, StoreError> {
        let (start, id) =
            keys::parse_meta_key(key).ok_or_else(|| self.corrupt("metadata key".into(), format!("{key:?}")))?;
        let meta = codec::decode_meta(value).map_err(|d| self.corrupt(format!("run {id} metadata"), d))?;
        if meta.id != id || meta.start_unix_ns != start {
            return Err(self.corrupt(
                format!("run {id} metadata"),
                format!("key says run {id} at {start}, value says run {} at {}", meta.id, meta.start_unix_ns),
            ));
        }
        Ok(meta)
    }

    fn meta_by_id(&self, id: RunId) -> Result<Option<RunMeta>, StoreError> {
        let op = format!("look up run {id}");
        let Some(start) = self.runs.get(keys::index_key(id)).map_err(|e| self.storage(&op, e))? else {
            return Ok(None);
        };
        let start =
            keys::decode_u64(&start).ok_or_else(|| self.corrupt(format!("run {id} index"), format!("{start:?}")))?;
        let key = keys::meta_key(start, id);
        match self.runs.get(key).map_err(|e| self.storage(&op, e))? {
            None => Err(self.corrupt(format!("run {id}"), "indexed but has no metadata".into())),
            Some(v) => self.decode_meta_record(&key, &v).map(Some),
        }
    }

    /// Deletes every record of the run in one batch, with the totals. Caller holds the writer.
    fn delete_locked(&self, meta: &RunMeta) -> Result<u64, StoreError> {
        let (start, id) = (meta.start_unix_ns, meta.id);
        let op = format!("delete run {id}");
        let mut batch = sled::Batch::default();
        // Remove whatever rows exist under the run's prefix (not only `meta.cpus`), so a
        // delete always leaves nothing behind.
        for k in self.runs.scan_prefix(keys::cpu_prefix(start, id)).keys() {
            batch.remove(k.map_err(|e| self.storage(&op, e))?);
        }
        batch.remove(&keys::conn_counts_key(start, id));
        batch.remove(&keys::index_key(id));
        batch.remove(&keys::meta_key(start, id));
        let mut totals = self.totals()?;
        totals.runs = totals.runs.saturating_sub(1);
        totals.stored_bytes = totals.stored_bytes.saturating_sub(meta.stored_bytes);
        batch.insert(keys::STATS, &totals.encode());
        self.apply(batch, &op)?;
        Ok(meta.stored_bytes)
    }
}

/// Checks a run before anything is written.
fn validate(run: &NewRun) -> Result<(), StoreError> {
    let what = format!("run on {:?} starting at {}", run.iface, run.start_unix_ns);
    let bad = |msg: String| Err(StoreError::InvalidRun(format!("{what}: {msg}")));
    if run.samples == 0 {
        return bad("samples is 0".into());
    }
    if run.interval_ns == 0 {
        return bad("interval_ns is 0".into());
    }
    if run.per_cpu.is_empty() {
        return bad("no per-CPU columns".into());
    }
    let n = run.samples as usize;
    let mut seen = std::collections::BTreeSet::new();
    for cols in &run.per_cpu {
        let cpu = cols.cpu;
        if !seen.insert(cpu) {
            return bad(format!("cpu {cpu} appears twice"));
        }
        let named = Counter::ALL
            .iter()
            .map(|c| (c.name(), cols.counters[c.index()].len()))
            .chain([("in_conns", cols.in_conns.len()), ("out_conns", cols.out_conns.len())]);
        for (name, len) in named {
            if len != n {
                return bad(format!("cpu {cpu} column {name} has {len} entries, expected samples = {n}"));
            }
        }
    }
    if let Some(c) = &run.conn_counts {
        for (name, len) in [("in_conns", c.in_conns.len()), ("out_conns", c.out_conns.len())] {
            if len != n {
                return bad(format!("conn_counts {name} has {len} entries, expected samples = {n}"));
            }
        }
    }
    Ok(())
}

/// Encodes every record of a run and computes its `stored_bytes`.
fn build_records(mut run: NewRun, id: RunId) -> Records {
    run.per_cpu.sort_by_key(|c| c.cpu);
    let start = run.start_unix_ns;
    let mut writes: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(run.per_cpu.len() + 3);
    for cols in &run.per_cpu {
        writes.push((keys::cpu_key(start, id, cols.cpu).to_vec(), codec::encode_cpu(cols)));
    }
    if let Some(c) = &run.conn_counts {
        writes.push((keys::conn_counts_key(start, id).to_vec(), codec::encode_conn_counts(c)));
    }
    writes.push((keys::index_key(id).to_vec(), start.to_be_bytes().to_vec()));
    let others: u64 = writes.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum();

    let mut meta = RunMeta {
        id,
        iface: run.iface,
        host: run.host,
        rack: run.rack,
        start_unix_ns: start,
        interval_ns: run.interval_ns,
        samples: run.samples,
        cpus: run.per_cpu.iter().map(|c| c.cpu).collect(),
        local_prefixes: run.local_prefixes,
        source: run.source,
        stored_bytes: 0,
    };
    let meta_key = keys::meta_key(start, id);
    // stored_bytes counts the meta record, whose size depends on stored_bytes: iterate to the
    // fixed point. The encoded size only grows with the value, so this climbs and stops
    // within a few rounds.
    let mut guess = others + meta_key.len() as u64;
    let meta_value = loop {
        meta.stored_bytes = guess;
        let v = codec::encode_meta(&meta);
        let total = others + (meta_key.len() + v.len()) as u64;
        if total == guess {
            break v;
        }
        guess = total;
    };
    writes.push((meta_key.to_vec(), meta_value));
    Records { meta, writes }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idle_run(samples: u32, cpus: u32) -> NewRun {
        NewRun {
            iface: "eth0".into(),
            host: "host-a1.example".into(),
            rack: Some("rack-17".into()),
            start_unix_ns: 1_700_000_000_000_000_000,
            interval_ns: 100_000,
            samples,
            local_prefixes: vec!["10.0.0.0/8".into(), "2001:db8::/32".into()],
            source: RunSource::Agent,
            per_cpu: (0..cpus).map(|c| CpuColumns::zeroed(c, samples)).collect(),
            conn_counts: None,
        }
    }

    #[test]
    fn idle_run_is_under_600_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), Retention::default()).unwrap();
        let meta = store.put_run(idle_run(2000, 2), 0).unwrap();
        assert!(meta.stored_bytes < 600, "idle run takes {} bytes", meta.stored_bytes);
        assert_eq!(store.stats().unwrap().stored_bytes, meta.stored_bytes);
    }

    #[test]
    fn stored_bytes_counts_every_record_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), Retention::default()).unwrap();
        let mut run = idle_run(50, 3);
        run.per_cpu[1].counters[0][7] = 1 << 40;
        run.conn_counts = Some(ConnCounts { in_conns: vec![3; 50], out_conns: vec![0; 50] });
        let meta = store.put_run(run, 0).unwrap();
        let actual: u64 = store
            .inner
            .runs
            .iter()
            .map(|kv| kv.unwrap())
            .filter(|(k, _)| k.as_ref() != keys::STATS)
            .map(|(k, v)| (k.len() + v.len()) as u64)
            .sum();
        assert_eq!(meta.stored_bytes, actual);
    }

    #[test]
    fn store_is_send_sync_clone() {
        fn check<T: Send + Sync + Clone + 'static>() {}
        check::<Store>();
    }
}
