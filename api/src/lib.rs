//! What the query host's doors speak, without the host behind them: the types a caller sends
//! and gets back, the errors, and the file formats.
//!
//! - [`model`]: every answer, with its OpenAPI schema (runs, profiles, probes, timelines,
//!   analyses, the fleet, errors);
//! - [`ops`]: the host's operations, each named once, and [`ops::HostApi`], the one interface
//!   the CLI calls whichever way it reaches the host;
//! - [`access`]: who may do what — a caller's team and scopes, the scope each operation needs;
//! - [`orders`]: what a caller asks for (runs to list, a run to start, a probe session);
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
pub mod formats;
pub mod model;
pub mod ops;
pub mod orders;
pub mod time;
pub mod wire;
