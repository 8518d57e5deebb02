//! `loupe fleet hosts|run|invoke`: the fleet over NATS (`--nats URL`), or through the HTTP API
//! of an agent in the fleet (`--server URL`, the agent asks NATS). The answers are the same
//! either way.

use anyhow::{Result, bail};

use crate::{
    cli::{FleetBusArgs, FleetCommand, FleetRunArgs, FleetScopeArgs, RemoteArgs},
    doors::{
        fleet::{Connection, Coordinator, RunOrderFleet, Selector},
        remote::Client,
    },
    model::{FleetHostsView, FleetRunView},
    render,
};

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
        (Some(url), _) => {
            Ok(Via::Nats(Connection { url: url.clone(), creds: bus.nats_creds.clone(), name: "loupe-cli".into() }))
        }
        (None, Some(server)) => Ok(Via::Server(Client::new(server, remote.token.clone())?)),
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

fn invoke(args: &crate::cli::FleetInvokeArgs, remote: &RemoteArgs) -> Result<()> {
    // PENDING-MERGE-API
    let _ = (args, remote);
    bail!("pending")
}
