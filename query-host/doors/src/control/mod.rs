//! The agent's control socket: `<data-dir>/agent.sock`, one JSON call and one JSON answer per
//! connection.
//!
//! Why it exists: a running agent owns both its store (sled admits one process) and its
//! interfaces (one run at a time), so `loupe run`, `loupe runs …`, `loupe profile` and `loupe
//! import` pointed at the agent's data dir hand their work to the agent instead of failing.
//! Both ends speak the core's types ([`protocol`]): the server answers each call with the
//! core's result, the client knows from its call which type comes back.

pub mod client;
pub mod server;

use std::path::{Path, PathBuf};

pub use client::{AgentClient, find};
pub use loupe_api::wire::control as protocol;
pub use server::ControlServer;

pub fn socket_path(data_dir: &Path) -> PathBuf {
    data_dir.join("agent.sock")
}
