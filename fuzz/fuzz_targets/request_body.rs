//! The HTTP API's request bodies, as MessagePack (`Content-Type: application/msgpack`,
//! `formats::msgpack::from_slice`, nesting capped) and as JSON: `POST /api/v1/runs` and
//! `POST /api/v1/udfs/{name}/invoke`. Input: a selector byte, then the body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loupe_api::{
    formats::msgpack,
    wire::http::{InvokeRequest, StartRun},
};

fuzz_target!(|data: &[u8]| {
    let Some((&which, body)) = data.split_first() else { return };
    match which % 4 {
        0 => drop(msgpack::from_slice::<StartRun>(body)),
        1 => drop(msgpack::from_slice::<InvokeRequest>(body)),
        2 => drop(msgpack::from_slice::<serde_json::Value>(body)),
        _ => drop(serde_json::from_slice::<InvokeRequest>(body)),
    }
});
