//! Unwind tables in the kernel: for each sampled process, which binary each executable mapping
//! holds and where that binary's rows are, so the stack sampler can walk stacks of code built
//! without frame pointers (`loupe-unwind` builds the rows; the kernel side is
//! `bpf/ebpf/src/stacks/unwind.rs`).
//!
//! Memory is bounded up front: the rows of every loaded binary share one array of a size fixed
//! at load ([`DEFAULT_TABLE_ROWS`], 8 bytes a row), and so do their pages. A binary's rows are
//! written straight into the array's memory (its pages mapped into this process for the
//! write), its table parsed once per host (kept on disk by build ID). A binary stays loaded
//! while a known process maps it; after that it stays until its room is needed, least recently
//! used first; a binary that does not fit even then gets no table, and a stack reaching it ends
//! there as "no room for unwind table".
//!
//! Processes are loaded as the kernel asks for them, by a thread of their own: a process the
//! kernel has no mappings for is walked by the kernel's frame-pointer walker for that sample,
//! and its PID sent on a small ring buffer the loader waits on, so its next samples are whole
//! (within milliseconds: a table is parsed in ~30 ms for python3 and its libraries, and read
//! from disk after that); a PC outside every known mapping (a library opened since, an exec)
//! has the process's mappings read again. The loader does not wait for the sample reader,
//! which may be busy naming frames.
//!
//! A process is also asked for as it starts a new program (a raw tracepoint on
//! `sched_process_exec`, [`ask_at_exec`]), and read [`EXEC_SETTLE`] later, once the dynamic
//! loader has mapped its libraries. Without it, a process's first sample was always the
//! frame-pointer walk's: with a process started every 50 ms and living 1 s, none of 237 such
//! processes' samples was whole (`cargo bench -p loupe-query-host --bench agent_churn`).

use std::{
    collections::{HashMap as StdHashMap, VecDeque},
    os::{
        fd::{AsFd, AsRawFd},
        unix::fs::MetadataExt,
    },
    path::PathBuf,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use aya::{
    Ebpf,
    maps::{
        Map, MapData,
        lpm_trie::{Key, LpmTrie},
    },
};
use loupe_bpf_common::unwind::{
    EXEC_TRACEPOINT, MAX_MAPPINGS, Mapping, MappingKey, PROG_EXEC, PageInfo, ROWS_NO_ROOM, UnwindRow, WANTED_AT_EXEC,
    WANTED_PY_THREADS, mapping_key,
};
use loupe_unwind::{Binary, Paged, cache};

use crate::{SamplerError, python::Pythons};

/// Rows the shared array holds unless asked otherwise: 16 MiB, the tables of ~60 MiB of
/// executable code (160–280 KiB of rows per MiB of `.text` measured on Debian's binaries).
pub const DEFAULT_TABLE_ROWS: u32 = 2 << 20;
/// Pages of 64 KiB the shared page array holds: 8 GiB of code address space, 1 MiB.
pub const TABLE_PAGES: u32 = 1 << 17;
/// Binaries larger than this get no table (a parse reads only the call-frame sections, but
/// those grow with the code).
const MAX_BINARY_BYTES: u64 = 1 << 30;
/// `/proc/PID/maps` read at most this far (a process with more mappings keeps the first).
const MAX_MAPS_BYTES: u64 = 8 << 20;
/// A process's mappings are read again at most this often when the kernel flags an unknown PC
/// (an exec: `perf record -- python3` is sampled as `perf` first, then runs python's code in
/// mappings read before it existed). Reading them costs ~0.25 ms once the tables are loaded.
const REFRESH_EVERY: Duration = Duration::from_millis(200);

/// How long a process that could not be loaded is left alone.
const RETRY_REFUSED_AFTER: Duration = Duration::from_secs(30);

/// How long after an exec a process's mappings are read: the dynamic loader maps the libraries
/// in the program's first milliseconds. A library opened later is found as before (a PC in no
/// known mapping has the mappings read again).
pub const EXEC_SETTLE: Duration = Duration::from_millis(20);

/// Processes waiting for their [`EXEC_SETTLE`] at most: beyond (an exec storm), a process is
/// loaded at its first sample as before.
const MAX_WAITING_EXECS: usize = 4096;

/// Loads and attaches the program that asks for a process's tables as it execs
/// ([`PROG_EXEC`]).
pub(crate) fn ask_at_exec(ebpf: &mut Ebpf) -> Result<(), SamplerError> {
    crate::attach_raw_tracepoint(ebpf, PROG_EXEC, EXEC_TRACEPOINT, "attach to sched_process_exec")
}

/// What the unwinder holds and has done, for logs and benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UnwindStats {
    /// Processes whose mappings are in the kernel.
    pub processes: usize,
    /// Binaries whose rows are in the kernel.
    pub tables: usize,
    /// Bytes of executable code (the binaries' executable segments) the loaded tables describe.
    pub code_bytes: u64,
    /// Rows in use, and the array's room.
    pub rows: u64,
    pub rows_capacity: u64,
    /// Tables parsed from a binary, and read from the disk cache.
    pub parsed: u64,
    pub from_cache: u64,
    /// Binaries that got no table (no call-frame information, unreadable, or no room).
    pub without_table: u64,
    /// Tables dropped to make room.
    pub evicted: u64,
    /// Times a process's mappings were read (a first load or a refresh).
    pub mappings_read: u64,
}

