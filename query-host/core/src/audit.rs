//! The audit trail: every action that changes the host or the store — a probe session started
//! or stopped, an on-demand run, an analysis uploaded, replaced or deleted, a token added or
//! revoked, an import — appended as one JSON line to `<data-dir>/audit.log`: when, which team
//! and token, what, on what, and how it ended (`ok` or the error's code). Refusals are
//! recorded too: a token without `probe` trying to attach is exactly what a reviewer looks for.
//!
//! **Refusals cannot flush it.** A refusal is the caller's to make as often as it likes: with
//! every refusal a line (up to 1 KiB of target each), ~30,000 requests from a `read` token
//! pushed every earlier action out of the kept files. So the refusals of one token (a bad or
//! missing token counts as one caller, `unauthenticated`) of one action with one outcome are
//! folded: the first of each minute is written as it happens, the rest of that minute become one
//! line with their `count`, written when a later entry comes after that minute, when the
//! agent's once-a-second look finds the minute ended ([`AuditLog::write_ended`]), or at
//! shutdown. Actions and outcomes are a short fixed list, so a token makes a few lines a minute
//! however it is refused, and every count stays exact per action. Actions that succeed are
//! always written one by one. `/metrics` still counts every refusal.
//!
//! The file is rotated by size: the full file becomes `audit.log.1`, the one before `.2`, and so
//! on up to the number of files kept ([`DEFAULT_FILES`], `--audit-files`), so the trail costs at
//! most that many times [`MAX_BYTES`]. Reading (`loupe audit`) treats the files as anyone's:
//! lines are read up to [`MAX_LINE`] bytes, and a line that is not an entry is counted and
//! skipped, never trusted.

use std::{
    collections::HashMap,
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
/// Files kept by default: `audit.log` and `audit.log.1` to `.3` (64 MiB in all).
pub const DEFAULT_FILES: usize = 4;
/// Most files kept (and looked for by a reader).
pub const MAX_FILES: usize = 100;
/// Callers whose refusals are being folded at once; past this, refusals are written one by one
/// (tokens are few; fleet keys past it are already folded by the fleet's gate).
const MAX_FOLDING: usize = 1024;
/// The caller of a request with a missing, unknown or revoked token.
pub const UNAUTHENTICATED: &str = "unauthenticated";
/// The audit trail folds refusals per minute of the wall clock; a minute's folds are written
/// once it has ended.
pub const NANOS_PER_MINUTE: u64 = 60_000_000_000;
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
    /// How many refusals this line stands for: more than 1 on a folded line (refusals of one
    /// token, action and outcome within a minute), whose time and target are the last one's.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub count: u64,
}

fn one() -> u64 {
    1
}

fn is_one(n: &u64) -> bool {
    *n == 1
}

