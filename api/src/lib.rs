//! What the query host's doors speak, without the host behind them: the types a caller sends
//! and gets back, the errors, and the file formats.
//!
//! - [`model`]: every answer, with its OpenAPI schema (runs, profiles, probes, timelines,
//!   analyses, the fleet, errors);
//! - [`ops`]: the host's operations and the fleet's, each named once, and [`ops::HostApi`] and
//!   [`ops::FleetApi`], the interfaces the CLI calls whichever way it reaches them;
//! - [`access`]: who may do what — a caller's team and scopes, the scope each operation needs;
//! - [`orders`]: what a caller asks for (runs to list, a run to start, a probe session);
//!   [`fleet`]: what it asks the fleet for (the hosts selected, a rack run, an analysis);
//! - [`signed`]: fleet requests signed by who asks — keys, the trust file, nonces;
//! - [`error`]: the core's one error type, and an analysis' errors inside it;
//! - [`time`], [`clock`]: instants and ranges as people write them; wall-clock helpers;
//! - [`wire`]: the control socket's calls and answers, the HTTP API's query strings and bodies;
//! - [`formats`]: Millisampler files, pprof, MessagePack and depth-bounded JSON.
//!
//! Why a crate of its own: everything that decodes bytes from outside (a client's body, an
//! agent's answer, an imported file) is here, so the fuzz targets build it with the store and
//! nothing else — no wasmtime, axum, tokio, async-nats, blazesym or aya (`tests/light.rs`
//! holds that) — and the layers above can only reach down.

pub mod access;
pub mod clock;
pub mod error;
pub mod fleet;
pub mod formats;
pub mod model;
pub mod ops;
pub mod orders;
pub mod signed;
pub mod time;
pub mod wire;
