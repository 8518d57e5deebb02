//! MessagePack request bodies (`Content-Type: application/msgpack`), the binary twin of the
//! API's JSON bodies. A client chooses how deep its body nests, and serde's decoders recurse
//! once per level, so nesting is capped at [`MAX_DEPTH`] (serde_json caps JSON at 128).

use serde::de::DeserializeOwned;

/// Deepest nesting of a MessagePack body (the API's bodies nest 3 levels; parameters are flat).
pub const MAX_DEPTH: usize = 64;

pub fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, rmp_serde::decode::Error> {
    let mut de = rmp_serde::Deserializer::from_read_ref(bytes);
    de.set_max_depth(MAX_DEPTH);
    T::deserialize(&mut de)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_beyond_the_cap_is_an_error_not_a_crash() {
        // 1,000,000 nested one-element arrays: 0x91 each, then nil.
        let mut deep = vec![0x91u8; 1_000_000];
        deep.push(0xc0);
        let err = from_slice::<serde_json::Value>(&deep).unwrap_err();
        assert!(err.to_string().contains("depth"), "{err}");
        let ok = rmp_serde::to_vec(&serde_json::json!({"params": {"threshold_bps": 5}})).unwrap();
        assert_eq!(from_slice::<serde_json::Value>(&ok).unwrap()["params"]["threshold_bps"], 5);
    }
}
