//! The sandbox of one invocation: its limits, its store state, and what it may import.
//!
//! An analysis gets the `loupe:udf/data` interface and the few WASI interfaces Rust's standard
//! library needs to run at all (I/O streams, stdout/stderr, exit, an empty environment,
//! random numbers for hash maps). Filesystem, sockets and clocks are not linked: a component
//! that imports them is refused at upload, naming the import ([`ungranted_imports`]). stdout and
//! stderr are captured into the invocation's log (a panic message lands there).

use std::time::Duration;

use serde::Serialize;
use wasmtime::component::{HasData, Linker, ResourceTable};
use wasmtime_wasi::{
    WasiCtx, WasiCtxView, WasiView,
    cli::{WasiCli, WasiCliView},
    p2::{bindings, pipe::MemoryOutputPipe},
    random::WasiRandom,
};

use super::{bindings::Analysis, host::DataHost};

/// Everything an invocation may use. Each has a clear error naming it and its value.
#[derive(Clone, Debug, Serialize)]
pub struct Limits {
    /// Wall-clock time of one invocation (enforced by epoch interruption, 10 ms resolution).
    pub time: Duration,
    /// Linear memory of the instance, all memories together.
    pub memory_bytes: usize,
    /// Linear memory a pool slot keeps resident after its instance (zeroed, not handed back), so
    /// the next instance does not fault it in again; at most `memory_bytes`. Held while no
    /// analysis runs: an agent under `MemoryMax=` wants little or none.
    pub keep_resident_bytes: usize,
    /// Size of the JSON result.
    pub output_bytes: usize,
    /// Bytes of log lines (log function, stdout, stderr) kept; the rest is dropped and counted.
    pub log_bytes: usize,
    /// Size of an uploaded component.
    pub module_bytes: usize,
    /// Invocations one team may have running at once.
    pub per_team_invocations: usize,
    /// Invocations running at once, all teams together.
    pub total_invocations: usize,
    /// Analyses one team may store, and their bytes (uploaded components) together.
    pub per_team_analyses: usize,
    pub per_team_analysis_bytes: u64,
    /// Uploads compiled at once (each takes a core and tens of MiB for seconds); more are
    /// refused with 429.
    pub compiles: usize,
    /// Wasm stack (deep recursion traps beyond this).
    pub stack_bytes: usize,
    /// Table elements, instances, tables and memories of one instance.
    pub table_elements: usize,
    pub instances: usize,
    pub tables: usize,
    pub memories: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            time: Duration::from_secs(30),
            memory_bytes: 256 << 20,
            keep_resident_bytes: 32 << 20,
            output_bytes: 4 << 20,
            log_bytes: 64 << 10,
            module_bytes: 32 << 20,
            per_team_invocations: 2,
            total_invocations: 4,
            per_team_analyses: 64,
            per_team_analysis_bytes: 256 << 20,
            compiles: 2,
            stack_bytes: 1 << 20,
            table_elements: 100_000,
            instances: 16,
            tables: 16,
            memories: 4,
        }
    }
}

/// Which limit stopped an invocation from growing, recorded by [`Limiter`] so the error
/// names the limit rather than the trap it caused (a failed `memory.grow` makes Rust's
/// allocator abort with `unreachable`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tripped {
    Memory { desired: usize },
    Table { desired: usize },
}

pub struct Limiter {
    pub limits: Limits,
    pub tripped: Option<Tripped>,
    pub peak_memory: usize,
}

impl wasmtime::ResourceLimiter for Limiter {
    fn memory_growing(&mut self, _current: usize, desired: usize, _max: Option<usize>) -> wasmtime::Result<bool> {
        if desired > self.limits.memory_bytes {
            self.tripped = Some(Tripped::Memory { desired });
            return Ok(false);
        }
        self.peak_memory = self.peak_memory.max(desired);
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _max: Option<usize>) -> wasmtime::Result<bool> {
        if desired > self.limits.table_elements {
            self.tripped = Some(Tripped::Table { desired });
            return Ok(false);
        }
        Ok(true)
    }

    fn instances(&self) -> usize {
        self.limits.instances
    }

    fn tables(&self) -> usize {
        self.limits.tables
    }

    fn memories(&self) -> usize {
        self.limits.memories
    }
}

/// The `T` of an invocation's `Store<T>`.
pub struct State {
    pub data: DataHost,
    pub wasi: WasiCtx,
    pub limiter: Limiter,
    pub stdout: MemoryOutputPipe,
    pub stderr: MemoryOutputPipe,
}

