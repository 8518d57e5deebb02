//! Lower-case hex: digests, build IDs (as in `/usr/lib/debug/.build-id/xx/yyyy.debug`), and
//! opaque cursors.

pub fn encode(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of `text`, or `None` if it is not an even number of hex digits.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn roundtrip_and_refusals() {
        assert_eq!(super::encode(&[0x93, 0x0a, 0xff]), "930aff");
        assert_eq!(super::decode("930aff"), Some(vec![0x93, 0x0a, 0xff]));
        assert_eq!(super::decode("930"), None);
        assert_eq!(super::decode("zz"), None);
        assert_eq!(super::decode("+1"), None, "from_str_radix's sign is not a digit");
    }
}
