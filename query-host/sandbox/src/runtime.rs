//! The analysis runtime: one wasmtime `Engine` for the process, components compiled once,
//! and a fresh `Store` with limits for every invocation (the wasmtime embedding pattern).
//!
//! Time is bounded by epoch interruption (a ticker thread bumps the epoch every
//! [`TICK`]; a store traps once its deadline passes) rather than fuel: fuel instruments
//! every basic block and slows analyses down, epochs cost a load and compare per loop
//! header. Memory and tables are bounded by a [`Limiter`](super::sandbox::Limiter); recursion by the wasm stack size;
//! output and logs by the host after the call; concurrency by per-team and total counters.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    thread,
    time::{Duration, Instant},
};

use loupe_store::{Store, TimeRange};

use loupe_api::model::AnalysisOutput;
use serde::Serialize;
use wasmtime::{
    Config, Engine, Trap,
    component::{Component, InstancePre},
};

use super::{
    UdfError,
    bindings::{Analysis, AnalysisPre, HostInfo, wit},
    host::DataHost,
    log::InvocationLog,
    merge_world::Merger,
    output,
    params::{Description, description_of, resolve_params},
    sandbox::{self, Limits, State, Tripped},
};

/// Epoch tick: the resolution of the time limit.
pub const TICK: Duration = Duration::from_millis(10);

/// Most bytes a guest may hand the host in one call — its result, a log line, a list of ids —
/// before wasmtime refuses to copy more (its "hostcall fuel"; this is wasmtime's default, set
/// here so it is a documented limit of Loupe's). It bounds what the host lifts out of a guest
/// before the result's own bounds (`output.rs`) can be checked.
pub const COPY_LIMIT: usize = 128 << 20;

/// Time allowed to `describe()` at upload.
const DESCRIBE_TIME: Duration = Duration::from_secs(2);

/// A validated, compiled analysis, ready to instantiate.
#[derive(Clone)]
pub struct Compiled {
    pub pre: AnalysisPre<State>,
    pub description: Description,
    /// How it answers as one host of a fleet and merges, when it can run fleet-wide.
    pub merge: Option<super::merge_world::Merger>,
}

/// What an invocation returns besides its output.
#[derive(Debug, Serialize)]
pub struct InvocationReport {
    pub output: AnalysisOutput,
    pub log: InvocationLog,
    pub elapsed_ns: u64,
    pub peak_memory_bytes: usize,
    pub output_bytes: usize,
}

pub struct Runtime {
    engine: Engine,
    linker: wasmtime::component::Linker<State>,
    limits: Limits,
    running: Mutex<Running>,
    /// Uploads being compiled ([`Limits::compiles`] at most).
    compiling: AtomicUsize,
    /// Buffers of spent merge batches, for the next merge call.
    pub(super) spare: super::batch::Kept,
    ticker: Arc<Ticker>,
    ticker_thread: thread::Thread,
}

/// The epoch ticker sleeps while no guest code runs: an idle agent must not wake 100 times a
/// second for nothing.
struct Ticker {
    stop: AtomicBool,
    /// Invocations and upload-time `describe()` calls under way.
    active: AtomicUsize,
}

/// A compile under way; the slot is given back when dropped.
struct CompileSlot<'a>(&'a AtomicUsize);

impl Drop for CompileSlot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Keeps the ticker ticking while guest code may run.
pub(super) struct Ticking<'a>(&'a Runtime);

impl Drop for Ticking<'_> {
    fn drop(&mut self) {
        self.0.ticker.active.fetch_sub(1, Ordering::SeqCst);
    }
}

#[derive(Default)]
struct Running {
    total: usize,
    per_team: HashMap<String, usize>,
}

/// Releases an invocation slot when dropped.
pub(super) struct Slot<'a> {
    runtime: &'a Runtime,
    team: String,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut r = self.runtime.running.lock().unwrap_or_else(|e| e.into_inner());
        r.total -= 1;
        if let Some(n) = r.per_team.get_mut(&self.team) {
            *n -= 1;
            if *n == 0 {
                r.per_team.remove(&self.team);
            }
        }
    }
}

/// How instances get their memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Allocation {
    /// mmap per instance (default).
    OnDemand,
    /// Pre-reserved slots, reused (see the `udf` bench for what it buys).
    Pooling,
}

