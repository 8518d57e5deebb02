//! MessagePack, as every record of the store writes it: rmp-serde with structs as arrays, a
//! byte string as a `bin` ([`Blob`]), and one error text for a value that does not decode.
//!
//! *Why one place:* the runs, the stack samples, the timeline and the probe sessions all store
//! MessagePack values, and each codec used to carry its own copy of these few lines.

use std::borrow::Cow;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// Bytes serialized as a MessagePack `bin` (rmp-serde would write a `Vec<u8>` as an array),
/// borrowed from the record when decoding.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Blob<'a>(pub Cow<'a, [u8]>);

impl Serialize for Blob<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Blob<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Blob<'a>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Blob<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("bytes")
            }
            fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> Result<Blob<'de>, E> {
                Ok(Blob(Cow::Borrowed(v)))
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Blob<'de>, E> {
                Ok(Blob(Cow::Owned(v.to_vec())))
            }
            fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Blob<'de>, E> {
                Ok(Blob(Cow::Owned(v)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Blob<'de>, A::Error> {
                let mut out = Vec::new();
                while let Some(b) = seq.next_element::<u8>()? {
                    out.push(b);
                }
                Ok(Blob(Cow::Owned(out)))
            }
        }
        d.deserialize_bytes(V)
    }
}

/// A value as MessagePack. Serializing plain integers, vectors and strings into memory cannot
/// fail, so this does not return an error.
pub(crate) fn to_msgpack<T: Serialize>(v: &T) -> Vec<u8> {
    rmp_serde::to_vec(v).expect("MessagePack encoding of plain data into memory")
}

/// A value from MessagePack; the error says what rmp-serde found wrong.
pub(crate) fn from_msgpack<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, String> {
    rmp_serde::from_slice(bytes).map_err(|e| format!("MessagePack: {e}"))
}
