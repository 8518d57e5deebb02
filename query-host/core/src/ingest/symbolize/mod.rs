//! On-host symbolization at ingest time, with blazesym: kernel frames from kallsyms, user frames
//! from the process's mappings and its binaries' ELF symbols (PIE and shared objects included,
//! through `/proc/PID/map_files`, so deleted or replaced binaries still resolve), JIT-compiled
//! code from the process's perf map (`/tmp/perf-PID.map`). Names are demangled (Rust, C++).
//!
//! Where a name comes from, in order (`docs/stacks.md` has the whole story):
//! 1. the binary's own symbol table (`.symtab`, else the `.dynsym` a stripped library keeps);
//! 2. for code outside any file (JIT): the process's perf map, while the process lives, read by
//!    [`perf_map`] in perf's form and the JDK's;
//! 3. the binary's separate debug file (found by build ID or `.gnu_debuglink` under
//!    `/usr/lib/debug` and `--debug-dir`s, used only if its build ID matches: [`debug_files`]) —
//!    its symbol table, not its DWARF: libc's local functions such as `__strpbrk_sse42` are
//!    there, and reading DWARF would inflate megabytes of compressed sections per library;
//! 4. otherwise the frame is kept as `module+0xaddress` with the file's build ID and the
//!    address in the file's own address space ([`loupe_store::ObjectAddress`]), so
//!    [`later`] can name it once debug information appears — or `[unknown]+0xaddress` when
//!    even the mapping is gone. Never dropped.
//!
//! Inlined functions: where a binary carries DWARF — its own (built with `-g`, not stripped), or
//! its separate debug file's (found as in 3.) — an address inside code the compiler inlined
//! becomes the chain of inlined calls, innermost first, each named `function [inlined]`, above
//! the function they were inlined into: what the hot leaf of optimized code usually is. An
//! address its binary named from symbols alone (no DWARF of its own) is asked of its debug file
//! once, then remembered like any answer. Binaries with no DWARF anywhere are named from their
//! symbols as before. blazesym reads a file's DWARF once per file and lazily per compilation
//! unit, here on the ingest thread, never in the sampler. Off unless asked for
//! (`--inlined-frames`): profiles of Rust binaries grow several-fold, and a debug file's DWARF
//! (libc's: tens of MB once inflated) is read onto the agent's heap (`benches/symbolize.rs`
//! measures the first sight of a DWARF binary and the frames it adds).
//!
//! Why at ingest: a retained day must stay readable after its processes have exited, and the
//! address space that gives an address meaning exists only while the process lives.
//!
//! blazesym caches parsed binaries per file (device and inode: one parse per binary, shared by
//! every process that maps it) and, once asked, each process's memory map; on top of that each
//! `(pid, address)` is remembered. Answers, memory maps and debug-file lookups are forgotten
//! every minute (PIDs are reused, libraries loaded, debug packages installed), the whole
//! blazesym instance every 30 minutes (bounded memory).

pub mod debug_files;
pub mod elf_file;
pub mod later;
pub mod perf_map;
pub mod python;

