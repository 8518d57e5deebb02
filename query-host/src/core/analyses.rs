//! Analyses as a core service: the wasm runtime and the registry of uploads, with the facts an
//! analysis may ask about its host. Ownership is by team: anyone may run an analysis, only its
//! team may replace or delete it.

use std::{
    path::Path,
    sync::Mutex,
    time::{Duration, Instant},
};

use loupe_store::{Store, TimeRange};
use serde_json::{Map, Value};

use super::error::{CoreError, CoreResult};
use crate::{
    analysis::{
        UdfError,
        host::{HostInfo, loupe::udf::types as wit},
        registry::{Registry, UdfMeta},
        runtime::{Allocation, Runtime},
        sandbox::Limits,
    },
    clock::hostname,
    model::InvokeResponse,
};

/// How long the retained range in [`HostInfo`] may be stale.
const INFO_TTL: Duration = Duration::from_secs(10);

pub struct Analyses {
    runtime: Runtime,
    registry: Registry,
    info: Mutex<(Instant, HostInfo)>,
}

impl Analyses {
    /// The runtime (pooling allocation: measured by the `udf` bench, it halves the
    /// per-invocation overhead) and every analysis stored under `data_dir`.
    pub fn open(data_dir: &Path, store: &Store, limits: Limits) -> CoreResult<Analyses> {
        let runtime = Runtime::new(limits, Allocation::Pooling).map_err(|e| CoreError::Internal(format!("{e:#}")))?;
        let info = host_info(store)?;
        let registry =
            Registry::open(data_dir, &runtime, store, &info).map_err(|e| CoreError::Internal(format!("{e:#}")))?;
        Ok(Analyses { runtime, registry, info: Mutex::new((Instant::now(), info)) })
    }

    pub fn limits(&self) -> &Limits {
        self.runtime.limits()
    }

    /// Facts about this host for analyses, the retained range refreshed every [`INFO_TTL`].
    fn info(&self, store: &Store) -> CoreResult<HostInfo> {
        let mut cached = self.info.lock().unwrap_or_else(|e| e.into_inner());
        if cached.0.elapsed() > INFO_TTL {
            *cached = (Instant::now(), host_info(store)?);
        }
        Ok(cached.1.clone())
    }

    pub fn list(&self) -> Vec<UdfMeta> {
        self.registry.list()
    }

    pub fn get(&self, name: &str) -> CoreResult<UdfMeta> {
        Ok(self.registry.get(name).ok_or_else(|| UdfError::NotFound(name.to_string()))?.meta.clone())
    }

    /// Stores (or, for its team, replaces) an analysis; `true` if it replaced one.
    pub fn put(&self, store: &Store, name: &str, team: &str, component: &[u8]) -> CoreResult<(UdfMeta, bool)> {
        let info = self.info(store)?;
        Ok(self.registry.put(name, team, component, &self.runtime, store, &info)?)
    }

    pub fn delete(&self, name: &str, team: &str) -> CoreResult<()> {
        Ok(self.registry.delete(name, team)?)
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
        Ok(InvokeResponse {
            output: report.output,
            log: report.log.lines,
            log_dropped: report.log.dropped,
            elapsed_ns: report.elapsed_ns,
            peak_memory_bytes: report.peak_memory_bytes as u64,
            output_bytes: report.output_bytes as u64,
        })
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
