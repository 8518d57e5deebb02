//! Other tools' formats, both ways: Meta's SyncMillisampler dataset (runs in and out) and
//! pprof (profiles out); MessagePack request bodies; and the JSON reader for Loupe's own deep
//! answers; base64 bytes inside JSON; URLs without their credentials, for logs. Every decoder here reads bytes from outside: each bounds size and depth first.

pub mod base64;
pub mod deep_json;
pub mod hex;
pub mod millisampler;
pub mod msgpack;
pub mod pprof;
pub mod trace;
pub mod url;
