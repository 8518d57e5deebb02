//! What Loupe needs to know about one ELF file to name its frames: its build ID, its
//! `.gnu_debuglink`, whether it has its own symbol table, and its loadable segments (to turn a
//! file offset into the address its symbols use).
//!
//! Read with the `object` crate through a [`ReadCache`]: only the headers, program headers,
//! section headers and notes are read, not the file (libc's debug file is 4 MB; its headers a
//! few KB). Files come from outside — a process's mapped binary, a debug file someone placed —
//! so every size is bounded before use and a damaged file is an error, never a panic.

use std::path::Path;

use object::{Object, ObjectSegment, ReadCache, read::File as ObjectFile};

use crate::ingest::regular_file;

/// Most loadable segments kept (real files have 2–6).
const MAX_SEGMENTS: usize = 64;
/// Longest debug link name accepted (a file name).
const MAX_DEBUGLINK: usize = 255;

/// One `PT_LOAD` segment: where its bytes are in the file and where they are mapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Segment {
    file_offset: u64,
    file_size: u64,
    address: u64,
}

/// The facts of one ELF file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ElfFacts {
    /// `NT_GNU_BUILD_ID`, empty when the file has none (or a longer one than any hash).
    pub build_id: Vec<u8>,
    /// The debug file's name from `.gnu_debuglink` (a plain file name, no `/`).
    pub debuglink: Option<String>,
    /// It has a `.symtab` (not only the dynamic symbols a stripped library keeps).
    pub has_symtab: bool,
    segments: Vec<Segment>,
}

impl ElfFacts {
    pub fn read(path: &Path) -> Result<ElfFacts, String> {
        let file = regular_file::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let cache = ReadCache::new(file);
        let elf = ObjectFile::parse(&cache).map_err(|e| format!("{}: not a readable ELF file: {e}", path.display()))?;
        if elf.format() != object::BinaryFormat::Elf {
            return Err(format!("{}: not an ELF file", path.display()));
        }
        let build_id = match elf.build_id() {
            Ok(Some(id)) if id.len() <= loupe_store::ObjectAddress::MAX_BUILD_ID => id.to_vec(),
            Ok(_) => Vec::new(),
            Err(e) => return Err(format!("{}: damaged build ID note: {e}", path.display())),
        };
        let debuglink = match elf.gnu_debuglink() {
            Ok(Some((name, _crc))) => std::str::from_utf8(name)
                .ok()
                .filter(|n| !n.is_empty() && n.len() <= MAX_DEBUGLINK && !n.contains('/') && *n != "." && *n != "..")
                .map(str::to_string),
            _ => None,
        };
        let has_symtab = elf.section_by_name(".symtab").is_some();
        let mut segments = Vec::new();
        for s in elf.segments() {
            if segments.len() == MAX_SEGMENTS {
                return Err(format!("{}: more than {MAX_SEGMENTS} loadable segments", path.display()));
            }
            let (file_offset, file_size) = s.file_range();
            segments.push(Segment { file_offset, file_size, address: s.address() });
        }
        Ok(ElfFacts { build_id, debuglink, has_symtab, segments })
    }

    /// The address (as the file's symbols give it) of the byte at `file_offset`, if a loadable
    /// segment holds it.
    pub fn address_of(&self, file_offset: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|s| file_offset >= s.file_offset && file_offset - s.file_offset < s.file_size)
            .and_then(|s| s.address.checked_add(file_offset - s.file_offset))
    }

    /// The file offset of the byte the file's symbols call `address`, if a loadable segment
    /// holds it in the file (not in its zero-filled tail).
    pub fn file_offset_of(&self, address: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|s| address >= s.address && address - s.address < s.file_size)
            .and_then(|s| s.file_offset.checked_add(address - s.address))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_test_binary() {
        let me = std::env::current_exe().unwrap();
        let facts = ElfFacts::read(&me).unwrap();
        // Rust binaries are linked with a build ID by the system linker on Debian.
        assert!(!facts.segments.is_empty());
        let text = facts.segments.iter().find(|s| s.file_size > 0 && s.file_offset > 0).unwrap();
        assert_eq!(facts.address_of(text.file_offset + 3), Some(text.address + 3));
        assert_eq!(facts.address_of(u64::MAX), None);
        assert_eq!(facts.file_offset_of(text.address + 3), Some(text.file_offset + 3));
        assert_eq!(facts.file_offset_of(u64::MAX), None);
    }

    #[test]
    fn damaged_files_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let junk = dir.path().join("junk.debug");
        std::fs::write(&junk, b"\x7fELF\x02\x01\x01garbage that is not an ELF header at all").unwrap();
        assert!(ElfFacts::read(&junk).unwrap_err().contains("not a readable ELF"), "{:?}", ElfFacts::read(&junk));
        // A real header cut short: the section headers it points to are missing.
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let cut = dir.path().join("cut");
        std::fs::write(&cut, &me[..200]).unwrap();
        assert!(ElfFacts::read(&cut).is_err());
        assert!(ElfFacts::read(&dir.path().join("missing")).unwrap_err().contains("missing"));
    }
}
