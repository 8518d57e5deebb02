//! The `loupe` binary's library: the command line ([`cli`]), what each command puts together
//! ([`app`]) and the terminal text it prints ([`render`]). Below it, each layer is a crate of
//! its own, so the compiler holds the layering (`docs/architecture.md` draws them):
//!
//! ```text
//! loupe (this crate)   main → cli, app; render          the command line and its output
//! loupe-doors          control socket, HTTP API, fleet over NATS, the remote client
//! loupe-core           Host, the transport-free service every door calls; ingest (kernel → store)
//! loupe-sandbox        team analyses: the wasmtime sandbox, registry, fleet merges
//! loupe-api            operations (HostApi), model, formats, errors, wire types — no runtime
//! ```
//!
//! Inside this crate, `app` may use `cli`, and nothing below imports `app` or `cli`
//! (`tests/layers.rs` checks).
//!
//! Where a packet's bytes go: counted in `bpf/ebpf` (the tc filter), read by
//! `loupe_core::ingest::runs`, stored by `store/`, served by `loupe_core::Host::show_run` through
//! each door.

pub mod app;
pub mod cli;
pub mod render;
