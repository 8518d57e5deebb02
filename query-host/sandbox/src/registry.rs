//! Uploaded analyses on disk, and their compiled forms in memory.
//!
//! ```text
//! <data-dir>/udfs/<name>/component.wasm   what the team uploaded
//!                       /compiled.cwasm   wasmtime's precompiled artifact (a cache)
//!                       /meta.json        owner, description, size, sha256, upload time
//! ```
//!
//! An upload is compiled and validated before anything is written; it is written to a fresh
//! directory and renamed into place, so a crash leaves the old version or the new one, never
//! half of either. At startup every analysis is loaded from its artifact (milliseconds) and
//! recompiled from the component only when the artifact is missing or was built by another
//! wasmtime (then the artifact is rewritten).

use std::{
    collections::BTreeMap,
    fs,
    path::{Path, PathBuf},
    sync::{Arc, RwLock},
};

use loupe_store::Store;
use sha2::{Digest, Sha256};
use tracing::{info, warn};

pub use loupe_api::model::UdfMeta;

use super::{
    UdfError,
    bindings::HostInfo,
    runtime::{Compiled, Runtime},
};
use loupe_api::{access::Caller, clock::now_unix_ns, formats::hex};

pub struct Loaded {
    pub meta: UdfMeta,
    pub compiled: Compiled,
}

pub struct Registry {
    dir: PathBuf,
    loaded: RwLock<BTreeMap<String, Arc<Loaded>>>,
}

/// Names are URL path segments and directory names: keep them boring.
pub fn check_name(name: &str) -> Result<(), UdfError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && name.as_bytes()[0].is_ascii_alphanumeric();
    if ok { Ok(()) } else { Err(UdfError::BadName(name.to_string())) }
}

impl Registry {
    /// Opens `<data_dir>/udfs`, loading every stored analysis. One that cannot be loaded is
    /// logged and left on disk (it is not served).
    pub fn open(data_dir: &Path, runtime: &Runtime, store: &Store, info: &HostInfo) -> anyhow::Result<Registry> {
        let dir = data_dir.join("udfs");
        fs::create_dir_all(&dir)?;
        let mut loaded = BTreeMap::new();
        for entry in fs::read_dir(&dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || check_name(&name).is_err() {
                // Leftovers of an interrupted upload or delete.
                let _ = fs::remove_dir_all(entry.path());
                continue;
            }
            match load_one(&entry.path(), runtime, store, info) {
                Ok(l) => {
                    loaded.insert(name, Arc::new(l));
                }
                Err(e) => warn!(analysis = %name, "not loaded: {e:#}"),
            }
        }
        info!(analyses = loaded.len(), "analyses loaded");
        Ok(Registry { dir, loaded: RwLock::new(loaded) })
    }

    pub fn list(&self) -> Vec<UdfMeta> {
        self.loaded.read().unwrap_or_else(|e| e.into_inner()).values().map(|l| l.meta.clone()).collect()
    }

    pub fn get(&self, name: &str) -> Option<Arc<Loaded>> {
        self.loaded.read().unwrap_or_else(|e| e.into_inner()).get(name).cloned()
    }

    /// Stores a new analysis of `caller`'s team, or replaces one the same team owns (an admin
    /// replaces any team's, which stays that team's). Compiles and validates first. Returns the
    /// meta and whether it replaced an existing one.
    pub fn put(
        &self,
        name: &str,
        caller: &Caller,
        bytes: &[u8],
        runtime: &Runtime,
        store: &Store,
        info: &HostInfo,
    ) -> Result<(UdfMeta, bool), UdfError> {
        check_name(name)?;
        let team = match self.get(name) {
            Some(l) => owned_by(&l.meta, name, caller)?.to_string(),
            None => caller.team.clone(),
        };
        let team = team.as_str();
        room_for(&self.loaded.read().unwrap_or_else(|e| e.into_inner()), name, team, bytes.len(), runtime)?;
        let (compiled, artifact) = runtime.compile(bytes, store, info)?;
        let meta = UdfMeta {
            name: name.to_string(),
            owner: team.to_string(),
            version: compiled.description.version.clone(),
            size: bytes.len() as u64,
            sha256: hex::encode(&Sha256::digest(bytes)),
            uploaded_unix_ns: now_unix_ns(),
            description: compiled.description.clone(),
        };
        // Write beside, then swap: readers of the old version are never disturbed.
        let staging = self.dir.join(format!(".new-{name}-{}", unique()));
        let written = (|| {
            fs::create_dir_all(&staging)?;
            fs::write(staging.join("component.wasm"), bytes)?;
            fs::write(staging.join("compiled.cwasm"), &artifact)?;
            fs::write(staging.join("meta.json"), serde_json::to_vec_pretty(&meta).expect("meta serializes"))?;
            fs::File::open(&staging)?.sync_all()
        })();
        if let Err(e) = written {
            // A full disk (or any write error) leaves the old version as it was.
            let _ = fs::remove_dir_all(&staging);
            return Err(io_error(name, e));
        }
        let io = |e: std::io::Error| io_error(name, e);
        let mut loaded = self.loaded.write().unwrap_or_else(|e| e.into_inner());
        // Checked again under the lock: another team may have taken the name meanwhile, or
        // the team stored others.
        if let Some(l) = loaded.get(name)
            && l.meta.owner != team
        {
            let _ = fs::remove_dir_all(&staging);
            return Err(UdfError::NotOwner { name: name.to_string(), owner: l.meta.owner.clone() });
        }
        if let Err(e) = room_for(&loaded, name, team, bytes.len(), runtime) {
            let _ = fs::remove_dir_all(&staging);
            return Err(e);
        }
        let target = self.dir.join(name);
        let replaced = target.exists();
        if replaced {
            let old = self.dir.join(format!(".old-{name}-{}", unique()));
            fs::rename(&target, &old).map_err(io)?;
            fs::rename(&staging, &target).map_err(io)?;
            let _ = fs::remove_dir_all(&old);
        } else {
            fs::rename(&staging, &target).map_err(io)?;
        }
        sync_dir(&self.dir);
        loaded.insert(name.to_string(), Arc::new(Loaded { meta: meta.clone(), compiled }));
        Ok((meta, replaced))
    }

