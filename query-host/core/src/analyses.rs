//! Analyses as a core service: the wasm runtime and the registry of uploads, with the facts an
//! analysis may ask about its host. Ownership is by team: anyone may run an analysis, only its
//! team may replace or delete it.

use std::{
    fs,
    path::{Path, PathBuf},
    sync::Mutex,
    time::{Duration, Instant},
};

use loupe_store::{Store, TimeRange};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::error::{CoreError, CoreResult};
use loupe_api::{
    access::Caller,
    clock::hostname,
    formats::hex,
    model::{InvokeResponse, LogLine},
};
use loupe_sandbox::{
    UdfError,
    bindings::{HostInfo, wit},
    partial,
    registry::{Registry, UdfMeta},
    runtime::{Allocation, Compiled, InvocationReport, Runtime},
    sandbox::Limits,
};

/// How long the retained range in [`HostInfo`] may be stale.
const INFO_TTL: Duration = Duration::from_secs(10);

pub struct Analyses {
    runtime: Runtime,
    registry: Registry,
    info: Mutex<(Instant, HostInfo)>,
    /// The host's name analyses are told (`--host` in a fleet; the kernel's otherwise).
    host_name: Option<String>,
    /// Modules that arrived from the fleet, compiled, by SHA-256; most recent last.
    fleet: Mutex<Vec<FleetModule>>,
    /// `<data-dir>/fleet-udfs`: their precompiled artifacts.
    fleet_dir: PathBuf,
}

/// Compiled fleet modules kept in memory.
const FLEET_MODULES: usize = 32;

/// An analysis ready to run fleet-wide: its name, the hash every host runs it by, and its
/// compiled form.
#[derive(Clone)]
pub struct FleetModule {
    pub name: String,
    pub sha256: String,
    compiled: Compiled,
}

/// A host's answer to a fleet-wide invocation: its encoded partial result.
pub struct Partial {
    pub bytes: Vec<u8>,
    pub elapsed_ns: u64,
}

/// What merging the hosts' partials made: the result, and the partials refused (by index,
/// with why) before merging.
pub struct MergedPartials {
    pub response: InvokeResponse,
    pub refused: Vec<(usize, String)>,
}

impl Analyses {
    /// The runtime (pooling allocation: measured by the `udf` bench, it halves the
    /// per-invocation overhead) and every analysis stored under `data_dir`.
    pub fn open(data_dir: &Path, store: &Store, limits: Limits) -> CoreResult<Analyses> {
        let runtime = Runtime::new(limits, Allocation::Pooling).map_err(|e| CoreError::Internal(format!("{e:#}")))?;
        let info = host_info(store)?;
        let registry =
            Registry::open(data_dir, &runtime, store, &info).map_err(|e| CoreError::Internal(format!("{e:#}")))?;
        Ok(Analyses {
            runtime,
            registry,
            info: Mutex::new((Instant::now(), info)),
            host_name: None,
            fleet: Mutex::new(Vec::new()),
            fleet_dir: data_dir.join("fleet-udfs"),
        })
    }

    /// Analyses are told this host name (the fleet's `--host`) instead of the kernel's.
    pub fn with_host_name(mut self, name: String) -> Analyses {
        self.info.get_mut().unwrap_or_else(|e| e.into_inner()).1.hostname = name.clone();
        self.host_name = Some(name);
        self
    }

    pub fn limits(&self) -> &Limits {
        self.runtime.limits()
    }

    /// Facts about this host for analyses, the retained range refreshed every [`INFO_TTL`].
    fn info(&self, store: &Store) -> CoreResult<HostInfo> {
        let mut cached = self.info.lock().unwrap_or_else(|e| e.into_inner());
        if cached.0.elapsed() > INFO_TTL {
            let mut info = host_info(store)?;
            if let Some(name) = &self.host_name {
                info.hostname = name.clone();
            }
            *cached = (Instant::now(), info);
        }
        Ok(cached.1.clone())
    }

    pub fn list(&self) -> Vec<UdfMeta> {
        self.registry.list()
    }

