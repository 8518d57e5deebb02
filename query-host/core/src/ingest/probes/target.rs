//! From what a user types — `--pid 4242 --func handle,libnf.so:parse` or `--binary /usr/bin/x
//! --func 'ns::Type::method'` — to the file offsets the kernel probes, refusing what must not be
//! probed before anything is attached.
//!
//! - **Symbols**: the file's `.symtab`, else its `.dynsym`, else the symbol table of its debug
//!   file (found by build ID, as frame names are: `ingest::symbolize::debug_files`). A name
//!   matches its symbol as written or demangled (Rust without the hash, C++ with or without its
//!   parameter list).
//! - **Where on the function**: [`super::placement`] decodes the whole function (its symbol's
//!   size, and its `.cold` part) and puts the probe on the first instruction the kernel
//!   emulates, past `endbr64` and register moves it proves safe to run unprobed; what it cannot
//!   prove is refused with the reason unless the caller accepts single-stepping the first
//!   instruction (`allow_single_step`).
//! - **Go**: the runtime moves goroutine stacks, and a return probe's rewritten return address
//!   moves with them into garbage: a Go binary's functions are marked, and counted only.
//!
//! Files come from outside: every ELF is read through the `object` crate's bounded readers and
//! a damaged file is an error, never a panic.

use std::{
    os::unix::fs::MetadataExt,
    path::{Path, PathBuf},
};

use object::{Object, ObjectSymbol, ReadCache, SymbolKind, read::File as ObjectFile};

use super::placement::{FunctionCode, MAX_FUNCTION_BYTES, Placement, kernel_emulates_long_nops, place};
use crate::ingest::{
    regular_file,
    symbolize::{
        debug_files::{Binary, DebugFiles},
        elf_file::ElfFacts,
    },
};

/// Most functions named in one request.
pub const MAX_FUNCTIONS: usize = loupe_store::MAX_SESSION_FUNCTIONS;
/// Longest function name accepted.
const MAX_NAME: usize = 4096;
/// Symbols examined per file before giving up (a real file has at most a few million).
const MAX_SYMBOLS: usize = 8_000_000;

/// What to probe, as asked.
#[derive(Clone, Debug, Default)]
pub struct TargetSpec {
    pub pids: Vec<u32>,
    pub binary: Option<PathBuf>,
    /// `SYMBOL` (in the program) or `LIBRARY:SYMBOL` (`libc.so.6:malloc`, `/usr/lib/…/libz.so.1:inflate`).
    pub functions: Vec<String>,
    pub allow_single_step: bool,
}

/// One function, resolved and checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedFunction {
    /// As asked.
    pub name: String,
    pub symbol: String,
    /// The file as its processes name it.
    pub binary: String,
    /// The file as the kernel should open it.
    pub attach_file: PathBuf,
    pub address: u64,
    /// Where on the function the probe goes, and what runs before it.
    pub placement: Placement,
    /// In a Go program: counted only (no return probe).
    pub go: bool,
    pub file_offset: u64,
}

/// Why a request cannot be probed. One line each, saying what to do.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TargetError {
    #[error("name at least one process (--pid) or a binary (--binary), not both")]
    NoTarget,
    #[error("name at least one function (--func)")]
    NoFunction,
    #[error("{0} functions asked: at most {MAX_FUNCTIONS} per probe session")]
    TooManyFunctions(usize),
    #[error("no process with PID {0}")]
    NoProcess(u32),
    #[error("PIDs {0} and {1} run different programs ({2} and {3}): probe them in separate sessions")]
    DifferentPrograms(u32, u32, String, String),
    #[error("PID {pid} maps no library named '{library}' (see /proc/{pid}/maps)")]
    NoLibrary { pid: u32, library: String },
    #[error("{0}")]
    File(String),
    #[error("no function '{name}' in {file}{hint}")]
    NoSymbol { name: String, file: String, hint: String },
    #[error("'{name}' in {file} is ambiguous: {candidates}; give the exact symbol")]
    Ambiguous { name: String, file: String, candidates: String },
    #[error(
        "'{name}' starts with {instruction}, which the kernel single-steps on every hit (~10-20 µs, not ~1 µs), \
         and no later place is safe: {reason}. Rebuild with frame pointers (the function then starts with push), \
         or pass --allow-single-step to pay it"
    )]
    SingleStep { name: String, instruction: String, reason: String },
    #[error("bad function name '{0}'")]
    BadName(String),
}

