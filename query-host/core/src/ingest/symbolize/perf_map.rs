//! Names of JIT-compiled code from the process's perf map, `/tmp/perf-PID.map` as the process
//! sees its `/tmp` (the file perf reads: one `START SIZE name` a line, START and SIZE in hex).
//!
//! *Why Loupe reads it, not blazesym:* the JDK's `jcmd PID Compiler.perfmap` writes START and
//! SIZE with a `0x` (`0x00007f4b6cec7d80 0x0000000000000118 long CeoHot.leaf(long)`), which perf
//! accepts and blazesym 0.2.7 refuses, for the whole file: every JIT frame of a JVM stayed
//! `[unknown]` even with the map written. Both forms are read here.
//!
//! *The file is another program's, read as root:* it is opened only if it is a regular file
//! ([`super::super::regular_file`]: a FIFO planted there would block the ingest thread) owned by
//! the process's user or root (as perf requires: another user could otherwise name a process's
//! code for it), at most [`MAX_BYTES`] of it and [`MAX_ENTRIES`] entries are read (and
//! [`MAX_HELD`] of all processes' maps held), a line longer than [`MAX_LINE`] is passed over
//! without being held, a name is cut at [`MAX_NAME`] bytes, and a line that does not parse is
//! skipped and counted, never an error for the rest. A map is read again when its size or modification time changed (JITs append as
//! they compile; `jcmd` rewrites it), and forgotten with the rest of the symbolizer's answers.

use std::{
    collections::HashMap,
    fs,
    io::{BufRead, BufReader, Read},
    os::unix::fs::MetadataExt,
    path::PathBuf,
    time::SystemTime,
};

use loupe_store::Name;

use crate::ingest::regular_file;

/// Most of a perf map read (an OpenJDK 17 map of a warmed-up service: ~100 bytes an entry).
pub const MAX_BYTES: u64 = 32 << 20;
/// Most entries kept of one map (~60 bytes each held, name included).
pub const MAX_ENTRIES: usize = 250_000;
/// Most entries held of all processes' maps together: a map that would pass it is not kept
/// (its process's JIT frames stay `[unknown]` until the maps are next forgotten).
pub const MAX_HELD: usize = 500_000;
/// Longest name kept, in bytes (longer ones are cut at a character boundary).
pub const MAX_NAME: usize = 1024;
/// Longest line read; a longer one is skipped (and counted) without being held.
pub const MAX_LINE: usize = 4096;

/// One process's perf map: code ranges and their names, sorted by start.
#[derive(Debug, Default)]
pub struct PerfMap {
    /// `(start, end, name)`, sorted by start.
    entries: Vec<(u64, u64, Name)>,
    /// Lines that did not parse (or came after [`MAX_ENTRIES`]).
    pub skipped: usize,
}

impl PerfMap {
    /// Reads a map's lines from `text`, at most [`MAX_BYTES`] of it.
    pub fn read(text: impl Read) -> PerfMap {
        let mut map = PerfMap::default();
        let mut lines = BufReader::new(text.take(MAX_BYTES));
        let mut line = Vec::with_capacity(256);
        loop {
            line.clear();
            match (&mut lines).take(MAX_LINE as u64).read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if line.len() >= MAX_LINE && line.last() != Some(&b'\n') {
                // Too long to be a line of a map: passed over, never held.
                map.skipped += 1;
                if skip_line(&mut lines).is_err() {
                    break;
                }
                continue;
            }
            match parse_line(&line) {
                Some(entry) if map.entries.len() < MAX_ENTRIES => map.entries.push(entry),
                _ if line.iter().all(u8::is_ascii_whitespace) => {}
                _ => map.skipped += 1,
            }
        }
        // Later lines win where ranges start at the same address (code recompiled in place).
        map.entries.reverse();
        map.entries.sort_by_key(|e| e.0);
        map.entries.dedup_by_key(|e| e.0);
        map
    }

