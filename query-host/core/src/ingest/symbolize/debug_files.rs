//! Finding a binary's separate debug file the way gdb and perf do, and proving it is the right
//! one.
//!
//! Distributions strip their libraries and ship the symbol tables apart (Debian's `-dbg` and
//! `-dbgsym` packages): `/usr/lib/debug/.build-id/93/ac61….debug` for the library whose build ID
//! is `93ac61…`, or a file named by the library's `.gnu_debuglink`. Candidates, in this order
//! (each directory: every `--debug-dir`, then `/usr/lib/debug`):
//!
//! 1. `DIR/.build-id/xx/yyyy.debug` (the build ID's first byte, then the rest, in hex);
//! 2. with a debug link `NAME`: `BINDIR/NAME`, `BINDIR/.debug/NAME`, `DIR/BINDIR/NAME`, `DIR/NAME`;
//! 3. `DIR/MODULE.debug`, `DIR/MODULE` (e.g. a stripped program's debug file dropped into a
//!    `--debug-dir` under its own name; also how `loupe symbolize` finds files for binaries
//!    long gone, whose debug link it cannot read).
//!
//! A candidate is used only if its build ID equals the binary's and it has a symbol table; a
//! binary without a build ID gets no debug file (nothing would prove it matches — a wrong
//! debug file names every frame wrongly, which is worse than `module+address`). A candidate
//! that is damaged or belongs to another build is skipped with one warning naming both IDs.
//!
//! Answers are remembered per build ID (positive and negative), so each library costs a few
//! `stat`s once; [`DebugFiles::forget`] drops them (the agent does every few minutes, so a debug
//! package installed later is seen).

use std::{
    collections::{HashMap, HashSet},
    path::{Path, PathBuf},
};

use tracing::warn;

use super::elf_file::ElfFacts;
use loupe_api::formats::hex;

/// The system's debug directory, searched after any `--debug-dir`.
pub const SYSTEM_DEBUG_DIR: &str = "/usr/lib/debug";
/// Most build IDs remembered; beyond, the memory starts afresh.
const MAX_REMEMBERED: usize = 16_384;

/// Where a binary is, for the candidates next to it.
#[derive(Clone, Copy, Debug)]
pub struct Binary<'a> {
    /// The binary as this process can open it (e.g. `/proc/PID/root/usr/lib/…`), if at all.
    pub readable: Option<&'a Path>,
    /// Its path as the process sees it (`/usr/lib/x86_64-linux-gnu/libc.so.6`), whose
    /// directory `DIR/BINDIR/NAME` candidates use.
    pub path: Option<&'a Path>,
    /// Its file name.
    pub module: &'a str,
    pub debuglink: Option<&'a str>,
}

pub struct DebugFiles {
    dirs: Vec<PathBuf>,
    enabled: bool,
    found: HashMap<Vec<u8>, Option<PathBuf>>,
    warned: HashSet<PathBuf>,
}

impl DebugFiles {
    /// Searches `extra` directories, then `/usr/lib/debug`.
    pub fn new(extra: &[PathBuf]) -> DebugFiles {
        let mut dirs: Vec<PathBuf> = extra.to_vec();
        if !dirs.iter().any(|d| d == Path::new(SYSTEM_DEBUG_DIR)) {
            dirs.push(SYSTEM_DEBUG_DIR.into());
        }
        DebugFiles { dirs, enabled: true, found: HashMap::new(), warned: HashSet::new() }
    }

    /// Never looks for debug files (`--no-debug-files`).
    pub fn disabled() -> DebugFiles {
        DebugFiles { enabled: false, ..DebugFiles::new(&[]) }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Forgets every answer (a debug package may have been installed since).
    pub fn forget(&mut self) {
        self.found.clear();
    }

    /// The verified debug file of the binary with `build_id`, if one is found.
    pub fn find(&mut self, build_id: &[u8], binary: Binary<'_>) -> Option<PathBuf> {
        if !self.enabled || build_id.is_empty() {
            return None;
        }
        if let Some(known) = self.found.get(build_id) {
            return known.clone();
        }
        let found = self.candidates(build_id, binary).into_iter().find(|c| self.matches(c, build_id, binary.module));
        if self.found.len() >= MAX_REMEMBERED {
            self.found.clear();
        }
        self.found.insert(build_id.to_vec(), found.clone());
        found
    }

    fn candidates(&self, build_id: &[u8], binary: Binary<'_>) -> Vec<PathBuf> {
        let id = hex::encode(build_id);
        let mut out: Vec<PathBuf> =
            self.dirs.iter().map(|d| d.join(".build-id").join(&id[..2]).join(format!("{}.debug", &id[2..]))).collect();
        if let Some(link) = binary.debuglink {
            if let Some(dir) = binary.readable.and_then(Path::parent) {
                out.push(dir.join(link));
                out.push(dir.join(".debug").join(link));
            }
            if let Some(dir) = binary.path.and_then(Path::parent) {
                let relative = dir.strip_prefix("/").unwrap_or(dir);
                out.extend(self.dirs.iter().map(|d| d.join(relative).join(link)));
            }
            out.extend(self.dirs.iter().map(|d| d.join(link)));
        }
        if !binary.module.is_empty() && !binary.module.contains('/') {
            for d in &self.dirs {
                out.push(d.join(format!("{}.debug", binary.module)));
                out.push(d.join(binary.module));
            }
        }
        // The binary itself is never its own debug file.
        out.retain(|c| Some(c.as_path()) != binary.readable);
        out
    }

    /// The candidate exists, is an ELF file with the same build ID and a symbol table.
    fn matches(&mut self, candidate: &Path, build_id: &[u8], module: &str) -> bool {
        if !candidate.is_file() {
            return false;
        }
        let problem = match ElfFacts::read(candidate) {
            Ok(f) if f.build_id == build_id && f.has_symtab => return true,
            Ok(f) if f.build_id == build_id => format!("{} has no symbol table", candidate.display()),
            Ok(f) if f.build_id.is_empty() => format!("{} has no build ID", candidate.display()),
            Ok(f) => format!(
                "{} has build ID {}, not {}",
                candidate.display(),
                hex::encode(&f.build_id),
                hex::encode(build_id)
            ),
            Err(e) => e,
        };
        if self.warned.len() < MAX_REMEMBERED && self.warned.insert(candidate.to_path_buf()) {
            warn!("debug file for {module} ignored: {problem}");
        }
        false
    }
}
