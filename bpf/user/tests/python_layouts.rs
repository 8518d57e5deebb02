//! Loupe's table of CPython layouts (`src/python/layout.rs`) against each version's own DWARF:
//! for every pyenv build on the machine (3.8–3.13, built with debug information), gdb reads
//! each offset the walk and the namer use from `libpython3.X.so`, and any difference fails.
//! A new patch release that moved a field, or a wrong entry, is caught here, not by a profile
//! that names the wrong function.

use std::{path::PathBuf, process::Command};

use loupe_bpf::python::layout::{self, Layout};
use loupe_bpf_common::python::PY_NO_FIELD;

/// pyenv's `libpython3.X.so` of each minor version installed, with its version.
fn libpythons() -> Vec<(u8, PathBuf)> {
    let Ok(dirs) = std::fs::read_dir("/root/.pyenv/versions") else { return Vec::new() };
    let mut found = Vec::new();
    for dir in dirs.filter_map(|d| d.ok()).map(|d| d.path()) {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let Some(minor) = name.strip_prefix("3.").and_then(|r| r.split('.').next()?.parse::<u8>().ok()) else {
            continue;
        };
        let lib = dir.join(format!("lib/libpython3.{minor}.so"));
        if layout::for_minor(minor).is_some() && lib.exists() {
            found.push((minor, lib));
        }
    }
    found.sort();
    found
}

/// Each expression's value, through one gdb; `None` where gdb cannot evaluate it (a field the
/// version does not have).
fn gdb_values(lib: &PathBuf, exprs: &[String]) -> Vec<Option<u64>> {
    let mut cmd = Command::new("gdb");
    cmd.args(["-batch", "-nx"]);
    for (i, e) in exprs.iter().enumerate() {
        // Numbered: an expression gdb cannot evaluate prints an error and no line.
        cmd.arg("-ex").arg(format!("printf \"{i} %ld\\n\", (long)({e})"));
    }
    let out = cmd.arg(lib).output().expect("running gdb (scripts/setup installs it)");
    let mut values = vec![None; exprs.len()];
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((i, v)) = line.split_once(' ') else { continue };
        if let (Ok(i), Ok(v)) = (i.parse::<usize>(), v.trim().parse::<u64>())
            && let Some(slot) = values.get_mut(i)
        {
            *slot = Some(v);
        }
    }
    values
}

/// (what, gdb expression, the table's value) for one version.
fn checks(l: &Layout) -> Vec<(&'static str, String, u64)> {
    let off = |ty: &str, field: &str| format!("&(({ty}*)0)->{field}");
    let w = &l.walk;
    let old = l.minor <= 10;
    let mut c = vec![
        ("runtime interpreters.head", off("struct pyruntimestate", "interpreters.head"), l.runtime_interpreters_head),
        (
            "interpreter's threads",
            off("struct _is", if old { "tstate_head" } else { "threads.head" }),
            l.interp_threads_head,
        ),
        ("thread next", off("struct _ts", "next"), l.thread_next),
        ("thread pthread_t", off("struct _ts", "thread_id"), u64::from(w.thread_pthread)),
        ("code first line", off("PyCodeObject", "co_firstlineno"), l.code.first_line),
        ("code filename", off("PyCodeObject", "co_filename"), l.code.filename),
        ("code name", off("PyCodeObject", "co_name"), l.code.name),
        ("walk code first line", off("PyCodeObject", "co_firstlineno"), u64::from(w.code_first_line)),
        ("ASCII string header", "sizeof(PyASCIIObject)".into(), l.strings.ascii_size),
        ("compact string header", "sizeof(PyCompactUnicodeObject)".into(), l.strings.compact_size),
    ];
    let name_field = if l.minor >= 11 { "co_qualname" } else { "co_name" };
    c.push(("walk code name", off("PyCodeObject", name_field), u64::from(w.code_name)));
    if let Some(q) = l.code.qualname {
        c.push(("code qualname", off("PyCodeObject", "co_qualname"), q));
    }
    if old {
        c.extend([
            ("thread frame", off("struct _ts", "frame"), u64::from(w.thread_frame)),
            ("frame back", off("struct _frame", "f_back"), u64::from(w.frame_previous)),
            ("frame code", off("struct _frame", "f_code"), u64::from(w.frame_code)),
            ("frame lasti", off("struct _frame", "f_lasti"), u64::from(w.frame_instr)),
        ]);
    } else {
        let frame = "struct _PyInterpreterFrame";
        let (thread_frame, code, instr) = match l.minor {
            11 | 12 => ("cframe", "f_code", "prev_instr"),
            _ => ("current_frame", "f_executable", "instr_ptr"),
        };
        c.extend([
            ("thread frame", off("struct _ts", thread_frame), u64::from(w.thread_frame)),
            ("thread native id", off("struct _ts", "native_thread_id"), u64::from(w.thread_native_id)),
            ("frame previous", off(frame, "previous"), u64::from(w.frame_previous)),
            ("frame code", off(frame, code), u64::from(w.frame_code)),
            ("frame instruction", off(frame, instr), u64::from(w.frame_instr)),
            ("frame entry", off(frame, if l.minor == 11 { "is_entry" } else { "owner" }), u64::from(w.frame_entry)),
        ]);
        if w.cframe_frame != PY_NO_FIELD {
            c.push(("cframe current frame", off("_PyCFrame", "current_frame"), u64::from(w.cframe_frame)));
        }
        if w.c_stack_owner != PY_NO_FIELD {
            c.push(("C stack owner", "FRAME_OWNED_BY_CSTACK".into(), u64::from(w.c_stack_owner)));
        }
    }
    c
}

#[test]
fn the_table_is_what_each_pythons_own_debug_information_says() {
    let found = libpythons();
    if found.is_empty() {
        assert!(std::env::var_os("CI").is_none(), "no pyenv Python in CI: the machine's image holds 3.8–3.13");
        eprintln!("SKIP: no pyenv CPython 3.8–3.13 on this machine");
        return;
    }
    let mut wrong = Vec::new();
    for (minor, lib) in &found {
        let l = layout::for_minor(*minor).unwrap();
        let checks = checks(l);
        let exprs: Vec<String> = checks.iter().map(|c| c.1.clone()).collect();
        let values = gdb_values(lib, &exprs);
        for ((what, expr, ours), theirs) in checks.iter().zip(values) {
            if theirs != Some(*ours) {
                wrong.push(format!("3.{minor} {what} ({expr}): table {ours}, DWARF {theirs:?}"));
            }
        }
        eprintln!("3.{minor}: {} offsets checked against {}", checks.len(), lib.display());
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}
