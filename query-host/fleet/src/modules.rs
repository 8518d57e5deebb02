//! Analyses travel to the hosts by content: a module is put once into the fleet's JetStream
//! object store under its SHA-256, a query names the hash, and each host fetches and compiles
//! it once (the analysis runtime caches compiled modules by hash). No message-size limit applies
//! to a module (the object store chunks it), and a host can check that what it fetched is what
//! was asked for. The catalog bucket maps an analysis' name to the hash last shipped under it,
//! so `loupe fleet invoke NAME` works from any machine that can reach NATS.
//!
//! A catalog entry is signed by who shipped it ([`Shipped`]), and travels inside every
//! invocation: a host runs a module only if its entry is signed by a key its trust file gives
//! `upload` (`gate::Gate::check_module`), so an entry rewritten by any other bus client — or an
//! object put under a hash no such key shipped — runs nowhere, and each host says why.

use async_nats::jetstream::{self, kv, object_store};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::io::AsyncReadExt;

use super::{FleetError, signer::Signer, wire};
use loupe_api::{access::Scopes, clock::now_unix_ns, formats::hex, signed::Signed};

/// Object store of modules, named by SHA-256 (hex).
pub const OBJECTS: &str = "loupe-analyses";
/// Name → last shipped module.
pub const CATALOG: &str = "loupe-catalog";
/// Largest module a host fetches (the HTTP upload limit is the same order).
pub const MAX_MODULE_BYTES: u64 = 64 << 20;

/// A catalog entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogEntry {
    pub name: String,
    pub sha256: String,
    pub size: u64,
    pub shipped_unix_ns: u64,
    /// The host (or `cli`) that shipped it.
    pub shipped_by: String,
    /// The team it was shipped for: absent, the signing key's own; named, the caller a host key
    /// signed for.
    #[serde(default)]
    pub team: Option<String>,
    /// The scopes of whoever shipped it: the hosts grant these and the key's trust line's, and
    /// `upload` must be among them.
    pub scopes: Scopes,
}

/// A catalog entry as shipped: decoded, and its signed bytes (a `Signed` whose payload is the
/// entry), which invocations carry to the hosts. Decoded here without trust: the asker may not
/// hold a trust file; every host checks the signature itself.
#[derive(Clone, Debug)]
pub struct Shipped {
    pub entry: CatalogEntry,
    pub signed: Vec<u8>,
}

/// Largest catalog entry read.
const MAX_ENTRY_BYTES: usize = 64 << 10;

impl Shipped {
    /// The entry naming module `sha256` (`size` bytes) as analysis `name`, shipped by `by`,
    /// signed by `signer` for its team and scopes.
    pub fn sign(name: &str, sha256: &str, size: u64, by: &str, signer: &Signer) -> Shipped {
        let entry = CatalogEntry {
            name: name.into(),
            sha256: sha256.into(),
            size,
            shipped_unix_ns: now_unix_ns(),
            shipped_by: by.into(),
            team: signer.team().map(str::to_string),
            scopes: signer.scopes(),
        };
        let signed = wire::encode(&signer.sign(wire::encode(&entry)));
        Shipped { entry, signed }
    }

    /// Reads an entry's bytes (a signed entry, as the catalog holds it), without checking the
    /// signature; a value that is not a signed entry is an error naming the analysis.
    pub fn read(name: &str, bytes: &[u8]) -> Result<Shipped, FleetError> {
        let unsigned = || {
            FleetError::NotFound(format!(
                "the catalog's entry for {name} is not a signed entry (written by something else than \
                 `loupe fleet invoke --wasm` or an agent): ship the module again with --wasm FILE"
            ))
        };
        if bytes.len() > MAX_ENTRY_BYTES {
            return Err(unsigned());
        }
        let signed: Signed = wire::decode(bytes, MAX_ENTRY_BYTES).map_err(|_| unsigned())?;
        let entry: CatalogEntry = wire::decode(&signed.payload, MAX_ENTRY_BYTES).map_err(|_| unsigned())?;
        if entry.name != name {
            return Err(unsigned());
        }
        Ok(Shipped { entry, signed: bytes.to_vec() })
    }
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(&Sha256::digest(bytes))
}

async fn objects(js: &jetstream::Context) -> Result<object_store::ObjectStore, FleetError> {
    if let Ok(os) = js.get_object_store(OBJECTS).await {
        return Ok(os);
    }
    let config = object_store::Config {
        bucket: OBJECTS.into(),
        description: Some("Loupe analysis modules by SHA-256".into()),
        ..Default::default()
    };
    // Replicated where the server is a cluster, as the key-value buckets are.
    super::replicated(|num_replicas| js.create_object_store(object_store::Config { num_replicas, ..config.clone() }))
        .await
        .map_err(|e| FleetError::Bus(format!("creating the object store {OBJECTS}: {e}")))
}

