//! Every row of the unwind tables of this machine's binaries against binutils' own reading of
//! the same call-frame information (`readelf --debug-dump=frames-interp`), an independent
//! DWARF evaluator: at each row's first and last address the table must give the rule readelf
//! prints, gaps between functions must read as gaps, and the kernel's paged form must find
//! the same row as the table.
//!
//! The binaries: Debian's `dash`, `gzip`, `python3` and libc (built without frame pointers),
//! and `testbed/fixtures/deep.c` built `-O2 -fomit-frame-pointer` by this machine's compiler.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    process::Command,
};

use loupe_unwind::{Base, Rule, Table, Unsupported};

/// One FDE as readelf prints it: its range, whether its CIE marks a signal frame, and its rows
/// (address, CFA, RBP rule, RA rule), the CIE's initial row when it prints none.
struct Fde {
    start: u64,
    end: u64,
    signal: bool,
    rows: Vec<(u64, String, String, String)>,
}

fn readelf_fdes(binary: &Path) -> Vec<Fde> {
    let out = Command::new("readelf").arg("--debug-dump=frames-interp").arg(binary).output().expect("running readelf");
    // readelf exits 1 on Debian's libc having printed every frame (it stops at a section it
    // does not read), so its output, not its status, says whether it read the frames.
    assert!(!out.stdout.is_empty(), "readelf on {}: {}", binary.display(), String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut cies: HashMap<String, (bool, Option<(String, String, String)>)> = HashMap::new();
    let mut fdes = Vec::new();
    // The entry being read: a CIE's offset, or an FDE; and the column of rbp and ra.
    let mut cie: Option<String> = None;
    let mut columns: Vec<String> = Vec::new();
    for line in text.lines() {
        // A register held in another register prints as two words, "r9 (r9)": one value.
        let mut words: Vec<&str> = Vec::new();
        for word in line.split_whitespace() {
            match words.last_mut() {
                Some(last) if word.starts_with('(') && !columns.is_empty() => {
                    let start = last.as_ptr() as usize - line.as_ptr() as usize;
                    let end = word.as_ptr() as usize - line.as_ptr() as usize + word.len();
                    *last = &line[start..end];
                }
                _ => words.push(word),
            }
        }
        if words.len() >= 4 && words[3] == "CIE" {
            cie = Some(words[0].to_string());
            cies.insert(words[0].to_string(), (words[4].contains('S'), None));
            columns.clear();
        } else if words.len() >= 6 && words[3] == "FDE" {
            cie = None;
            columns.clear();
            let cie_at = words[4].trim_start_matches("cie=").to_string();
            let (start, end) = words[5].trim_start_matches("pc=").split_once("..").unwrap();
            let (signal, initial) = cies.get(&cie_at).cloned().unwrap_or_else(|| panic!("CIE {cie_at} before its FDE"));
            let start = u64::from_str_radix(start, 16).unwrap();
            let end = u64::from_str_radix(end, 16).unwrap();
            let mut fde = Fde { start, end, signal, rows: vec![] };
            if let Some((cfa, rbp, ra)) = initial {
                fde.rows.push((start, cfa, rbp, ra));
            }
            fdes.push(fde);
        } else if words.first() == Some(&"LOC") {
            columns = words.iter().map(|w| w.to_string()).collect();
        } else if !columns.is_empty() && words.len() == columns.len() && words[0].len() == 16 {
            let value =
                |name: &str| columns.iter().position(|c| c == name).map_or("u".to_string(), |i| words[i].to_string());
            let row = (value("CFA"), value("rbp"), value("ra"));
            let loc = u64::from_str_radix(words[0], 16).unwrap();
            match &cie {
                Some(offset) => cies.get_mut(offset).unwrap().1 = Some(row),
                None => {
                    let fde = fdes.last_mut().unwrap();
                    // A printed table replaces the CIE's initial row carried over.
                    if fde.rows.first().is_some_and(|r| r.0 == loc) {
                        fde.rows.remove(0);
                    }
                    fde.rows.push((loc, row.0, row.1, row.2));
                }
            }
        }
    }
    fdes
}

/// The rule readelf's strings describe, as the unwinder should decide it.
fn expected(signal: bool, in_plt: bool, cfa: &str, rbp: &str, ra: &str) -> Rule {
    if signal {
        return Rule::Signal;
    }
    match ra {
        "u" => return Rule::Stop,
        "c-8" => {}
        _ => return Rule::Unsupported(Unsupported::ReturnAddress),
    }
    let (base, offset) = if cfa == "exp" {
        return if in_plt { Rule::Plt { threshold: 11 } } else { Rule::Unsupported(Unsupported::CfaExpression) };
    } else if let Some(n) = cfa.strip_prefix("rsp+") {
        (Base::Rsp, n.parse::<i32>().unwrap())
    } else if let Some(n) = cfa.strip_prefix("rbp+") {
        (Base::Rbp, n.parse::<i32>().unwrap())
    } else {
        return Rule::Unsupported(Unsupported::CfaRegister);
    };
    if offset % 8 != 0 || offset > 65_535 * 8 {
        return Rule::Unsupported(Unsupported::CfaOffset);
    }
    let rbp = match rbp {
        "u" | "s" => None,
        r => match r.strip_prefix("c-").and_then(|n| n.parse::<i32>().ok()) {
            Some(n) if n % 8 == 0 => Some(-n),
            _ => return Rule::Unsupported(Unsupported::RbpRule),
        },
    };
    Rule::Cfa { base, offset, rbp }
}

/// `.plt`-like sections' address ranges, where the one CFA expression is the PLT's.
fn plt_ranges(binary: &Path) -> Vec<(u64, u64)> {
    let out = Command::new("readelf").args(["--section-headers", "--wide"]).arg(binary).output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let i = w.iter().position(|x| x.starts_with(".plt"))?;
            let addr = u64::from_str_radix(w.get(i + 2)?, 16).ok()?;
            let size = u64::from_str_radix(w.get(i + 4)?, 16).ok()?;
            Some((addr, addr + size))
        })
        .collect()
}