/// An mmapable array map, written in place: each write maps the pages it covers, copies, and
/// unmaps them. The kernel maps a BPF array's pages into a process all at once
/// (`remap_vmalloc_range`), so keeping the whole row array mapped put its 16 MiB
/// ([`DEFAULT_TABLE_ROWS`]) and the page array's 1 MiB into the agent's RSS from the first
/// moment: 17 of the 46 MB an idle agent held. The memory is the kernel's either way (the
/// maps' `memlock`); mapped per write, the agent holds none of it between writes.
struct Mapped<T> {
    map: MapData,
    name: &'static str,
    entries: usize,
    _rows: std::marker::PhantomData<T>,
}

impl<T: Copy> Mapped<T> {
    fn new(map: Map, name: &'static str) -> Result<Self, SamplerError> {
        let Map::Array(map) = map else {
            return Err(SamplerError::Load(format!("map {name} is not an array")));
        };
        let info = map.info().map_err(|e| SamplerError::Load(format!("map {name}: {e}")))?;
        if info.value_size() as usize != size_of::<T>() || size_of::<T>() % 8 != 0 {
            // The kernel lays an array's values out 8-byte aligned: only then is value `i` at
            // byte `i × size_of::<T>()` of the mapping.
            return Err(SamplerError::Load(format!("map {name}: values of {} bytes", info.value_size())));
        }
        Ok(Mapped { map, name, entries: info.max_entries() as usize, _rows: std::marker::PhantomData })
    }

    fn write(&mut self, at: u32, values: &[T]) -> Result<(), SamplerError> {
        let at = at as usize;
        assert!(at + values.len() <= self.entries, "a range the allocator handed out");
        if values.is_empty() {
            return Ok(());
        }
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let (from, to) = (at * size_of::<T>(), (at + values.len()) * size_of::<T>());
        let first = from / page * page;
        let bytes = to.next_multiple_of(page) - first;
        // SAFETY: a shared mapping of the array's fd over whole pages inside the array (the
        // range is within `entries`, checked above; the kernel checks it too), checked for
        // failure and unmapped below before anything else uses it.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                self.map.fd().as_fd().as_raw_fd(),
                first as libc::off_t,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(SamplerError::io(format!("mapping {}", self.name), std::io::Error::last_os_error()));
        }
        // SAFETY: `from - first + values.len() × size_of::<T>()` ≤ `bytes`: within the mapping;
        // T is plain data the kernel reads. Then the region mapped above, not used after this.
        unsafe {
            std::ptr::copy_nonoverlapping(
                values.as_ptr(),
                ptr.cast::<u8>().add(from - first).cast::<T>(),
                values.len(),
            );
            libc::munmap(ptr, bytes);
        }
        Ok(())
    }
}

/// Free ranges of one array, first fit, merged when freed.
#[derive(Debug)]
struct Space {
    free: Vec<(u32, u32)>,
}

impl Space {
    fn new(len: u32) -> Space {
        Space { free: vec![(0, len)] }
    }

