//! `loupe probe` and `loupe probes list|show|stop`: on a local store (the probes then run in this
//! process), through a running agent's control socket (the agent owns them, and they end with
//! it), or on a remote host (`--server`). One flow for all three: start the session, wait for
//! its length, Ctrl-C or its own end, stop it and show what it stored. `kill -9` of this
//! process detaches probes it runs itself (they are file descriptors), though the session is
//! then not stored.

use std::{
    sync::atomic::Ordering,
    time::{Duration, Instant},
};

use anyhow::Result;
use loupe_api::ops::HostApi;

use super::{
    commands::{open, print_json, print_text},
    stop_on_signals,
};
use crate::{
    cli::{ProbeArgs, ProbesCommand, RemoteArgs},
    render,
};
use loupe_core::{ProbeOrder, time::range};

pub fn probe(args: ProbeArgs, remote: &RemoteArgs) -> Result<()> {
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
    let host = open(&args.store, remote, Vec::new())?;
    let started = host.start_probe(order)?;
    eprintln!("probing {} (handle {}); Ctrl-C stops", started.functions.join(", "), started.handle);
    let ends = started
        .ends_unix_ns
        .map(|e| Instant::now() + Duration::from_nanos(e.saturating_sub(loupe_api::clock::now_unix_ns())));
    let mut last_poll = Instant::now();
    while !stop.load(Ordering::Relaxed) && ends.is_none_or(|e| Instant::now() < e) {
        std::thread::sleep(Duration::from_millis(100));
        // A session can end by itself (budget, the process exited): then collect it.
        if last_poll.elapsed() >= Duration::from_secs(1) {
            last_poll = Instant::now();
            if !still_running(&*host, started.handle)? {
                break;
            }
        }
    }
    let view = host.stop_probe(started.handle)?;
    if args.json { print_json(&view) } else { print_text(&render::probe::session(&view)) }
}

/// Whether the session `handle` is still attached (asks for the running ones and an empty
/// range of stored ones).
fn still_running(host: &dyn HostApi, handle: u64) -> Result<bool> {
    let list = host.list_probes(loupe_store::TimeRange::new(0, 1)?)?;
    Ok(list.active.iter().any(|a| a.handle == handle))
}

pub fn probes(cmd: ProbesCommand, remote: &RemoteArgs) -> Result<()> {
    match cmd {
        ProbesCommand::List { store, range: r, json } => {
            let list = open(&store, remote, Vec::new())?.list_probes(range(r.from, r.to)?)?;
            if json { print_json(&list) } else { print_text(&render::probe::list(&list)) }
        }
        ProbesCommand::Show { store, id, calls, json } => {
            let view = open(&store, remote, Vec::new())?.show_probe(id, calls)?;
            if json { print_json(&view) } else { print_text(&render::probe::session(&view)) }
        }
        ProbesCommand::Stop { store, handle, json } => {
            let view = open(&store, remote, Vec::new())?.stop_probe(handle)?;
            if json { print_json(&view) } else { print_text(&render::probe::session(&view)) }
        }
    }
}
