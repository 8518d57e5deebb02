//! Tables kept on disk, one file per binary named by its build ID, so a binary's call-frame
//! information is parsed once per host rather than once per process or agent restart
//! (python3.11's 59,613 rows take a parse of 401 KiB of `.eh_frame`; a cached table is one
//! read of 477 KiB).
//!
//! A cache file is outside input (the disk, another version of Loupe, a partial write): it is
//! read whole into a bounded buffer and every count and index checked before it is used; a file
//! that fails any check is ignored (and rewritten by the next parse). Files are written to a
//! temporary name and renamed, so a reader never sees half of one.

use std::{
    io::Write,
    path::{Path, PathBuf},
};

use loupe_bpf_common::unwind::{PageInfo, ROW_UNSUPPORTED, UnwindRow};

use crate::{Paged, cfi::MAX_ROWS, table::MAX_PAGES};

const MAGIC: &[u8; 8] = b"LOUPEUWT";
/// Bumped whenever what a row means changes: older files are then parsed again.
pub const FORMAT_VERSION: u32 = 1;
const HEADER: usize = 8 + 4 + 4 + 4 + 4 + 8;

/// The file a binary's table is kept in.
pub fn path(dir: &Path, build_id_hex: &str) -> PathBuf {
    dir.join(format!("{build_id_hex}.unwind"))
}

/// Writes `paged` for `build_id_hex` under `dir` (made if missing).
pub fn save(dir: &Path, build_id_hex: &str, paged: &Paged) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut bytes = Vec::with_capacity(HEADER + 8 * (paged.pages.len() + paged.rows.len()));
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    bytes.extend_from_slice(&(paged.pages.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&(paged.rows.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&0u32.to_le_bytes());
    bytes.extend_from_slice(&paged.pages.first().map_or(0, |p| p.0).to_le_bytes());
    for (_, info) in &paged.pages {
        bytes.extend_from_slice(&info.first.to_le_bytes());
        bytes.extend_from_slice(&info.count.to_le_bytes());
    }
    for row in &paged.rows {
        bytes.extend_from_slice(&row.pc_low.to_le_bytes());
        bytes.extend_from_slice(&row.cfa_off8.to_le_bytes());
        bytes.extend_from_slice(&row.rbp_off8.to_le_bytes());
        bytes.extend_from_slice(&[row.kind, 0]);
    }
    let target = path(dir, build_id_hex);
    let temporary = target.with_extension(format!("tmp{}", std::process::id()));
    let mut file = std::fs::File::create(&temporary)?;
    file.write_all(&bytes)?;
    drop(file);
    std::fs::rename(&temporary, &target)?;
    trim(dir, MAX_CACHE_BYTES)
}

/// The cache's bound on disk: a host that sees new binaries all the time (a build machine)
/// would otherwise keep every table it ever parsed. The least recently written go first.
pub const MAX_CACHE_BYTES: u64 = 256 << 20;

/// Deletes the oldest tables under `dir` until they take at most `max_bytes`.
pub fn trim(dir: &Path, max_bytes: u64) -> std::io::Result<()> {
    let mut files: Vec<(std::time::SystemTime, u64, PathBuf)> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "unwind"))
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            Some((meta.modified().ok()?, meta.len(), e.path()))
        })
        .collect();
    let mut total: u64 = files.iter().map(|f| f.1).sum();
    files.sort();
    for (_, len, file) in files {
        if total <= max_bytes {
            break;
        }
        if std::fs::remove_file(&file).is_ok() {
            total -= len;
        }
    }
    Ok(())
}

/// The table kept for `build_id_hex`, if there is one that passes every check.
pub fn load(dir: &Path, build_id_hex: &str) -> Option<Paged> {
    let file = std::fs::File::open(path(dir, build_id_hex)).ok()?;
    let limit = (HEADER + 8 * (MAX_PAGES as usize + MAX_ROWS)) as u64;
    if file.metadata().ok()?.len() > limit {
        return None;
    }
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(file, limit), &mut bytes).ok()?;
    decode(&bytes)
}