    fn take(&mut self, len: u32) -> Option<u32> {
        if len == 0 {
            return Some(0);
        }
        let i = self.free.iter().position(|&(_, n)| n >= len)?;
        let (start, n) = self.free[i];
        if n == len {
            self.free.remove(i);
        } else {
            self.free[i] = (start + len, n - len);
        }
        Some(start)
    }

    fn give(&mut self, start: u32, len: u32) {
        if len == 0 {
            return;
        }
        let i = self.free.partition_point(|&(s, _)| s < start);
        self.free.insert(i, (start, len));
        if i + 1 < self.free.len() && self.free[i].0 + self.free[i].1 == self.free[i + 1].0 {
            self.free[i].1 += self.free[i + 1].1;
            self.free.remove(i + 1);
        }
        if i > 0 && self.free[i - 1].0 + self.free[i - 1].1 == self.free[i].0 {
            self.free[i - 1].1 += self.free[i].1;
            self.free.remove(i);
        }
    }
}

/// A binary known to the unwinder.
#[derive(Debug)]
struct Loaded {
    binary: Binary,
    /// Where its rows and pages are; `pages.1 == 0`: no table.
    rows: (u32, u32),
    pages: (u32, u32),
    first_page: u32,
    /// It has call-frame information but found no room (`pages.1 == 0`).
    no_room: bool,
    /// Known processes mapping it.
    users: u32,
    last_used: u64,
}

struct Known {
    tables: Vec<String>,
    /// Its trie keys: (prefix bits, key data).
    keys: Vec<(u32, MappingKey)>,
    read: Instant,
}

impl Loaded {
    fn code_bytes(&self) -> u64 {
        self.binary.segments.iter().filter(|s| s.executable).map(|s| s.file_size).sum()
    }
}

/// A file as `stat` names it: the same file is not read twice.
type FileId = (u64, u64, u64, i64);

/// The kernel's unwind tables and the processes they serve.
pub struct Unwinder {
    rows: Mapped<UnwindRow>,
    pages: Mapped<PageInfo>,
    mappings: LpmTrie<MapData, MappingKey, Mapping>,
    row_space: Space,
    page_space: Space,
    /// By build ID (hex), or by file identity for a binary without one.
    tables: StdHashMap<String, Loaded>,
    files: StdHashMap<FileId, String>,
    /// Known processes: the tables they use, their trie keys, and when their mappings were read.
    known: StdHashMap<u32, Known>,
    cache_dir: Option<PathBuf>,
    clock: u64,
    stats: UnwindStats,
    /// Told of each process loaded and forgotten: its CPython, if it runs one.
    pythons: Option<Arc<Mutex<Pythons>>>,
}

impl std::fmt::Debug for Unwinder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unwinder").field("stats", &self.stats()).finish()
    }
}

impl Unwinder {
    /// Takes the three unwind maps (the row and page arrays mapped into this process).
    pub(crate) fn new(rows: Map, pages: Map, mappings: Map, cache_dir: Option<PathBuf>) -> Result<Self, SamplerError> {
        let rows = Mapped::<UnwindRow>::new(rows, "UNWIND_ROWS")?;
        let pages = Mapped::<PageInfo>::new(pages, "UNWIND_PAGES")?;
        let mappings =
            LpmTrie::try_from(mappings).map_err(|e| SamplerError::Load(format!("map UNWIND_MAPPINGS: {e}")))?;
        let (row_space, page_space) = (Space::new(rows.entries as u32), Space::new(pages.entries as u32));
        let stats = UnwindStats { rows_capacity: rows.entries as u64, ..Default::default() };
        Ok(Unwinder {
            rows,
            pages,
            mappings,
            row_space,
            page_space,
            tables: StdHashMap::new(),
            files: StdHashMap::new(),
            known: StdHashMap::new(),
            cache_dir,
            clock: 0,
            stats,
            pythons: None,
        })
    }

    /// Processes loaded from now on are also looked at for CPython.
    pub(crate) fn find_pythons(&mut self, pythons: Arc<Mutex<Pythons>>) {
        self.pythons = Some(pythons);
    }

    pub fn stats(&self) -> UnwindStats {
        UnwindStats {
            processes: self.known.len(),
            tables: self.tables.values().filter(|t| t.pages.1 > 0).count(),
            ..self.stats
        }
    }

