//! `loupe probe` and `loupe probes list|show|stop`: on a local store (the probes then run in this
//! process), or through a running agent's control socket (the agent owns them, and they end
//! with it). Ctrl-C stops a session cleanly either way; `kill -9` of this process detaches its
//! probes too (they are file descriptors), though the session is then not stored.

use std::{
    sync::atomic::Ordering,
    time::{Duration, Instant},
};

use anyhow::{Result, bail};

use super::{
    commands::{Backend, print_json, print_text, range_query},
    stop_on_signals,
};
use crate::{
    cli::{ProbeArgs, ProbesCommand, RemoteArgs},
    core::{ProbeOrder, time::range},
    model::ProbeView,
    render,
};

pub fn probe(args: ProbeArgs, remote: &RemoteArgs) -> Result<()> {
    if remote.server.is_some() {
        bail!("probe attaches on this host: run it there, or POST /api/v1/probes to that host (drop --server)");
    }
    let order = ProbeOrder {
        pids: args.pids,
        binary: args.binary.map(|b| b.display().to_string()),
        functions: args.functions,
        seconds: args.seconds,
        sample_every: Some(args.sample_every),
        calls: args.calls,
        budget_percent: Some(args.budget),
        allow_single_step: args.allow_single_step,
    };
    let stop = stop_on_signals()?;
    let view: ProbeView = match Backend::open(&args.store, remote)? {
        Backend::Local(host) => host.probe_once(&order, &stop, |a| {
            eprintln!("probing {} here; Ctrl-C stops", a.functions.join(", "));
        })?,
        Backend::Agent(agent) => {
            let started = agent.start_probe(order)?;
            eprintln!(
                "probing {} on the agent (handle {}); Ctrl-C stops",
                started.functions.join(", "),
                started.handle
            );
            let ends = started
                .ends_unix_ns
                .map(|e| Instant::now() + Duration::from_nanos(e.saturating_sub(crate::clock::now_unix_ns())));
            let mut last_poll = Instant::now();
            while !stop.load(Ordering::Relaxed) && ends.is_none_or(|e| Instant::now() < e) {
                std::thread::sleep(Duration::from_millis(100));
                // A session can end by itself (budget, the process exited): then collect it.
                if last_poll.elapsed() >= Duration::from_secs(1) {
                    last_poll = Instant::now();
                    let list = agent.list_probes(loupe_store::TimeRange::new(0, 1)?)?;
                    if !list.active.iter().any(|a| a.handle == started.handle) {
                        break;
                    }
                }
            }
            agent.stop_probe(started.handle)?
        }
        Backend::Remote(_) => unreachable!("refused above"),
    };
    if args.json { print_json(&view) } else { print_text(&render::probe::session(&view)) }
}

pub fn probes(cmd: ProbesCommand, remote: &RemoteArgs) -> Result<()> {
    match cmd {
        ProbesCommand::List { store, range: r, json } => {
            let range = range(r.from, r.to)?;
            let list = match Backend::open(&store, remote)? {
                Backend::Local(host) => host.list_probes(range)?,
                Backend::Agent(agent) => agent.list_probes(range)?,
                Backend::Remote(client) => client.get("/api/v1/probes", &range_query(range))?,
            };
            if json { print_json(&list) } else { print_text(&render::probe::list(&list)) }
        }
        ProbesCommand::Show { store, id, calls, json } => {
            let view: ProbeView = match Backend::open(&store, remote)? {
                Backend::Local(host) => host.show_probe(id, calls)?,
                Backend::Agent(agent) => agent.show_probe(id, calls)?,
                Backend::Remote(client) => {
                    client.get(&format!("/api/v1/probes/{id}"), &[("calls", calls.to_string())])?
                }
            };
            if json { print_json(&view) } else { print_text(&render::probe::session(&view)) }
        }
        ProbesCommand::Stop { store, handle, json } => {
            let view: ProbeView = match Backend::open(&store, remote)? {
                Backend::Agent(agent) => agent.stop_probe(handle)?,
                Backend::Remote(client) => client.post(&format!("/api/v1/probes/active/{handle}/stop"), &())?,
                Backend::Local(_) => bail!("no agent is running on this data dir: there is nothing to stop"),
            };
            if json { print_json(&view) } else { print_text(&render::probe::session(&view)) }
        }
    }
}