fn decode(bytes: &[u8]) -> Option<Paged> {
    let u32_at = |at: usize| bytes.get(at..at + 4).map(|b| u32::from_le_bytes(b.try_into().unwrap()));
    if bytes.get(..8)? != MAGIC || u32_at(8)? != FORMAT_VERSION {
        return None;
    }
    let (pages, rows) = (u32_at(12)? as usize, u32_at(16)? as usize);
    let first_page = u64::from_le_bytes(bytes.get(24..32)?.try_into().ok()?);
    if pages as u64 > MAX_PAGES || rows > MAX_ROWS || bytes.len() != HEADER + 8 * (pages + rows) {
        return None;
    }
    let mut out = Paged::default();
    let mut next = 0u64;
    for (i, chunk) in bytes[HEADER..HEADER + 8 * pages].chunks_exact(8).enumerate() {
        let info = PageInfo {
            first: u32::from_le_bytes(chunk[..4].try_into().ok()?),
            count: u32::from_le_bytes(chunk[4..].try_into().ok()?),
        };
        // Pages tile the rows in order, with nothing skipped or shared.
        if u64::from(info.first) != next {
            return None;
        }
        next += u64::from(info.count);
        out.pages.push((first_page.checked_add(i as u64)?, info));
    }
    if next != rows as u64 {
        return None;
    }
    for chunk in bytes[HEADER + 8 * pages..].chunks_exact(8) {
        let row = UnwindRow {
            pc_low: u16::from_le_bytes([chunk[0], chunk[1]]),
            cfa_off8: u16::from_le_bytes([chunk[2], chunk[3]]),
            rbp_off8: i16::from_le_bytes([chunk[4], chunk[5]]),
            kind: chunk[6],
            _pad: 0,
        };
        if row.kind == 0 || row.kind > ROW_UNSUPPORTED {
            return None;
        }
        out.rows.push(row);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Table;

    #[test]
    fn the_cache_keeps_to_its_bound_dropping_the_oldest() {
        let dir = tempfile::tempdir().unwrap();
        let paged = Table::from_elf(&std::fs::read("/bin/dash").unwrap()[..]).unwrap().paged().unwrap();
        for name in ["a", "b", "c"] {
            save(dir.path(), name, &paged).unwrap();
            // Distinct modification times, oldest first.
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let one = std::fs::metadata(path(dir.path(), "a")).unwrap().len();
        trim(dir.path(), 2 * one).unwrap();
        assert_eq!(load(dir.path(), "a"), None, "the oldest went");
        assert!(load(dir.path(), "b").is_some() && load(dir.path(), "c").is_some());
        trim(dir.path(), 0).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_table_comes_back_as_it_was_saved_and_damage_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let paged = Table::from_elf(&std::fs::read("/bin/dash").unwrap()[..]).unwrap().paged().unwrap();
        save(dir.path(), "abcd", &paged).unwrap();
        assert_eq!(load(dir.path(), "abcd").as_ref(), Some(&paged));
        assert_eq!(load(dir.path(), "other"), None);
        let good = std::fs::read(path(dir.path(), "abcd")).unwrap();
        // Every single-byte change to the header, and a cut anywhere, is caught or harmless:
        // never a panic, never a table whose pages point past its rows.
        for at in (0..HEADER).chain([HEADER + 1, HEADER + 4, good.len() - 2]) {
            let mut bad = good.clone();
            bad[at] ^= 0x5a;
            if let Some(table) = decode(&bad) {
                assert!(table.pages.iter().all(|(_, p)| (p.first + p.count) as usize <= table.rows.len()));
            }
        }
        for cut in [0, 7, HEADER, good.len() / 2, good.len() - 1] {
            assert_eq!(decode(&good[..cut]), None, "cut at {cut}");
        }
        let mut old = good.clone();
        old[8] = 0;
        assert_eq!(decode(&old), None, "another format version is parsed again");
    }
}