    /// Whether the process's mappings are loaded.
    pub fn knows(&self, pid: u32) -> bool {
        self.known.contains_key(&pid)
    }

    /// Reads the process's mappings again if they were read longer ago than [`REFRESH_EVERY`].
    pub fn refresh(&mut self, pid: u32) -> Result<(), SamplerError> {
        match self.known.get(&pid) {
            Some(known) if known.read.elapsed() < REFRESH_EVERY => Ok(()),
            _ => self.load_process(pid),
        }
    }

    /// Reads the process's executable mappings, loads the tables of the binaries they hold,
    /// and gives the kernel the process's mappings.
    pub fn load_process(&mut self, pid: u32) -> Result<(), SamplerError> {
        let maps = read_maps(pid)?;
        self.stats.mappings_read += 1;
        self.clock += 1;
        let mut tables = Vec::new();
        let mut entries = Vec::new();
        for line in maps.iter().take(MAX_MAPPINGS) {
            let mut mapping = Mapping { start: line.start, end: line.end, ..Default::default() };
            if (line.path.starts_with('/') || line.path == "[vdso]")
                && let Some(key) = self.table_for(pid, line)
                && let Some(table) = self.tables.get_mut(&key)
            {
                table.last_used = self.clock;
                // Counted as used at once: a later mapping's new table must not evict this one
                // to make room while this process's entries point at its rows.
                if !tables.contains(&key) {
                    table.users += 1;
                    tables.push(key.clone());
                }
                if let Some(bias) = table.binary.bias(line.start, line.offset)
                    && table.pages.1 > 0
                {
                    mapping.bias = bias;
                    mapping.rows_base = table.rows.0;
                    mapping.pages_base = table.pages.0;
                    mapping.first_page = table.first_page;
                    mapping.page_count = table.pages.1;
                } else if table.no_room {
                    mapping.rows_base = ROWS_NO_ROOM;
                }
            }
            entries.extend(
                prefixes(line.start, line.end).map(|(addr, bits)| ((32 + bits, mapping_key(pid, addr)), mapping)),
            );
        }
        // The PID alone: marks the process as known, and answers for addresses in no mapping.
        entries.push(((32, mapping_key(pid, 0)), Mapping::default()));
        // New entries first (replacing equal keys), then the old ones that are gone: the kernel
        // never sees the process without its mappings while they are read again.
        let before = self.known.remove(&pid);
        let mut keys = Vec::with_capacity(entries.len());
        for (key, mapping) in entries {
            if let Err(e) = self.mappings.insert(&Key::new(key.0, key.1), mapping, 0) {
                self.remove_keys(&keys);
                self.release(&tables);
                if let Some(before) = before {
                    self.remove_keys(&before.keys);
                    self.release(&before.tables);
                }
                return Err(SamplerError::Load(format!("unwind mappings of PID {pid}: {e}")));
            }
            keys.push(key);
        }
        if let Some(before) = before {
            let now: std::collections::HashSet<&(u32, MappingKey)> = keys.iter().collect();
            let stale: Vec<(u32, MappingKey)> = before.keys.iter().filter(|k| !now.contains(k)).copied().collect();
            self.remove_keys(&stale);
            self.release(&before.tables);
        }
        self.known.insert(pid, Known { tables, keys, read: Instant::now() });
        if let Some(pythons) = &self.pythons {
            let executables: Vec<_> = maps.iter().map(|m| (m.start, m.offset, m.path.as_str())).collect();
            pythons.lock().unwrap_or_else(|e| e.into_inner()).load(pid, &executables);
        }
        Ok(())
    }

    /// Forgets processes that have exited.
    pub fn forget_exited(&mut self) {
        let gone: Vec<u32> =
            self.known.keys().copied().filter(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists()).collect();
        for pid in gone {
            if let Some(known) = self.known.remove(&pid) {
                self.remove_keys(&known.keys);
                self.release(&known.tables);
            }
            if let Some(pythons) = &self.pythons {
                pythons.lock().unwrap_or_else(|e| e.into_inner()).forget(pid);
            }
        }
    }

    fn remove_keys(&mut self, keys: &[(u32, MappingKey)]) {
        for &(bits, data) in keys {
            let _ = self.mappings.remove(&Key::new(bits, data));
        }
    }

