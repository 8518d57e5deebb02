//! The fleet: Loupe agents joined over NATS, an existing, proven messaging system, so a
//! fleet is not a home-made cluster. A layer of its own between the core and the doors: the
//! distributed query logic is not a door (the HTTP API's fleet routes are, over it). Data stays on each host; an analysis travels to the data
//! and only small partial answers come back, merged in the sandbox by whoever asked.
//!
//! - [`subjects`]: the subjects by scope (all / dc / rack / host) and the names in them.
//! - [`wire`]: requests and replies (MessagePack), bounded both ways.
//! - [`registry`]: each agent's registration in a JetStream key-value bucket, with heartbeats.
//! - [`modules`]: analyses shipped by content hash through JetStream's object store.
//! - [`gather`]: publish once, collect every expected reply or stop at the deadline.
//! - [`leaves`]: a fleet of NATS leaf nodes — a leaf's registry and a tree merge's leaf level
//!   answered by one agent per leaf, and the leaves the asker heard from.
//! - [`signer`]: every request signed by who asks; [`gate`]: every host checks it before
//!   anything runs, and records what it did and refused; [`seal`]: a leaf's merged answer
//!   signed by the agent that merged it, checked by an asker with a trust file.
//! - [`agent`]: the agent's side — registration, answering `invoke`, `run` and `read`.
//! - [`coordinator`]: the asking side — `fleet hosts`, `fleet run`, `fleet invoke`, a host's
//!   stored run or profile; [`asker`]: the same as the fleet's operations of the one list
//!   (`loupe_api::ops::FleetApi`), used by the CLI (`loupe fleet … --nats URL`) and, guarded
//!   by the caller's scopes and recorded, by the HTTP API of any agent in the fleet.
//!
//! `docs/fleet.md` has the subjects, the merge contract, the failure behaviour and the numbers.

pub mod agent;
pub mod asker;
pub mod coordinator;
pub mod gate;
pub mod gather;
pub mod leaves;
pub mod live_registry;
pub mod modules;
pub mod registry;
pub mod seal;
pub mod signer;
pub mod subjects;
pub mod wire;

use std::{path::PathBuf, time::Duration};

use loupe_api::formats::url::redacted;

pub use agent::FleetAgent;
pub use coordinator::{Coordinator, merge_with};
pub use subjects::Selector;

/// What went wrong talking to the fleet.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// NATS itself: unreachable, JetStream missing, a bucket refused.
    #[error("fleet bus: {0}")]
    Bus(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    TooLarge(String),
    #[error("{0}")]
    BadRequest(String),
    /// A host answered with an error of its own, of the kind it sent (`not_found`, `too_large`, …).
    #[error("host {host}: {message}")]
    Remote { host: String, kind: loupe_api::model::ErrorKind, code: String, message: String },
    /// The local analysis runtime (merging) failed.
    #[error("{0}")]
    Core(#[from] loupe_core::CoreError),
}

impl FleetError {
    /// As the core's error, with its kind: what the HTTP API answers for it, and how a fleet
    /// step inside a host's operation (a leaf's gather, a module pulled into the leaf) fails
    /// the operation.
    pub fn into_core(self) -> loupe_core::CoreError {
        use loupe_api::model::{ErrorBody, ErrorKind};
        let (kind, code) = match self {
            FleetError::Core(e) => return e,
            FleetError::Bus(_) => (ErrorKind::Unavailable, "fleet_unavailable".to_string()),
            FleetError::NotFound(_) => (ErrorKind::NotFound, "not_found".to_string()),
            FleetError::TooLarge(_) => (ErrorKind::TooLarge, "too_large".to_string()),
            FleetError::BadRequest(_) => (ErrorKind::Invalid, "bad_request".to_string()),
            FleetError::Remote { kind, ref code, .. } => (kind, code.clone()),
        };
        loupe_core::CoreError::Remote { kind, body: ErrorBody { error: self.to_string(), code, log: Vec::new() } }
    }
}

/// How to reach the fleet.
#[derive(Clone, Debug)]
pub struct Connection {
    /// `nats://host:4222` (several, comma-separated, for a cluster).
    pub url: String,
    /// A NATS credentials file (JWT + nkey seed), for servers that require one.
    pub creds: Option<PathBuf>,
    /// TLS to the bus (`tls://` URLs, or a server that asks for it).
    pub tls: BusTls,
    /// The client's name as the server lists it.
    pub name: String,
}

impl Connection {
    /// `url` with no credentials and no TLS settings, as `name`.
    pub fn plain(url: impl Into<String>, name: impl Into<String>) -> Connection {
        Connection { url: url.into(), creds: None, tls: BusTls::default(), name: name.into() }
    }

    /// The URL(s) as logs and errors show them: without what a URL may carry of a user's
    /// credentials (`nats://user:password@host`, `nats://token@host`).
    pub fn shown_url(&self) -> String {
        redacted(&self.url)
    }
}


/// How the fleet's connection trusts a TLS `nats-server` and proves itself to one that asks.
#[derive(Clone, Debug, Default)]
pub struct BusTls {
    /// Trust the CAs in this PEM file (a private CA); else the system's roots.
    pub ca: Option<PathBuf>,
    /// A client certificate and its key (PEM), for a server with `verify: true`.
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
}

/// NATS's own default, used until the server said otherwise.
const DEFAULT_MAX_PAYLOAD: usize = 1 << 20;

/// Connects; with `retry`, returns at once and keeps trying in the background (an agent starts
/// whether or not NATS is up), otherwise fails after a few seconds with the reason. Either way
/// a lost connection is re-established (at most a second apart) and subscriptions resume.
///
/// With `retry`, one attempt is made first and its failure logged with its whole cause (a TLS
/// certificate the CA does not sign, a refused connection): the background attempts after it
/// only report an error's kind.
pub async fn connect(conn: &Connection, retry: bool) -> Result<async_nats::Client, FleetError> {
    let urls: Vec<&str> = conn.url.split(',').map(str::trim).filter(|u| !u.is_empty()).collect();
    let addrs: Vec<async_nats::ServerAddr> = urls
        .iter()
        .map(|u| u.parse().map_err(|e| FleetError::BadRequest(format!("NATS URL {:?}: {e}", redacted(u)))))
        .collect::<Result<_, _>>()?;
    let first = options(conn).await?.connect(addrs.clone()).await;
    match first {
        Ok(client) => Ok(client),
        Err(e) if retry => {
            tracing::warn!(
                url = %conn.shown_url(),
                "fleet: cannot connect to NATS: {} ({}); retrying in the background",
                causes(&e),
                hint(conn)
            );
            Ok(options(conn).await?.retry_on_initial_connect().connect(addrs).await.map_err(|e| bus_error(conn, &e))?)
        }
        Err(e) => Err(bus_error(conn, &e)),
    }
}

fn bus_error(conn: &Connection, e: &async_nats::ConnectError) -> FleetError {
    FleetError::Bus(format!("connecting to NATS at {}: {} ({})", conn.shown_url(), causes(e), hint(conn)))
}

/// An error and its sources, `: `-separated (rustls' reason sits two levels down).
fn causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text = format!("{text}: {more}");
        }
        source = s.source();
    }
    text
}

