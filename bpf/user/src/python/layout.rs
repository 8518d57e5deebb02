//! Where CPython 3.8–3.13 keeps what Loupe reads, by minor version: x86-64 builds without
//! `Py_DEBUG` (what distributions and pyenv build).
//!
//! Where the numbers come from: each version's own DWARF (`gdb ptype /o` on pyenv's
//! `libpython3.X.so`, 3.8.18–3.13.0), and for 3.13 also the `_Py_DebugOffsets` the interpreter
//! carries at the start of `_PyRuntime`, which a process's are checked against before it is
//! walked ([`check_debug_offsets`]). Within a minor version CPython keeps these structures'
//! layout (their fields are read by debuggers and profilers); `bpf/user/tests/python_layouts.rs`
//! reads every offset from the DWARF of each pyenv build on the machine (with gdb) and fails on
//! any difference, so a table entry is never a guess.

use loupe_bpf_common::python::{PY_NO_FIELD, PyProcess, py_entry, py_layout};

/// What Loupe reads of one CPython version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// 3.`minor`.
    pub minor: u8,
    /// In `_PyRuntimeState`: `interpreters.head`.
    pub runtime_interpreters_head: u64,
    /// In `PyInterpreterState`: `tstate_head` (3.8–3.10) or `threads.head`.
    pub interp_threads_head: u64,
    /// In `PyThreadState`: `next`.
    pub thread_next: u64,
    /// The frame walk's offsets, as the kernel reads them (`minor` and `pthread_tid` set per
    /// process).
    pub walk: PyProcess,
    /// A code object.
    pub code: CodeLayout,
    /// A `str`.
    pub strings: StringLayout,
}

/// Where a code object keeps its names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodeLayout {
    pub first_line: u64,
    pub filename: u64,
    pub name: u64,
    /// `co_qualname` (3.11+): `Class.method`, `outer.<locals>.inner`.
    pub qualname: Option<u64>,
}

/// A compact `str`: its header's size decides where its characters begin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StringLayout {
    /// `PyASCIIObject`'s size: where an ASCII string's bytes begin.
    pub ascii_size: u64,
    /// `PyCompactUnicodeObject`'s size: where a compact non-ASCII string's begin.
    pub compact_size: u64,
}

/// In every version: `ob_type` in an object's header, `length` and `state` in a `str`'s.
pub const OB_TYPE: u64 = 8;
pub const STRING_LENGTH: u64 = 16;
pub const STRING_STATE: u64 = 32;

const STRINGS_TO_3_11: StringLayout = StringLayout { ascii_size: 48, compact_size: 72 };
const STRINGS_FROM_3_12: StringLayout = StringLayout { ascii_size: 40, compact_size: 56 };

/// 3.8–3.10: a `PyFrameObject` per frame, each run by a call of its own to the loop.
const fn frame_objects(minor: u32, f_lasti: u32) -> PyProcess {
    PyProcess {
        layout: py_layout::FRAME_OBJECTS,
        entry: py_entry::EVERY_FRAME,
        thread_frame: 24,
        cframe_frame: PY_NO_FIELD,
        frame_previous: 24,
        frame_code: 32,
        frame_instr: f_lasti,
        frame_entry: PY_NO_FIELD,
        c_stack_owner: PY_NO_FIELD,
        frame_window: f_lasti + 4,
        code_first_line: 40,
        code_name: 112,
        thread_native_id: PY_NO_FIELD,
        thread_pthread: 176,
        pthread_tid: PY_NO_FIELD,
        minor,
        _pad: 0,
    }
}

const CODE_TO_3_10: CodeLayout = CodeLayout { first_line: 40, filename: 104, name: 112, qualname: None };