    fn release(&mut self, keys: &[String]) {
        for key in keys {
            let Some(table) = self.tables.get_mut(key) else { continue };
            table.users = table.users.saturating_sub(1);
            // A binary that got no table is tried again next time (there may be room then).
            if table.users == 0 && table.pages.1 == 0 {
                self.tables.remove(key);
                self.files.retain(|_, k| k != key);
            }
        }
    }

    /// The key of the table for the file `line` maps, loading it if it is new.
    fn table_for(&mut self, pid: u32, line: &MapLine) -> Option<String> {
        // The file as this process sees it (root, another mount namespace, deleted since); the
        // vDSO (the kernel's `clock_gettime` and friends, with its own `.eh_frame`) is one image
        // per boot, read from the process's memory.
        let file = PathBuf::from(format!("/proc/{pid}/map_files/{:x}-{:x}", line.start, line.end));
        let vdso = line.path == "[vdso]";
        let id: FileId = if vdso {
            (u64::MAX, u64::MAX, line.end - line.start, 0)
        } else {
            let meta = std::fs::metadata(&file).ok()?;
            (meta.dev(), meta.ino(), meta.size(), meta.mtime_nsec() + meta.mtime() * 1_000_000_000)
        };
        if let Some(key) = self.files.get(&id)
            && self.tables.contains_key(key)
        {
            return Some(key.clone());
        }
        if id.2 > MAX_BINARY_BYTES {
            return None;
        }
        let key = if vdso {
            self.load_binary(&read_memory(pid, line.start, line.end - line.start)?[..], id)
        } else {
            // Only the parts a parse asks for are read: the headers and build-ID note when the
            // table is cached, the call-frame sections when it is not; never the whole file.
            self.load_binary(&loupe_unwind::ReadCache::new(std::fs::File::open(&file).ok()?), id)
        }?;
        self.files.insert(id, key.clone());
        Some(key)
    }

    /// The key of `elf`'s table, loaded if it was not.
    fn load_binary<'data, R: object::ReadRef<'data>>(&mut self, elf: R, id: FileId) -> Option<String> {
        let binary = Binary::read(elf).ok()?;
        let key = binary.build_id_hex().unwrap_or_else(|| format!("file-{}-{}-{}-{}", id.0, id.1, id.2, id.3));
        if !self.tables.contains_key(&key) {
            let loaded = match self.paged(&key, elf, binary.build_id.is_some()) {
                Ok(paged) => self.place(binary, Some(paged)),
                Err(too_big) => {
                    let mut loaded = self.place(binary, None);
                    // Larger than the whole table memory: a stack reaching it says so.
                    loaded.no_room = too_big;
                    if too_big {
                        tracing::warn!(
                            key,
                            "an unwind table larger than the table memory (--unwind-memory-mib); stacks through it end there"
                        );
                    }
                    loaded
                }
            };
            self.tables.insert(key.clone(), loaded);
        }
        Some(key)
    }

    /// The binary's table: from the disk cache, else parsed (and cached). `Err(true)`: its
    /// table would not fit the whole table memory.
    fn paged<'data, R: object::ReadRef<'data>>(&mut self, key: &str, elf: R, cacheable: bool) -> Result<Paged, bool> {
        let dir = self.cache_dir.as_deref().filter(|_| cacheable);
        if let Some(paged) = dir.and_then(|d| cache::load(d, key)) {
            self.stats.from_cache += 1;
            return Ok(paged);
        }
        // No more rows parsed than the table memory holds (and its FDEs' end rows, a quarter
        // more at most in real binaries): a table that could never be placed is not held whole
        // first, and a hostile binary's parse is bounded by it too.
        let capacity = self.stats.rows_capacity as usize;
        let paged = match Paged::from_elf_bounded(elf, capacity + capacity / 4) {
            Ok(paged) => paged,
            Err(e) => {
                tracing::debug!(key, error = %e, "no unwind table");
                return Err(matches!(e, loupe_unwind::Error::TooManyRows(n) if n < loupe_unwind::cfi::MAX_ROWS));
            }
        };
        self.stats.parsed += 1;
        if let Some(dir) = dir
            && let Err(e) = cache::save(dir, key, &paged)
        {
            tracing::warn!(dir = %dir.display(), error = %e, "could not keep an unwind table on disk");
        }
        Ok(paged)
    }

