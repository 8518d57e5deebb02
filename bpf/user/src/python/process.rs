//! Finding CPython in a process, and its threads: the binary that holds the interpreter (the
//! executable itself, as Debian's `python3.11`, or a `libpython3.X.so` it loaded, as pyenv's
//! builds), its version, where `_PyRuntime` is, and each thread's `PyThreadState`.
//!
//! Everything is read from the process's files and memory, both hostile: each read is bounded
//! (a symbol table, a thread list), a loop in a list the process made is cut at
//! [`MAX_THREADS`], and anything that does not look right ends the search with `None`
//! rather than a guess.

use std::{
    collections::HashMap,
    fs::File,
    os::unix::fs::FileExt,
    path::{Path, PathBuf},
};

use loupe_bpf_common::python::{PY_NO_FIELD, PyProcess};
use object::{Object, ObjectSegment, ObjectSymbol};

use super::layout::{self, Layout};

/// Threads read from one interpreter's list at most (a list the process corrupted may loop).
pub const MAX_THREADS: usize = 4096;
/// Largest binary whose symbols are read to find the interpreter (Debian's `python3.11` is 6.6
/// MB, pyenv's `libpython3.13.so` 30 MB with its debug information).
const MAX_BINARY_BYTES: u64 = 256 << 20;

/// A process's interpreter: its layout and where its runtime state is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interpreter {
    pub layout: &'static Layout,
    /// `_PyRuntime`'s address in the process.
    pub runtime: u64,
    /// glibc's `struct pthread` `tid` offset (for 3.8–3.10, whose thread states hold a
    /// `pthread_t` but no thread id); [`PY_NO_FIELD`] if not found.
    pub pthread_tid: u32,
}

impl Interpreter {
    /// The kernel's view: the walk's offsets with this process's `pthread_tid`.
    pub fn walk(&self) -> PyProcess {
        PyProcess { pthread_tid: self.pthread_tid, ..self.layout.walk }
    }
}

/// `python3.11`, `libpython3.12.so.1.0`: the minor version a binary's name says, if it names
/// one. Only a candidate: its symbols decide.
pub fn minor_from_name(path: &str) -> Option<u8> {
    let name = Path::new(path).file_name()?.to_str()?;
    let rest = name.strip_prefix("libpython3.").or_else(|| name.strip_prefix("python3."))?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let after = &rest[digits.len()..];
    // `python3.11`, `libpython3.11.so…`, `libpython3.11d.so` (debug builds are not walked).
    if !(after.is_empty() || after.starts_with(".so")) {
        return None;
    }
    digits.parse().ok()
}

/// What a binary's dynamic symbols say: where `_PyRuntime` and `Py_Version` are (file
/// addresses), and its load segments to place them.
#[derive(Clone, Debug, Default)]
pub struct BinarySymbols {
    pub runtime: Option<u64>,
    pub version: Option<u64>,
    pub pthread_tid: Option<u64>,
    /// (file offset, virtual address, file size, executable) of each load segment.
    segments: Vec<(u64, u64, u64, bool)>,
}

impl BinarySymbols {
    /// Reads a binary's symbols through `path` (the process's own view of it). `None` if it
    /// cannot be read or is no ELF file.
    pub fn read(path: &Path) -> Option<Self> {
        let file = File::open(path).ok()?;
        if file.metadata().ok()?.len() > MAX_BINARY_BYTES {
            return None;
        }
        let data = object::ReadCache::new(file);
        let elf = object::File::parse(&data).ok()?;
        let mut found = BinarySymbols::default();
        for symbol in elf.dynamic_symbols() {
            match symbol.name() {
                Ok("_PyRuntime") => found.runtime = Some(symbol.address()),
                Ok("Py_Version") => found.version = Some(symbol.address()),
                Ok("_thread_db_pthread_tid") => found.pthread_tid = Some(symbol.address()),
                _ => {}
            }
        }
        found.segments = elf
            .segments()
            .map(|s| {
                let (offset, size) = s.file_range();
                let executable =
                    matches!(s.flags(), object::SegmentFlags::Elf { p_flags } if p_flags & object::elf::PF_X != 0);
                (offset, s.address(), size, executable)
            })
            .collect();
        Some(found)
    }

