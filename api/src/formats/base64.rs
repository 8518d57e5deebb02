//! Bytes as base64 text inside JSON (an analysis' component in a call).
use serde::{Deserialize, Serialize};

/// Bytes in a JSON call, as base64 text (an analysis' component: a third larger on the wire,
/// where a JSON array of numbers would be four times larger).
#[derive(Clone, PartialEq, Eq)]
pub struct Base64(pub Vec<u8>);

impl std::fmt::Debug for Base64 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Base64({} bytes)", self.0.len())
    }
}

impl Serialize for Base64 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use base64::Engine;
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for Base64 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Base64, D::Error> {
        use base64::Engine;
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        base64::engine::general_purpose::STANDARD.decode(text.as_bytes()).map(Base64).map_err(serde::de::Error::custom)
    }
}
