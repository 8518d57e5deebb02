//! CPython's frames in Loupe's stacks, userspace's half: finding the interpreter in each process
//! the sampler loads ([`process`]), its version's layout ([`layout`]), telling the kernel where
//! its threads' states are, what a sample's Python frames are ([`PythonStack`]), and naming
//! them from their code objects ([`code`]).
//!
//! The kernel walks (`bpf/ebpf/src/stacks/python.rs`); the names come later, at ingest, read
//! from the process's code objects. docs/stacks.md has the whole story.

pub mod code;
pub mod layout;
pub mod process;

use std::{
    collections::HashMap as StdHashMap,
    time::{Duration, Instant},
};

use aya::maps::{HashMap, Map, MapData};
pub use layout::Layout;
use loupe_bpf_common::python::{MAP_PY_PROCS, MAP_PY_THREADS, PY_FRAME_ENTRY, PyFrame, PyProcess, py_end};
use process::{Executable, Interpreter, SymbolCache};

use crate::SamplerError;

/// A process's threads are read again at most this often (each thread the kernel does not know
/// yet asks every 10 ms while sampled): a thread pool that starts threads for tens of
/// milliseconds has most named.
const THREADS_EVERY: Duration = Duration::from_millis(5);

/// How a sample's Python walk ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PyEnd {
    /// At the thread's outermost frame: the whole Python stack.
    Root,
    /// `MAX_PY_FRAMES` frames before the root.
    Depth,
    /// A frame could not be read (the process changed it under the walk, or freed it).
    Unreadable,
    /// The thread's state was not known yet (read again since).
    UnknownThread,
    /// The thread ran no Python code (its interpreter frames are all returned).
    Idle,
}

impl PyEnd {
    pub fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            py_end::ROOT => PyEnd::Root,
            py_end::DEPTH => PyEnd::Depth,
            py_end::UNREADABLE => PyEnd::Unreadable,
            py_end::UNKNOWN_THREAD => PyEnd::UnknownThread,
            py_end::IDLE => PyEnd::Idle,
            _ => return None,
        })
    }

    /// Why a Python stack is not whole (`None` when it is), for its `[truncated: …]` frame.
    pub fn reason(self) -> Option<&'static str> {
        match self {
            PyEnd::Root | PyEnd::Idle => None,
            PyEnd::Depth => Some("python depth"),
            PyEnd::Unreadable => Some("python frame unreadable"),
            PyEnd::UnknownThread => Some("python thread not read yet"),
        }
    }
}

/// One Python frame of a sample, as the kernel read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PyFrameRef {
    /// The code object's address in the process.
    pub code: u64,
    /// What the code object was when sampled (its first line and name:
    /// `loupe_bpf_common::python::code_identity`), which tells a reused address apart.
    pub identity: u32,
    /// 3.8–3.10: `f_lasti`; 3.11+: the instruction's offset from the code object.
    pub instr: u32,
    /// The first frame a call of the evaluation loop ran: it belongs under that call's native
    /// `_PyEval_EvalFrameDefault` frame.
    pub entry: bool,
}

impl From<&PyFrame> for PyFrameRef {
    fn from(f: &PyFrame) -> Self {
        PyFrameRef {
            code: f.code,
            identity: f.identity,
            instr: f.instr & !PY_FRAME_ENTRY,
            entry: f.instr & PY_FRAME_ENTRY != 0,
        }
    }
}

/// A sample's Python frames, innermost first, and its interpreter's layout (to name them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PythonStack {
    pub frames: Vec<PyFrameRef>,
    pub end: PyEnd,
    pub layout: &'static Layout,
}

/// The processes running CPython, and their threads, as the kernel is told of them.
pub(crate) struct Pythons {
    procs: HashMap<MapData, u32, PyProcess>,
    threads: HashMap<MapData, u64, u64>,
    known: StdHashMap<u32, Known>,
    symbols: SymbolCache,
    /// Processes whose interpreter could not be walked, and why (said once each).
    refused: StdHashMap<u32, String>,
}

