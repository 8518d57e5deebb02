//! Naming a Python frame: its code object's qualified name, file and first line, read from the
//! process's memory while it lives.
//!
//! The code object's address comes from a sample, so by the time it is read the object may be
//! gone and its memory reused. A code object is named only if it still is one (its type's name
//! is `code`) and still has the first line and name object the kernel read with the frame
//! (same line, same name: the same function); otherwise the frame is not named from it
//! ([`NameError::Changed`]) — never named from whatever now lies there.

use loupe_bpf_common::python::code_identity;

use super::{
    layout::{Layout, OB_TYPE, STRING_LENGTH, STRING_STATE},
    process::Memory,
};

/// Longest name or file name read (characters beyond it are cut, marked with `…`).
pub const MAX_NAME_CHARS: u64 = 1024;
/// In a type object (every version): `tp_name`, a C string.
const TP_NAME: u64 = 24;

/// A code object's names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeName {
    /// `co_qualname` (3.11+: `Class.method`, `outer.<locals>.inner`), else `co_name`.
    pub qualname: String,
    /// `co_filename`.
    pub file: String,
    pub first_line: u32,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("the code object could not be read (the process exited or freed it)")]
    Unreadable,
    #[error("no longer the code object sampled (freed, and its memory reused)")]
    Changed,
    #[error("a name that is no compact string")]
    NotAString,
}

/// Reads the names of the code object at `code`, sampled with `identity`
/// (`loupe_bpf_common::python::code_identity` of its first line and name object).
pub fn read(memory: &Memory, layout: &Layout, code: u64, identity: u32) -> Result<CodeName, NameError> {
    // Addresses read from the process are added to with wrapping, never trusted.
    let type_name = memory
        .u64(code.wrapping_add(OB_TYPE))
        .and_then(|t| memory.u64(t.wrapping_add(TP_NAME)))
        .ok_or(NameError::Unreadable)?;
    let mut name = [0u8; 5];
    memory.bytes(type_name, &mut name).ok_or(NameError::Unreadable)?;
    if &name != b"code\0" {
        return Err(NameError::Changed);
    }
    let pointer = |offset: u64| memory.u64(code.wrapping_add(offset)).ok_or(NameError::Unreadable);
    let first_line = memory.u32(code.wrapping_add(layout.code.first_line)).ok_or(NameError::Unreadable)?;
    let name = pointer(layout.code.qualname.unwrap_or(layout.code.name))?;
    if code_identity(first_line, name) != identity {
        return Err(NameError::Changed);
    }
    let qualname = string(memory, layout, name)?;
    let file = string(memory, layout, pointer(layout.code.filename)?)?;
    Ok(CodeName { qualname, file, first_line })
}

/// A compact `str` object's text (ASCII, Latin-1, UCS-2 or UCS-4), at most [`MAX_NAME_CHARS`].
pub fn string(memory: &Memory, layout: &Layout, object: u64) -> Result<String, NameError> {
    let length = memory.u64(object.wrapping_add(STRING_LENGTH)).ok_or(NameError::Unreadable)?;
    let state = memory.u32(object.wrapping_add(STRING_STATE)).ok_or(NameError::Unreadable)?;
    let (kind, compact, ascii) = ((state >> 2) & 7, (state >> 5) & 1 == 1, (state >> 6) & 1 == 1);
    if !compact || !matches!(kind, 1 | 2 | 4) || (ascii && kind != 1) {
        return Err(NameError::NotAString);
    }
    let data = object.wrapping_add(if ascii { layout.strings.ascii_size } else { layout.strings.compact_size });
    let chars = length.min(MAX_NAME_CHARS);
    let mut bytes = vec![0u8; (chars * u64::from(kind)) as usize];
    memory.bytes(data, &mut bytes).ok_or(NameError::Unreadable)?;
    let mut text: String = match kind {
        1 => bytes.iter().map(|&b| char::from(b)).collect(),
        2 => bytes
            .chunks_exact(2)
            .map(|c| char::from_u32(u32::from(u16::from_le_bytes([c[0], c[1]]))).unwrap_or(char::REPLACEMENT_CHARACTER))
            .collect(),
        _ => bytes
            .chunks_exact(4)
            .map(|c| {
                char::from_u32(u32::from_le_bytes([c[0], c[1], c[2], c[3]])).unwrap_or(char::REPLACEMENT_CHARACTER)
            })
            .collect(),
    };
    if length > chars {
        text.push('…');
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::python::layout;

    /// A fake `str` in this process's memory: header then text, laid out as 3.11's.
    fn fake_string(length: u64, state: u32, text: &[u8]) -> Vec<u8> {
        let mut b = vec![0u8; 48 + text.len().max(2048)];
        b[16..24].copy_from_slice(&length.to_le_bytes());
        b[32..36].copy_from_slice(&state.to_le_bytes());
        b[48..48 + text.len()].copy_from_slice(text);
        b
    }

    const COMPACT_ASCII: u32 = (1 << 2) | (1 << 5) | (1 << 6);

    #[test]
    fn names_read_from_a_process_are_bounded_and_checked() {
        let l = layout::for_minor(11).unwrap();
        let me = Memory::open(std::process::id()).unwrap();
        let ok = fake_string(8, COMPACT_ASCII, b"ceo_leaf");
        assert_eq!(string(&me, l, ok.as_ptr() as u64).unwrap(), "ceo_leaf");
        // A length the process made up: at most MAX_NAME_CHARS read, and said so.
        let long = fake_string(1 << 40, COMPACT_ASCII, &[b'x'; 2048]);
        let text = string(&me, l, long.as_ptr() as u64).unwrap();
        assert_eq!(text.chars().count(), MAX_NAME_CHARS as usize + 1);
        assert!(text.ends_with('…'));
        // Not compact, an unknown kind, ASCII that is not one byte a character: refused.
        for state in [1 << 2, (3 << 2) | (1 << 5), (2 << 2) | (1 << 5) | (1 << 6)] {
            let bad = fake_string(8, state, b"ceo_leaf");
            assert_eq!(string(&me, l, bad.as_ptr() as u64), Err(NameError::NotAString), "state {state:#x}");
        }
        // Memory that is not there, or an address that wraps: unreadable, no panic.
        assert_eq!(string(&me, l, 8), Err(NameError::Unreadable));
        assert_eq!(string(&me, l, u64::MAX - 4), Err(NameError::Unreadable));
        // An object whose type is not `code` (here a fake type named "list") is never named.
        let type_name = b"list\0";
        let mut type_object = vec![0u8; 64];
        type_object[24..32].copy_from_slice(&(type_name.as_ptr() as u64).to_le_bytes());
        let mut object = vec![0u8; 256];
        object[8..16].copy_from_slice(&(type_object.as_ptr() as u64).to_le_bytes());
        assert_eq!(read(&me, l, object.as_ptr() as u64, 0), Err(NameError::Changed));
    }
}