use std::{
    collections::{HashMap, HashSet},
    path::{Path, PathBuf},
    sync::Arc,
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
use debug_files::{Binary, DebugFiles};
use elf_file::ElfFacts;
use loupe_bpf::{RawStack, UserEnd};

use loupe_api::model::profile::FRAME_POINTER_WALK;
use loupe_store::{Frame, FrameKind, Name, ObjectAddress, StackSample};

/// How long a `(pid, address)` → frame answer is reused (a PID may be reused, a library
/// re-mapped, but not many times a minute).
const MEMO_TTL: Duration = Duration::from_secs(60);
/// How long one blazesym instance is kept. It parses each binary once (its cache is keyed by
/// device and inode, so every process running `libc.so.6` shares one parse) but remembers every
/// `/proc/PID/map_files/…` path it was shown; starting afresh now and then bounds that memory
/// on hosts that run many short-lived processes, at the price of parsing binaries again.
const SYMBOLIZER_TTL: Duration = Duration::from_secs(30 * 60);
/// The module of frames named from a perf map (code a JIT compiled, outside any file).
pub const JIT_MODULE: &str = "[jit]";
/// How the outermost frame of a user stack that stopped short of its root begins
/// (`[truncated: no unwind info]`, …; the reasons are `loupe_bpf::UserEnd::reason`).
pub const TRUNCATED_PREFIX: &str = "[truncated: ";
/// What follows the name of a function inlined at the sampled address (`helper [inlined]`).
pub const INLINED_SUFFIX: &str = " [inlined]";
/// Most inlined calls one address expands into, innermost kept: DWARF comes from the binary,
/// and a damaged or hostile one may nest without end.
pub const MAX_INLINED: usize = 16;
/// Most binaries whose ELF facts are remembered between resets.
const MAX_FACTS: usize = 4096;

/// ELF facts by (build ID, path when there is no build ID); `None`: unreadable or replaced.
type FactsCache = HashMap<(Vec<u8>, PathBuf), Option<Arc<ElfFacts>>>;

/// Where names may come from besides the binaries themselves.
#[derive(Clone, Debug, Default)]
pub struct NamingOptions {
    /// Directories searched for debug files before `/usr/lib/debug` (`--debug-dir`).
    pub debug_dirs: Vec<PathBuf>,
    /// Never look for debug files (`--no-debug-files`): frames the binaries cannot name are
    /// kept as `module+address` with their build ID, for `loupe symbolize` later.
    pub no_debug_files: bool,
    /// Expand inlined code from a binary's DWARF or its debug file's (`--inlined-frames`). Off
    /// by default: a Rust binary's addresses gained ~3.7 inlined frames each, and one host's
    /// profile of a rack test grew past the fleet's 1 MiB message limit.
    pub inlined: bool,
}

pub struct Symbolizer {
    blazesym: Blazesym,
    normalizer: Normalizer,
    kernel: Source<'static>,
    /// The frames of each `(pid, address)` (kernel: pid 0), innermost first: one, or an
    /// inlined chain above the function it is inlined into.
    memo: HashMap<(u32, u64), Vec<Frame>>,
    debug: DebugFiles,
    /// Read binaries' DWARF for inlined functions.
    inlined: bool,
    /// Facts of the binaries frames could not be named from, by (build ID, path if none).
    facts: FactsCache,
    /// Processes whose memory map blazesym holds: reading `/proc/PID/maps` for every new
    /// address was most of the sampler's cost.
    vmas_cached: HashSet<u32>,
    memo_since: Instant,
    blazesym_since: Instant,
    /// Python code objects' names, forgotten with the memo.
    python: python::PythonNames,
    /// Processes' perf maps (JIT code), forgotten with the memo.
    perf_maps: perf_map::PerfMaps,
}

impl Default for Symbolizer {
    fn default() -> Self {
        Self::new(&NamingOptions::default())
    }
}

impl Symbolizer {
    pub fn new(options: &NamingOptions) -> Self {
        let kernel = source::Kernel {
            kallsyms: MaybeDefault::Default,
            // kallsyms names every kernel function; searching for a vmlinux image costs time
            // at start and rarely finds one on production hosts.
            vmlinux: MaybeDefault::None,
            ..Default::default()
        };
        Self {
            blazesym: own_dwarf_only(),
            normalizer: Normalizer::new(),
            kernel: Source::Kernel(kernel),
            memo: HashMap::new(),
            debug: if options.no_debug_files { DebugFiles::disabled() } else { DebugFiles::new(&options.debug_dirs) },
            inlined: options.inlined,
            facts: HashMap::new(),
            vmas_cached: HashSet::new(),
            memo_since: Instant::now(),
            blazesym_since: Instant::now(),
            python: python::PythonNames::default(),
            perf_maps: perf_map::PerfMaps::default(),
        }
    }

    /// Names every frame of a raw sample: kernel frames (leaf first), then user frames — a
    /// CPython thread's Python frames in place of the evaluation loop's ([`python`]) — then a
    /// `[truncated: reason]` frame if the user stack stopped short of its root.
    pub fn sample(&mut self, raw: &RawStack) -> StackSample {
        if self.memo_since.elapsed() > MEMO_TTL {
            // Forget answers and memory maps now and then: PIDs get reused, libraries loaded.
            self.memo.clear();
            self.vmas_cached.clear();
            self.debug.forget();
            self.python.forget();
            self.perf_maps.clear();
            self.memo_since = Instant::now();
        }
        if self.blazesym_since.elapsed() > SYMBOLIZER_TTL {
            self.blazesym = own_dwarf_only();
            self.vmas_cached.clear();
            self.facts.clear();
            self.blazesym_since = Instant::now();
        }
        let mut frames = Vec::with_capacity(raw.kernel.len() + raw.user.len());
        frames.extend(self.frames(0, &raw.kernel, true));
        if !raw.user.is_empty() || raw.python.is_some() {
            let user = if raw.user.is_empty() { Vec::new() } else { self.frames(raw.pid, &raw.user, false) };
            match &raw.python {
                Some(python) => frames.extend(self.python.interleave(raw.pid, python, user)),
                None => frames.extend(user),
            }
        }
        // A user stack that stopped short of its root says so as its outermost frame, so a
        // flame graph shows where depth was lost instead of a short stack posing as whole; so
        // does one walked by frame pointers (before the process's unwind tables were loaded).
        let marker = match raw.user_end {
            end if end.truncated() => Some(format!("{TRUNCATED_PREFIX}{}]", end.reason())),
            UserEnd::FramePointers if !raw.user.is_empty() => Some(FRAME_POINTER_WALK.to_string()),
            _ => None,
        };
        if let Some(marker) = marker {
            frames.push(Frame::user(marker, Name::default()));
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
                // A binary's own DWARF, where it has one, for inlined functions (blazesym falls
                // back to the symbol table without it; it looks for no separate debug file:
                // `own_dwarf_only`).
                process.debug_syms = self.inlined;
                // Perf maps are read by `perf_map` below, which also reads the JDK's form.
                process.perf_map = false;
                self.blazesym.symbolize(&Source::Process(process), Input::AbsAddr(&missing))
            };
            let named = named
                .unwrap_or_else(|_| vec![Symbolized::Unknown(blazesym::symbolize::Reason::Unsupported); missing.len()]);
            let mut unknown = Vec::new();
            // Named from a symbol table alone while inlined frames are asked for: the binary's
            // debug file may hold the DWARF it lacks.
            let mut symbols_only = Vec::new();
            for (addr, sym) in missing.iter().zip(named) {
                match sym {
                    Symbolized::Sym(sym) => {
                        let module = match (&sym.module, kernel) {
                            (_, true) => "[kernel]".to_string(),
                            (Some(m), false) => file_name(Path::new(m)),
                            // Named without a file: JIT code, from the process's perf map.
                            (None, false) => JIT_MODULE.to_string(),
                        };
                        let chain = chain_of(&sym, module.into(), kernel);
                        if self.inlined && !kernel && sym.code_info.is_none() && sym.module.is_some() {
                            symbols_only.push(*addr);
                        }
                        self.memo.insert(key(*addr), chain);
                    }
                    Symbolized::Unknown(_) => unknown.push(*addr),
                }
            }
            // Code outside any file: JIT code, named by the process's perf map.
            if !kernel
                && !unknown.is_empty()
                && let Some(map) = self.perf_maps.map(pid)
            {
                unknown.retain(|addr| match map.find(*addr) {
                    Some(name) => {
                        self.memo.insert(key(*addr), vec![Frame::user(name.clone(), JIT_MODULE)]);
                        false
                    }
                    None => true,
                });
            }
            // With inlined frames asked for, both kinds go to the binaries' debug files, in one
            // pass: a chain found there replaces a plain name, or names an unknown address.
            let still = if self.inlined && !kernel {
                let asked: Vec<u64> = symbols_only.iter().chain(&unknown).copied().collect();
                let mut still = Vec::new();
                for (i, (addr, chain)) in asked.iter().zip(self.debug_chains(pid, &asked)).enumerate() {
                    match chain {
                        Some(chain) => drop(self.memo.insert(key(*addr), chain)),
                        None if i >= symbols_only.len() => still.push(*addr),
                        None => {} // keeps its name from the symbols
                    }
                }
                still
            } else {
                unknown
            };
            for (addr, frame) in still.iter().zip(self.unnamed(pid, &still, kernel)) {
                self.memo.insert(key(*addr), vec![frame]);
            }
        }
        addrs.iter().flat_map(|a| self.memo[&key(*a)].iter().cloned()).collect()
    }

    /// Names for addresses the binaries' own symbols did not name: from the binary's debug
    /// file, else `module+0xaddress` with its location, else `[unknown]+0xaddress`.
    fn unnamed(&mut self, pid: u32, addrs: &[u64], kernel: bool) -> Vec<Frame> {
        let fallback = |a: &u64| Frame {
            function: format!("[unknown]+{a:#x}").into(),
            module: if kernel { "[kernel]".into() } else { Name::default() },
            kernel,
            location: None,
            kind: if kernel { FrameKind::Kernel } else { FrameKind::Native },
        };
        if kernel || addrs.is_empty() {
            return addrs.iter().map(fallback).collect();
        }
        let Some(located) = self.locate(pid, addrs) else {
            return addrs.iter().map(fallback).collect();
        };
        let mut out = Vec::with_capacity(addrs.len());
        for (addr, place) in addrs.iter().zip(located) {
            out.push(match place {
                Located::Nowhere => fallback(addr),
                // Not even the file's layout: its file offset, which nothing can name later.
                Located::Offset { module, offset } => Frame::user(format!("{module}+{offset:#x}"), module),
                Located::InFile { module, build_id, address, debug } => {
                    // Named: one dictionary entry per function, like any named frame (a
                    // location would make one per instruction).
                    match debug.and_then(|debug| name_in(&self.blazesym, &debug, &[address]).pop().flatten()) {
                        Some(name) => Frame::user(name, module),
                        None => Frame::unnamed(module, ObjectAddress { build_id, address }),
                    }
                }
            });
        }
        out
    }

    /// The inlined chain (innermost first, the function it is inlined into last) of each
    /// address from its binary's separate debug file's DWARF, where there is one and it knows
    /// the address; `None` elsewhere.
    fn debug_chains(&mut self, pid: u32, addrs: &[u64]) -> Vec<Option<Vec<Frame>>> {
        let Some(located) = (!addrs.is_empty()).then(|| self.locate(pid, addrs)).flatten() else {
            return vec![None; addrs.len()];
        };
        located
            .into_iter()
            .map(|place| {
                let Located::InFile { module, address, debug: Some(debug), .. } = place else {
                    return None;
                };
                let mut elf = source::Elf::new(debug);
                elf.debug_syms = true;
                let sym = match self.blazesym.symbolize_single(&Source::Elf(elf), Input::VirtOffset(address)) {
                    Ok(Symbolized::Sym(sym)) if !sym.name.is_empty() && sym.code_info.is_some() => sym,
                    _ => return None,
                };
                Some(chain_of(&sym, module.into(), false))
            })
            .collect()
    }

    /// Where each user address lies: its binary (module name, build ID), the address in the
    /// file's own address space, and the binary's checked debug file if it has one. `None` when
    /// the process's mappings cannot be read.
    fn locate(&mut self, pid: u32, addrs: &[u64]) -> Option<Vec<Located>> {
        let normalized = self.normalizer.normalize_user_addrs(Pid::from(pid), addrs).ok()?;
        let mut out = Vec::with_capacity(addrs.len());
        for (offset, meta) in &normalized.outputs {
            let Some(UserMeta::Elf(elf)) = normalized.meta.get(*meta) else {
                out.push(Located::Nowhere);
                continue;
            };
            let module = file_name(&elf.path);
            let build_id: Vec<u8> = elf.build_id.as_deref().map(<[u8]>::to_vec).unwrap_or_default();
            // The binary as this process can open it, whatever mount namespace it lives in.
            let readable =
                Path::new(&format!("/proc/{pid}/root")).join(elf.path.strip_prefix("/").unwrap_or(&elf.path));
            let facts = facts_of(&mut self.facts, &build_id, &readable);
            let Some(address) = facts.as_ref().and_then(|f| f.address_of(*offset)) else {
                out.push(Located::Offset { module, offset: *offset });
                continue;
            };
            let binary = Binary {
                readable: Some(&readable),
                path: Some(&elf.path),
                module: &module,
                debuglink: facts.as_ref().and_then(|f| f.debuglink.as_deref()),
            };
            let debug = self.debug.find(&build_id, binary);
            out.push(Located::InFile { module, build_id, address, debug });
        }
        Some(out)
    }
}

