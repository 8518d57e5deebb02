//! The testbed's synthetic data with known answers (see `loupe_testbed::synthetic`).
#![allow(dead_code, unused_imports)]

pub use loupe_testbed::synthetic::{fill_known as fill, *};