    /// The load bias of a mapping of this binary at `start` from file `offset` (the address of a
    /// symbol in the process is its file address plus this).
    pub fn bias(&self, start: u64, offset: u64) -> Option<u64> {
        const PAGE: u64 = 4096;
        let &(seg_offset, vaddr, _, _) = self
            .segments
            .iter()
            .find(|&&(o, _, size, _)| o & !(PAGE - 1) <= offset && offset < o.saturating_add(size.max(1)))?;
        Some(start.wrapping_sub(offset).wrapping_sub(vaddr.wrapping_sub(seg_offset)))
    }
}

/// A process's memory, read through `/proc/PID/mem`.
pub struct Memory(File);

impl Memory {
    pub fn open(pid: u32) -> Option<Self> {
        File::open(format!("/proc/{pid}/mem")).ok().map(Memory)
    }

    pub fn bytes(&self, addr: u64, buf: &mut [u8]) -> Option<()> {
        self.0.read_exact_at(buf, addr).ok()
    }

    pub fn u64(&self, addr: u64) -> Option<u64> {
        let mut b = [0u8; 8];
        self.bytes(addr, &mut b)?;
        Some(u64::from_le_bytes(b))
    }

    pub fn u32(&self, addr: u64) -> Option<u32> {
        let mut b = [0u8; 4];
        self.bytes(addr, &mut b)?;
        Some(u32::from_le_bytes(b))
    }
}

/// Symbols of the binaries seen, by the path the process maps them at and their size and
/// modification time (a binary replaced in place is read again).
#[derive(Default)]
pub struct SymbolCache(HashMap<(PathBuf, u64, i64), Option<BinarySymbols>>);

impl SymbolCache {
    fn get(&mut self, pid: u32, path: &str) -> Option<&BinarySymbols> {
        let seen = Path::new("/proc").join(pid.to_string()).join("root").join(path.trim_start_matches('/'));
        let meta = std::fs::metadata(&seen).ok()?;
        let key = (PathBuf::from(path), meta.len(), std::os::unix::fs::MetadataExt::mtime(&meta));
        if self.0.len() > 1024 {
            self.0.clear();
        }
        self.0.entry(key).or_insert_with(|| BinarySymbols::read(&seen)).as_ref()
    }
}

/// An executable mapping of a file: (start, file offset, path).
pub type Executable<'a> = (u64, u64, &'a str);

/// Finds the interpreter in process `pid`, given its executable mappings. `Ok(None)`: no
/// CPython Loupe walks (not Python, or a version or build it does not know); `Err`: one it
/// knows but whose state does not read right (the caller says why, once).
pub fn find(pid: u32, executables: &[Executable], symbols: &mut SymbolCache) -> Result<Option<Interpreter>, String> {
    // The executable and a `libpython` may both be named so (pyenv's): the one with the
    // runtime's symbol holds the interpreter.
    let candidates =
        executables.iter().filter_map(|&(start, offset, path)| Some((start, offset, path, minor_from_name(path)?)));
    for (start, offset, path, named) in candidates {
        let Some(found) = symbols.get(pid, path).cloned() else { continue };
        let (Some(runtime), Some(bias)) = (found.runtime, found.bias(start, offset)) else { continue };
        let Some(memory) = Memory::open(pid) else { return Ok(None) };
        // 3.11+ says its version; before, the binary's name is all there is.
        let minor = match found.version {
            Some(at) => {
                let hex = memory.u32(at.wrapping_add(bias)).ok_or("Py_Version unreadable")?;
                if hex >> 24 != 3 {
                    return Err(format!("Py_Version {hex:#x} is no Python 3"));
                }
                ((hex >> 16) & 0xff) as u8
            }
            None => named,
        };
        if minor != named {
            return Err(format!("{path} says 3.{named} but holds 3.{minor}"));
        }
        let Some(layout) = layout::for_minor(minor) else { return Ok(None) };
        let runtime = runtime.wrapping_add(bias);
        if minor >= 13 {
            let mut bytes = vec![0u8; layout::DEBUG_OFFSETS_READ];
            memory.bytes(runtime, &mut bytes).ok_or("_PyRuntime unreadable")?;
            layout::check_debug_offsets(layout, &bytes)?;
        }
        let pthread_tid = pthread_tid(pid, executables, &memory, symbols);
        if layout.walk.thread_native_id == PY_NO_FIELD && pthread_tid == PY_NO_FIELD {
            return Err("its threads' ids cannot be read (no glibc `_thread_db_pthread_tid`)".into());
        }
        return Ok(Some(Interpreter { layout, runtime, pthread_tid }));
    }
    Ok(None)
}

