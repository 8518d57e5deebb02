//! The data directory is its owner's alone. It holds every stack sample (command lines and
//! function names of every process), every probe session and timeline, and every team's
//! analyses; with the default umask the store's directories were 0755 and its files 0644, so
//! any local user could read all of it.
//!
//! Before the store opens, the process's umask becomes 077, so everything it creates from then
//! on (sled's files, uploaded analyses, keys, the unwind tables' cache) is 0600 or 0700 whatever
//! library creates it. A missing directory is created 0700. An existing one is tightened: the
//! directory and what it holds (to `MAX_DEPTH` levels, links not followed) lose every
//! group and other permission bit, and the log says how many paths had them.
//!
//! Only what is Loupe's is tightened. A directory that also holds names Loupe never writes
//! (`--data-dir /tmp`, `--data-dir $HOME`) keeps its own mode and those entries theirs; only
//! the entries Loupe wrote in it (`is_loupes`) are tightened, and the log names one foreign
//! entry. A name Loupe starts writing at the top of its data dir belongs in `is_loupes`.

use std::{
    fs, io,
    os::unix::fs::{DirBuilderExt, PermissionsExt},
    path::Path,
};

/// Levels below the data directory that are tightened (its layout is three deep).
const MAX_DEPTH: usize = 4;
/// Entries looked at, at most (a data dir holds a few hundred).
const MAX_ENTRIES: usize = 100_000;

/// What [`make_private`] changed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Tightened {
    /// Paths that had group or other permission bits.
    pub paths: usize,
    /// The directory's own mode before, if it was looser than 0700.
    pub dir_mode: Option<u32>,
    /// An entry the directory holds that Loupe did not write, if any: the directory is not
    /// Loupe's alone, so its own mode was left as it was.
    pub foreign: Option<String>,
}

/// Whether `name`, at the top of a data dir, is one Loupe or its store writes there.
fn is_loupes(name: &str) -> bool {
    const NAMES: [&str; 14] = [
        // sled's own files.
        "conf",
        "db",
        "blobs",
        // Loupe's.
        "tokens.json",
        "tokens.json.tmp",
        "tokens.json.lock",
        "audit.log",
        "agent.sock",
        "fleet-host.nk",
        "udfs",
        "fleet-udfs",
        "timeline-positions",
        "unwind-tables",
        "store",
    ];
    NAMES.contains(&name)
        || name.starts_with("snap.") // sled's snapshots
        || name.strip_prefix("audit.log.").is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Sets the umask to 077, then creates `dir` 0700 or tightens it and what it holds.
pub fn make_private(dir: &Path) -> io::Result<Tightened> {
    // SAFETY: umask(2) only replaces the process's file-creation mask; it cannot fail.
    unsafe { libc::umask(0o077) };
    let meta = match fs::symlink_metadata(dir) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
            return Ok(Tightened::default());
        }
        Err(e) => return Err(e),
    };
    if !meta.is_dir() {
        // The store's own open says what is wrong with it.
        return Ok(Tightened::default());
    }
    let mut tightened = Tightened::default();
    for entry in fs::read_dir(dir)? {
        let name = entry?.file_name();
        if !name.to_str().is_some_and(is_loupes) {
            tightened.foreign = Some(name.to_string_lossy().chars().take(64).collect());
            break;
        }
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 && tightened.foreign.is_none() {
        fs::set_permissions(dir, fs::Permissions::from_mode(mode & 0o7700))?;
        (tightened.paths, tightened.dir_mode) = (1, Some(mode));
    }
    let mut seen = 0;
    tighten_below(dir, MAX_DEPTH, true, &mut seen, &mut tightened.paths)?;
    Ok(tightened)
}

