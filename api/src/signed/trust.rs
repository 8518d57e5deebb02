//! The trust file: which public keys may ask this host, for which team, with which scopes. One
//! key a line, `#` starts a comment:
//!
//! ```text
//! # key                                                      team  scopes
//! UCXG4VEIMXJCY2NAJVJRGYVTTPY2CFAQQ7GSOHRUQ2XT3QRAFT7MCDLS  ops   read,invoke,run
//! UDT5NBMGRKAXC6ZX2LNLYLPLYRK3CYUPE6UFW4XOTVBRVG4JO4QS3BKU  *     read,invoke   # host web-1
//! ```
//!
//! A team of `*` marks a host key: an agent signs with its own key on behalf of the callers of
//! its HTTP fleet routes, naming the caller's team, and gets no more than the line's scopes
//! whichever team it names. The file is everyone's to read and only its owner's to write (a
//! line added by another user would let that user command the host), and it is re-read when it
//! changes; a change that does not parse keeps the list before it, and says why.

use std::{
    collections::HashMap,
    fs,
    io::Read,
    os::unix::fs::{MetadataExt, PermissionsExt},
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
};

use nkeys::{KeyPair, KeyPairType};

use crate::access::{Scopes, check_team_name};

/// Largest trust file read.
pub const MAX_TRUST_BYTES: u64 = 1 << 20;
/// Most keys a trust file may list.
pub const MAX_TRUSTED_KEYS: usize = 10_000;

/// Which team a key may act for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TeamGrant {
    Team(String),
    /// `*`: a host key, acting for the callers of its agent's HTTP fleet routes.
    AnyTeam,
}

/// One trusted key.
pub struct TrustLine {
    pub key: String,
    pub team: TeamGrant,
    pub scopes: Scopes,
    /// Its line in the file, for messages.
    pub line: usize,
    verifier: KeyPair,
}

/// A user public key (`U…`), ready to verify with, if `key` is one.
fn user_key(key: &str) -> Option<KeyPair> {
    KeyPair::from_public_key(key).ok().filter(|k| matches!(k.key_pair_type(), KeyPairType::User))
}

impl TrustLine {
    /// The line an agent run with `--fleet-insecure` makes for any well-formed key: every scope,
    /// for the team the request names. Nothing is checked but that the request is signed by
    /// the key it carries (and its clock and nonce): for demos and loopback tests only.
    pub fn any_key(key: &str) -> Option<TrustLine> {
        let verifier = user_key(key)?;
        Some(TrustLine { key: key.to_string(), team: TeamGrant::AnyTeam, scopes: Scopes::ALL, line: 0, verifier })
    }

    /// Whether `sig` is this key's ed25519 signature of `bytes`.
    pub fn verifies(&self, bytes: &[u8], sig: &[u8]) -> bool {
        self.verifier.verify(bytes, sig).is_ok()
    }
}

impl std::fmt::Debug for TrustLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TrustLine({} {:?} {} line {})", self.key, self.team, self.scopes, self.line)
    }
}

/// The keys a host trusts.
#[derive(Debug, Default)]
pub struct TrustList {
    keys: HashMap<String, TrustLine>,
}