/// glibc's `struct pthread` `tid` offset in process `pid`, from the `_thread_db_pthread_tid`
/// descriptor its libc exports for debuggers (size in bits, count, offset).
fn pthread_tid(pid: u32, executables: &[Executable], memory: &Memory, symbols: &mut SymbolCache) -> u32 {
    let libc = executables.iter().find(|&&(_, _, path)| {
        Path::new(path).file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("libc.so"))
    });
    let Some(&(start, offset, path)) = libc else { return PY_NO_FIELD };
    let Some(found) = symbols.get(pid, path).cloned() else { return PY_NO_FIELD };
    let (Some(at), Some(bias)) = (found.pthread_tid, found.bias(start, offset)) else {
        return PY_NO_FIELD;
    };
    let mut d = [0u8; 12];
    if memory.bytes(at.wrapping_add(bias), &mut d).is_none() {
        return PY_NO_FIELD;
    }
    let word = |i: usize| u32::from_le_bytes(d[i..i + 4].try_into().expect("four bytes"));
    // A 32-bit field, one of it, somewhere in the first pages of the struct.
    if word(0) == 32 && word(4) == 1 && word(8) < 4096 { word(8) } else { PY_NO_FIELD }
}

/// The interpreter's threads: (thread id, `PyThreadState` address), from the first
/// interpreter's list (subinterpreters' threads are not walked).
pub fn threads(pid: u32, interpreter: &Interpreter) -> Vec<(u32, u64)> {
    let Some(memory) = Memory::open(pid) else { return Vec::new() };
    let layout = interpreter.layout;
    let walk = interpreter.walk();
    // Every address below is read from the process: added to with wrapping, never trusted.
    let at = |base: u64, offset: u64| base.wrapping_add(offset);
    let Some(interp) = memory.u64(at(interpreter.runtime, layout.runtime_interpreters_head)).filter(|&a| a != 0) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut state = memory.u64(at(interp, layout.interp_threads_head)).unwrap_or(0);
    // Bounded in states read, not only in threads found: a list looping through states without
    // a thread id would otherwise never end.
    for _ in 0..MAX_THREADS {
        if state == 0 || !seen.insert(state) {
            break; // the end, or a loop
        }
        let tid = if walk.thread_native_id != PY_NO_FIELD {
            memory.u64(at(state, u64::from(walk.thread_native_id))).and_then(|t| u32::try_from(t).ok())
        } else if walk.pthread_tid != PY_NO_FIELD {
            memory
                .u64(at(state, u64::from(walk.thread_pthread)))
                .and_then(|pthread| memory.u32(at(pthread, u64::from(walk.pthread_tid))))
        } else {
            None
        };
        if let Some(tid) = tid.filter(|&t| t != 0) {
            out.push((tid, state));
        }
        state = memory.u64(at(state, layout.thread_next)).unwrap_or(0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binary_names_its_version_only_as_python_does() {
        assert_eq!(minor_from_name("/usr/bin/python3.11"), Some(11));
        assert_eq!(minor_from_name("/root/.pyenv/versions/3.13.0/lib/libpython3.13.so.1.0"), Some(13));
        assert_eq!(minor_from_name("/x/libpython3.8.so"), Some(8));
        assert_eq!(minor_from_name("/x/libpython3.11d.so.1.0"), None, "a debug build's layout differs");
        assert_eq!(minor_from_name("/usr/bin/python3.11-config"), None);
        assert_eq!(minor_from_name("/usr/bin/python3"), None);
        assert_eq!(minor_from_name("/usr/lib/python3.11/lib-dynload/zlib.cpython-311.so"), None);
    }

    #[test]
    fn this_process_has_no_interpreter() {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let executables: Vec<Executable> = maps
            .lines()
            .filter(|l| l.split_whitespace().nth(1).is_some_and(|p| p.contains('x')))
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let start = u64::from_str_radix(f[0].split_once('-')?.0, 16).ok()?;
                Some((start, u64::from_str_radix(f[2], 16).ok()?, *f.get(5)?))
            })
            .collect();
        assert!(executables.iter().any(|e| e.2.contains("libc.so")), "{maps}");
        assert_eq!(find(std::process::id(), &executables, &mut SymbolCache::default()), Ok(None));
    }
}
