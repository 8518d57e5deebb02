//! Terminal text: what the CLI prints when not asked for `--json`. Reads the model's types
//! only; every door's JSON is the model itself.

pub mod analysis;
pub mod days;
pub mod fleet;
pub mod probe;
pub mod profile;
pub mod run;
pub mod status;
pub mod timeline;
pub mod window;