    pub fn get(&self, name: &str) -> CoreResult<UdfMeta> {
        Ok(self.registry.get(name).ok_or_else(|| UdfError::NotFound(name.to_string()))?.meta.clone())
    }

    /// Stores (or, for its team or an admin, replaces) an analysis; `true` if it replaced one.
    pub fn put(&self, store: &Store, name: &str, caller: &Caller, component: &[u8]) -> CoreResult<(UdfMeta, bool)> {
        let info = self.info(store)?;
        Ok(self.registry.put(name, caller, component, &self.runtime, store, &info)?)
    }

    pub fn delete(&self, name: &str, caller: &Caller) -> CoreResult<()> {
        Ok(self.registry.delete(name, caller)?)
    }

    /// Runs `name` over `range` with `params`, on behalf of `team`.
    pub fn invoke(
        &self,
        store: &Store,
        name: &str,
        team: &str,
        range: TimeRange,
        params: &Map<String, Value>,
    ) -> CoreResult<InvokeResponse> {
        let loaded = self.registry.get(name).ok_or_else(|| UdfError::NotFound(name.to_string()))?;
        let info = self.info(store)?;
        let report = self.runtime.invoke(&loaded.compiled, team, store, &info, range, params)?;
        Ok(response(report))
    }
}

impl Analyses {
    /// A stored analysis as a fleet module, with its component's bytes (to ship them).
    pub fn local_module(&self, name: &str) -> CoreResult<(FleetModule, Vec<u8>)> {
        let loaded = self.registry.get(name).ok_or_else(|| UdfError::NotFound(name.to_string()))?;
        if loaded.compiled.merge.is_none() {
            return Err(UdfError::NotMergeable(name.to_string()).into());
        }
        let bytes = self.registry.component(name)?;
        let sha256 = hex::encode(&Sha256::digest(&bytes));
        Ok((FleetModule { name: name.to_string(), sha256, compiled: loaded.compiled.clone() }, bytes))
    }

    /// A module from the fleet by its SHA-256: from memory, from its artifact on disk, or
    /// fetched (`fetch`), checked against the hash, compiled and cached — once per hash.
    pub fn fleet_module(
        &self,
        store: &Store,
        name: &str,
        sha256: &str,
        fetch: impl FnOnce() -> Result<Vec<u8>, String>,
    ) -> CoreResult<FleetModule> {
        if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            return Err(UdfError::BadPartial(format!("{sha256:?} is not a SHA-256 in hex")).into());
        }
        let mut cache = self.fleet.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = cache.iter().position(|m| m.sha256 == sha256) {
            let m = cache.remove(i);
            cache.push(m.clone());
            return Ok(FleetModule { name: name.to_string(), ..m });
        }
        let info = self.info(store)?;
        let artifact_path = self.fleet_dir.join(format!("{sha256}.cwasm"));
        let compiled = match fs::read(&artifact_path).ok().and_then(|a| self.runtime.load_artifact(&a, store, &info)) {
            Some(c) => c,
            None => {
                let bytes = fetch().map_err(|e| CoreError::Internal(format!("fetching module {sha256}: {e}")))?;
                let got = hex::encode(&Sha256::digest(&bytes));
                if got != sha256 {
                    return Err(UdfError::BadPartial(format!("module {sha256} arrived as {got}")).into());
                }
                let (compiled, artifact) = self.runtime.compile(&bytes, store, &info)?;
                let tmp = artifact_path.with_extension("tmp");
                let written = fs::create_dir_all(&self.fleet_dir)
                    .and_then(|()| fs::write(&tmp, artifact))
                    .and_then(|()| fs::rename(&tmp, &artifact_path));
                if let Err(e) = written {
                    tracing::warn!(module = sha256, "compiled fleet module not cached on disk: {e}");
                }
                compiled
            }
        };
        let module = FleetModule { name: name.to_string(), sha256: sha256.to_string(), compiled };
        cache.push(module.clone());
        if cache.len() > FLEET_MODULES {
            cache.remove(0);
        }
        Ok(module)
    }

    /// Runs a module as one host of a fleet-wide invocation: its encoded partial result.
    pub fn invoke_partial(
        &self,
        store: &Store,
        module: &FleetModule,
        team: &str,
        range: TimeRange,
        params: &Map<String, Value>,
    ) -> CoreResult<Partial> {
        let info = self.info(store)?;
        let (bytes, elapsed_ns) = self.runtime.invoke_partial(&module.compiled, team, store, &info, range, params)?;
        Ok(Partial { bytes, elapsed_ns })
    }

    /// Merges the hosts' encoded partials with the module's `merge`, in the sandbox. A partial
    /// that does not decode within the bounds is refused (by index, with why); the rest merge.
    pub fn merge_partials(
        &self,
        store: &Store,
        module: &FleetModule,
        team: &str,
        range: TimeRange,
        params: &Map<String, Value>,
        partials: Vec<Vec<u8>>,
    ) -> CoreResult<MergedPartials> {
        let (decoded, refused) = decode_partials(&partials)?;
        let info = self.info(store)?;
        let report = self.runtime.merge(&module.compiled, team, store, &info, range, params, decoded)?;
        Ok(MergedPartials { response: response(report), refused })
    }

    /// Merges the hosts' encoded partials into one encoded partial, as a host's own would
    /// travel: what a leaf's coordinator answers a tree merge with. Refused partials as in
    /// [`Analyses::merge_partials`]; the merge's log lines beside it.
    #[allow(clippy::too_many_arguments)]
    pub fn merge_to_partial(
        &self,
        store: &Store,
        module: &FleetModule,
        team: &str,
        range: TimeRange,
        params: &Map<String, Value>,
        partials: Vec<Vec<u8>>,
    ) -> CoreResult<MergedPartial> {
        let (decoded, refused) = decode_partials(&partials)?;
        let info = self.info(store)?;
        let (bytes, log) =
            self.runtime.merge_to_partial(&module.compiled, team, store, &info, range, params, decoded)?;
        Ok(MergedPartial { bytes, log: log.lines, refused })
    }
}