    /// Finds room for a table (making room from unused tables if needed) and writes it.
    fn place(&mut self, binary: Binary, paged: Option<Paged>) -> Loaded {
        let mut loaded = Loaded {
            binary,
            rows: (0, 0),
            pages: (0, 0),
            first_page: 0,
            no_room: false,
            users: 0,
            last_used: self.clock,
        };
        let Some(paged) = paged.filter(|p| !p.pages.is_empty() && p.pages[0].0 <= u32::MAX as u64) else {
            self.stats.without_table += 1;
            return loaded;
        };
        let (rows, pages) = (paged.rows.len() as u32, paged.pages.len() as u32);
        let room = loop {
            match (self.row_space.take(rows), self.page_space.take(pages)) {
                (Some(r), Some(p)) => break Some((r, p)),
                (r, p) => {
                    if let Some(r) = r {
                        self.row_space.give(r, rows);
                    }
                    if let Some(p) = p {
                        self.page_space.give(p, pages);
                    }
                    if !self.evict_one() {
                        break None;
                    }
                }
            }
        };
        let Some((row_base, page_base)) = room else {
            self.stats.without_table += 1;
            loaded.no_room = true;
            tracing::warn!(rows, "no room for an unwind table (--unwind-memory-mib); stacks through it end there");
            return loaded;
        };
        let infos: Vec<PageInfo> = paged.pages.iter().map(|(_, info)| *info).collect();
        if let Err(e) = self.rows.write(row_base, &paged.rows).and_then(|()| self.pages.write(page_base, &infos)) {
            self.row_space.give(row_base, rows);
            self.page_space.give(page_base, pages);
            self.stats.without_table += 1;
            tracing::warn!("writing an unwind table: {e}; stacks through it end there");
            return loaded;
        }
        self.stats.rows += u64::from(rows);
        self.stats.code_bytes += loaded.code_bytes();
        loaded.rows = (row_base, rows);
        loaded.pages = (page_base, pages);
        loaded.first_page = paged.pages[0].0 as u32;
        loaded
    }

    /// Drops the least recently used table no known process maps; false if there is none.
    fn evict_one(&mut self) -> bool {
        let Some(key) = self
            .tables
            .iter()
            .filter(|(_, t)| t.users == 0 && t.pages.1 > 0)
            .min_by_key(|(_, t)| t.last_used)
            .map(|(k, _)| k.clone())
        else {
            return false;
        };
        let table = self.tables.remove(&key).expect("just found");
        self.files.retain(|_, k| *k != key);
        self.row_space.give(table.rows.0, table.rows.1);
        self.page_space.give(table.pages.0, table.pages.1);
        self.stats.rows -= u64::from(table.rows.1);
        self.stats.code_bytes -= table.code_bytes();
        self.stats.evicted += 1;
        true
    }
}

/// The aligned blocks covering `[start, end)`: (block start, significant address bits).
fn prefixes(mut start: u64, end: u64) -> impl Iterator<Item = (u64, u32)> {
    std::iter::from_fn(move || {
        if start >= end {
            return None;
        }
        // The largest block aligned at `start` that does not pass `end`.
        let mut size_bits = start.trailing_zeros().min(63);
        while (1u64 << size_bits) > end - start {
            size_bits -= 1;
        }
        let block = (start, 64 - size_bits);
        start += 1 << size_bits;
        Some(block)
    })
}

/// `len` bytes of a process's memory at `start` (the vDSO's image, at most 1 MiB).
fn read_memory(pid: u32, start: u64, len: u64) -> Option<Vec<u8>> {
    if len > 1 << 20 {
        return None;
    }
    let mut bytes = vec![0; len as usize];
    crate::python::process::Memory::open(pid)?.bytes(start, &mut bytes)?;
    Some(bytes)
}

/// Wakes the loader thread to stop it: an eventfd it polls beside the ring.
pub(crate) struct LoaderStop(std::os::fd::OwnedFd);

