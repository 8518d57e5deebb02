//! The agent's control socket, both ends: a call as the agent reads it (`control::Call`,
//! JSON) and an answer as the CLI reads it (`control::decode`, depth-checked JSON), here one
//! carrying a run and one carrying a profile. Input: a selector byte, then the line.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loupe_api::{
    model::{ProfileView, RunView},
    wire::control as protocol,
};

fuzz_target!(|data: &[u8]| {
    let Some((&which, line)) = data.split_first() else { return };
    match which % 3 {
        0 => drop(serde_json::from_slice::<protocol::Call>(line)),
        1 => drop(protocol::decode::<RunView>(line)),
        _ => drop(protocol::decode::<ProfileView>(line)),
    }
});
