//! Python frames at ingest: each code object a sample's walk recorded is named from the
//! process's memory (once per code object and identity, remembered like native answers), and
//! the Python frames take the place of the evaluation loop's native frames they ran in.
//!
//! **Interleaving.** The kernel records the interpreter's frames innermost first, marking the
//! first frame each call of the evaluation loop ran (3.8–3.10: every frame; 3.11: `is_entry`;
//! 3.12+: the frame above a C-stack frame). Cut at those marks, the Python frames fall into
//! one group per `_PyEval_EvalFrameDefault` frame of the native stack, innermost with
//! innermost: each such native frame is replaced by its group. So a C extension called from a
//! Python function stands under it (`zlib.compress` under `compress_loop`), and the native
//! frames that called into Python (`main`, `Py_RunMain`) stay below. Groups left when the
//! native stack has no more evaluation frames (a native walk cut short) go at its outer end, in
//! order: nothing sampled is dropped.

use std::collections::HashMap;

use loupe_bpf::{
    PyFrameRef, PythonStack,
    python::{
        code::{self, NameError},
        process::Memory,
    },
};
use loupe_store::{Frame, Name};

use super::TRUNCATED_PREFIX;

/// The evaluation loop's native function: where the interpreter runs Python frames.
pub const EVAL_FRAME: &str = "_PyEval_EvalFrameDefault";
/// Code objects remembered at most (then all are forgotten and read again as met).
const MAX_NAMES: usize = 65_536;
/// Processes whose memory is held open at most (a file descriptor each): a host starting
/// thousands of Python processes a minute must not run the agent out of descriptors.
const MAX_MEMORIES: usize = 256;

/// Names of code objects, by process, address and identity.
#[derive(Default)]
pub struct PythonNames {
    names: HashMap<(u32, u64, u32), Frame>,
    /// Each process's memory, opened once (`None`: gone or unreadable).
    memories: HashMap<u32, Option<Memory>>,
}

impl PythonNames {
    /// Forgets every answer (PIDs are reused; code objects freed).
    pub fn forget(&mut self) {
        self.names.clear();
        self.memories.clear();
    }

    /// The native user frames (leaf first) with the Python frames in place of the evaluation
    /// loop's, and a `[truncated: …]` frame at the outer end when the Python walk stopped short.
    pub fn interleave(&mut self, pid: u32, python: &PythonStack, native: Vec<Frame>) -> Vec<Frame> {
        let mut groups: Vec<Vec<Frame>> = Vec::new();
        let mut group = Vec::new();
        for f in &python.frames {
            group.push(self.frame(pid, python, f));
            if f.entry {
                groups.push(std::mem::take(&mut group));
            }
        }
        if !group.is_empty() {
            groups.push(group);
        }
        let mut groups = groups.into_iter();
        let mut out = Vec::with_capacity(native.len() + python.frames.len());
        for frame in native {
            if &*frame.function == EVAL_FRAME
                && let Some(group) = groups.next()
            {
                out.extend(group);
            } else {
                out.push(frame);
            }
        }
        out.extend(groups.flatten());
        // A stack cut short ends in its marker, as a native one does.
        if let Some(reason) = python.end.reason() {
            out.push(Frame::user(format!("{TRUNCATED_PREFIX}{reason}]"), Name::default()));
        }
        out
    }

    fn frame(&mut self, pid: u32, python: &PythonStack, f: &PyFrameRef) -> Frame {
        if self.names.len() >= MAX_NAMES {
            self.forget();
        }
        let key = (pid, f.code, f.identity);
        if let Some(frame) = self.names.get(&key) {
            return frame.clone();
        }
        if self.memories.len() >= MAX_MEMORIES && !self.memories.contains_key(&pid) {
            self.memories.clear();
        }
        let memory = self.memories.entry(pid).or_insert_with(|| Memory::open(pid));
        let frame = match memory.as_ref().map(|m| code::read(m, python.layout, f.code, f.identity)) {
            Some(Ok(named)) => Frame::python(named.qualname, named.file),
            Some(Err(NameError::Changed)) => Frame::user("[python: code object gone]", Name::default()),
            Some(Err(NameError::NotAString)) => Frame::user("[python: unnamed code object]", Name::default()),
            Some(Err(NameError::Unreadable)) | None => {
                // Not remembered: the process may be gone, or the object freed; a later sample
                // of a live one may read it.
                return Frame::user("[python: process gone]", Name::default());
            }
        };
        self.names.insert(key, frame.clone());
        frame
    }
}

#[cfg(test)]
mod tests {
    use loupe_bpf::{PyEnd, python::layout};

    use super::*;

    fn native(names: &[&str]) -> Vec<Frame> {
        names.iter().map(|n| Frame::user(*n, "python3.12")).collect()
    }

    /// A walk whose code objects cannot be read (PID 0 has no memory to open): every Python
    /// frame reads "[python: process gone]", which is enough to see where each one went.
    fn stack(entries: &[bool], end: PyEnd) -> PythonStack {
        PythonStack {
            frames: entries
                .iter()
                .enumerate()
                .map(|(i, &entry)| PyFrameRef { code: 0x1000 + i as u64, identity: 0, instr: 0, entry })
                .collect(),
            end,
            layout: layout::for_minor(12).unwrap(),
        }
    }

    fn names(frames: &[Frame]) -> Vec<&str> {
        frames.iter().map(|f| &*f.function).collect()
    }

    const PY: &str = "[python: process gone]";

    #[test]
    fn each_group_takes_the_place_of_its_evaluation_frame_innermost_first() {
        let mut names_ = PythonNames::default();
        // Two calls of the loop: frames 0–1 in the inner one (1 began it), 2 in the outer one,
        // a C function (`zlib_compress`) between them.
        let native =
            native(&["deflate", "zlib_compress", EVAL_FRAME, "cfunction_call", EVAL_FRAME, "Py_RunMain", "main"]);
        let out = names_.interleave(0, &stack(&[false, true, true], PyEnd::Root), native);
        assert_eq!(names(&out), ["deflate", "zlib_compress", PY, PY, "cfunction_call", PY, "Py_RunMain", "main"]);
    }

    #[test]
    fn groups_left_over_go_to_the_outer_end_and_a_short_walk_says_so() {
        let mut names_ = PythonNames::default();
        // The native walk was cut before the outer evaluation frame: its group is not dropped.
        let out = names_.interleave(0, &stack(&[true, true], PyEnd::Depth), native(&["leaf", EVAL_FRAME]));
        assert_eq!(names(&out), ["leaf", PY, PY, "[truncated: python depth]"]);
        // No Python frame at all (the thread ran none): the native stack as it was.
        let out = names_.interleave(0, &stack(&[], PyEnd::Idle), native(&["leaf", EVAL_FRAME, "main"]));
        assert_eq!(names(&out), ["leaf", EVAL_FRAME, "main"]);
        // More evaluation frames than groups: the outer ones stay native.
        let out = names_.interleave(0, &stack(&[true], PyEnd::Root), native(&[EVAL_FRAME, EVAL_FRAME]));
        assert_eq!(names(&out), [PY, EVAL_FRAME]);
    }
}
