//! The audit trail: every action that changes the host or the store — a probe session started
//! or stopped, an on-demand run, an analysis uploaded, replaced or deleted, a token added or
//! revoked, an import — appended as one JSON line to `<data-dir>/audit.log`: when, which team
//! and token, what, on what, and how it ended (`ok` or the error's code). Refusals are
//! recorded too: a token without `probe` trying to attach is exactly what a reviewer looks for.
//!
//! The file is rotated by size (the full file becomes `audit.log.1`, replacing the one before),
//! so the trail costs at most twice [`MAX_BYTES`]. Reading (`loupe audit`) treats the files as
//! anyone's: lines are read up to [`MAX_LINE`] bytes, and a line that is not an entry is counted
//! and skipped, never trusted.

use std::{
    fs,
    io::{BufRead, BufReader, Read, Write},
    os::unix::fs::OpenOptionsExt,
    path::{Path, PathBuf},
    sync::{Mutex, OnceLock},
};

use loupe_api::{
    access::Caller,
    clock::{format_unix_ns, now_unix_ns},
};
use loupe_store::TimeRange;
use serde::{Deserialize, Serialize};

use loupe_api::error::{CoreError, CoreResult};

/// Size at which the log is rotated.
pub const MAX_BYTES: u64 = 16 << 20;
/// Longest line a reader takes as an entry.
pub const MAX_LINE: usize = 16 << 10;
/// Longest target kept in an entry (a probe order names many functions).
const MAX_TARGET: usize = 1024;

/// One recorded action.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub time_unix_ns: u64,
    /// The same instant, RFC 3339, for people reading the file.
    pub time: String,
    pub team: String,
    /// The token's id (`loupe token list`), or `operator` for root on the host.
    pub token_id: String,
    /// The operation's name (`start_probe`, `upload_udf`, `token_add`, …).
    pub action: String,
    /// What it acted on: a probe order's target, an analysis' name, a token's id.
    pub target: String,
    /// `ok`, or the error's code (`missing_scope_probe`, `not_owner`, …).
    pub outcome: String,
}

/// What `loupe audit` read.
#[derive(Debug, Default, Serialize)]
pub struct AuditRead {
    pub entries: Vec<AuditEntry>,
    /// Lines that were not entries (too long, not JSON, not this shape).
    pub skipped_lines: u64,
}

type Observer = Box<dyn Fn(&AuditEntry) + Send + Sync>;

/// The host's audit log.
pub struct AuditLog {
    path: PathBuf,
    max_bytes: u64,
    write: Mutex<()>,
    observer: OnceLock<Observer>,
}

pub fn path(data_dir: &Path) -> PathBuf {
    data_dir.join("audit.log")
}

impl AuditLog {
    pub fn new(data_dir: &Path) -> AuditLog {
        AuditLog::with_max_bytes(data_dir, MAX_BYTES)
    }

    pub fn with_max_bytes(data_dir: &Path, max_bytes: u64) -> AuditLog {
        AuditLog { path: path(data_dir), max_bytes, write: Mutex::new(()), observer: OnceLock::new() }
    }

    /// Calls `f` with every entry recorded from now on (the HTTP door counts them in
    /// `/metrics`). The first observer stays.
    pub fn observe(&self, f: impl Fn(&AuditEntry) + Send + Sync + 'static) {
        let _ = self.observer.set(Box::new(f));
    }

    /// Records an action and how it ended. A log that cannot be written is reported in the
    /// agent's log, and the action's own outcome stands: the trail must not take the host down.
    pub fn record<T>(&self, caller: &Caller, action: &str, target: &str, outcome: &CoreResult<T>) {
        let code = match outcome {
            Ok(_) => "ok",
            Err(e) => e.code(),
        };
        self.record_outcome(caller, action, target, code);
    }

    /// [`AuditLog::record`], with the outcome already as its code (`ok`, or an error's).
    pub fn record_outcome(&self, caller: &Caller, action: &str, target: &str, outcome: &str) {
        let now = now_unix_ns();
        let mut target = target.to_string();
        if target.len() > MAX_TARGET {
            let mut cut = MAX_TARGET;
            while !target.is_char_boundary(cut) {
                cut -= 1;
            }
            target.truncate(cut);
            target.push('…');
        }
        let entry = AuditEntry {
            time_unix_ns: now,
            time: format_unix_ns(now),
            team: caller.team.clone(),
            token_id: caller.token_id.clone(),
            action: action.to_string(),
            target,
            outcome: outcome.to_string(),
        };
        if let Err(e) = self.append(&entry) {
            tracing::error!(path = %self.path.display(), "audit log not written: {e}");
        }
        if let Some(observe) = self.observer.get() {
            observe(&entry);
        }
    }

    fn append(&self, entry: &AuditEntry) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(entry)?;
        line.push(b'\n');
        let _one_writer = self.write.lock().unwrap_or_else(|e| e.into_inner());
        if fs::metadata(&self.path).is_ok_and(|m| m.len() + line.len() as u64 > self.max_bytes) {
            fs::rename(&self.path, rotated(&self.path))?;
        }
        let mut f = fs::OpenOptions::new().create(true).append(true).mode(0o600).open(&self.path)?;
        // One write of a whole line, in append mode: another process appending (a CLI adding a
        // token beside the agent) cannot interleave inside it.
        f.write_all(&line)
    }
}