struct Known {
    interpreter: Interpreter,
    /// Thread ids given to the kernel.
    tids: Vec<u32>,
    threads_read: Instant,
}

impl Pythons {
    pub(crate) fn new(procs: Map, threads: Map) -> Result<Self, SamplerError> {
        let procs = HashMap::try_from(procs).map_err(|e| SamplerError::Load(format!("map {MAP_PY_PROCS}: {e}")))?;
        let threads =
            HashMap::try_from(threads).map_err(|e| SamplerError::Load(format!("map {MAP_PY_THREADS}: {e}")))?;
        Ok(Pythons {
            procs,
            threads,
            known: StdHashMap::new(),
            symbols: SymbolCache::default(),
            refused: StdHashMap::new(),
        })
    }

    /// A process was (re)loaded: finds its interpreter, if any, and its threads. A process that
    /// exec'd into something else is forgotten.
    pub(crate) fn load(&mut self, pid: u32, executables: &[Executable]) {
        match process::find(pid, executables, &mut self.symbols) {
            Ok(Some(interpreter)) => {
                if self.known.get(&pid).is_some_and(|k| k.interpreter == interpreter) {
                    return;
                }
                self.unwalk(pid);
                if let Err(e) = self.procs.insert(pid, interpreter.walk(), 0) {
                    tracing::debug!(pid, error = %e, "Python process not given to the kernel");
                    return;
                }
                tracing::debug!(pid, minor = interpreter.layout.minor, "CPython found: its frames are walked");
                self.known.insert(pid, Known { interpreter, tids: Vec::new(), threads_read: Instant::now() });
                self.read_threads(pid);
            }
            Ok(None) => self.forget(pid),
            Err(why) => {
                // Said once per process, not at each reload of its mappings.
                self.unwalk(pid);
                if self.refused.len() > 4096 {
                    self.refused.clear();
                }
                if self.refused.insert(pid, why.clone()).is_none() {
                    tracing::info!(pid, "CPython's frames are not walked in this process: {why}");
                }
            }
        }
    }

    /// A sample met a thread the kernel does not know: reads the interpreter's threads again
    /// (at most every [`THREADS_EVERY`]).
    pub(crate) fn thread_unknown(&mut self, pid: u32) {
        if self.known.get(&pid).is_some_and(|k| k.threads_read.elapsed() >= THREADS_EVERY) {
            self.read_threads(pid);
        }
    }

    fn read_threads(&mut self, pid: u32) {
        let Some(known) = self.known.get_mut(&pid) else { return };
        let threads = process::threads(pid, &known.interpreter);
        let key = |tid: u32| (u64::from(pid) << 32) | u64::from(tid);
        let now: std::collections::HashSet<u32> = threads.iter().map(|&(t, _)| t).collect();
        for tid in known.tids.drain(..) {
            if !now.contains(&tid) {
                let _ = self.threads.remove(&key(tid));
            }
        }
        for &(tid, state) in &threads {
            if self.threads.insert(key(tid), state, 0).is_ok() {
                known.tids.push(tid);
            }
        }
        known.threads_read = Instant::now();
    }

    /// Forgets a process (exited, or no longer running CPython), what was said of it too.
    pub(crate) fn forget(&mut self, pid: u32) {
        self.unwalk(pid);
        self.refused.remove(&pid);
    }

    /// Takes a process out of the kernel's maps.
    fn unwalk(&mut self, pid: u32) {
        if let Some(known) = self.known.remove(&pid) {
            let _ = self.procs.remove(&pid);
            for tid in known.tids {
                let _ = self.threads.remove(&((u64::from(pid) << 32) | u64::from(tid)));
            }
        }
    }

    /// Processes whose frames are walked.
    pub(crate) fn processes(&self) -> usize {
        self.known.len()
    }
}
