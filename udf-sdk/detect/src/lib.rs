//! The detection algorithms of Loupe's example analyses, as plain Rust with no dependencies: the
//! analyses (`burst-detector`, `incast-detector`) wrap them as wasm components, and native code
//! (the query host's `udf` benchmark) runs exactly the algorithm the analyses run.
//!
//! * [`burst`] — maximal stretches of slots whose ingress rate is above a threshold.
//! * [`incast`] — those bursts during which many connections were active at once.

pub mod burst;
pub mod incast;

pub use burst::{Burst, detect, rate_bps};
pub use incast::{Incast, incasts};