impl TrustList {
    /// Parses a trust file's text. An error names the line and what is wrong with it.
    pub fn parse(text: &str) -> Result<TrustList, String> {
        let mut keys: HashMap<String, TrustLine> = HashMap::new();
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            let content = raw.split('#').next().unwrap_or_default().trim();
            if content.is_empty() {
                continue;
            }
            let fields: Vec<&str> = content.split_whitespace().collect();
            let [key, team, scopes] = fields[..] else {
                return Err(format!("line {n}: expected `KEY TEAM SCOPES` (e.g. `U… ops read,invoke`)"));
            };
            let verifier = user_key(key)
                .ok_or_else(|| format!("line {n}: {key:.60} is not a user public key (U…, 56 characters)"))?;
            let team = match team {
                "*" => TeamGrant::AnyTeam,
                t => {
                    check_team_name(t).map_err(|e| format!("line {n}: {e}"))?;
                    TeamGrant::Team(t.to_string())
                }
            };
            let scopes = Scopes::parse(scopes).map_err(|e| format!("line {n}: {e}"))?;
            if let Some(before) = keys.get(key) {
                return Err(format!("line {n}: key {key} is listed already, on line {}", before.line));
            }
            if keys.len() == MAX_TRUSTED_KEYS {
                return Err(format!("line {n}: more than {MAX_TRUSTED_KEYS} keys"));
            }
            keys.insert(key.to_string(), TrustLine { key: key.to_string(), team, scopes, line: n, verifier });
        }
        Ok(TrustList { keys })
    }

    /// The line of `key`, if it is trusted.
    pub fn get(&self, key: &str) -> Option<&TrustLine> {
        self.keys.get(key)
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// What identifies a version of the file without reading it.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Stamp {
    ino: u64,
    size: u64,
    mtime_ns: i128,
}

/// What [`TrustFile::current`] found on the way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reloaded {
    /// The file changed and was read again: this many keys now.
    Read { keys: usize },
    /// The file changed and was not taken (the keys before it stay): why.
    Kept { problem: String },
}

/// A trust file, re-read when it changes.
pub struct TrustFile {
    path: PathBuf,
    state: Mutex<State>,
}

struct State {
    /// `None` while the file cannot be looked at.
    stamp: Option<Stamp>,
    list: Arc<TrustList>,
}

