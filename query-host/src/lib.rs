//! Loupe's query host: the agent, the HTTP API with team-owned WebAssembly analyses, and the
//! commands of the `loupe` binary. Layers, each importing only those below it
//! (`tests/layers.rs` checks):
//!
//! ```text
//! main → cli, app            the command line and what each command puts together
//!        doors, render       control socket, HTTP API, remote client; terminal text
//!        core                the transport-free service every door calls (Host), typed errors
//!        ingest, analysis    data sources (runs, stacks) into the store; the wasm sandbox
//!        model, formats      response types with schemas; Millisampler, pprof, deep JSON
//!        clock               wall-clock helpers
//! ```
//!
//! The last two rows are the `loupe-api` crate (`api/`), re-exported under these names: it also
//! holds the core's error type, the orders and the control socket's wire types, so what decodes
//! outside bytes builds without this crate's runtime (the fuzz targets do).
//!
//! Where a packet's bytes go: counted in `bpf/ebpf` (the tc filter), read by
//! [`ingest::runs`], stored by `store/`, served by [`core::Host::show_run`] through each door.

pub mod analysis;
pub mod app;
pub mod cli;
pub mod core;
pub mod doors;
pub mod ingest;
pub mod render;

// The response types, formats and clock live in `loupe-api` (what the fuzz targets build);
// these names keep `crate::model::…` meaning the same inside the host.
pub use loupe_api::{clock, formats, model};
