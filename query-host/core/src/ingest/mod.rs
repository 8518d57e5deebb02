//! Each data source, from the kernel to the store: [`runs`] (the tc filter's Millisampler runs,
//! one worker per interface) and [`stacks`] (the perf-event stack sampler, symbolized by
//! [`symbolize`] while the sampled processes still live), and [`timeline`] (programs' event
//! rings, tailed), and [`probes`] (uprobes on named functions: calls, latencies, call trees). Every
//! file a caller or a process names is opened through [`regular_file`]. Nothing here knows a door.

pub mod dir_watch;
pub mod probes;
pub mod regular_file;
pub mod runs;
pub mod stacks;
pub mod symbolize;
pub mod timeline;