/// Resolves and checks every function of `spec`; nothing is attached here.
pub fn resolve(spec: &TargetSpec) -> Result<Vec<ResolvedFunction>, TargetError> {
    if spec.pids.is_empty() == spec.binary.is_none() {
        return Err(TargetError::NoTarget);
    }
    if spec.functions.is_empty() {
        return Err(TargetError::NoFunction);
    }
    if spec.functions.len() > MAX_FUNCTIONS {
        return Err(TargetError::TooManyFunctions(spec.functions.len()));
    }
    for &pid in &spec.pids {
        if pid == 0 || !Path::new(&format!("/proc/{pid}")).exists() {
            return Err(TargetError::NoProcess(pid));
        }
    }
    let mut debug_files = DebugFiles::new(&[]);
    let mut out = Vec::with_capacity(spec.functions.len());
    for asked in &spec.functions {
        if asked.is_empty() || asked.len() > MAX_NAME {
            return Err(TargetError::BadName(asked.chars().take(64).collect()));
        }
        let (library, symbol) = split_library(asked);
        let file = match (&spec.binary, library) {
            (Some(binary), None) => Located { shown: binary.display().to_string(), open: binary.clone() },
            (Some(_), Some(lib)) => Located { shown: lib.into(), open: lib.into() },
            (None, library) => in_processes(&spec.pids, library)?,
        };
        let found = find_symbol(&file, symbol, &mut debug_files)?;
        let placement = check_entry(&file, &found, symbol, spec.allow_single_step)?;
        out.push(ResolvedFunction {
            name: asked.clone(),
            symbol: found.symbol,
            binary: file.shown.clone(),
            attach_file: file.open.clone(),
            address: found.address,
            file_offset: found.file_offset + placement.offset as u64,
            placement,
            go: found.go,
        });
    }
    Ok(out)
}

/// `LIBRARY:SYMBOL` → (library, symbol); C++'s `::` is not a separator.
fn split_library(asked: &str) -> (Option<&str>, &str) {
    let bytes = asked.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b':' && bytes.get(i + 1) != Some(&b':') && (i == 0 || bytes[i - 1] != b':') {
            let (lib, sym) = (&asked[..i], &asked[i + 1..]);
            if lib.contains(".so") || lib.contains('/') {
                return (Some(lib), sym);
            }
        }
    }
    (None, asked)
}

/// A file: how to show it, how to open it (and have the kernel open it).
#[derive(Clone, Debug)]
struct Located {
    shown: String,
    open: PathBuf,
}

/// The program of the processes (all must run the same one), or a library they map.
fn in_processes(pids: &[u32], library: Option<&str>) -> Result<Located, TargetError> {
    let first = pids[0];
    let located = match library {
        None => {
            let shown = std::fs::read_link(format!("/proc/{first}/exe"))
                .map(|p| p.display().to_string())
                .map_err(|_| TargetError::NoProcess(first))?;
            Located { shown, open: format!("/proc/{first}/exe").into() }
        }
        Some(lib) => {
            let maps =
                std::fs::read_to_string(format!("/proc/{first}/maps")).map_err(|_| TargetError::NoProcess(first))?;
            let wanted = Path::new(lib).file_name().and_then(|n| n.to_str()).unwrap_or(lib);
            let path = maps
                .lines()
                .filter_map(|l| l.split_whitespace().nth(5))
                .filter(|p| p.starts_with('/'))
                .find(|p| {
                    let name = Path::new(p).file_name().and_then(|n| n.to_str()).unwrap_or("");
                    *p == lib || name == wanted || name.strip_prefix(wanted).is_some_and(|rest| rest.starts_with('.'))
                })
                .ok_or_else(|| TargetError::NoLibrary { pid: first, library: lib.into() })?;
            Located { shown: path.into(), open: format!("/proc/{first}/root{path}").into() }
        }
    };
    let identity = |p: &Path| std::fs::metadata(p).map(|m| (m.dev(), m.ino()));
    let want = identity(&located.open).map_err(|e| TargetError::File(format!("{}: {e}", located.shown)))?;
    for &pid in &pids[1..] {
        let theirs = match library {
            None => PathBuf::from(format!("/proc/{pid}/exe")),
            Some(_) => PathBuf::from(format!("/proc/{pid}/root{}", located.shown)),
        };
        if identity(&theirs).ok() != Some(want) {
            let other = std::fs::read_link(format!("/proc/{pid}/exe")).map(|p| p.display().to_string());
            return Err(TargetError::DifferentPrograms(first, pid, located.shown.clone(), other.unwrap_or_default()));
        }
    }
    Ok(located)
}

