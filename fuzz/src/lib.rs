//! Helpers shared by the fuzz targets (`fuzz_targets/`) and the seed generator
//! (`examples/seeds.rs`).
//!
//! Several decoders take more than one record (a block is decoded against its batch table, a
//! CPU row against its run's metadata), so a target's input is a few *parts*: every part but
//! the last is a little-endian `u16` length and that many bytes, the last is the rest.
//! [`split`] never fails: a short or truncated input gives short or empty parts, so every byte
//! string is some input and mutations explore the decoders, not the framing.

/// The first `N - 1` length-prefixed parts of `data` and the rest as the last one.
pub fn split<const N: usize>(mut data: &[u8]) -> [&[u8]; N] {
    let mut parts: [&[u8]; N] = [&[]; N];
    for part in parts.iter_mut().take(N - 1) {
        let len = match data {
            [a, b, rest @ ..] => {
                data = rest;
                usize::from(u16::from_le_bytes([*a, *b]))
            }
            _ => {
                data = &[];
                0
            }
        };
        let (head, tail) = data.split_at(len.min(data.len()));
        *part = head;
        data = tail;
    }
    parts[N - 1] = data;
    parts
}

/// The inverse of [`split`]: an input made of these parts (each but the last < 64 KiB).
pub fn join(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    let (last, init) = parts.split_last().expect("at least one part");
    for p in init {
        out.extend_from_slice(&u16::try_from(p.len()).expect("part under 64 KiB").to_le_bytes());
        out.extend_from_slice(p);
    }
    out.extend_from_slice(last);
    out
}

/// A stack vocabulary in which every process names stack `n` as `n`, and thread `t` is of
/// process `t`: any format-3 table decodes under it (to the entries a format-2 table with the
/// same numbers holds), so the table and block targets reach everything past the names.
pub struct NamesAreStacks;

impl loupe_store::samples::codec::Vocabulary for NamesAreStacks {
    fn pid_of(&self, thread: u32) -> Option<u32> {
        Some(thread)
    }
    fn stack_named(&self, _pid: u32, local: u32) -> Option<u32> {
        Some(local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_inverts_join_and_takes_anything() {
        let parts: [&[u8]; 3] = [b"ab", b"", b"rest"];
        assert_eq!(split::<3>(&join(&parts)), parts);
        assert_eq!(split::<3>(&[]), [&[][..], &[], &[]]);
        assert_eq!(split::<2>(&[9, 0, 1]), [&[1][..], &[]]);
    }
}
