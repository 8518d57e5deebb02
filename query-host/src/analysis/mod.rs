//! Team-owned analyses (UDFs): WebAssembly components that run next to the data.
//!
//! - [`host`]: the `loupe:udf/data` interface (cursors over runs and samples) over the store;
//!   [`probes`]: its cursor over probe sessions and their calls.
//! - [`sandbox`]: limits, the per-invocation state, and the imports an analysis is granted.
//! - [`runtime`]: one engine, compile-once, a fresh store per invocation.
//! - [`registry`]: uploads on disk with their precompiled artifacts.
//! - [`params`], [`output`]: JSON in, typed values to the guest; typed results out, bounded
//!   in size and depth before the host builds anything from them.
//! - [`partial`], [`merge`]: fleet-wide analyses — a host's result as it travels to the asker,
//!   and merging the hosts' results with the analysis' own `merge`, in the same sandbox.

pub mod host;
pub mod merge;
pub mod output;
pub mod params;
pub mod partial;
pub mod probes;
pub mod registry;
pub mod runtime;
pub mod sandbox;

pub use loupe_api::error::UdfError;