    /// The component as uploaded (to ship it to the fleet).
    pub fn component(&self, name: &str) -> Result<Vec<u8>, UdfError> {
        check_name(name)?;
        fs::read(self.dir.join(name).join("component.wasm"))
            .map_err(|e| UdfError::Internal(format!("reading analysis '{name}': {e}")))
    }

    /// Deletes an analysis of `caller`'s team (an admin: of any team).
    pub fn delete(&self, name: &str, caller: &Caller) -> Result<(), UdfError> {
        let mut loaded = self.loaded.write().unwrap_or_else(|e| e.into_inner());
        let Some(l) = loaded.get(name) else { return Err(UdfError::NotFound(name.to_string())) };
        owned_by(&l.meta, name, caller)?;
        let gone = self.dir.join(format!(".del-{name}-{}", unique()));
        fs::rename(self.dir.join(name), &gone)
            .map_err(|e| UdfError::Internal(format!("deleting analysis '{name}': {e}")))?;
        let _ = fs::remove_dir_all(&gone);
        sync_dir(&self.dir);
        loaded.remove(name);
        Ok(())
    }
}

/// An error if storing `bytes` bytes as `name` would take `team` past its bounds (the
/// analysis it replaces not counted): one team must not fill the data dir for all.
fn room_for(
    loaded: &BTreeMap<String, Arc<Loaded>>,
    name: &str,
    team: &str,
    bytes: usize,
    runtime: &Runtime,
) -> Result<(), UdfError> {
    let limits = runtime.limits();
    let (mut analyses, mut total) = (1, bytes as u64);
    for (other, l) in loaded {
        if other != name && l.meta.owner == team {
            analyses += 1;
            total += l.meta.size;
        }
    }
    if analyses > limits.per_team_analyses || total > limits.per_team_analysis_bytes {
        return Err(UdfError::TeamFull {
            team: team.to_string(),
            analyses,
            bytes: total,
            max_analyses: limits.per_team_analyses,
            max_bytes: limits.per_team_analysis_bytes,
        });
    }
    Ok(())
}

/// The team that owns `meta`, if `caller` may change it: its own team's, or any as an admin.
fn owned_by<'m>(meta: &'m UdfMeta, name: &str, caller: &Caller) -> Result<&'m str, UdfError> {
    match caller.require_owner(name, &meta.owner) {
        Ok(()) => Ok(&meta.owner),
        Err(_) => Err(UdfError::NotOwner { name: name.to_string(), owner: meta.owner.clone() }),
    }
}

fn load_one(dir: &Path, runtime: &Runtime, store: &Store, info: &HostInfo) -> anyhow::Result<Loaded> {
    let mut meta: UdfMeta = serde_json::from_slice(&fs::read(dir.join("meta.json"))?)?;
    let artifact_path = dir.join("compiled.cwasm");
    if let Ok(artifact) = fs::read(&artifact_path)
        && let Some(compiled) = runtime.load_artifact(&artifact, store, info)
    {
        // Meta written before Loupe knew of `merge` says nothing of it: the component does.
        meta.description.mergeable = compiled.description.mergeable;
        return Ok(Loaded { meta, compiled });
    }
    // Missing or stale artifact: recompile from the component and cache again.
    let bytes = fs::read(dir.join("component.wasm"))?;
    let (compiled, artifact) = runtime.compile(&bytes, store, info)?;
    fs::write(&artifact_path, artifact)?;
    info!(analysis = %meta.name, "recompiled");
    meta.description.mergeable = compiled.description.mergeable;
    Ok(Loaded { meta, compiled })
}

fn io_error(name: &str, e: std::io::Error) -> UdfError {
    if e.kind() == std::io::ErrorKind::StorageFull {
        UdfError::NoSpace(format!("storing analysis '{name}': {e}"))
    } else {
        UdfError::Internal(format!("storing analysis '{name}': {e}"))
    }
}

/// A suffix no other staging directory of this process uses (two uploads of one name may run
/// at once; the second to finish wins).
fn unique() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!("{}-{}", std::process::id(), NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}

fn sync_dir(dir: &Path) {
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
}