static LAYOUTS: [Layout; 6] = [
    Layout {
        minor: 8,
        runtime_interpreters_head: 32,
        interp_threads_head: 8,
        thread_next: 8,
        walk: frame_objects(8, 104),
        code: CODE_TO_3_10,
        strings: STRINGS_TO_3_11,
    },
    Layout {
        minor: 9,
        runtime_interpreters_head: 32,
        interp_threads_head: 8,
        thread_next: 8,
        walk: frame_objects(9, 104),
        code: CODE_TO_3_10,
        strings: STRINGS_TO_3_11,
    },
    Layout {
        minor: 10,
        runtime_interpreters_head: 32,
        interp_threads_head: 8,
        thread_next: 8,
        walk: frame_objects(10, 96),
        code: CODE_TO_3_10,
        strings: STRINGS_TO_3_11,
    },
    Layout {
        minor: 11,
        runtime_interpreters_head: 40,
        interp_threads_head: 16,
        thread_next: 8,
        walk: PyProcess {
            layout: py_layout::INTERPRETER_FRAMES,
            entry: py_entry::FLAG,
            thread_frame: 56,
            cframe_frame: 8,
            frame_previous: 48,
            frame_code: 32,
            frame_instr: 56,
            frame_entry: 68,
            c_stack_owner: PY_NO_FIELD,
            frame_window: 72,
            code_first_line: 72,
            code_name: 128,
            thread_native_id: 160,
            thread_pthread: 152,
            pthread_tid: PY_NO_FIELD,
            minor: 11,
            _pad: 0,
        },
        code: CodeLayout { first_line: 72, filename: 112, name: 120, qualname: Some(128) },
        strings: STRINGS_TO_3_11,
    },
    Layout {
        minor: 12,
        runtime_interpreters_head: 40,
        interp_threads_head: 72,
        thread_next: 8,
        walk: PyProcess {
            layout: py_layout::INTERPRETER_FRAMES,
            entry: py_entry::C_STACK_FRAME,
            thread_frame: 56,
            cframe_frame: 0,
            frame_previous: 8,
            frame_code: 0,
            frame_instr: 56,
            frame_entry: 70,
            c_stack_owner: 3,
            frame_window: 72,
            code_first_line: 68,
            code_name: 128,
            thread_native_id: 144,
            thread_pthread: 136,
            pthread_tid: PY_NO_FIELD,
            minor: 12,
            _pad: 0,
        },
        code: CodeLayout { first_line: 68, filename: 112, name: 120, qualname: Some(128) },
        strings: STRINGS_FROM_3_12,
    },
    Layout {
        minor: 13,
        runtime_interpreters_head: 632,
        interp_threads_head: 7344,
        thread_next: 8,
        walk: PyProcess {
            layout: py_layout::INTERPRETER_FRAMES,
            entry: py_entry::C_STACK_FRAME,
            thread_frame: 72,
            cframe_frame: PY_NO_FIELD,
            frame_previous: 8,
            frame_code: 0,
            frame_instr: 56,
            frame_entry: 70,
            c_stack_owner: 3,
            frame_window: 72,
            code_first_line: 68,
            code_name: 128,
            thread_native_id: 160,
            thread_pthread: 152,
            pthread_tid: PY_NO_FIELD,
            minor: 13,
            _pad: 0,
        },
        code: CodeLayout { first_line: 68, filename: 112, name: 120, qualname: Some(128) },
        strings: STRINGS_FROM_3_12,
    },
];

/// The layout of CPython 3.`minor`, if Loupe knows it.
pub fn for_minor(minor: u8) -> Option<&'static Layout> {
    LAYOUTS.iter().find(|l| l.minor == minor)
}

/// The versions Loupe walks.
pub fn known() -> impl Iterator<Item = &'static Layout> {
    LAYOUTS.iter()
}

/// `_Py_DebugOffsets`' cookie (3.13+), at the start of `_PyRuntime`.
pub const DEBUG_OFFSETS_COOKIE: &[u8; 8] = b"xdebugpy";
/// Bytes of `_Py_DebugOffsets` read (through `code_object.co_code_adaptive`).
pub const DEBUG_OFFSETS_READ: usize = 352;