/// The refusals of one caller, action and outcome in one minute, past the first (which was
/// written).
struct Fold {
    minute: u64,
    last: AuditEntry,
    /// Refusals folded so far (0: only the first, already written).
    folded: u64,
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
    files: usize,
    write: Mutex<()>,
    /// By caller (token id), action and outcome.
    folds: Mutex<HashMap<(String, String, String), Fold>>,
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
        AuditLog {
            path: path(data_dir),
            max_bytes,
            files: DEFAULT_FILES,
            write: Mutex::new(()),
            folds: Mutex::new(HashMap::new()),
            observer: OnceLock::new(),
        }
    }

    /// Keeps `files` files (the current one included), within 2..=[`MAX_FILES`].
    pub fn keeping(mut self, files: usize) -> AuditLog {
        self.files = files.clamp(2, MAX_FILES);
        self
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
            count: 1,
        };
        if let Some(observe) = self.observer.get() {
            observe(&entry);
        }
        let mut write = Vec::with_capacity(2);
        {
            let mut folds = self.folds.lock().unwrap_or_else(|e| e.into_inner());
            let minute = now / NANOS_PER_MINUTE;
            write.extend(ended_folds(&mut folds, minute));
            if entry.outcome != "ok" {
                let key = (entry.token_id.clone(), entry.action.clone(), entry.outcome.clone());
                if let Some(fold) = folds.get_mut(&key) {
                    fold.folded += 1;
                    (fold.last.time_unix_ns, fold.last.time, fold.last.target) =
                        (entry.time_unix_ns, entry.time, entry.target);
                    drop(folds);
                    return self.write_lines(&write);
                }
                if folds.len() < MAX_FOLDING {
                    folds.insert(key, Fold { minute, last: entry.clone(), folded: 0 });
                }
            }
        }
        write.push(entry);
        self.write_lines(&write);
    }

    /// Writes the folded lines of minutes that have ended. The agent and `loupe serve` call it
    /// just after each minute ends, so a folded line reaches the file within a minute and a
    /// second of its last refusal, whether or not anything is recorded after it.
    pub fn write_ended(&self) {
        let minute = now_unix_ns() / NANOS_PER_MINUTE;
        let ended = ended_folds(&mut self.folds.lock().unwrap_or_else(|e| e.into_inner()), minute);
        self.write_lines(&ended);
    }

    /// Writes the refusals folded so far, whatever their minute (at shutdown).
    pub fn flush(&self) {
        let ended = ended_folds(&mut self.folds.lock().unwrap_or_else(|e| e.into_inner()), u64::MAX);
        self.write_lines(&ended);
    }

    fn write_lines(&self, entries: &[AuditEntry]) {
        for entry in entries {
            if let Err(e) = self.append(entry) {
                tracing::error!(path = %self.path.display(), "audit log not written: {e}");
            }
        }
    }

    fn append(&self, entry: &AuditEntry) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(entry)?;
        line.push(b'\n');
        let _one_writer = self.write.lock().unwrap_or_else(|e| e.into_inner());
        if fs::metadata(&self.path).is_ok_and(|m| m.len() + line.len() as u64 > self.max_bytes) {
            for n in (1..self.files - 1).rev() {
                match fs::rename(numbered(&self.path, n), numbered(&self.path, n + 1)) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                    _ => {}
                }
            }
            fs::rename(&self.path, numbered(&self.path, 1))?;
        }
        let mut f = fs::OpenOptions::new().create(true).append(true).mode(0o600).open(&self.path)?;
        // One write of a whole line, in append mode: another process appending (a CLI adding a
        // token beside the agent) cannot interleave inside it.
        f.write_all(&line)
    }
}

impl Drop for AuditLog {
    fn drop(&mut self) {
        self.flush();
    }
}

/// Takes the folds of minutes before `minute` out of `folds`: the lines of those that folded
/// any refusal.
fn ended_folds(folds: &mut HashMap<(String, String, String), Fold>, minute: u64) -> Vec<AuditEntry> {
    if folds.values().all(|f| f.minute >= minute) {
        return Vec::new();
    }
    let mut ended = Vec::new();
    folds.retain(|_, fold| {
        if fold.minute >= minute {
            return true;
        }
        if fold.folded > 0 {
            ended.push(AuditEntry { count: fold.folded, ..fold.last.clone() });
        }
        false
    });
    ended.sort_by_key(|e| e.time_unix_ns);
    ended
}

/// `audit.log.N`.
fn numbered(path: &Path, n: usize) -> PathBuf {
    path.with_extension(format!("log.{n}"))
}

