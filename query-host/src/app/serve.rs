//! `loupe serve`: the HTTP API over a store, without collecting (e.g. a copied data dir). It
//! holds the store, so it answers the CLI's commands on that data dir over the control socket,
//! as an agent does.

use std::sync::Arc;

use anyhow::{Result, anyhow};
use loupe_store::StoreError;

use super::{open_store, stop_on_signals, wait_for_stop};
use crate::cli::ServeArgs;
use loupe_core::{Analyses, Host, tokens::TokenSet};
use loupe_doors::{
    control::ControlServer,
    http::{AppState, Server},
};

pub fn main(args: ServeArgs) -> Result<()> {
    let store = open_store(&args.store).map_err(|e| match e {
        StoreError::Locked { .. } => {
            anyhow!("{e}; a running agent holds it and serves its API itself (see `loupe agent --listen`)")
        }
        e => e.into(),
    })?;
    let options = args.http.options()?;
    let analyses = Analyses::open(&args.store.data_dir, &store, options.limits.clone())?;
    let host =
        Arc::new(Host::new(store.clone()).keeping_audit_files(args.store.audit_files as usize).with_analyses(analyses));
    let control = ControlServer::start(&args.store.data_dir, Arc::clone(&host))?;
    let state = AppState::new(Arc::clone(&host), TokenSet::new(&args.store.data_dir), &options);
    let server = Server::start(state, &options)?;
    // The handlers first: whoever reads the line below may stop the server at once (a test's
    // SIGTERM right after it, on a loaded machine, found the default action still in place).
    let stop = stop_on_signals()?;
    let scheme = if options.tls.is_some() { "https" } else { "http" };
    println!("serving {} on {scheme}://{}", args.store.data_dir.display(), server.addr);
    wait_for_stop(&stop, None, || host.audit().write_ended());
    super::exit_within(std::time::Duration::from_secs(20));
    server.stop()?;
    control.stop();
    host.audit().flush();
    store.flush()?;
    Ok(())
}