fn check(binary: &Path) {
    let bytes = std::fs::read(binary).unwrap();
    let table = Table::from_elf(&bytes[..]).unwrap();
    let paged = table.paged().unwrap();
    let fdes = readelf_fdes(binary);
    assert!(fdes.len() > 10, "{}: readelf printed {} FDEs", binary.display(), fdes.len());
    let plt = plt_ranges(binary);
    let starts: std::collections::HashSet<u64> = fdes.iter().map(|f| f.start).collect();
    let (mut checked, mut evaluated) = (0usize, 0usize);
    for fde in &fdes {
        for (i, (loc, cfa, rbp, ra)) in fde.rows.iter().enumerate() {
            let next = fde.rows.get(i + 1).map_or(fde.end, |r| r.0);
            if *loc >= next {
                continue;
            }
            let in_plt = plt.iter().any(|&(a, b)| (a..b).contains(loc));
            let want = expected(fde.signal, in_plt, cfa, rbp, ra);
            for pc in [*loc, next - 1] {
                assert_eq!(
                    table.lookup(pc),
                    want,
                    "{} at {pc:#x}: readelf says CFA {cfa}, rbp {rbp}, ra {ra}",
                    binary.display()
                );
                let row = paged.lookup(pc).expect("a page for every covered address");
                assert_eq!(row, want.row(row_start(&table, pc)), "{}: paged row at {pc:#x}", binary.display());
            }
            checked += 1;
            evaluated += !matches!(want, Rule::Unsupported(_)) as usize;
        }
        if !starts.contains(&fde.end) && !fdes.iter().any(|f| (f.start..f.end).contains(&fde.end)) {
            assert_eq!(
                table.lookup(fde.end),
                Rule::Invalid,
                "{}: the gap after the FDE ending {:#x}",
                binary.display(),
                fde.end
            );
        }
    }
    eprintln!(
        "{}: {} FDEs, {checked} readelf rows checked ({:.2} % rules the kernel evaluates), {} table rows, {} pages",
        binary.display(),
        fdes.len(),
        100.0 * evaluated as f64 / checked as f64,
        table.rows.len(),
        paged.pages.len()
    );
    assert_eq!(table.parsed.bad_fdes, 0);
    assert!(evaluated * 1000 >= checked * 995, "{}: {evaluated} of {checked} rows evaluated", binary.display());
}