/// Where a user address lies, for naming it past its binary's own symbols.
enum Located {
    /// In no file-backed mapping.
    Nowhere,
    /// In a file whose layout could not be read: only the file offset is known.
    Offset { module: String, offset: u64 },
    /// In a file, at `address` of its own address space; `debug` is its checked debug file.
    InFile { module: String, build_id: Vec<u8>, address: u64, debug: Option<PathBuf> },
}

/// A symbol's frames, innermost first: the calls inlined at its address (at most
/// [`MAX_INLINED`], the innermost kept), each `function [inlined]`, then the function they were
/// inlined into. blazesym lists inlined calls outermost first.
fn chain_of(sym: &blazesym::symbolize::Sym<'_>, module: Name, kernel: bool) -> Vec<Frame> {
    let kind = FrameKind::implied(kernel, &module);
    let frame = |function: Name| Frame { function, module: module.clone(), kernel, location: None, kind };
    let mut chain: Vec<Frame> = sym
        .inlined
        .iter()
        .rev()
        .take(MAX_INLINED)
        .map(|f| frame(format!("{}{INLINED_SUFFIX}", f.name).into()))
        .collect();
    chain.push(frame(sym.name.as_ref().into()));
    chain
}

/// A blazesym that reads a binary's own DWARF but never looks for separate debug files: those
/// are found and checked by [`debug_files`], and only their symbol tables read (their DWARF is
/// megabytes of compressed sections per library, libc's included, on the agent's heap).
fn own_dwarf_only() -> Blazesym {
    Blazesym::builder().set_debug_dirs(Some(Vec::<PathBuf>::new())).build()
}