impl LoaderStop {
    pub(crate) fn new() -> Result<LoaderStop, SamplerError> {
        // SAFETY: eventfd creates a new descriptor, checked before it is owned.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(SamplerError::io("creating the loader's stop event", std::io::Error::last_os_error()));
        }
        // SAFETY: a new descriptor nothing else owns.
        Ok(LoaderStop(unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) }))
    }

    pub(crate) fn stop(&self) {
        let one = 1u64;
        // SAFETY: writes eight bytes from a local to the eventfd.
        unsafe { libc::write(self.0.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }
}

/// The loader thread: loads (or reads again) each process the kernel asks for, and every few
/// seconds forgets processes that exited, until `stop` is signalled. It sleeps in `poll` until
/// the kernel asks or a sweep is due: an idle host wakes it every [`SWEEP_EVERY`] (measured: a
/// 200-ms poll cost 0.03 % of a core on an idle host, for nothing).
pub(crate) fn load_as_asked(unwinder: &Mutex<Unwinder>, mut wanted: aya::maps::RingBuf<MapData>, stop: &LoaderStop) {
    let mut swept = Instant::now();
    // Processes that could not be loaded (gone already, or the trie full) are not tried again
    // for a while: the kernel keeps asking for them.
    let mut refused: StdHashMap<u32, Instant> = StdHashMap::new();
    // Processes that have just exec'd, in the order they did, each with when to read it.
    let mut settling: VecDeque<(Instant, u32)> = VecDeque::new();
    loop {
        let mut fds = [
            libc::pollfd { fd: wanted.as_fd().as_raw_fd(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: stop.0.as_raw_fd(), events: libc::POLLIN, revents: 0 },
        ];
        let wait = settling.front().map_or(SWEEP_EVERY, |(due, _)| due.saturating_duration_since(Instant::now()));
        // Rounded up: a process is never read before its time.
        let wait_ms = wait.min(SWEEP_EVERY).as_micros().div_ceil(1000) as i32;
        // SAFETY: two valid pollfds.
        unsafe { libc::poll(fds.as_mut_ptr(), 2, wait_ms) };
        if fds[1].revents != 0 {
            return;
        }
        let mut pids = Vec::new();
        let mut python_threads = Vec::new();
        while let Some(item) = wanted.next() {
            let Some(bytes) = item.get(..4) else { continue };
            let pid = u32::from_ne_bytes(bytes.try_into().expect("four bytes"));
            if pid & WANTED_PY_THREADS != 0 {
                python_threads.push(pid & !WANTED_PY_THREADS);
            } else if pid & WANTED_AT_EXEC == 0 {
                pids.push(pid);
            } else if settling.len() < MAX_WAITING_EXECS {
                settling.push_back((Instant::now() + EXEC_SETTLE, pid & !WANTED_AT_EXEC));
            }
        }
        let now = Instant::now();
        let mut execs = Vec::new();
        while let Some(&(due, pid)) = settling.front()
            && due <= now
        {
            settling.pop_front();
            execs.push(pid);
        }
        pids.sort_unstable();
        pids.dedup();
        python_threads.sort_unstable();
        python_threads.dedup();
        let mut unwinder = unwinder.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(pythons) = &unwinder.pythons {
            let mut pythons = pythons.lock().unwrap_or_else(|e| e.into_inner());
            for &pid in &python_threads {
                pythons.thread_unknown(pid);
            }
        }
        if pids.is_empty() && execs.is_empty() && swept.elapsed() < SWEEP_EVERY {
            continue;
        }
        let parsed = unwinder.stats.parsed;
        // A new program: whatever was read for the PID before (its old image, or a refusal) no
        // longer holds.
        for pid in execs {
            refused.remove(&pid);
            if let Err(e) = unwinder.load_process(pid) {
                tracing::debug!(pid, error = %e, "unwind tables not loaded at exec");
                refused.insert(pid, Instant::now());
            }
        }
        for pid in pids {
            if refused.get(&pid).is_some_and(|at| at.elapsed() < RETRY_REFUSED_AFTER) {
                continue;
            }
            let result = if unwinder.knows(pid) { unwinder.refresh(pid) } else { unwinder.load_process(pid) };
            if let Err(e) = result {
                tracing::debug!(pid, error = %e, "unwind tables not loaded");
                refused.insert(pid, Instant::now());
            }
        }
        if unwinder.stats.parsed > parsed {
            // A parse's rows (tens of MiB for a binary with 25 MiB of code) are freed by now;
            // glibc keeps freed heap mapped unless asked to give it back.
            // SAFETY: malloc_trim only releases free memory of the allocator's arenas.
            unsafe { libc::malloc_trim(0) };
        }
        if swept.elapsed() >= SWEEP_EVERY {
            unwinder.forget_exited();
            refused.retain(|_, at| at.elapsed() < RETRY_REFUSED_AFTER);
            swept = Instant::now();
        }
    }
}

/// How often exited processes are forgotten (their trie entries removed, their tables released).
const SWEEP_EVERY: Duration = Duration::from_secs(5);

/// One executable mapping from `/proc/PID/maps`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct MapLine {
    start: u64,
    end: u64,
    offset: u64,
    path: String,
}

fn read_maps(pid: u32) -> Result<Vec<MapLine>, SamplerError> {
    use std::io::Read;
    let path = format!("/proc/{pid}/maps");
    let mut text = String::new();
    std::fs::File::open(&path)
        .and_then(|f| f.take(MAX_MAPS_BYTES).read_to_string(&mut text))
        .map_err(|e| SamplerError::io(format!("reading {path}"), e))?;
    Ok(executable_mappings(&text))
}

/// The executable mappings of a `/proc/PID/maps` text, in address order.
fn executable_mappings(text: &str) -> Vec<MapLine> {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.splitn(6, ' ');
            let (range, perms, offset) = (fields.next()?, fields.next()?, fields.next()?);
            let (_dev, _inode) = (fields.next()?, fields.next()?);
            let path = fields.next().unwrap_or("").trim_start().to_string();
            if perms.as_bytes().get(2) != Some(&b'x') {
                return None;
            }
            let (start, end) = range.split_once('-')?;
            Some(MapLine {
                start: u64::from_str_radix(start, 16).ok()?,
                end: u64::from_str_radix(end, 16).ok()?,
                offset: u64::from_str_radix(offset, 16).ok()?,
                path,
            })
        })
        .filter(|m| m.start < m.end)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_ranges_are_reused_and_merged() {
        let mut space = Space::new(100);
        let a = space.take(30).unwrap();
        let b = space.take(30).unwrap();
        let c = space.take(30).unwrap();
        assert_eq!((a, b, c), (0, 30, 60));
        assert_eq!(space.take(20), None, "10 left");
        space.give(b, 30);
        assert_eq!(space.take(20), Some(30), "first fit");
        space.give(30, 20);
        space.give(a, 30);
        space.give(c, 30);
        assert_eq!(space.free, vec![(0, 100)], "everything merged back");
    }

    #[test]
    fn prefixes_cover_a_range_exactly() {
        for (start, end) in
            [(0x5583e2a04000u64, 0x5583e2a16000u64), (0x1000, 0x2000), (0x7f00_0000_1000, 0x7f00_0040_0000)]
        {
            let blocks: Vec<(u64, u32)> = prefixes(start, end).collect();
            let mut at = start;
            for &(block, bits) in &blocks {
                assert_eq!(block, at, "contiguous");
                let size = 1u64 << (64 - bits);
                assert_eq!(block % size, 0, "aligned");
                at += size;
            }
            assert_eq!(at, end, "exact");
            assert!(blocks.len() <= 2 * 64);
        }
        assert_eq!(prefixes(0x1000, 0x2000).collect::<Vec<_>>(), [(0x1000, 52)]);
    }

    #[test]
    fn only_executable_mappings_are_read_from_maps() {
        let text = "\
5583e2a00000-5583e2a04000 r--p 00000000 08:01 1234                       /usr/bin/dash
5583e2a04000-5583e2a16000 r-xp 00004000 08:01 1234                       /usr/bin/dash
7f0000000000-7f0000001000 rwxp 00000000 00:00 0 
7ffd5a1f2000-7ffd5a1f4000 r-xp 00000000 00:00 0                          [vdso]
garbage line
7f0000002000-7f0000001000 r-xp 00000000 00:00 0 /backwards
";
        let maps = executable_mappings(text);
        assert_eq!(maps.len(), 3);
        assert_eq!(
            maps[0],
            MapLine { start: 0x5583e2a04000, end: 0x5583e2a16000, offset: 0x4000, path: "/usr/bin/dash".into() }
        );
        assert_eq!(maps[1].path, "");
        assert_eq!(maps[2].path, "[vdso]");
    }
}
