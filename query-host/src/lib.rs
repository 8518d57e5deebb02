//! Loupe's query host: the agent, the HTTP API with team-owned WebAssembly analyses, and the
//! commands of the `loupe` binary.
//!
//! Where things are: packets are counted in `bpf/ebpf` (the tc filter), runs are stored by
//! `store/`, the agent's scheduling is in [`agent`], every command's code is in [`commands`]
//! and [`server_commands`], the HTTP API in [`server`], analyses in [`udf`].

pub mod agent;
pub mod cli;
pub mod client;
pub mod commands;
pub mod control;
pub mod deep_json;
pub mod metrics;
pub mod millisampler;
pub mod profile;
pub mod server;
pub mod server_commands;
pub mod stacks;
pub mod symbolize;
pub mod timearg;
pub mod tokens;
pub mod udf;
pub mod view;