/// The ELF facts of a binary, read once per build ID.
fn facts_of(known: &mut FactsCache, build_id: &[u8], readable: &Path) -> Option<Arc<ElfFacts>> {
    let key = (build_id.to_vec(), if build_id.is_empty() { readable.to_path_buf() } else { PathBuf::new() });
    if let Some(known) = known.get(&key) {
        return known.clone();
    }
    let facts = match ElfFacts::read(readable) {
        // A file replaced since it was mapped is not the one the address belongs to.
        Ok(f) if f.build_id == build_id => Some(Arc::new(f)),
        Ok(_) => None,
        Err(e) => {
            tracing::debug!("naming frames: {e}");
            None
        }
    };
    if known.len() >= MAX_FACTS {
        known.clear();
    }
    known.insert(key, facts.clone());
    facts
}

/// Names of `addresses` (in the file's own address space) from a debug file's symbol table
/// (`None` where it has none). ELF symbols only: see the module docs.
pub fn name_in(blazesym: &Blazesym, debug_file: &Path, addresses: &[u64]) -> Vec<Option<String>> {
    let mut elf = source::Elf::new(debug_file);
    elf.debug_syms = false;
    match blazesym.symbolize(&Source::Elf(elf), Input::VirtOffset(addresses)) {
        Ok(named) => named
            .into_iter()
            .map(|s| match s {
                Symbolized::Sym(sym) if !sym.name.is_empty() => Some(sym.name.into_owned()),
                _ => None,
            })
            .collect(),
        Err(_) => vec![None; addresses.len()],
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string())
}