/// A merge's result still in partial form (see [`Analyses::merge_to_partial`]).
pub struct MergedPartial {
    pub bytes: Vec<u8>,
    pub log: Vec<LogLine>,
    pub refused: Vec<(usize, String)>,
}

/// Decodes each partial within the bounds: the readable ones, and the refused ones by index
/// with why; an error when none can be read.
fn decode_partials(partials: &[Vec<u8>]) -> CoreResult<(Vec<partial::Decoded>, Vec<(usize, String)>)> {
    let mut refused = Vec::new();
    let mut decoded = Vec::with_capacity(partials.len());
    for (i, bytes) in partials.iter().enumerate() {
        match partial::decode(bytes) {
            Ok(o) => decoded.push(o),
            Err(e) => refused.push((i, e.to_string())),
        }
    }
    if decoded.is_empty() {
        return Err(UdfError::BadPartial(format!("no partial result could be read ({} refused)", refused.len())).into());
    }
    Ok((decoded, refused))
}

/// What every door shows of an invocation (or a merge).
fn response(report: InvocationReport) -> InvokeResponse {
    InvokeResponse {
        output: report.output,
        log: report.log.lines,
        log_dropped: report.log.dropped,
        elapsed_ns: report.elapsed_ns,
        peak_memory_bytes: report.peak_memory_bytes as u64,
        output_bytes: report.output_bytes as u64,
    }
}

/// What an analysis learns about its host (`info()` in the WIT world).
pub fn host_info(store: &Store) -> CoreResult<HostInfo> {
    let days = store.days()?;
    let retained = match (days.first(), days.last()) {
        (Some(a), Some(b)) => {
            wit::TimeRange { from_ns: a.day_start_unix_ns, to_ns: b.day_start_unix_ns + 86_400_000_000_000 }
        }
        _ => wit::TimeRange { from_ns: 0, to_ns: 0 },
    };
    Ok(HostInfo {
        hostname: hostname(),
        loupe_version: env!("CARGO_PKG_VERSION").into(),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        retained,
    })
}