/// The entries of `data_dir`'s audit trail within `range`, oldest first (the oldest kept file,
/// then the current one).
pub fn read(data_dir: &Path, range: TimeRange) -> CoreResult<AuditRead> {
    let current = path(data_dir);
    let mut out = AuditRead::default();
    let mut files: Vec<PathBuf> = (1..MAX_FILES).map(|n| numbered(&current, n)).take_while(|f| f.exists()).collect();
    files.reverse();
    files.push(current);
    for file in files {
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
        assert!(numbered(&path(dir.path()), 1).exists());
        assert!(fs::metadata(path(dir.path())).unwrap().len() <= 1000);
        let after = read(dir.path(), TimeRange::ALL).unwrap();
        assert_eq!(after.entries.last().unwrap().target, "u19");
        let times: Vec<_> = after.entries.iter().map(|e| e.time_unix_ns).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "oldest first across both files");
        assert_eq!(seen.load(std::sync::atomic::Ordering::Relaxed), 22);
    }

    #[test]
    fn refusals_of_one_token_are_folded_by_the_minute_and_keep_earlier_actions() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::with_max_bytes(dir.path(), 16 << 10);
        let operator = Caller::operator();
        log.record(&operator, "start_probe", "pid 7: f", &Ok::<(), CoreError>(()));
        let refused: CoreResult<()> = caller().require(Scope::Probe).map_err(CoreError::from);
        let long_target = "/api/v1/".to_string() + &"x".repeat(2000);
        for i in 0..30_000 {
            let action = if i % 2 == 0 { "start_probe" } else { "upload_udf" };
            log.record(&caller(), action, &long_target, &refused);
        }
        let nobody = Caller { team: "-".into(), token_id: UNAUTHENTICATED.into(), scopes: Scopes::of(&[]) };
        log.record_outcome(&nobody, "read", "/api/v1/runs", "unauthorized");
        log.flush();
        let all = read(dir.path(), TimeRange::ALL).unwrap().entries;
        assert_eq!((all[0].action.as_str(), all[0].outcome.as_str()), ("start_probe", "ok"), "{all:?}");
        for action in ["start_probe", "upload_udf"] {
            let refusals: Vec<_> = all.iter().filter(|e| e.token_id == "0123456789ab" && e.action == action).collect();
            // The first of each minute, then one folded line per minute (30,000 take well under one).
            assert!((2..=4).contains(&refusals.len()), "{refusals:?}");
            assert_eq!(refusals.iter().map(|e| e.count).sum::<u64>(), 15_000, "{action}");
            assert!(refusals.iter().all(|e| e.outcome == "missing_scope_probe"));
        }
        assert!(all.iter().any(|e| e.token_id == UNAUTHENTICATED && e.outcome == "unauthorized"));
        assert!(!numbered(&path(dir.path()), 1).exists(), "nothing rotated: {} lines", all.len());
    }

    #[test]
    fn a_fold_ends_with_its_minute_and_rotation_keeps_the_files_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::with_max_bytes(dir.path(), 600).keeping(3);
        let refused: CoreResult<()> = caller().require(Scope::Probe).map_err(CoreError::from);
        // A fold of an earlier minute, as a refusal a minute ago would have left it.
        let mut first = AuditEntry {
            time_unix_ns: 1,
            time: format_unix_ns(1),
            team: "a".into(),
            token_id: "0123456789ab".into(),
            action: "start_probe".into(),
            target: "t".into(),
            outcome: "missing_scope_probe".into(),
            count: 1,
        };
        let key = (first.token_id.clone(), first.action.clone(), first.outcome.clone());
        log.folds.lock().unwrap().insert(key, Fold { minute: 0, last: first.clone(), folded: 41 });
        log.write_ended();
        assert_eq!(read(dir.path(), TimeRange::ALL).unwrap().entries.len(), 1, "an ended minute is written alone");
        log.record(&caller(), "start_probe", "now", &refused);
        let all = read(dir.path(), TimeRange::ALL).unwrap().entries;
        first.count = 41;
        assert_eq!(all[0], first, "the ended minute's line first");
        assert_eq!((all[1].target.as_str(), all[1].count), ("now", 1), "then this minute's first refusal");
        for i in 0..40 {
            log.record(&Caller::operator(), "delete_udf", &format!("u{i}"), &Ok::<(), CoreError>(()));
        }
        let files = (1..10).filter(|&n| numbered(&path(dir.path()), n).exists()).count();
        assert_eq!(files, 2, "audit.log, .1 and .2");
        assert_eq!(read(dir.path(), TimeRange::ALL).unwrap().entries.last().unwrap().target, "u39");
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
