//! On-host symbolization at ingest time, with blazesym: kernel frames from kallsyms, user frames
//! from the process's mappings and its binaries' ELF symbols (PIE and shared objects included,
//! through `/proc/PID/map_files`, so deleted or replaced binaries still resolve). Names are
//! demangled (Rust, C++). A frame that cannot be named is kept as `module+0xoffset` (the offset
//! in the file), or `[unknown]+0xaddress` when even the mapping is gone — never dropped.
//!
//! Why at ingest: a retained day must stay readable after its processes have exited, and the
//! address space that gives an address meaning exists only while the process lives.
//!
//! blazesym caches parsed binaries per file (device and inode: one parse per binary, shared by
//! every process that maps it) and, once asked, each process's memory map; on top of that each
//! `(pid, address)` is remembered. Answers and memory maps are forgotten every minute (PIDs are
//! reused, libraries loaded), the whole blazesym instance every 30 minutes (bounded memory).

use std::{
    collections::{HashMap, HashSet},
    path::Path,
    time::{Duration, Instant},
};

use blazesym::{
    Addr, MaybeDefault, Pid,
    normalize::{Normalizer, UserMeta},
    symbolize::{
        Input, Symbolized, Symbolizer as Blazesym, cache,
        source::{self, Source},
    },
};
use loupe_bpf::RawStack;
use loupe_store::{Frame, StackSample};

/// How long a `(pid, address)` → frame answer is reused (a PID may be reused, a library
/// re-mapped, but not many times a minute).
const MEMO_TTL: Duration = Duration::from_secs(60);
/// How long one blazesym instance is kept. It parses each binary once (its cache is keyed by
/// device and inode, so every process running `libc.so.6` shares one parse) but remembers every
/// `/proc/PID/map_files/…` path it was shown; starting afresh now and then bounds that memory
/// on hosts that run many short-lived processes, at the price of parsing binaries again.
const SYMBOLIZER_TTL: Duration = Duration::from_secs(30 * 60);

pub struct Symbolizer {
    blazesym: Blazesym,
    normalizer: Normalizer,
    kernel: Source<'static>,
    memo: HashMap<(u32, u64), Frame>,
    /// Processes whose memory map blazesym holds: reading `/proc/PID/maps` for every new
    /// address was most of the sampler's cost.
    vmas_cached: HashSet<u32>,
    memo_since: Instant,
    blazesym_since: Instant,
}

impl Default for Symbolizer {
    fn default() -> Self {
        Self::new()
    }
}

impl Symbolizer {
    pub fn new() -> Self {
        let kernel = source::Kernel {
            kallsyms: MaybeDefault::Default,
            // kallsyms names every kernel function; searching for a vmlinux image costs time
            // at start and rarely finds one on production hosts.
            vmlinux: MaybeDefault::None,
            ..Default::default()
        };
        Self {
            blazesym: Blazesym::new(),
            normalizer: Normalizer::new(),
            kernel: Source::Kernel(kernel),
            memo: HashMap::new(),
            vmas_cached: HashSet::new(),
            memo_since: Instant::now(),
            blazesym_since: Instant::now(),
        }
    }

    /// Names every frame of a raw sample: kernel frames (leaf first), then user frames.
    pub fn sample(&mut self, raw: &RawStack) -> StackSample {
        if self.memo_since.elapsed() > MEMO_TTL {
            // Forget answers and memory maps now and then: PIDs get reused, libraries loaded.
            self.memo.clear();
            self.vmas_cached.clear();
            self.memo_since = Instant::now();
        }
        if self.blazesym_since.elapsed() > SYMBOLIZER_TTL {
            self.blazesym = Blazesym::new();
            self.vmas_cached.clear();
            self.blazesym_since = Instant::now();
        }
        let mut frames = Vec::with_capacity(raw.kernel.len() + raw.user.len());
        frames.extend(self.frames(0, &raw.kernel, true));
        if !raw.user.is_empty() {
            frames.extend(self.frames(raw.pid, &raw.user, false));
        }
        StackSample {
            time_unix_ns: raw.time_unix_ns,
            cpu: raw.cpu,
            pid: raw.pid,
            tid: raw.tid,
            comm: raw.comm.clone(),
            cgroup_id: raw.cgroup_id,
            idle: raw.idle,
            frames,
        }
    }

    fn frames(&mut self, pid: u32, addrs: &[u64], kernel: bool) -> Vec<Frame> {
        let key = |a: u64| (if kernel { 0 } else { pid }, a);
        let missing: Vec<Addr> = addrs.iter().copied().filter(|a| !self.memo.contains_key(&key(*a))).collect();
        if !missing.is_empty() {
            let named = if kernel {
                self.blazesym.symbolize(&self.kernel, Input::AbsAddr(&missing))
            } else {
                if self.vmas_cached.insert(pid) {
                    let _ = self.blazesym.cache(&cache::Cache::Process(cache::Process::new(Pid::from(pid))));
                }
                let mut process = source::Process::new(Pid::from(pid));
                // ELF symbols name functions; DWARF (inlined frames, lines) would mean inflating
                // the compressed debug sections of every new binary: most of the sampler's cost.
                process.debug_syms = false;
                self.blazesym.symbolize(&Source::Process(process), Input::AbsAddr(&missing))
            };
            let named = named
                .unwrap_or_else(|_| vec![Symbolized::Unknown(blazesym::symbolize::Reason::Unsupported); missing.len()]);
            let mut unknown = Vec::new();
            for (addr, sym) in missing.iter().zip(named) {
                match sym {
                    Symbolized::Sym(sym) => {
                        let module = match (&sym.module, kernel) {
                            (_, true) => "[kernel]".to_string(),
                            (Some(m), false) => file_name(Path::new(m)),
                            (None, false) => String::new(),
                        };
                        self.memo.insert(key(*addr), Frame { function: sym.name.into_owned(), module, kernel });
                    }
                    Symbolized::Unknown(_) => unknown.push(*addr),
                }
            }
            for (addr, frame) in unknown.iter().zip(self.unnamed(pid, &unknown, kernel)) {
                self.memo.insert(key(*addr), frame);
            }
        }
        addrs.iter().map(|a| self.memo[&key(*a)].clone()).collect()
    }

    /// `module+0xoffset` for addresses without a symbol: the file and offset still tell an
    /// engineer (and `addr2line`) exactly where it was.
    fn unnamed(&self, pid: u32, addrs: &[u64], kernel: bool) -> Vec<Frame> {
        let fallback = |a: &u64| Frame {
            function: format!("[unknown]+{a:#x}"),
            module: if kernel { "[kernel]".into() } else { String::new() },
            kernel,
        };
        if kernel || addrs.is_empty() {
            return addrs.iter().map(fallback).collect();
        }
        let Ok(normalized) = self.normalizer.normalize_user_addrs(Pid::from(pid), addrs) else {
            return addrs.iter().map(fallback).collect();
        };
        addrs
            .iter()
            .zip(&normalized.outputs)
            .map(|(addr, (offset, meta))| match normalized.meta.get(*meta) {
                Some(UserMeta::Elf(elf)) => {
                    let module = file_name(&elf.path);
                    Frame { function: format!("{module}+{offset:#x}"), module, kernel: false }
                }
                _ => fallback(addr),
            })
            .collect()
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string())
}