impl State {
    pub fn new(data: DataHost, limits: Limits) -> Self {
        let stdout = MemoryOutputPipe::new(limits.log_bytes);
        let stderr = MemoryOutputPipe::new(limits.log_bytes);
        // No args, no environment, no preopened directories, no network, empty stdin.
        let wasi = WasiCtx::builder()
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        State { data, wasi, limiter: Limiter { limits, tripped: None, peak_memory: 0 }, stdout, stderr }
    }

    /// Moves what the guest wrote to stdout/stderr into the log.
    pub fn collect_output(&mut self) {
        for (level, pipe) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            let bytes = pipe.contents();
            let text = String::from_utf8_lossy(&bytes);
            for line in text.lines().filter(|l| !l.is_empty()) {
                self.data.log.push_str(level, line.to_string());
            }
        }
    }
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.data.table }
    }
}

struct Io;

impl HasData for Io {
    type Data<'a> = &'a mut ResourceTable;
}

struct Data;

impl HasData for Data {
    type Data<'a> = &'a mut DataHost;
}

/// WASI interfaces an analysis may import (any 0.2.x version). Everything else — filesystem,
/// sockets, clocks, HTTP — is refused at upload.
pub const GRANTED_WASI: &[&str] = &[
    "wasi:io/error",
    "wasi:io/poll",
    "wasi:io/streams",
    "wasi:cli/environment",
    "wasi:cli/exit",
    "wasi:cli/stdin",
    "wasi:cli/stdout",
    "wasi:cli/stderr",
    "wasi:cli/terminal-input",
    "wasi:cli/terminal-output",
    "wasi:cli/terminal-stdin",
    "wasi:cli/terminal-stdout",
    "wasi:cli/terminal-stderr",
    "wasi:random/random",
    "wasi:random/insecure",
    "wasi:random/insecure-seed",
];

/// The imports of a component that the sandbox does not grant, e.g.
/// `["wasi:filesystem/types@0.2.6"]`.
pub fn ungranted_imports<'a>(imports: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    imports
        .into_iter()
        .filter(|name| {
            let base = name.split('@').next().unwrap_or(name);
            !(base == "loupe:udf/data" || base == "loupe:udf/types" || GRANTED_WASI.contains(&base))
        })
        .map(str::to_owned)
        .collect()
}

/// A linker with exactly the granted interfaces.
pub fn linker(engine: &wasmtime::Engine) -> wasmtime::Result<Linker<State>> {
    let mut l = Linker::new(engine);
    Analysis::add_to_linker::<State, Data>(&mut l, |s| &mut s.data)?;
    wasmtime_wasi_io::bindings::wasi::io::error::add_to_linker::<State, Io>(&mut l, |s| &mut s.data.table)?;
    bindings::sync::io::poll::add_to_linker::<State, Io>(&mut l, |s| &mut s.data.table)?;
    bindings::sync::io::streams::add_to_linker::<State, Io>(&mut l, |s| &mut s.data.table)?;
    use bindings::{cli, random};
    random::random::add_to_linker::<State, WasiRandom>(&mut l, |s| s.wasi.random())?;
    random::insecure::add_to_linker::<State, WasiRandom>(&mut l, |s| s.wasi.random())?;
    random::insecure_seed::add_to_linker::<State, WasiRandom>(&mut l, |s| s.wasi.random())?;
    cli::exit::add_to_linker::<State, WasiCli>(&mut l, State::cli)?;
    cli::environment::add_to_linker::<State, WasiCli>(&mut l, State::cli)?;
    cli::stdin::add_to_linker::<State, WasiCli>(&mut l, State::cli)?;
    cli::stdout::add_to_linker::<State, WasiCli>(&mut l, State::cli)?;
    cli::stderr::add_to_linker::<State, WasiCli>(&mut l, State::cli)?;
    cli::terminal_input::add_to_linker::<State, WasiCli>(&mut l, State::cli)?;
    cli::terminal_output::add_to_linker::<State, WasiCli>(&mut l, State::cli)?;
    cli::terminal_stdin::add_to_linker::<State, WasiCli>(&mut l, State::cli)?;
    cli::terminal_stdout::add_to_linker::<State, WasiCli>(&mut l, State::cli)?;
    cli::terminal_stderr::add_to_linker::<State, WasiCli>(&mut l, State::cli)?;
    Ok(l)
}