/// Tightens what `dir` holds, `depth` levels down (at the `top`, only Loupe's own entries);
/// symbolic links are left as they are (their own mode means nothing, and what they point at
/// is not the data dir's).
fn tighten_below(dir: &Path, depth: usize, top: bool, seen: &mut usize, tightened: &mut usize) -> io::Result<()> {
    if depth == 0 {
        return Ok(());
    }
    for entry in fs::read_dir(dir)? {
        *seen += 1;
        if *seen > MAX_ENTRIES {
            return Ok(());
        }
        let entry = entry?;
        if top && !entry.file_name().to_str().is_some_and(is_loupes) {
            continue;
        }
        let meta = entry.metadata()?; // lstat: a link is not followed
        if meta.file_type().is_symlink() {
            continue;
        }
        let mode = meta.permissions().mode() & 0o7777;
        if mode & 0o077 != 0 {
            fs::set_permissions(entry.path(), fs::Permissions::from_mode(mode & 0o7700))?;
            *tightened += 1;
        }
        if meta.is_dir() {
            tighten_below(&entry.path(), depth - 1, false, seen, tightened)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use super::*;

    fn mode(path: &Path) -> u32 {
        fs::symlink_metadata(path).unwrap().mode() & 0o7777
    }

    #[test]
    fn a_new_dir_is_made_0700_and_a_loose_one_tightened_with_what_it_holds() {
        let root = tempfile::tempdir().unwrap();
        let new = root.path().join("a/b/data");
        assert_eq!(make_private(&new).unwrap(), Tightened::default());
        assert_eq!(mode(&new), 0o700);
        // What the process creates from now on is its owner's alone.
        fs::write(new.join("f"), b"x").unwrap();
        assert_eq!(mode(&new.join("f")), 0o600);

        let loose = root.path().join("loose");
        fs::create_dir_all(loose.join("db/deep")).unwrap();
        let outside = root.path().join("outside");
        fs::write(&outside, b"not ours").unwrap();
        for (path, m) in [(&loose, 0o755), (&loose.join("db"), 0o775), (&loose.join("db/deep"), 0o700)] {
            fs::set_permissions(path, fs::Permissions::from_mode(m)).unwrap();
        }
        fs::write(loose.join("db/conf"), b"x").unwrap();
        fs::set_permissions(loose.join("db/conf"), fs::Permissions::from_mode(0o644)).unwrap();
        fs::set_permissions(&outside, fs::Permissions::from_mode(0o644)).unwrap();
        std::os::unix::fs::symlink(&outside, loose.join("db/link")).unwrap();
        let done = make_private(&loose).unwrap();
        assert_eq!(done, Tightened { paths: 3, dir_mode: Some(0o755), foreign: None });
        assert_eq!(mode(&loose), 0o700);
        assert_eq!(mode(&loose.join("db")), 0o700);
        assert_eq!(mode(&loose.join("db/conf")), 0o600);
        assert_eq!(mode(&outside), 0o644, "a link's target is not the data dir's");
        assert_eq!(make_private(&loose).unwrap(), Tightened::default(), "nothing left to tighten");
    }

    /// `--data-dir /tmp` must not make /tmp its owner's alone: a directory holding anything
    /// Loupe did not write keeps its mode and those entries theirs; Loupe's own are tightened.
    #[test]
    fn a_directory_shared_with_others_keeps_its_mode_and_their_files() {
        let root = tempfile::tempdir().unwrap();
        let shared = root.path().join("shared");
        fs::create_dir_all(shared.join("udfs")).unwrap();
        fs::write(shared.join("notes.txt"), b"someone's").unwrap();
        fs::write(shared.join("audit.log.2"), b"").unwrap();
        for (path, m) in [(&shared, 0o1777), (&shared.join("udfs"), 0o755), (&shared.join("notes.txt"), 0o644)] {
            fs::set_permissions(path, fs::Permissions::from_mode(m)).unwrap();
        }
        fs::set_permissions(shared.join("audit.log.2"), fs::Permissions::from_mode(0o644)).unwrap();
        let done = make_private(&shared).unwrap();
        assert_eq!(done, Tightened { paths: 2, dir_mode: None, foreign: Some("notes.txt".into()) });
        assert_eq!(mode(&shared), 0o1777);
        assert_eq!(mode(&shared.join("notes.txt")), 0o644);
        assert_eq!(mode(&shared.join("udfs")), 0o700);
        assert_eq!(mode(&shared.join("audit.log.2")), 0o600);
        assert!(is_loupes("snap.0000000000c0ffee") && is_loupes("audit.log.12"));
        assert!(!is_loupes("audit.log.") && !is_loupes("audit.log.x") && !is_loupes(".bashrc"));
    }
}
