//! Team-owned analyses (UDFs): WebAssembly components that run next to the data.
//!
//! - [`bindings`]: the `analysis` world's types and traits, generated from `udf-sdk/wit`;
//!   [`cursors`]: the host's state behind each cursor an analysis holds.
//! - [`host`]: the `loupe:udf/data` interface (cursors over runs, samples, waits, timelines)
//!   over the store; [`probes`]: its cursor over probe sessions and their calls.
//! - [`sandbox`]: limits, the per-invocation state, and the imports an analysis is granted;
//!   [`log`]: an invocation's capped log.
//! - [`runtime`]: one engine, compile-once, a fresh store per invocation.
//! - [`registry`]: uploads on disk with their precompiled artifacts.
//! - [`params`], [`output`]: JSON in, typed values to the guest; typed results out, bounded
//!   in size and depth before the host builds anything from them.
//! - [`partial`], [`merge`]: fleet-wide analyses — a host's result as it travels to the asker,
//!   and merging the hosts' results with the analysis' own `merge`, in the same sandbox;
//!   [`merge_world`]: the fleet worlds' bindings; [`batch`]: a group of columnar partials as
//!   one, lowered as a few lists.
//!
//! No two of these modules use each other (`tests/layers.rs` checks): the generated bindings,
//! the cursor structs and the log sit below the modules that implement and call them.

pub mod batch;
pub mod bindings;
pub mod cursors;
pub mod host;
pub mod log;
pub mod merge;
pub mod merge_world;
pub mod output;
pub mod params;
pub mod partial;
pub mod probes;
pub mod registry;
pub mod runtime;
pub mod sandbox;

pub use loupe_api::error::UdfError;