async fn catalog(js: &jetstream::Context) -> Result<kv::Store, FleetError> {
    super::key_value(js, kv::Config { bucket: CATALOG.into(), history: 1, ..Default::default() }).await
}

/// Puts a module into the object store unless it is there already, records it in the catalog
/// under `name`, signed by `signer`, and returns the entry.
pub async fn ship(
    js: &jetstream::Context,
    name: &str,
    bytes: &[u8],
    by: &str,
    signer: &Signer,
) -> Result<Shipped, FleetError> {
    let sha = sha256_hex(bytes);
    let os = objects(js).await?;
    let present = matches!(os.info(&sha).await, Ok(info) if info.size as u64 == bytes.len() as u64 && !info.deleted);
    if !present {
        let mut reader = bytes;
        os.put(sha.as_str(), &mut reader)
            .await
            .map_err(|e| FleetError::Bus(format!("putting module {sha} into {OBJECTS}: {e}")))?;
    }
    let shipped = Shipped::sign(name, &sha, bytes.len() as u64, by, signer);
    catalog(js)
        .await?
        .put(name, shipped.signed.clone().into())
        .await
        .map_err(|e| FleetError::Bus(format!("recording {name} in {CATALOG}: {e}")))?;
    Ok(shipped)
}

/// The module last shipped under `name`, as its entry was signed.
pub async fn lookup(js: &jetstream::Context, name: &str) -> Result<Shipped, FleetError> {
    let missing = || {
        FleetError::NotFound(format!(
            "no analysis named {name} was shipped to the fleet: invoke it once through an agent that has it \
             (POST /api/v1/fleet/invoke), or give the module with --wasm FILE"
        ))
    };
    let bytes = catalog(js)
        .await?
        .get(name)
        .await
        .map_err(|e| FleetError::Bus(format!("reading {CATALOG}: {e}")))?
        .ok_or_else(missing)?;
    Shipped::read(name, &bytes)
}

/// Fetches a module by hash, refusing one larger than [`MAX_MODULE_BYTES`] or whose bytes do
/// not hash to `sha` (a corrupted or substituted object).
pub async fn fetch(js: &jetstream::Context, sha: &str) -> Result<Vec<u8>, FleetError> {
    let os = objects(js).await?;
    let mut object = os
        .get(sha)
        .await
        .map_err(|e| FleetError::NotFound(format!("module {sha} is not in the fleet's object store {OBJECTS}: {e}")))?;
    let size = object.info().size as u64;
    if size > MAX_MODULE_BYTES {
        return Err(FleetError::TooLarge(format!("module {sha} is {size} bytes, over {MAX_MODULE_BYTES}")));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    (&mut object)
        .take(MAX_MODULE_BYTES + 1)
        .read_to_end(&mut bytes)
        .await
        .map_err(|e| FleetError::Bus(format!("reading module {sha}: {e}")))?;
    let got = sha256_hex(&bytes);
    if got != sha {
        return Err(FleetError::Bus(format!("module {sha} read back as {got}: refusing it")));
    }
    Ok(bytes)
}

/// Makes sure module `sha` is in this domain's object store (pulled from `origin`'s when it is
/// not), without reading it when it is: a leaf's coordinator calls it on every tree query, so
/// its hosts find the module in their own leaf.
pub async fn ensure(
    js: &jetstream::Context,
    client: &async_nats::Client,
    origin: Option<&str>,
    sha: &str,
) -> Result<(), FleetError> {
    let os = objects(js).await?;
    if matches!(os.info(sha).await, Ok(info) if !info.deleted) {
        return Ok(());
    }
    pull(js, client, origin, sha).await.map(|_| ())
}

/// A module by hash for a host or a leaf whose asker may sit in another JetStream domain: from
/// this domain's object store if it is there, else from `origin`'s (across the leaf
/// connection, `$JS.<origin>.API`), then put into this domain's store, so the leaf's other
/// hosts find it locally and a module crosses to a leaf once, not once per host.
pub async fn pull(
    js: &jetstream::Context,
    client: &async_nats::Client,
    origin: Option<&str>,
    sha: &str,
) -> Result<Vec<u8>, FleetError> {
    let local = fetch(js, sha).await;
    let (Err(FleetError::NotFound(_)), Some(origin)) = (&local, origin) else { return local };
    let bytes = fetch(&jetstream::with_domain(client.clone(), origin), sha).await.map_err(|e| match e {
        FleetError::NotFound(m) => {
            FleetError::NotFound(format!("{m} (looked in this leaf's domain and in {origin}'s)"))
        }
        other => other,
    })?;
    let os = objects(js).await?;
    let mut reader = bytes.as_slice();
    if let Err(e) = os.put(sha, &mut reader).await {
        // The module is in hand; the next host of the leaf pulls it again.
        tracing::warn!("keeping module {sha} in this leaf's {OBJECTS}: {e}");
    }
    Ok(bytes)
}