impl Runtime {
    pub fn new(limits: Limits, allocation: Allocation) -> anyhow::Result<Runtime> {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.epoch_interruption(true);
        config.max_wasm_stack(limits.stack_bytes);
        if allocation == Allocation::Pooling {
            // Slots for the concurrent invocations plus uploads being described (which do not
            // take an invocation slot); a full pool fails an instantiation, it never waits.
            let slots = (limits.total_invocations as u32 + 16) * 2;
            let mut pool = wasmtime::PoolingAllocationConfig::default();
            pool.total_component_instances(slots);
            pool.total_core_instances(slots * 8);
            pool.total_memories(slots * 2);
            pool.total_tables(slots * 4);
            pool.max_memory_size(limits.memory_bytes);
            // A slot's memory is zeroed for the next instance by memset up to this size
            // instead of being given back to the kernel, so the next instance does not fault
            // its pages in again: merging 1,000 partials dirties ~30 MiB, and page faults and
            // zeroing were a tenth of the merge (perf). At most this much stays resident per
            // slot used (`--udf-keep-resident`, default 32 MiB).
            pool.linear_memory_keep_resident(limits.keep_resident_bytes.min(limits.memory_bytes));
            config.allocation_strategy(wasmtime::InstanceAllocationStrategy::Pooling(pool));
        }
        let engine = Engine::new(&config).map_err(|e| anyhow::anyhow!("creating the wasm engine: {e:#}"))?;
        let linker = sandbox::linker(&engine).map_err(|e| anyhow::anyhow!("linking host functions: {e:#}"))?;
        let ticker = Arc::new(Ticker { stop: AtomicBool::new(false), active: AtomicUsize::new(0) });
        let ticker_thread = {
            let engine = engine.clone();
            let ticker = Arc::clone(&ticker);
            thread::Builder::new()
                .name("loupe-udf-epoch".into())
                .spawn(move || {
                    while !ticker.stop.load(Ordering::Relaxed) {
                        if ticker.active.load(Ordering::SeqCst) == 0 {
                            thread::park();
                            continue;
                        }
                        thread::sleep(TICK);
                        engine.increment_epoch();
                    }
                })?
                .thread()
                .clone()
        };
        Ok(Runtime {
            engine,
            linker,
            limits,
            running: Mutex::new(Running::default()),
            compiling: AtomicUsize::new(0),
            spare: Default::default(),
            ticker,
            ticker_thread,
        })
    }

    /// Starts the epoch ticker for the lifetime of the guard.
    pub(super) fn ticking(&self) -> Ticking<'_> {
        if self.ticker.active.fetch_add(1, Ordering::SeqCst) == 0 {
            self.ticker_thread.unpark();
        }
        Ticking(self)
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Validates an upload and compiles it: size, a component (not a core module), only
    /// granted imports, the `analysis` world's exports, and a `describe()` that answers.
    /// Returns the compiled analysis and its precompiled artifact (for the disk cache).
    pub fn compile(&self, bytes: &[u8], store: &Store, info: &HostInfo) -> Result<(Compiled, Vec<u8>), UdfError> {
        if bytes.len() > self.limits.module_bytes {
            return Err(UdfError::ModuleTooLarge { size: bytes.len(), limit: self.limits.module_bytes });
        }
        check_header(bytes)?;
        let _slot = self.compile_slot()?;
        let component = Component::new(&self.engine, bytes).map_err(|e| UdfError::Malformed(format!("{e:#}")))?;
        let compiled = self.prepare(component.clone(), store, info)?;
        let artifact = component.serialize().map_err(|e| UdfError::Internal(format!("serializing: {e:#}")))?;
        Ok((compiled, artifact))
    }

