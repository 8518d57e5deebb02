//! `loupe fleet hosts|run|invoke`: the fleet over NATS (`--nats URL`), or through the HTTP API
//! of an agent in the fleet (`--server URL`, the agent asks NATS). The answers are the same
//! either way.

use std::{path::PathBuf, sync::Arc};

use anyhow::{Context, Result, bail};
use loupe_store::{Retention, Store};

use crate::{
    cli::{FleetBusArgs, FleetCommand, FleetInvokeArgs, FleetRunArgs, FleetScopeArgs, RemoteArgs},
    render,
};
use loupe_api::model::{FleetHostsView, FleetInvokeView, FleetRunView};
use loupe_core::{Analyses, Host, time::range};
use loupe_doors::{
    fleet::{Connection, Coordinator, InvokeOrder, RunOrderFleet, Selector, merge_with},
    remote::Client,
};
use loupe_sandbox::sandbox::Limits;

pub fn main(cmd: FleetCommand, remote: &RemoteArgs) -> Result<()> {
    match cmd {
        FleetCommand::Hosts { bus, scope, json } => hosts(&bus, &scope, json, remote),
        FleetCommand::Run(args) => run(&args, remote),
        FleetCommand::Invoke(args) => invoke(&args, remote),
    }
}

/// Where a fleet command goes.
pub enum Via {
    Nats(Connection),
    Server(Client),
}

pub fn via(bus: &FleetBusArgs, remote: &RemoteArgs) -> Result<Via> {
    match (&bus.nats, &remote.server) {
        (Some(url), _) => Ok(Via::Nats(Connection {
            url: url.clone(),
            creds: bus.nats_creds.clone(),
            tls: bus.nats_tls.tls(),
            name: "loupe-cli".into(),
        })),
        (None, Some(server)) => Ok(Via::Server(remote.client(server)?)),
        (None, None) => bail!("where is the fleet? give --nats nats://host:4222, or --server URL of an agent in it"),
    }
}

pub fn selector(scope: &FleetScopeArgs) -> Selector {
    if scope.all {
        return Selector::default();
    }
    Selector { dc: scope.dc.clone(), rack: scope.rack.clone(), host: scope.host.clone() }
}

/// The selector as query pairs for the HTTP API.
pub fn scope_query(sel: &Selector) -> Vec<(&'static str, String)> {
    [("rack", &sel.rack), ("dc", &sel.dc), ("host", &sel.host)]
        .into_iter()
        .filter_map(|(k, v)| v.clone().map(|v| (k, v)))
        .collect()
}

/// A small runtime for one command's NATS conversation.
pub fn block_on<F: std::future::Future>(f: F) -> Result<F::Output> {
    Ok(tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?.block_on(f))
}

fn hosts(bus: &FleetBusArgs, scope: &FleetScopeArgs, json: bool, remote: &RemoteArgs) -> Result<()> {
    let sel = selector(scope);
    let view: FleetHostsView = match via(bus, remote)? {
        Via::Nats(conn) => block_on(async { Coordinator::connect(&conn, "cli").await?.hosts(&sel).await })??,
        Via::Server(client) => client.get("/api/v1/fleet/hosts", &scope_query(&sel))?,
    };
    if json {
        println!("{}", serde_json::to_string(&view)?);
    } else {
        print!("{}", render::fleet::hosts(&view));
    }
    Ok(())
}

fn run(args: &FleetRunArgs, remote: &RemoteArgs) -> Result<()> {
    let sel = selector(&args.scope);
    let at = args.at.map(|t| t.unix_ns());
    let view: FleetRunView = match via(&args.bus, remote)? {
        Via::Nats(conn) => {
            let order = RunOrderFleet {
                selector: sel,
                iface: args.iface.clone(),
                interval: args.interval,
                samples: args.samples,
                at_unix_ns: at,
            };
            block_on(async { Coordinator::connect(&conn, "cli").await?.run(&order).await })??
        }
        Via::Server(client) => {
            let mut body = serde_json::json!({
                "interval": humantime::format_duration(args.interval).to_string(),
                "samples": args.samples,
            });
            for (k, v) in scope_query(&sel) {
                body[k] = v.into();
            }
            if let Some(iface) = &args.iface {
                body["iface"] = iface.clone().into();
            }
            if let Some(at) = at {
                body["at"] = at.to_string().into();
            }
            client.post("/api/v1/fleet/runs", &body)?
        }
    };
    if args.json {
        println!("{}", serde_json::to_string(&view)?);
    } else {
        print!("{}", render::fleet::run(&view));
    }
    Ok(())
}

/// `loupe fleet invoke`: over NATS, this command ships (or looks up) the module and merges the
/// hosts' partials itself, in its own sandbox; through `--server`, the agent does both.
fn invoke(args: &FleetInvokeArgs, remote: &RemoteArgs) -> Result<()> {
    let sel = selector(&args.scope);
    let mut params = serde_json::Map::new();
    for text in &args.params {
        let (k, v) = super::udf::parse_param(text)?;
        params.insert(k, v);
    }
    let r = range(args.range.from, args.range.to)?;
    let view: FleetInvokeView = match via(&args.bus, remote)? {
        Via::Nats(conn) => {
            let merger = Merger::new()?;
            let order = InvokeOrder {
                selector: sel,
                from_unix_ns: r.from_unix_ns(),
                to_unix_ns: r.to_unix_ns(),
                params: params.clone(),
                deadline: args.deadline,
            };
            block_on(async {
                let fleet = Coordinator::connect(&conn, "cli").await?;
                let (sha, bytes) = match &args.wasm {
                    Some(path) => {
                        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
                        (fleet.ship(&args.name, &bytes).await?, bytes)
                    }
                    None => {
                        let entry = fleet.lookup(&args.name).await?;
                        let bytes = fleet.fetch(&entry.sha256).await?;
                        (entry.sha256, bytes)
                    }
                };
                let host = Arc::clone(&merger.host);
                let module = host.analyses()?.fleet_module(host.store(), &args.name, &sha, || Ok(bytes))?;
                let merge = merge_with(host, module, "cli".into(), r, params);
                anyhow::Ok(fleet.invoke(&order, &args.name, &sha, merge).await?)
            })??
        }
        Via::Server(client) => {
            let mut body = serde_json::json!({
                "name": args.name,
                "params": params,
                "from": r.from_unix_ns().to_string(),
                "deadline": humantime::format_duration(args.deadline).to_string(),
            });
            if r.to_unix_ns() != u64::MAX {
                body["to"] = r.to_unix_ns().to_string().into();
            }
            for (k, v) in scope_query(&sel) {
                body[k] = v.into();
            }
            if args.wasm.is_some() {
                bail!(
                    "--wasm ships a module over NATS: give --nats, or upload it to the agent first (loupe udf upload)"
                );
            }
            client.post("/api/v1/fleet/invoke", &body)?
        }
    };
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
