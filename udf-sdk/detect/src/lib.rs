//! The detection algorithms of Loupe's example analyses, as plain Rust with no dependencies: the
//! analyses wrap them as wasm components, and native code (the query host's benchmarks, the
//! merge property tests) runs exactly the algorithm the analyses run.
//!
//! * [`burst`] — maximal stretches of slots whose ingress rate is above a threshold.
//! * [`incast`] — those bursts during which many connections were active at once.
//! * [`rack`] — a rack's slots: summed traffic, bursting hosts, incast victims (fleet-wide).
//! * [`fleet_hot`] — samples per host, function and shared library (fleet-wide).

pub mod burst;
pub mod fleet_hot;
pub mod incast;
pub mod rack;

pub use burst::{Burst, detect, hot_bytes, rate_bps};
pub use incast::{Incast, incasts};