fn rotated(path: &Path) -> PathBuf {
    path.with_extension("log.1")
}

/// The entries of `data_dir`'s audit trail within `range`, oldest first (the rotated file,
/// then the current one).
pub fn read(data_dir: &Path, range: TimeRange) -> CoreResult<AuditRead> {
    let current = path(data_dir);
    let mut out = AuditRead::default();
    for file in [rotated(&current), current] {
        let f = match fs::File::open(&file) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(CoreError::Internal(format!("reading {}: {e}", file.display()))),
        };
        read_lines(BufReader::new(f), range, &mut out)
            .map_err(|e| CoreError::Internal(format!("reading {}: {e}", file.display())))?;
    }
    Ok(out)
}

fn read_lines(mut reader: impl BufRead, range: TimeRange, out: &mut AuditRead) -> std::io::Result<()> {
    let mut line = Vec::new();
    loop {
        line.clear();
        // At most MAX_LINE + 1 bytes of a line are kept; the rest of a longer one is dropped.
        let n = (&mut reader).take(MAX_LINE as u64 + 1).read_until(b'\n', &mut line)?;
        if n == 0 {
            return Ok(());
        }
        if line.last() != Some(&b'\n') && n > MAX_LINE {
            out.skipped_lines += 1;
            let mut rest = Vec::new();
            skip_line(&mut reader, &mut rest)?;
            continue;
        }
        match serde_json::from_slice::<AuditEntry>(&line) {
            Ok(e) if range.contains(e.time_unix_ns) => out.entries.push(e),
            Ok(_) => {}
            Err(_) => out.skipped_lines += u64::from(!line.iter().all(u8::is_ascii_whitespace)),
        }
    }
}

/// Reads to the end of the current line, a bounded piece at a time.
fn skip_line(reader: &mut impl BufRead, scratch: &mut Vec<u8>) -> std::io::Result<()> {
    loop {
        scratch.clear();
        let n = reader.take(MAX_LINE as u64).read_until(b'\n', scratch)?;
        if n == 0 || scratch.last() == Some(&b'\n') {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loupe_api::access::{Scope, Scopes};

    fn caller() -> Caller {
        Caller { team: "a".into(), token_id: "0123456789ab".into(), scopes: Scopes::of(&[Scope::Read]) }
    }

    #[test]
    fn entries_are_appended_read_back_and_rotated_by_size() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::with_max_bytes(dir.path(), 1000);
        let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = std::sync::Arc::clone(&seen);
        log.observe(move |_| {
            counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        });
        log.record(&caller(), "start_probe", "pid 7: f", &Ok::<(), CoreError>(()));
        let refused: CoreResult<()> = caller().require(Scope::Probe).map_err(CoreError::from);
        log.record(&caller(), "start_probe", "pid 7: f", &refused);
        let all = read(dir.path(), TimeRange::ALL).unwrap();
        assert_eq!(all.entries.len(), 2);
        assert_eq!(all.entries[0].outcome, "ok");
        assert_eq!(all.entries[1].outcome, "missing_scope_probe");
        assert_eq!((all.entries[1].team.as_str(), all.entries[1].token_id.as_str()), ("a", "0123456789ab"));
        // Past 1,000 bytes the file is rotated: nothing is lost from the newest two files.
        for i in 0..20 {
            log.record(&caller(), "delete_udf", &format!("u{i}"), &Ok::<(), CoreError>(()));
        }
        assert!(rotated(&path(dir.path())).exists());
        assert!(fs::metadata(path(dir.path())).unwrap().len() <= 1000);
        let after = read(dir.path(), TimeRange::ALL).unwrap();
        assert_eq!(after.entries.last().unwrap().target, "u19");
        let times: Vec<_> = after.entries.iter().map(|e| e.time_unix_ns).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "oldest first across both files");
        assert_eq!(seen.load(std::sync::atomic::Ordering::Relaxed), 22);
    }

    #[test]
    fn a_hostile_file_is_read_bounded_and_bad_lines_are_skipped_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::new(dir.path());
        log.record(&caller(), "upload_udf", "x", &Ok::<(), CoreError>(()));
        let mut f = fs::OpenOptions::new().append(true).open(path(dir.path())).unwrap();
        f.write_all(b"not json\n").unwrap();
        f.write_all(&vec![b'['; 3 * MAX_LINE]).unwrap(); // a line far past the bound, deep too
        f.write_all(b"\n{\"time_unix_ns\": 1}\n").unwrap();
        drop(f);
        log.record(&caller(), "delete_udf", "x", &Ok::<(), CoreError>(()));
        let got = read(dir.path(), TimeRange::ALL).unwrap();
        assert_eq!(got.entries.iter().map(|e| e.action.as_str()).collect::<Vec<_>>(), ["upload_udf", "delete_udf"]);
        assert_eq!(got.skipped_lines, 3);
    }
}
