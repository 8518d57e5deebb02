//! What building a binary's unwind table costs in memory, against the table it builds: the
//! agent under `MemoryMax=` peaks while it parses a large binary's call-frame information.
//!
//! Each binary is parsed in a child process of its own, as the agent parses it: an
//! `object::ReadCache` over the file, `Paged::from_elf`, `cache::save`, with glibc's
//! thresholds fixed as the agent fixes them (1 MiB). The child resets its peak
//! (`/proc/self/clear_refs`), parses, and reports how far `VmHWM` rose above the resident set
//! it started from. The baseline is the kernel table itself (8 bytes a row and a page): the
//! ratio says how many times the table's size the parse needs. The parse's time is printed too.
//!
//!   cargo bench -p loupe-query-host --bench parse_memory [BINARY…]
//!
//! `LOUPE_PARSE_KEEP=DIR` keeps each table there (`NAME.unwind`), to compare two builds' tables.
//! Without arguments: the `loupe` binary (`LOUPE_BIN`, else the one this package builds; the
//! largest table the agent meets on its own host), glibc, and python3.

use std::{path::PathBuf, process::Command};

use loupe_unwind::{Paged, ReadCache, cache};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    if let Ok(path) = std::env::var("LOUPE_PARSE_ONE") {
        return parse_one(&PathBuf::from(path));
    }
    let binaries: Vec<PathBuf> =
        if args.is_empty() { default_binaries() } else { args.iter().map(PathBuf::from).collect() };
    println!("{:<28} {:>10} {:>10} {:>10} {:>7} {:>9}", "binary", "rows", "table KiB", "peak KiB", "ratio", "parse ms");
    for binary in binaries {
        let out = Command::new(std::env::current_exe().unwrap())
            .env("LOUPE_PARSE_ONE", &binary)
            .output()
            .expect("the bench runs itself for each binary");
        let text = String::from_utf8_lossy(&out.stdout);
        let Some(line) = text.lines().find(|l| l.starts_with("parsed ")) else {
            panic!("{}: the child printed no figures: {}", binary.display(), String::from_utf8_lossy(&out.stderr));
        };
        let f: Vec<u64> = line.split_whitespace().skip(1).map(|x| x.parse().unwrap()).collect();
        let (rows, table_kib, peak_kib, ms) = (f[0], f[1], f[2], f[3] as f64 / 1e3);
        let ratio = peak_kib as f64 / table_kib.max(1) as f64;
        let name = binary.file_name().unwrap().to_string_lossy().into_owned();
        println!("{name:<28} {rows:>10} {table_kib:>10} {peak_kib:>10} {ratio:>7.2} {ms:>9.1}");
        println!(r#"BENCH {{"name": "unwind_parse/{name}/ms", "value": {ms:.1}, "unit": "ms"}}"#);
        println!(
            r#"BENCH {{"name": "unwind_parse/{name}/peak", "value": {:.1}, "unit": "MiB"}}"#,
            peak_kib as f64 / 1024.0
        );
        println!(
            r#"BENCH {{"name": "unwind_parse/{name}/table", "value": {:.1}, "unit": "MiB"}}"#,
            table_kib as f64 / 1024.0
        );
        println!(r#"BENCH {{"name": "unwind_parse/{name}/peak_over_table", "value": {ratio:.2}, "unit": "x"}}"#);
    }
}

fn default_binaries() -> Vec<PathBuf> {
    let loupe = std::env::var_os("LOUPE_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_loupe")), PathBuf::from);
    let mut out = vec![loupe];
    for p in ["/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/python3"] {
        let p = PathBuf::from(p);
        if p.exists() {
            out.push(std::fs::canonicalize(&p).unwrap_or(p));
        }
    }
    out
}

/// In the child: one parse as the agent does it, then `parsed ROWS TABLE_KIB PEAK_KIB MICROSECONDS`
/// (the parse's time: `Paged::from_elf`, the cache file not included).
fn parse_one(path: &std::path::Path) {
    // SAFETY: mallopt only changes the allocator's parameters.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 20);
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write("/proc/self/clear_refs", "5").expect("resetting VmHWM (/proc/self/clear_refs)");
    let before = status_kib("VmRSS:");
    let file = std::fs::File::open(path).unwrap();
    let began = std::time::Instant::now();
    let paged = Paged::from_elf(&ReadCache::new(file)).unwrap();
    let ms = began.elapsed().as_secs_f64() * 1e3;
    // LOUPE_PARSE_KEEP=DIR keeps the table (named after the binary), to compare builds.
    let keep = std::env::var_os("LOUPE_PARSE_KEEP").map(PathBuf::from);
    let name = path.file_name().unwrap().to_string_lossy();
    cache::save(keep.as_deref().unwrap_or(dir.path()), &name, &paged).unwrap();
    let peak = status_kib("VmHWM:").saturating_sub(before);
    let table_kib = (8 * (paged.rows.len() + paged.pages.len()) as u64).div_ceil(1024);
    println!("parsed {} {table_kib} {peak} {:.0}", paged.rows.len(), ms * 1e3);
}

fn status_kib(key: &str) -> u64 {
    loupe_testbed::sampling::process_status_kb(std::process::id(), key).expect("this process's status")
}