struct FoundSymbol {
    symbol: String,
    address: u64,
    file_offset: u64,
    /// Bytes of the function (0: the symbol does not say).
    size: u64,
    /// The address, file offset and size of its `.cold` part.
    cold: Option<(u64, u64, u64)>,
    /// The file is a Go program.
    go: bool,
}

fn find_symbol(file: &Located, name: &str, debug_files: &mut DebugFiles) -> Result<FoundSymbol, TargetError> {
    let facts = ElfFacts::read(&file.open).map_err(TargetError::File)?;
    let handle = regular_file::open(&file.open).map_err(|e| TargetError::File(format!("{}: {e}", file.shown)))?;
    let cache = ReadCache::new(handle);
    let elf = ObjectFile::parse(&cache)
        .map_err(|e| TargetError::File(format!("{}: not a readable ELF file: {e}", file.shown)))?;
    let go = elf.section_by_name(".go.buildinfo").is_some() || elf.section_by_name(".note.go.buildid").is_some();
    let mut hits = matching(&elf, name, &file.shown)?;
    let mut searched = "its symbol table";
    if hits.is_empty() && !facts.has_symtab {
        searched = "its dynamic symbols (it is stripped)";
        let module = Path::new(&file.shown).file_name().and_then(|n| n.to_str()).unwrap_or("");
        let binary = Binary {
            readable: Some(&file.open),
            path: Some(Path::new(&file.shown)),
            module,
            debuglink: facts.debuglink.as_deref(),
        };
        if let Some(debug) = debug_files.find(&facts.build_id, binary) {
            searched = "its dynamic symbols and its debug file";
            let handle =
                regular_file::open(&debug).map_err(|e| TargetError::File(format!("{}: {e}", debug.display())))?;
            let cache = ReadCache::new(handle);
            let debug_elf = ObjectFile::parse(&cache)
                .map_err(|e| TargetError::File(format!("{}: not a readable ELF file: {e}", debug.display())))?;
            hits = matching(&debug_elf, name, &file.shown)?;
        }
    }
    hits.sort_by_key(|h| h.address);
    hits.dedup_by_key(|h| h.address);
    match hits.len() {
        0 => Err(TargetError::NoSymbol {
            name: name.into(),
            file: file.shown.clone(),
            hint: format!(" (searched {searched}; a function the compiler inlined everywhere has no symbol)"),
        }),
        1 => {
            let Hit { symbol, address, size, cold } = hits.pop().expect("one");
            let file_offset = facts.file_offset_of(address).ok_or_else(|| {
                TargetError::File(format!(
                    "{}: {symbol} at {address:#x} is outside the file's loaded bytes",
                    file.shown
                ))
            })?;
            let cold = cold.and_then(|(at, size)| Some((at, facts.file_offset_of(at)?, size)));
            Ok(FoundSymbol { symbol, address, file_offset, size, cold, go })
        }
        _ => Err(TargetError::Ambiguous {
            name: name.into(),
            file: file.shown.clone(),
            candidates: hits
                .iter()
                .take(4)
                .map(|h| format!("{} at {:#x}", h.symbol, h.address))
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// A defined function matching the name asked, with its size and its `.cold` part (code the
/// compiler moved out of line, which jumps back into it).
#[derive(Clone, Debug)]
struct Hit {
    symbol: String,
    address: u64,
    size: u64,
    cold: Option<(u64, u64)>,
}

/// Defined functions named `name` (as written or demangled).
fn matching<'d, R: object::ReadRef<'d>>(
    elf: &ObjectFile<'d, R>,
    name: &str,
    shown: &str,
) -> Result<Vec<Hit>, TargetError> {
    let mut hits: Vec<Hit> = Vec::new();
    let mut colds: Vec<(String, u64, u64)> = Vec::new();
    // Demangling every symbol of a big binary takes seconds: only names that cannot be a
    // plain symbol (`ns::f`, `f(int)`) are compared demangled.
    let demangle = name.contains("::") || name.contains('(');
    let matches = |plain: &str| plain == name || (demangle && demangled_matches(plain, name));
    for (n, sym) in elf.symbols().chain(elf.dynamic_symbols()).enumerate() {
        if n >= MAX_SYMBOLS {
            return Err(TargetError::File(format!("{shown}: more than {MAX_SYMBOLS} symbols")));
        }
        if sym.kind() != SymbolKind::Text || sym.is_undefined() || sym.address() == 0 {
            continue;
        }
        let Ok(raw) = sym.name() else { continue };
        let plain = raw.split('@').next().unwrap_or(raw);
        if matches(plain) {
            hits.push(Hit { symbol: plain.to_string(), address: sym.address(), size: sym.size(), cold: None });
        } else if let Some(hot) = plain.strip_suffix(".cold")
            && matches(hot)
        {
            colds.push((hot.to_string(), sym.address(), sym.size()));
        }
    }
    for hit in &mut hits {
        hit.cold = colds.iter().find(|c| c.0 == hit.symbol).map(|c| (c.1, c.2));
    }
    Ok(hits)
}

/// Does a mangled symbol demangle to `name` (Rust without its hash; C++ with or without its
/// parameters)?
fn demangled_matches(symbol: &str, name: &str) -> bool {
    if !symbol.starts_with("_Z") && !symbol.starts_with("_R") {
        return false;
    }
    if let Ok(d) = rustc_demangle::try_demangle(symbol) {
        let full = d.to_string();
        let short = format!("{d:#}");
        return full == name || short == name;
    }
    if let Ok(sym) = cpp_demangle::Symbol::new(symbol)
        && let Ok(text) = sym.demangle()
    {
        return text == name || text.split('(').next() == Some(name);
    }
    false
}

/// Where in the function the probe goes ([`placement`]), refusing a place the kernel would
/// single-step unless allowed (then the function's start).
fn check_entry(
    file: &Located,
    found: &FoundSymbol,
    name: &str,
    allow_single_step: bool,
) -> Result<Placement, TargetError> {
    use std::os::unix::fs::FileExt;
    let handle = regular_file::open(&file.open).map_err(|e| TargetError::File(format!("{}: {e}", file.shown)))?;
    let read = |offset: u64, len: u64| -> Result<Vec<u8>, TargetError> {
        let mut bytes = vec![0u8; len as usize];
        let n = handle.read_at(&mut bytes, offset).map_err(|e| TargetError::File(format!("{}: {e}", file.shown)))?;
        bytes.truncate(n);
        Ok(bytes)
    };
    let whole = (1..=MAX_FUNCTION_BYTES as u64).contains(&found.size);
    let code = read(found.file_offset, if whole { found.size } else { 64 })?;
    let cold = match found.cold {
        Some((address, offset, size)) if whole && (1..=MAX_FUNCTION_BYTES as u64).contains(&size) => {
            Some((address, read(offset, size)?))
        }
        _ => None,
    };
    let related = cold.iter().map(|(address, bytes)| (*address, bytes.as_slice())).collect();
    let f = FunctionCode {
        address: found.address,
        code: &code,
        whole: whole && code.len() as u64 == found.size,
        related,
        long_nops: kernel_emulates_long_nops(),
    };
    match place(&f) {
        Ok(p) => Ok(p),
        Err(_) if allow_single_step => Ok(Placement { offset: 0, skipped: Vec::new() }),
        Err(e) => Err(TargetError::SingleStep { name: name.into(), instruction: e.first, reason: e.reason }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_prefixes_are_told_from_cpp_scopes() {
        assert_eq!(split_library("libc.so.6:malloc"), (Some("libc.so.6"), "malloc"));
        assert_eq!(split_library("/usr/lib/libz.so.1:inflate"), (Some("/usr/lib/libz.so.1"), "inflate"));
        assert_eq!(split_library("ns::Type::method"), (None, "ns::Type::method"));
        assert_eq!(split_library("handle"), (None, "handle"));
    }

    #[test]
    fn demangled_names_match() {
        // Rust v0/legacy and C++ (Itanium).
        assert!(demangled_matches("_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write"));
        assert!(demangled_matches("_ZN2ns4Type6methodEi", "ns::Type::method"));
        assert!(demangled_matches("_ZN2ns4Type6methodEi", "ns::Type::method(int)"));
        assert!(!demangled_matches("_ZN2ns4Type6methodEi", "ns::Type::other"));
        assert!(!demangled_matches("handle", "handle"));
    }

    #[test]
    fn requests_without_target_or_function_are_refused() {
        let none = TargetSpec { functions: vec!["f".into()], ..Default::default() };
        assert_eq!(resolve(&none), Err(TargetError::NoTarget));
        let both = TargetSpec {
            pids: vec![1],
            binary: Some("/bin/true".into()),
            functions: vec!["f".into()],
            ..Default::default()
        };
        assert_eq!(resolve(&both), Err(TargetError::NoTarget));
        let nofn = TargetSpec { pids: vec![1], ..Default::default() };
        assert_eq!(resolve(&nofn), Err(TargetError::NoFunction));
        let gone = TargetSpec { pids: vec![u32::MAX - 1], functions: vec!["f".into()], ..Default::default() };
        assert_eq!(resolve(&gone), Err(TargetError::NoProcess(u32::MAX - 1)));
    }
}