    /// One of the [`Limits::compiles`] compile slots, or `CompilesBusy`: an upload is refused
    /// rather than queued (each compile takes a core for seconds).
    fn compile_slot(&self) -> Result<CompileSlot<'_>, UdfError> {
        let limit = self.limits.compiles.max(1);
        self.compiling
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < limit).then_some(n + 1))
            .map_err(|_| UdfError::CompilesBusy { limit })?;
        Ok(CompileSlot(&self.compiling))
    }

    /// Loads a precompiled artifact written by [`Runtime::compile`] on this engine
    /// configuration; `None` if it was built by another wasmtime or configuration.
    pub fn load_artifact(&self, artifact: &[u8], store: &Store, info: &HostInfo) -> Option<Compiled> {
        // SAFETY: the artifact was produced by `Component::serialize` of this program and is
        // read from the server's own data directory (never from a client); wasmtime checks
        // that its version and configuration match this engine's.
        let component = unsafe { Component::deserialize(&self.engine, artifact) }.ok()?;
        self.prepare(component, store, info).ok()
    }

    fn prepare(&self, component: Component, store: &Store, info: &HostInfo) -> Result<Compiled, UdfError> {
        let ty = component.component_type();
        let imports: Vec<String> = ty.imports(&self.engine).map(|(name, _)| name.to_string()).collect();
        let refused = sandbox::ungranted_imports(imports.iter().map(String::as_str));
        if !refused.is_empty() {
            return Err(UdfError::ForbiddenImport { imports: refused });
        }
        let exports: Vec<String> = ty.exports(&self.engine).map(|(name, _)| name.to_string()).collect();
        let pre: InstancePre<State> =
            self.linker.instantiate_pre(&component).map_err(|e| UdfError::Incompatible(format!("{e:#}")))?;
        let merge = super::merge_world::merger(&pre, &exports)?;
        let pre = AnalysisPre::new(pre).map_err(|e| UdfError::Incompatible(format!("{e:#}")))?;
        let mut limits = self.limits.clone();
        limits.time = DESCRIBE_TIME;
        let _ticking = self.ticking();
        let mut st = self.new_store(store, info, limits);
        let analysis = pre.instantiate(&mut st).map_err(|e| self.classify(e, &mut st, "instantiating"))?;
        let d = analysis.call_describe(&mut st).map_err(|e| self.classify(e, &mut st, "describe()"))?;
        let mut description = description_of(d).map_err(UdfError::Incompatible)?;
        description.mergeable = merge.is_some();
        Ok(Compiled { pre, description, merge })
    }

    pub(super) fn new_store(&self, store: &Store, info: &HostInfo, limits: Limits) -> wasmtime::Store<State> {
        let data = DataHost::new(store.clone(), info.clone(), InvocationLog::new(limits.log_bytes));
        let ticks = limits.time.as_nanos().div_ceil(TICK.as_nanos()).max(1) as u64;
        let mut st = wasmtime::Store::new(&self.engine, State::new(data, limits));
        st.limiter(|s| &mut s.limiter);
        st.set_hostcall_fuel(COPY_LIMIT);
        // +1: the current epoch may be about to tick.
        st.set_epoch_deadline(ticks + 1);
        st.epoch_deadline_trap();
        st
    }

    /// Takes an invocation slot for `team`, or says which concurrency limit is full.
    pub(super) fn slot(&self, team: &str) -> Result<Slot<'_>, UdfError> {
        let mut r = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let mine = r.per_team.get(team).copied().unwrap_or(0);
        if mine >= self.limits.per_team_invocations {
            return Err(UdfError::TeamBusy { team: team.to_string(), limit: self.limits.per_team_invocations });
        }
        if r.total >= self.limits.total_invocations {
            return Err(UdfError::ServerBusy { limit: self.limits.total_invocations });
        }
        r.total += 1;
        *r.per_team.entry(team.to_string()).or_default() += 1;
        Ok(Slot { runtime: self, team: team.to_string() })
    }

    /// Runs an analysis over `range` with JSON `params`, on behalf of `team`.
    pub fn invoke(
        &self,
        compiled: &Compiled,
        team: &str,
        store: &Store,
        info: &HostInfo,
        range: TimeRange,
        params: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<InvocationReport, UdfError> {
        let (raw, state, started) = self.run_guest(compiled, team, store, info, range, params)?;
        let output = output::bounded(raw, self.limits.output_bytes)?;
        let output_bytes = output::json_bytes(&output, self.limits.output_bytes)?;
        Ok(InvocationReport {
            output,
            log: state.data.log,
            elapsed_ns: started.elapsed().as_nanos() as u64,
            peak_memory_bytes: state.limiter.peak_memory,
            output_bytes,
        })
    }

    /// Runs an analysis as one host of a fleet-wide invocation: its result encoded as a partial
    /// (bounded like any result, at most [`super::partial::MAX_PARTIAL_BYTES`]), for the asker
    /// to merge. Returns the partial and the time it took.
    pub fn invoke_partial(
        &self,
        compiled: &Compiled,
        team: &str,
        store: &Store,
        info: &HostInfo,
        range: TimeRange,
        params: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<(Vec<u8>, u64), UdfError> {
        match &compiled.merge {
            None => Err(UdfError::NotMergeable(compiled.description.name.clone())),
            Some(Merger::Rows(_)) => {
                let (raw, _state, started) = self.run_guest(compiled, team, store, info, range, params)?;
                // The same bounds as a local result, before it leaves the host.
                output::bounded(raw.clone(), self.limits.output_bytes)?;
                let bytes = super::partial::encode(&raw)?;
                Ok((bytes, started.elapsed().as_nanos() as u64))
            }
            Some(Merger::Columns { pre, .. }) => {
                let params = resolve_params(&compiled.description.params, params)?;
                let _slot = self.slot(team)?;
                let _ticking = self.ticking();
                let started = Instant::now();
                let mut st = self.new_store(store, info, self.limits.clone());
                let analysis = pre.instantiate(&mut st).map_err(|e| self.classify(e, &mut st, "instantiating"))?;
                let range = wit::TimeRange { from_ns: range.from_unix_ns(), to_ns: range.to_unix_ns() };
                let result = analysis
                    .call_run_columns(&mut st, range, &params)
                    .map_err(|e| self.classify(e, &mut st, "run-columns()"))?;
                st.data_mut().collect_output();
                let columns = result.map_err(|message| {
                    let log = std::mem::take(&mut st.data_mut().data.log);
                    UdfError::AnalysisFailed { message, log: log.lines }
                })?;
                output::check_columns(&columns).map_err(UdfError::BadColumns)?;
                let bytes = super::partial::encode_columns(&columns)?;
                Ok((bytes, started.elapsed().as_nanos() as u64))
            }
        }
    }

    /// Calls the guest's `run` in a fresh store with the limits: its raw result and state.
    fn run_guest(
        &self,
        compiled: &Compiled,
        team: &str,
        store: &Store,
        info: &HostInfo,
        range: TimeRange,
        params: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<(wit::Output, State, Instant), UdfError> {
        let params = resolve_params(&compiled.description.params, params)?;
        let _slot = self.slot(team)?;
        let _ticking = self.ticking();
        let started = Instant::now();
        let mut st = self.new_store(store, info, self.limits.clone());
        let analysis: Analysis =
            compiled.pre.instantiate(&mut st).map_err(|e| self.classify(e, &mut st, "instantiating"))?;
        let range = wit::TimeRange { from_ns: range.from_unix_ns(), to_ns: range.to_unix_ns() };
        let result = analysis.call_run(&mut st, range, &params).map_err(|e| self.classify(e, &mut st, "run()"))?;
        st.data_mut().collect_output();
        match result {
            Ok(o) => Ok((o, st.into_data(), started)),
            Err(message) => {
                let log = std::mem::take(&mut st.data_mut().data.log);
                Err(UdfError::AnalysisFailed { message, log: log.lines })
            }
        }
    }

    /// Turns a wasmtime error into the limit or fault that caused it.
    pub(super) fn classify(&self, e: wasmtime::Error, st: &mut wasmtime::Store<State>, during: &str) -> UdfError {
        st.data_mut().collect_output();
        let state = st.data_mut();
        let log: Vec<String> = state.data.log.lines.iter().map(|l| format!("{}: {}", l.level, l.message)).collect();
        if state.data.cursor_limit_hit {
            return UdfError::CursorLimit { limit: super::host::MAX_OPEN_CURSORS };
        }
        match state.limiter.tripped {
            Some(Tripped::Memory { desired }) => {
                return UdfError::MemoryLimit { limit: state.limiter.limits.memory_bytes, desired };
            }
            Some(Tripped::Table { desired }) => {
                return UdfError::TableLimit { limit: state.limiter.limits.table_elements, desired };
            }
            None => {}
        }
        match e.downcast_ref::<Trap>() {
            Some(Trap::Interrupt) => UdfError::TimeLimit { limit: state.limiter.limits.time },
            Some(Trap::StackOverflow) => UdfError::StackLimit { limit: self.limits.stack_bytes },
            Some(trap) => UdfError::Trap { during: during.to_string(), trap: trap.to_string(), log },
            // wasmtime says so only in words.
            None if format!("{e:#}").contains("too much data is being copied") => {
                UdfError::CopyLimit { limit: COPY_LIMIT }
            }
            None if format!("{e:#}").contains("store: ") => UdfError::Internal(format!("{during}: {e:#}")),
            None => UdfError::Trap { during: during.to_string(), trap: format!("{e:#}"), log },
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.ticker.stop.store(true, Ordering::Relaxed);
        self.ticker_thread.unpark();
    }
}

/// A component starts with `\0asm`, version 0x0d, layer 1; a core module has version 1,
/// layer 0. Telling them apart up front gives a useful message for the common mistake.
fn check_header(bytes: &[u8]) -> Result<(), UdfError> {
    if bytes.len() < 8 || &bytes[..4] != b"\0asm" {
        return Err(UdfError::Malformed("not a WebAssembly binary (no \\0asm header)".into()));
    }
    if bytes[6..8] == [0, 0] {
        return Err(UdfError::CoreModule);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiles_past_the_bound_are_refused_not_queued() {
        let limits = Limits { compiles: 2, ..Limits::default() };
        let runtime = Runtime::new(limits, Allocation::OnDemand).unwrap();
        let (one, two) = (runtime.compile_slot().unwrap(), runtime.compile_slot().unwrap());
        assert!(matches!(runtime.compile_slot(), Err(UdfError::CompilesBusy { limit: 2 })));
        drop(one);
        let three = runtime.compile_slot().unwrap();
        drop((two, three));
        assert_eq!(runtime.compiling.load(Ordering::SeqCst), 0);
    }
}
