//! The doors onto the core: the agent's [`control`] socket (server and client), the [`http`]
//! API (the fleet's routes among it: they ask the fleet through `loupe-fleet`, the layer below),
//! and the CLI's client for a remote host's API ([`remote`]). Each parses what comes in,
//! calls the core, and renders the core's typed answers and errors its own way.

pub mod control;
pub mod http;
pub mod remote;