/// Checks 3.13+'s `_Py_DebugOffsets` (the first bytes of the process's `_PyRuntime`) against
/// the table: every offset the walk and the namer read must be what the interpreter says.
/// `Err` names the first that differs (the process is then not walked).
pub fn check_debug_offsets(layout: &Layout, bytes: &[u8]) -> Result<(), String> {
    if bytes.len() < DEBUG_OFFSETS_READ || &bytes[..8] != DEBUG_OFFSETS_COOKIE {
        return Err("no _Py_DebugOffsets at the start of _PyRuntime".into());
    }
    let at = |offset: usize| u64::from_le_bytes(bytes[offset..offset + 8].try_into().expect("eight bytes"));
    let version = at(8);
    if (version >> 24) != 3 || ((version >> 16) & 0xff) as u8 != layout.minor {
        return Err(format!("_Py_DebugOffsets says version {version:#x}, the binary 3.{}", layout.minor));
    }
    if at(16) != 0 {
        return Err("a free-threaded build (its frames are not walked)".into());
    }
    let walk = &layout.walk;
    let checks: [(&str, usize, u64); 12] = [
        ("runtime_state.interpreters_head", 40, layout.runtime_interpreters_head),
        ("interpreter_state.threads_head", 72, layout.interp_threads_head),
        ("thread_state.next", 168, layout.thread_next),
        ("thread_state.current_frame", 184, u64::from(walk.thread_frame)),
        ("thread_state.thread_id", 192, u64::from(walk.thread_pthread)),
        ("thread_state.native_thread_id", 200, u64::from(walk.thread_native_id)),
        ("interpreter_frame.previous", 232, u64::from(walk.frame_previous)),
        ("interpreter_frame.executable", 240, u64::from(walk.frame_code)),
        ("interpreter_frame.instr_ptr", 248, u64::from(walk.frame_instr)),
        ("interpreter_frame.owner", 264, u64::from(walk.frame_entry)),
        ("code_object.filename", 280, layout.code.filename),
        ("code_object.firstlineno", 312, layout.code.first_line),
    ];
    for (name, offset, ours) in checks {
        if at(offset) != ours {
            return Err(format!("_Py_DebugOffsets' {name} is {}, Loupe's table says {ours}", at(offset)));
        }
    }
    let (name, qualname) = (at(288), at(296));
    if name != layout.code.name || Some(qualname) != layout.code.qualname {
        return Err(format!("_Py_DebugOffsets' code_object.name/qualname are {name}/{qualname}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_the_walk_reads_lies_in_its_window() {
        for l in known() {
            let w = &l.walk;
            let instr = if w.layout == py_layout::FRAME_OBJECTS { 4 } else { 8 };
            let ends = [w.frame_previous + 8, w.frame_code + 8, w.frame_instr + instr];
            for end in ends.into_iter().chain((w.frame_entry != PY_NO_FIELD).then_some(w.frame_entry + 1)) {
                assert!(end <= w.frame_window, "3.{}: a field ends at {end}, past the window", l.minor);
            }
            assert!(w.frame_window as usize <= loupe_bpf_common::python::PY_FRAME_WINDOW, "3.{}", l.minor);
            assert!(
                (w.frame_window as usize) < loupe_bpf_common::python::PY_FRAME_WINDOW,
                "3.{}: below the buffer",
                l.minor
            );
            assert_eq!(w.minor, u32::from(l.minor));
            assert_eq!(u64::from(w.code_first_line), l.code.first_line);
            assert_eq!(u64::from(w.code_name), l.code.qualname.unwrap_or(l.code.name), "3.{}: the name named", l.minor);
            let span = (w.code_name + 8 - w.code_first_line) as usize;
            assert!(span < loupe_bpf_common::python::PY_CODE_WINDOW, "3.{}: {span}", l.minor);
        }
    }

    /// 3.13.0's own `_Py_DebugOffsets` (read from pyenv's libpython3.13 with gdb), as bytes.
    fn debug_offsets_3_13() -> Vec<u8> {
        let mut b = vec![0u8; DEBUG_OFFSETS_READ];
        b[..8].copy_from_slice(DEBUG_OFFSETS_COOKIE);
        let mut put = |offset: usize, v: u64| b[offset..offset + 8].copy_from_slice(&v.to_le_bytes());
        put(8, 0x030d00f0);
        for (offset, v) in [
            (40, 632),
            (72, 7344),
            (168, 8),
            (184, 72),
            (192, 152),
            (200, 160),
            (232, 8),
            (240, 0),
            (248, 56),
            (264, 70),
            (280, 112),
            (288, 120),
            (296, 128),
            (312, 68),
        ] {
            put(offset, v);
        }
        b
    }

    #[test]
    fn the_3_13_table_is_what_the_interpreter_says_and_a_difference_is_refused() {
        let layout = for_minor(13).unwrap();
        let bytes = debug_offsets_3_13();
        assert_eq!(check_debug_offsets(layout, &bytes), Ok(()));
        let mut moved = bytes.clone();
        moved[248] = 64; // instr_ptr elsewhere
        assert!(check_debug_offsets(layout, &moved).unwrap_err().contains("instr_ptr"));
        let mut other = bytes.clone();
        other[8..16].copy_from_slice(&0x030e00f0u64.to_le_bytes());
        assert!(check_debug_offsets(layout, &other).unwrap_err().contains("version"));
        let mut threaded = bytes.clone();
        threaded[16] = 1;
        assert!(check_debug_offsets(layout, &threaded).unwrap_err().contains("free-threaded"));
        assert!(check_debug_offsets(layout, &bytes[..100]).is_err(), "too short");
        assert!(check_debug_offsets(layout, &[0u8; DEBUG_OFFSETS_READ]).unwrap_err().contains("no _Py_DebugOffsets"));
    }
}
