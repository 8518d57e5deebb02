//! What the sampler needs to know of a binary besides its rows: a name for its table that
//! survives copies and restarts (the GNU build ID), and how a process's mapping of the file
//! turns a PC into the ELF virtual address the rows are keyed by.

use object::{Object, ObjectSegment, SegmentFlags, elf::PF_X};

use crate::Error;

/// One loadable segment's file offset and virtual address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub offset: u64,
    pub vaddr: u64,
    pub file_size: u64,
    pub executable: bool,
}

/// A binary's identity and layout.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Binary {
    /// The GNU build ID, when the linker wrote one (Debian's binaries all have one).
    pub build_id: Option<Vec<u8>>,
    pub segments: Vec<Segment>,
}

/// Build IDs longer than this are not build IDs (GNU ld writes 20 bytes; 64 leaves room).
const MAX_BUILD_ID: usize = 64;

impl Binary {
    /// `elf`: the file's bytes, or an `object::ReadCache` over the file (then only the headers
    /// and the build-ID note are read).
    pub fn read<'data, R: object::ReadRef<'data>>(elf: R) -> Result<Binary, Error> {
        let file = object::File::parse(elf).map_err(|e| Error::NotElf(e.to_string()))?;
        let build_id = file.build_id().ok().flatten().filter(|id| !id.is_empty() && id.len() <= MAX_BUILD_ID);
        let segments = file
            .segments()
            .map(|s| {
                let (offset, file_size) = s.file_range();
                let executable = matches!(s.flags(), SegmentFlags::Elf { p_flags } if p_flags & PF_X != 0);
                Segment { offset, vaddr: s.address(), file_size, executable }
            })
            .collect();
        Ok(Binary { build_id: build_id.map(<[u8]>::to_vec), segments })
    }

    /// The build ID in hex, the name of the binary's table on disk.
    pub fn build_id_hex(&self) -> Option<String> {
        self.build_id.as_ref().map(|id| id.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// For a mapping of the file at `offset` (page-aligned, as `/proc/PID/maps` shows it)
    /// starting at `start`: what to subtract from a PC in it to get the ELF virtual address.
    /// The executable segment the mapping begins in decides; `None` if it begins in none.
    pub fn bias(&self, start: u64, offset: u64) -> Option<u64> {
        const PAGE: u64 = 4096;
        let segment = self.segments.iter().find(|s| {
            s.executable && s.offset & !(PAGE - 1) <= offset && offset < s.offset.saturating_add(s.file_size)
        })?;
        // vaddr = pc − start + offset + (p_vaddr − p_offset)
        Some(start.wrapping_sub(offset).wrapping_sub(segment.vaddr.wrapping_sub(segment.offset)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pie_mapping_and_a_shifted_segment_give_the_right_addresses() {
        // dash's layout: the text segment at file offset 0x4000, vaddr 0x4000.
        let pie = Binary {
            build_id: None,
            segments: vec![
                Segment { offset: 0, vaddr: 0, file_size: 0x3000, executable: false },
                Segment { offset: 0x4000, vaddr: 0x4000, file_size: 0x12000, executable: true },
            ],
        };
        let bias = pie.bias(0x5555_5555_8000, 0x4000).unwrap();
        assert_eq!(0x5555_5555_8123u64.wrapping_sub(bias), 0x4123);
        assert_eq!(pie.bias(0x5555_5555_4000, 0), None, "the read-only head is not code");
        // A segment whose vaddr is not its offset (a non-PIE executable at 0x400000).
        let fixed = Binary {
            build_id: None,
            segments: vec![Segment { offset: 0x1000, vaddr: 0x401000, file_size: 0x800, executable: true }],
        };
        let bias = fixed.bias(0x401000, 0x1000).unwrap();
        assert_eq!(0x401234u64.wrapping_sub(bias), 0x401234);
    }

    #[test]
    fn a_real_binary_has_its_build_id_and_code_segment() {
        let bytes = std::fs::read("/bin/dash").unwrap();
        let binary = Binary::read(&bytes[..]).unwrap();
        assert_eq!(binary.build_id.as_ref().map(Vec::len), Some(20));
        assert!(binary.segments.iter().any(|s| s.executable));
        assert!(Binary::read(&b"not an elf"[..]).is_err());
    }
}