/// The start of the table row covering `pc` (what the paged row's low bits hold).
fn row_start(table: &Table, pc: u64) -> u64 {
    table.rows[table.rows.partition_point(|r| r.0 <= pc) - 1].0
}

fn have_readelf() -> bool {
    if Command::new("readelf").arg("--version").output().is_ok() {
        return true;
    }
    assert!(std::env::var_os("CI").is_none(), "CI machines have binutils (readelf)");
    eprintln!("SKIP: readelf (binutils) is not installed");
    false
}

fn system_binary(candidates: &[&str]) -> Option<PathBuf> {
    let found = candidates.iter().map(PathBuf::from).find(|p| p.exists()).map(|p| p.canonicalize().unwrap());
    if found.is_none() {
        eprintln!("SKIP {}: not on this machine", candidates[0]);
    }
    found
}

#[test]
fn debian_binaries_without_frame_pointers() {
    if !have_readelf() {
        return;
    }
    let wanted: [&[&str]; 4] = [
        &["/bin/dash", "/usr/bin/dash"],
        &["/bin/gzip", "/usr/bin/gzip"],
        &["/usr/bin/python3"],
        &["/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6"],
    ];
    for candidates in wanted {
        if let Some(binary) = system_binary(candidates) {
            check(&binary);
        }
    }
}

#[test]
fn a_program_built_here_without_frame_pointers() {
    if !have_readelf() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testbed/fixtures/deep.c");
    let out = dir.path().join("deep");
    let built = Command::new("cc").args(["-O2", "-fomit-frame-pointer", "-o"]).arg(&out).arg(&src).status();
    assert!(built.expect("running cc").success());
    check(&out);
    // Its ten levels keep their frames on the stack (CFA = RSP + 96 inside each, no RBP): the
    // unwinder evaluates every one.
    let table = Table::from_elf(&std::fs::read(&out).unwrap()[..]).unwrap();
    assert!(
        table.rows.iter().any(|(_, r)| matches!(r, Rule::Cfa { base: Base::Rsp, offset, rbp: None } if *offset > 8))
    );
}

#[test]
fn not_an_x86_elf_is_refused_with_a_reason() {
    for bytes in [&b"not an elf"[..], b"\x7fELF", b""] {
        let err = Table::from_elf(bytes).unwrap_err().to_string();
        assert!(err.contains("not an ELF file"), "{err}");
    }
}

/// A binary is any process's file: corrupted call-frame information must give a table (of
/// what could be read) or an error, never a panic or an unbounded table.
#[test]
fn corrupted_call_frame_information_is_survived() {
    let Some(dash) = system_binary(&["/bin/dash", "/usr/bin/dash"]) else { return };
    let original = std::fs::read(&dash).unwrap();
    let clean = Table::from_elf(&original[..]).unwrap();
    // `.eh_frame`'s place in the file, from the ELF section headers readelf prints.
    let out = Command::new("readelf").args(["--section-headers", "--wide"]).arg(&dash).output();
    let Ok(out) = out else { return };
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text.lines().find(|l| l.contains(" .eh_frame ")).expect(".eh_frame in dash");
    let w: Vec<&str> = line.split_whitespace().collect();
    let i = w.iter().position(|x| *x == ".eh_frame").unwrap();
    let (offset, size) = (usize::from_str_radix(w[i + 3], 16).unwrap(), usize::from_str_radix(w[i + 4], 16).unwrap());
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (mut tables, mut errors, mut changed) = (0, 0, 0);
    for round in 0..300 {
        let mut bytes = original.clone();
        for _ in 0..1 + round % 16 {
            let at = offset + (next() as usize) % size;
            bytes[at] = next() as u8;
        }
        match Table::from_elf(&bytes[..]) {
            Ok(table) => {
                tables += 1;
                assert!(table.rows.len() <= loupe_unwind::cfi::MAX_ROWS);
                let _ = table.paged().unwrap();
                changed += (table.rows != clean.rows) as usize;
            }
            Err(_) => errors += 1,
        }
    }
    eprintln!("300 corrupted copies of dash: {tables} tables ({changed} unlike the clean one), {errors} refused");
    assert!(changed + errors >= 100, "the corruption reached the call-frame information");
}
