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
//! Where a packet's bytes go: counted in `bpf/ebpf` (the tc filter), read by
//! [`ingest::runs`], stored by `store/`, served by [`core::Host::show_run`] through each door.

pub mod analysis;
pub mod app;
pub mod cli;
pub mod clock;
pub mod core;
pub mod doors;
pub mod formats;
pub mod ingest;
pub mod model;
pub mod render;
