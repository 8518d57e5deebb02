//! Parsing JSON that nests as deep as a stack: a flame graph node per frame, two JSON levels
//! each, and stacks reach 254 frames (127 kernel + 127 user) — past serde_json's default
//! recursion limit of 128. The depth is bounded by the data (not by an attacker: this reads
//! Loupe's own answers), so the limit is lifted rather than the format flattened.

use serde::de::DeserializeOwned;

pub fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> serde_json::Result<T> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    de.disable_recursion_limit();
    let value = T::deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}
