//! A file of Meta's SyncMillisampler dataset, plain or gzip (`loupe import millisampler`):
//! `formats::millisampler::parse`. Whatever the bytes, an error or a run the store accepts —
//! never a panic, and never more memory than the file size bound (a gzip bomb stops there).
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use loupe_api::formats::millisampler;

fuzz_target!(|data: &[u8]| {
    if let Ok(run) = millisampler::parse(data, Path::new("rackId_7_hostId_9.json"), 1, 1_000_000) {
        assert_eq!(run.per_cpu.len(), 1);
        assert_eq!(run.per_cpu[0].counter(loupe_store::Counter::InBytes).len(), run.samples as usize);
    }
});