    /// The name of the code at `addr`: the entry with the highest start at or below it, if
    /// `addr` is inside it.
    pub fn find(&self, addr: u64) -> Option<&Name> {
        let at = self.entries.partition_point(|e| e.0 <= addr).checked_sub(1)?;
        let (start, end, name) = &self.entries[at];
        (*start <= addr && addr < *end).then_some(name)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Reads up to the end of the line (or the text) without holding it.
fn skip_line(lines: &mut impl BufRead) -> std::io::Result<()> {
    loop {
        let buf = lines.fill_buf()?;
        if buf.is_empty() {
            return Ok(());
        }
        match buf.iter().position(|&b| b == b'\n') {
            Some(at) => {
                lines.consume(at + 1);
                return Ok(());
            }
            None => {
                let n = buf.len();
                lines.consume(n);
            }
        }
    }
}

/// `START SIZE name`: two hex numbers, each with or without `0x`, then the rest of the line.
fn parse_line(line: &[u8]) -> Option<(u64, u64, Name)> {
    let line = std::str::from_utf8(line).ok()?.trim_end_matches(['\n', '\r']);
    let (start, rest) = line.trim_start().split_once(|c: char| c.is_ascii_whitespace())?;
    let (size, name) = rest.trim_start().split_once(|c: char| c.is_ascii_whitespace())?;
    let hex = |s: &str| u64::from_str_radix(s.strip_prefix("0x").or(s.strip_prefix("0X")).unwrap_or(s), 16).ok();
    let (start, size) = (hex(start)?, hex(size)?);
    let end = start.checked_add(size)?;
    let name = name.trim();
    if name.is_empty() || size == 0 {
        return None;
    }
    let mut cut = name.len().min(MAX_NAME);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    Some((start, end, name[..cut].into()))
}

/// The perf maps of the processes asked about, each read once and again when its file changed.
#[derive(Default)]
pub struct PerfMaps {
    /// By PID: the file's `(size, modified)` when read, and what it held (`None`: no map, or one
    /// that may not be read).
    maps: HashMap<u32, ((u64, Option<SystemTime>), Option<PerfMap>)>,
    /// Entries of all maps held.
    held: usize,
}

impl PerfMaps {
    /// The name of the JIT code at `addr` in process `pid`, from its perf map.
    pub fn name(&mut self, pid: u32, addr: u64) -> Option<Name> {
        self.map(pid)?.find(addr).cloned()
    }

    /// Forgets every map (PIDs are reused).
    pub fn clear(&mut self) {
        self.maps.clear();
        self.held = 0;
    }

    /// Process `pid`'s perf map, read now if it is new or changed (one `stat` when it is not).
    pub fn map(&mut self, pid: u32) -> Option<&PerfMap> {
        let process = Process::of(pid)?;
        let path = process.map_path(pid);
        let meta = fs::metadata(&path).ok()?;
        let stamp = (meta.len(), meta.modified().ok());
        let fresh = self.maps.get(&pid).is_some_and(|(seen, _)| *seen == stamp);
        if !fresh {
            let mut map =
                process.may_name_with(&meta).then(|| regular_file::open(&path).ok()).flatten().map(PerfMap::read);
            if let Some(read) = &map
                && read.skipped > 0
            {
                tracing::debug!(pid, skipped = read.skipped, entries = read.len(), "perf map lines not understood");
            }
            let before = self.maps.get(&pid).and_then(|(_, m)| m.as_ref()).map_or(0, PerfMap::len);
            let held = self.held - before + map.as_ref().map_or(0, PerfMap::len);
            if held > MAX_HELD {
                tracing::debug!(pid, held, "perf map not kept: the maps held would pass their bound");
                map = None;
            }
            self.held = self.held - before + map.as_ref().map_or(0, PerfMap::len);
            self.maps.insert(pid, (stamp, map));
        }
        self.maps.get(&pid)?.1.as_ref()
    }
}

/// What a perf map's path and owner are checked against, from `/proc/PID/status` (read once).
struct Process {
    /// The PID as the process sees itself (its innermost PID namespace's, from `NStgid`).
    own_pid: Option<u32>,
    /// Its real user.
    uid: Option<u32>,
}

impl Process {
    fn of(pid: u32) -> Option<Process> {
        let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let last = |key: &str| {
            status.lines().find_map(|l| l.strip_prefix(key)).and_then(|ids| ids.split_ascii_whitespace().next_back())
        };
        let first = |key: &str| {
            status.lines().find_map(|l| l.strip_prefix(key)).and_then(|ids| ids.split_ascii_whitespace().next())
        };
        Some(Process {
            own_pid: last("NStgid:").and_then(|id| id.parse().ok()),
            uid: first("Uid:").and_then(|id| id.parse().ok()),
        })
    }

    /// `/proc/PID/root/tmp/perf-N.map`: the map as the process writes it, in its own `/tmp`.
    fn map_path(&self, pid: u32) -> PathBuf {
        PathBuf::from(format!("/proc/{pid}/root/tmp/perf-{}.map", self.own_pid.unwrap_or(pid)))
    }

    /// A map may name the process's code if root or the process's own user owns the file.
    fn may_name_with(&self, meta: &fs::Metadata) -> bool {
        meta.uid() == 0 || self.uid == Some(meta.uid())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_are_read_and_found() {
        let text = "\
0x00007f4b6cec7d80 0x0000000000000118 long CeoHot.leaf(long)
7f4b6cec8000 40 py::loop:/srv/app.py
0X10 0x10 upper case prefix
";
        let map = PerfMap::read(text.as_bytes());
        assert_eq!((map.len(), map.skipped), (3, 0));
        assert_eq!(map.find(0x7f4b6cec7d80).map(|n| n.as_ref()), Some("long CeoHot.leaf(long)"));
        assert_eq!(map.find(0x7f4b6cec7e97).map(|n| n.as_ref()), Some("long CeoHot.leaf(long)"));
        assert_eq!(map.find(0x7f4b6cec7e98), None, "one past the end");
        assert_eq!(map.find(0x7f4b6cec8020).map(|n| n.as_ref()), Some("py::loop:/srv/app.py"));
        assert_eq!(map.find(0x1f).map(|n| n.as_ref()), Some("upper case prefix"));
        assert_eq!(map.find(0x0f), None);
    }

    #[test]
    fn a_hostile_map_loses_only_its_bad_lines() {
        let long = "x".repeat(3 * MAX_NAME);
        let mut text = b"not hex at all\n0x10\n0x10 0x10\nffffffffffffffff 10 wraps around\n0x20 0 empty\n".to_vec();
        text.extend_from_slice(b"0x30 0x10 \xff\xfe not UTF-8\n");
        text.extend_from_slice(format!("0x100 0x10 {long}\n0x200 0x10 good\n0x200 0x20 recompiled\n\n").as_bytes());
        let map = PerfMap::read(text.as_slice());
        assert_eq!(map.skipped, 6, "every bad line counted, the blank one not");
        assert_eq!(map.find(0x105).map(|n| n.len()), Some(MAX_NAME), "a long name is cut");
        assert_eq!(map.find(0x21f).map(|n| n.as_ref()), Some("recompiled"), "the later line wins");
    }

    #[test]
    fn an_endless_line_is_passed_over_without_being_held() {
        // 16 good lines, one line of 8 MiB, one good line: the long one is counted and skipped
        // a buffer at a time, and what follows it still read.
        let good = b"0x1000 0x10 f\n".repeat(16);
        let endless = std::io::repeat(b'0').take(8 << 20);
        let text = good.as_slice().chain(endless).chain(&b"\n0x2000 0x10 g\n"[..]);
        let map = PerfMap::read(text);
        assert_eq!((map.len(), map.skipped), (2, 1));
        assert_eq!(map.find(0x2008).map(|n| n.as_ref()), Some("g"));
        // And a map longer than its bound ends there: what lies beyond is not read.
        let beyond = std::io::repeat(b'\n').take(MAX_BYTES).chain(&b"0x3000 0x10 h\n"[..]);
        assert!(PerfMap::read(beyond).is_empty());
    }

    #[test]
    fn a_fifo_planted_as_the_map_is_not_waited_on() {
        let mut sleeper = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let pid = sleeper.id();
        let path = format!("/tmp/perf-{pid}.map");
        let fifo = std::ffi::CString::new(path.clone()).unwrap();
        // SAFETY: a valid C string; mkfifo creates a file and touches no memory of ours.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0, "mkfifo {path}");
        let (done, asked) = std::sync::mpsc::channel();
        std::thread::spawn(move || done.send(PerfMaps::default().name(pid, 0x10)).unwrap());
        let named = asked.recv_timeout(std::time::Duration::from_secs(5));
        let _ = fs::remove_file(&path);
        let _ = sleeper.kill();
        let _ = sleeper.wait();
        assert_eq!(named.expect("reading a FIFO as the perf map blocked"), None);
    }

    #[test]
    fn a_map_another_user_owns_names_nothing() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("SKIP a_map_another_user_owns_names_nothing: needs root (chown, a process of another user)");
            return;
        }
        use std::os::unix::process::CommandExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("map");
        fs::write(&file, "0x10 0x10 f\n").unwrap();
        let nobody = 65534;
        let mut sleeper = std::process::Command::new("sleep").arg("30").uid(nobody).gid(nobody).spawn().unwrap();
        let (theirs, ours) = (sleeper.id(), std::process::id());
        std::os::unix::fs::chown(&file, Some(nobody), Some(nobody)).unwrap();
        let meta = fs::metadata(&file).unwrap();
        let (theirs, ours) = (Process::of(theirs).unwrap(), Process::of(ours).unwrap());
        assert!(theirs.may_name_with(&meta), "the process's own user's map");
        assert!(!ours.may_name_with(&meta), "another user's map for a root process");
        std::os::unix::fs::chown(&file, Some(0), Some(0)).unwrap();
        assert!(theirs.may_name_with(&fs::metadata(&file).unwrap()), "root's map for anyone");
        let _ = sleeper.kill();
        let _ = sleeper.wait();
    }
}
