//! `loupe fleet hosts|run|invoke`: the fleet's operations (`loupe_api::ops::FleetApi`) over
//! NATS (`--nats URL`), or through the HTTP API of an agent in the fleet (`--server URL`, the
//! agent asks NATS; its token needs the `fleet` scope). The answers are the same either way.

use std::{path::PathBuf, sync::Arc};

use anyhow::{Context, Result, bail};
use loupe_store::{Retention, Store};

use crate::{
    cli::{FleetBusArgs, FleetCommand, FleetInvokeArgs, FleetKeyCommand, FleetRunArgs, FleetScopeArgs, RemoteArgs},
    render,
};
use loupe_api::{
    fleet::{FleetInvokeOrder, FleetRunOrder, Selector},
    ops::FleetApi,
    signed::{FleetKey, trust::TrustFile},
};
use loupe_core::{Analyses, Host, time::range};
use loupe_doors::remote::Client;
use loupe_fleet::{
    Connection, Coordinator,
    asker::{Asker, Modules},
    signer::Signer,
};
use loupe_sandbox::sandbox::Limits;

pub fn main(cmd: FleetCommand, remote: &RemoteArgs) -> Result<()> {
    match cmd {
        FleetCommand::Hosts { bus, scope, json } => hosts(&bus, &scope, json, remote),
        FleetCommand::Run(args) => run(&args, remote),
        FleetCommand::Invoke(args) => invoke(&args, remote),
        FleetCommand::Key(cmd) => key(cmd),
    }
}

/// `loupe fleet key new|show`.
fn key(cmd: FleetKeyCommand) -> Result<()> {
    match cmd {
        FleetKeyCommand::New { out: Some(path) } => {
            let key = FleetKey::generate();
            key.write_new(&path).map_err(anyhow::Error::msg)?;
            println!("{}", key.public_key());
            eprintln!(
                "loupe: the seed is in {} (owner-only); list the public key above in the hosts' trust files \
                 (KEY TEAM SCOPES) and sign with --fleet-key {0}",
                path.display()
            );
        }
        FleetKeyCommand::New { out: None } => {
            let key = FleetKey::generate();
            println!("# public key {}\n{}", key.public_key(), key.seed());
        }
        FleetKeyCommand::Show { file } => {
            println!("{}", FleetKey::read(&file).map_err(anyhow::Error::msg)?.public_key())
        }
    }
    Ok(())
}

/// Where a fleet command goes: NATS, with who signs its requests and whose seals on leaves'
/// partials it takes, or an agent's HTTP API (the agent signs for the token's team).
pub enum Via {
    Nats(Connection, Signer, Option<Arc<TrustFile>>),
    Server(Client),
}

pub fn via(bus: &FleetBusArgs, remote: &RemoteArgs) -> Result<Via> {
    match (&bus.nats, &remote.server) {
        (Some(url), _) => {
            let conn = Connection {
                url: url.clone(),
                creds: bus.nats_creds.clone(),
                tls: bus.nats_tls.tls(),
                name: "loupe-cli".into(),
            };
            let signer = match &bus.fleet_key {
                Some(path) => Signer::new(Arc::new(FleetKey::read(path).map_err(anyhow::Error::msg)?)),
                None => Signer::one_off(),
            };
            let trust = bus.fleet_trust.as_deref().map(TrustFile::open).transpose().map_err(anyhow::Error::msg)?;
            Ok(Via::Nats(conn, signer, trust.map(Arc::new)))
        }
        (None, Some(server)) => Ok(Via::Server(remote.client(server)?)),
        (None, None) => bail!("where is the fleet? give --nats nats://host:4222, or --server URL of an agent in it"),
    }
}

/// Runs `f` with the fleet's operations (`FleetApi`) wherever the fleet is: over NATS, this
/// command asking and signing, `modules` merging an analysis' answers; or through an agent's
/// HTTP API, which asks and merges. The answers are the same either way.
fn with_fleet<T>(
    bus: &FleetBusArgs,
    remote: &RemoteArgs,
    modules: Modules,
    f: impl FnOnce(&dyn FleetApi) -> loupe_core::CoreResult<T>,
) -> Result<T> {
    match via(bus, remote)? {
        Via::Nats(conn, signer, trust) => {
            let runtime = runtime()?;
            let mut coordinator = runtime.block_on(Coordinator::connect(&conn, "cli"))?;
            if let Some(trust) = trust {
                coordinator = coordinator.with_trust(trust);
            }
            let asker = Asker { coordinator: &coordinator, signer, modules, runtime: runtime.handle().clone() };
            Ok(f(&asker)?)
        }
        Via::Server(client) => Ok(f(&client.host())?),
    }
}