impl TrustFile {
    /// Reads it; an agent does not start on a trust file it cannot take.
    pub fn open(path: &Path) -> Result<TrustFile, String> {
        let (stamp, list) = read(path)?;
        Ok(TrustFile {
            path: path.to_path_buf(),
            state: Mutex::new(State { stamp: Some(stamp), list: Arc::new(list) }),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The keys trusted now: the file is looked at (one `stat`) and read again if it changed.
    /// A file that cannot be looked at keeps the keys before it, reported once until it is back.
    pub fn current(&self) -> (Arc<TrustList>, Option<Reloaded>) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (now, problem) = match stamp(&self.path) {
            Ok(s) => (Some(s), None),
            Err(problem) => (None, Some(problem)),
        };
        if now == state.stamp {
            return (Arc::clone(&state.list), None);
        }
        state.stamp = now;
        let news = match problem.map_or_else(|| read(&self.path), Err) {
            Ok((stamp, list)) => {
                state.stamp = Some(stamp);
                state.list = Arc::new(list);
                Reloaded::Read { keys: state.list.len() }
            }
            Err(problem) => Reloaded::Kept { problem },
        };
        (Arc::clone(&state.list), Some(news))
    }
}

fn stamp(path: &Path) -> Result<Stamp, String> {
    let meta = fs::metadata(path).map_err(|e| format!("trust file {}: {e}", path.display()))?;
    Ok(Stamp {
        ino: meta.ino(),
        size: meta.size(),
        mtime_ns: meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128,
    })
}

fn read(path: &Path) -> Result<(Stamp, TrustList), String> {
    let shown = path.display();
    // Looked at before it is opened: opening a FIFO would wait for a writer.
    let meta = fs::metadata(path).map_err(|e| format!("trust file {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("trust file {shown} is not a regular file"));
    }
    let mode = meta.permissions().mode();
    if mode & 0o022 != 0 {
        return Err(format!(
            "trust file {shown} may be written by others (mode {:o}): `chmod go-w {shown}`",
            mode & 0o777
        ));
    }
    if meta.len() > MAX_TRUST_BYTES {
        return Err(format!("trust file {shown} is {} bytes, over {MAX_TRUST_BYTES}", meta.len()));
    }
    let stamp = stamp(path)?;
    let mut text = String::new();
    fs::File::open(path)
        .and_then(|f| f.take(MAX_TRUST_BYTES).read_to_string(&mut text))
        .map_err(|e| format!("trust file {shown}: {e}"))?;
    let list = TrustList::parse(&text).map_err(|e| format!("trust file {shown}, {e}"))?;
    Ok((stamp, list))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{access::Scope, signed::FleetKey};

    #[test]
    fn lines_parse_with_comments_and_host_keys() {
        let (a, b) = (FleetKey::generate().public_key(), FleetKey::generate().public_key());
        let text = format!("# who may ask\n\n{a}  ops  read,run   # the SREs\n  {b} * read,invoke\n");
        let list = TrustList::parse(&text).unwrap();
        assert_eq!(list.len(), 2);
        let ops = list.get(&a).unwrap();
        assert_eq!(
            (ops.team.clone(), ops.scopes, ops.line),
            (TeamGrant::Team("ops".into()), Scopes::parse("read,run").unwrap(), 3)
        );
        assert_eq!(list.get(&b).unwrap().team, TeamGrant::AnyTeam);
        assert!(list.get(&b).unwrap().scopes.allows(Scope::Invoke));
        assert!(list.get("UNKNOWN").is_none());
    }

    #[test]
    fn bad_lines_are_named() {
        let key = FleetKey::generate();
        let k = key.public_key();
        let cases = [
            (format!("{k} ops\n"), "line 1: expected `KEY TEAM SCOPES`"),
            (format!("\n{k} ops read extra\n"), "line 2: expected"),
            ("UABC ops read\n".to_string(), "line 1: UABC is not a user public key"),
            (format!("{} ops read\n", key.seed()), "is not a user public key"),
            (format!("{k} a/b read\n"), "line 1: bad team name"),
            (format!("{k} ops read,root\n"), "line 1: unknown scope 'root'"),
            (format!("{k} ops read\n{k} web read\n"), "line 2: key U"),
        ];
        for (text, want) in cases {
            let e = TrustList::parse(&text).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        assert!(TrustList::parse(&format!("{} ops read\n", "U".repeat(100_000))).unwrap_err().len() < 200);
    }

    #[test]
    fn the_file_is_read_again_when_it_changes_and_a_bad_change_keeps_the_keys_before() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trust");
        let (a, b) = (FleetKey::generate().public_key(), FleetKey::generate().public_key());
        fs::write(&path, format!("{a} ops read\n")).unwrap();
        let file = TrustFile::open(&path).unwrap();
        let (list, news) = file.current();
        assert!(list.get(&a).is_some() && news.is_none());
        // Replaced as editors and config managers do: a new file renamed over the old.
        let next = dir.path().join("trust.new");
        fs::write(&next, format!("{a} ops read\n{b} web read,invoke\n")).unwrap();
        fs::rename(&next, &path).unwrap();
        let (list, news) = file.current();
        assert_eq!(news, Some(Reloaded::Read { keys: 2 }));
        assert!(list.get(&b).is_some());
        assert_eq!(file.current().1, None, "read once per change");
        // A broken edit keeps both keys, and says why once.
        fs::write(&path, format!("{a} ops read\n{b} web\n")).unwrap();
        let (list, news) = file.current();
        assert!(matches!(news, Some(Reloaded::Kept { problem }) if problem.contains("line 2")));
        assert_eq!(list.len(), 2);
        assert_eq!(file.current().1, None);
        // Gone: kept, reported once; back: read.
        fs::remove_file(&path).unwrap();
        assert!(matches!(file.current().1, Some(Reloaded::Kept { .. })));
        assert_eq!(file.current().1, None);
        assert_eq!(file.current().0.len(), 2);
        fs::write(&path, format!("{b} web read\n")).unwrap();
        let (list, news) = file.current();
        assert_eq!(news, Some(Reloaded::Read { keys: 1 }));
        assert!(list.get(&a).is_none(), "a key taken out is no longer trusted");
    }

    #[test]
    fn a_file_others_may_write_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trust");
        fs::write(&path, "").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o666)).unwrap();
        assert!(TrustFile::open(&path).err().unwrap().contains("chmod go-w"));
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        assert!(TrustFile::open(&path).unwrap().current().0.is_empty());
        assert!(TrustFile::open(dir.path()).err().unwrap().contains("not a regular file"));
    }
}
