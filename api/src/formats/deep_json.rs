//! Parsing JSON that nests as deep as a stack: a flame graph node per frame, two JSON levels
//! each, up to `model::profile::MAX_FLAME_DEPTH` (512) levels — past serde_json's default
//! recursion limit of 128. The depth is bounded by Loupe itself (the server never sends a deeper
//! tree), so the limit is lifted rather than the format flattened; still, this reads another
//! program's bytes, so anything nested deeper than [`MAX_DEPTH`] is refused, not followed.

use serde::de::DeserializeOwned;

/// Deepest JSON accepted: the deepest flame graph Loupe sends (2 levels per node) and room
/// for the envelope around it.
pub const MAX_DEPTH: usize = 2 * crate::model::profile::MAX_FLAME_DEPTH + 64;

pub fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> serde_json::Result<T> {
    check_depth(bytes)?;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    de.disable_recursion_limit();
    let value = T::deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// Fails if brackets nest deeper than [`MAX_DEPTH`] (a scan, no recursion; brackets inside
/// strings are skipped).
fn check_depth(bytes: &[u8]) -> serde_json::Result<()> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(serde::de::Error::custom(format!("JSON nested deeper than {MAX_DEPTH} levels")));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_beyond_the_bound_is_refused_without_recursing() {
        let deep = format!("{}{}", "[".repeat(1_000_000), "]".repeat(1_000_000));
        let err = from_slice::<serde_json::Value>(deep.as_bytes()).unwrap_err();
        assert!(err.to_string().contains("nested deeper"), "{err}");
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        // Within the bound (serde_json's Value recurses, so run it on a big stack).
        std::thread::Builder::new()
            .stack_size(64 << 20)
            .spawn(move || from_slice::<serde_json::Value>(ok.as_bytes()).unwrap())
            .unwrap()
            .join()
            .unwrap();
        let strings = format!("[\"{}\"]", "[".repeat(10_000));
        from_slice::<serde_json::Value>(strings.as_bytes()).unwrap();
    }
}