pub fn selector(scope: &FleetScopeArgs) -> Selector {
    if scope.all {
        return Selector::default();
    }
    Selector { dc: scope.dc.clone(), rack: scope.rack.clone(), host: scope.host.clone() }
}

/// A small runtime for one command's NATS conversation.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?)
}

/// Nothing to merge: the commands that run no analysis.
fn no_modules() -> Modules {
    Modules::Catalog { host: None, wasm: None }
}

fn hosts(bus: &FleetBusArgs, scope: &FleetScopeArgs, json: bool, remote: &RemoteArgs) -> Result<()> {
    let sel = selector(scope);
    let view = with_fleet(bus, remote, no_modules(), |fleet| fleet.fleet_hosts(sel))?;
    if json {
        println!("{}", serde_json::to_string(&view)?);
    } else {
        print!("{}", render::fleet::hosts(&view));
    }
    Ok(())
}

fn run(args: &FleetRunArgs, remote: &RemoteArgs) -> Result<()> {
    let order = FleetRunOrder {
        hosts: selector(&args.scope),
        iface: args.iface.clone(),
        interval: args.interval,
        samples: args.samples,
        at_unix_ns: args.at.map(|t| t.unix_ns()),
    };
    let view = with_fleet(&args.bus, remote, no_modules(), |fleet| fleet.fleet_run(order))?;
    if args.json {
        println!("{}", serde_json::to_string(&view)?);
    } else {
        print!("{}", render::fleet::run(&view));
    }
    Ok(())
}

/// `loupe fleet invoke`: over NATS, this command ships the module (`--wasm`) or finds it in the
/// fleet's catalog, and merges the hosts' partials itself, in its own sandbox; through
/// `--server`, the agent does both with the analysis uploaded to it.
fn invoke(args: &FleetInvokeArgs, remote: &RemoteArgs) -> Result<()> {
    let mut params = serde_json::Map::new();
    for text in &args.params {
        let (k, v) = super::udf::parse_param(text)?;
        params.insert(k, v);
    }
    let order = FleetInvokeOrder {
        name: args.name.clone(),
        hosts: selector(&args.scope),
        range: range(args.range.from, args.range.to)?,
        params,
        deadline: args.deadline,
    };
    let wasm = match &args.wasm {
        Some(_) if args.bus.nats.is_none() => {
            bail!("--wasm ships a module over NATS: give --nats, or upload it to the agent first (loupe udf upload)")
        }
        Some(path) => Some(std::fs::read(path).with_context(|| format!("reading {}", path.display()))?),
        None => None,
    };
    // Merged here only over NATS; an agent merges on its own runtime.
    let merger = match args.bus.nats {
        Some(_) => Some(Merger::new()?),
        None => None,
    };
    let modules = Modules::Catalog { host: merger.as_ref().map(|m| Arc::clone(&m.host)), wasm };
    let view = with_fleet(&args.bus, remote, modules, |fleet| fleet.fleet_invoke(order))?;
    if args.json {
        println!("{}", serde_json::to_string(&view)?);
    } else {
        print!("{}", render::fleet::invoke(&view));
    }
    Ok(())
}

/// The CLI's own analysis runtime for merging, over a throwaway store (merge reads no data).
struct Merger {
    host: Arc<Host>,
    dir: PathBuf,
}

impl Merger {
    fn new() -> Result<Merger> {
        let dir = std::env::temp_dir().join(format!("loupe-fleet-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let store = Store::open(&dir.join("store"), Retention::default())?;
        let analyses = Analyses::open(&dir, &store, Limits::default())?;
        Ok(Merger { host: Arc::new(Host::new(store).with_analyses(analyses)), dir })
    }
}

impl Drop for Merger {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