/// What to check, for the connection's kind.
fn hint(conn: &Connection) -> &'static str {
    if conn.tls.ca.is_some() || conn.url.contains("tls://") {
        "is nats-server running, is its certificate signed by --nats-ca, and does it want --nats-cert/--nats-key?"
    } else {
        "is nats-server running?"
    }
}

/// The connection's options, without the initial-connect retry.
async fn options(conn: &Connection) -> Result<async_nats::ConnectOptions, FleetError> {
    let mut options = async_nats::ConnectOptions::new()
        .name(&conn.name)
        .connection_timeout(Duration::from_secs(3))
        .max_reconnects(None)
        .reconnect_delay_callback(|attempts| Duration::from_millis((100 * attempts as u64).min(1_000)))
        .event_callback(|event| async move {
            match event {
                async_nats::Event::Connected => tracing::info!("fleet: connected to NATS"),
                async_nats::Event::Disconnected => tracing::warn!("fleet: disconnected from NATS; reconnecting"),
                other => tracing::debug!("fleet: {other}"),
            }
        });
    if let Some(creds) = &conn.creds {
        options = options
            .credentials_file(creds)
            .await
            .map_err(|e| FleetError::Bus(format!("reading NATS credentials {}: {e}", creds.display())))?;
    }
    if let Some(ca) = &conn.tls.ca {
        options = options.add_root_certificates(ca.clone()).require_tls(true);
    }
    match (&conn.tls.cert, &conn.tls.key) {
        (Some(cert), Some(key)) => {
            options = options.add_client_certificate(cert.clone(), key.clone()).require_tls(true)
        }
        (None, None) => {}
        _ => return Err(FleetError::BadRequest("give --nats-cert and --nats-key together".into())),
    }
    Ok(options)
}

/// Replicas of a bucket created on a clustered server (a hub of three). Tried only: a single
/// server refuses more than one, and then the bucket is made with one.
const CLUSTER_REPLICAS: usize = 3;

/// One of the fleet's key-value buckets, created with `config` on first use (by whichever agent
/// or client comes first): on [`CLUSTER_REPLICAS`] servers where the server is a cluster, so
/// that losing one of a hub's three servers loses no bucket. Tried with a hub of three: with
/// one replica, killing the server that held the registry left the other two answering
/// "jetstream request timed out" to every `fleet` command.
async fn key_value(
    js: &async_nats::jetstream::Context,
    config: async_nats::jetstream::kv::Config,
) -> Result<async_nats::jetstream::kv::Store, FleetError> {
    if let Ok(store) = js.get_key_value(&config.bucket).await {
        return Ok(store);
    }
    let name = config.bucket.clone();
    replicated(|num_replicas| js.create_key_value(async_nats::jetstream::kv::Config { num_replicas, ..config.clone() }))
        .await
        .map_err(|e| {
            FleetError::Bus(format!(
                "creating the key-value bucket {name} (is JetStream enabled, `nats-server -js`?): {e}"
            ))
        })
}

/// What `create` makes with [`CLUSTER_REPLICAS`] replicas, or with one where the server
/// refuses that (a single server); the error is the second attempt's.
async fn replicated<T, E, F>(create: impl Fn(usize) -> F) -> Result<T, E>
where
    F: std::future::Future<Output = Result<T, E>>,
{
    match create(CLUSTER_REPLICAS).await {
        Ok(made) => Ok(made),
        Err(_) => create(1).await,
    }
}

/// The largest message the server accepts.
pub fn payload_limit(client: &async_nats::Client) -> usize {
    match client.server_info().max_payload {
        0 => DEFAULT_MAX_PAYLOAD,
        n => n,
    }
}

