//! Teams' bearer tokens: `<data-dir>/tokens.json`, holding only SHA-256 hashes, each with the
//! team it acts for and its scopes (what it may do: `loupe_api::access`).
//!
//! A token is shown once, when `loupe token add TEAM` creates it; the file keeps its hash, so
//! a copied data directory does not leak credentials. The file is separate from the sled
//! store on purpose: the agent owns the store while it runs, and tokens must be addable and
//! revocable then. The server re-reads the file when its modification time changes, so a
//! revoked token stops working on the next request.

use std::{
    fs,
    io::Write,
    os::unix::fs::OpenOptionsExt,
    path::{Path, PathBuf},
    sync::Mutex,
    time::SystemTime,
};

use anyhow::{Context, Result, bail};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use loupe_api::{
    access::{Caller, LOCAL_TEAM, Scopes},
    clock::now_unix_ns,
    formats::hex,
};

/// Tokens start with this, so they are recognizable in logs and secret scanners.
const PREFIX: &str = "loupe_";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRecord {
    /// First 12 hex digits of the hash: how `token list` and `token revoke` name a token.
    pub id: String,
    pub team: String,
    pub sha256: String,
    pub created_unix_ns: u64,
    /// What it may do. A record written before scopes existed has none, and keeps what it
    /// could do then: everything but `probe` (new) and `admin`.
    #[serde(default = "before_scopes")]
    pub scopes: Scopes,
}

fn before_scopes() -> Scopes {
    Scopes::BEFORE_SCOPES
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct TokenFile {
    tokens: Vec<TokenRecord>,
}

pub fn path(data_dir: &Path) -> PathBuf {
    data_dir.join("tokens.json")
}

fn hash(token: &str) -> String {
    hex::encode(&Sha256::digest(token.as_bytes()))
}

fn read(path: &Path) -> Result<TokenFile> {
    match fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).with_context(|| format!("reading {}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(TokenFile::default()),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Writes the whole file beside and renames it over the old one (mode 0600).
fn write(path: &Path, file: &TokenFile) -> Result<()> {
    let tmp = path.with_extension("json.tmp");
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .with_context(|| format!("writing {}", tmp.display()))?;
    f.write_all(&serde_json::to_vec_pretty(file)?)?;
    f.sync_all()?;
    fs::rename(&tmp, path).with_context(|| format!("replacing {}", path.display()))?;
    Ok(())
}

/// Holds the token file's lock (`tokens.json.lock`, beside it: the file itself is replaced by
/// each write) while a change reads, edits and replaces it. Without it a `token add` and a
/// `token revoke` at the same moment each wrote back what it read, and one change was lost: an
/// added token gone, or a revoked one back.
fn lock(data_dir: &Path) -> Result<fs::File> {
    let at = data_dir.join("tokens.json.lock");
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&at)
        .with_context(|| format!("opening {}", at.display()))?;
    file.lock().with_context(|| format!("locking {}", at.display()))?;
    Ok(file)
}

pub fn check_team(team: &str) -> Result<()> {
    if let Err(e) = loupe_api::access::check_team_name(team) {
        bail!(e);
    }
    if team == LOCAL_TEAM {
        bail!(
            "team '{LOCAL_TEAM}' is the host operator's own (the CLI on this host, the control socket, \
             --no-auth): a token of it would own the operator's sessions; name the token's real team"
        );
    }
    Ok(())
}

/// Creates a token for `team` with `scopes`; returns it (the only time it is visible) and its
/// record.
pub fn add(data_dir: &Path, team: &str, scopes: Scopes) -> Result<(String, TokenRecord)> {
    check_team(team)?;
    fs::create_dir_all(data_dir).with_context(|| format!("creating {}", data_dir.display()))?;
    let mut secret = [0u8; 32];
    rand::rng().fill_bytes(&mut secret);
    let token = format!("{PREFIX}{}", hex::encode(&secret));
    let sha256 = hash(&token);
    let record = TokenRecord {
        id: sha256[..12].to_string(),
        team: team.to_string(),
        sha256,
        created_unix_ns: now_unix_ns(),
        scopes,
    };
    let _locked = lock(data_dir)?;
    let p = path(data_dir);
    let mut file = read(&p)?;
    file.tokens.push(record.clone());
    write(&p, &file)?;
    Ok((token, record))
}

pub fn list(data_dir: &Path) -> Result<Vec<TokenRecord>> {
    Ok(read(&path(data_dir))?.tokens)
}

/// Revokes the token whose id is `id` (as `token list` shows it).
pub fn revoke(data_dir: &Path, id: &str) -> Result<TokenRecord> {
    let _locked = lock(data_dir)?;
    let p = path(data_dir);
    let mut file = read(&p)?;
    let Some(at) = file.tokens.iter().position(|t| t.id == id) else {
        bail!("no token with id '{id}' (see `loupe token list`)");
    };
    let gone = file.tokens.remove(at);
    write(&p, &file)?;
    Ok(gone)
}

/// The server's view of the token file, reloaded when it changes.
pub struct TokenSet {
    path: PathBuf,
    /// Keyed by inode and mtime: every write renames a new file into place, so a change is
    /// seen even within the filesystem's timestamp granularity.
    cache: Mutex<(Option<(u64, SystemTime)>, Vec<TokenRecord>)>,
}

impl TokenSet {
    pub fn new(data_dir: &Path) -> Self {
        TokenSet { path: path(data_dir), cache: Mutex::new((None, Vec::new())) }
    }

    /// The caller of a valid token (its team, id and scopes), `None` for an unknown or revoked
    /// one.
    pub fn caller_of(&self, token: &str) -> Result<Option<Caller>> {
        let mtime = match fs::metadata(&self.path) {
            Ok(m) => Some((std::os::unix::fs::MetadataExt::ino(&m), m.modified()?)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e).with_context(|| format!("reading {}", self.path.display())),
        };
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.0 != mtime || mtime.is_none() {
            cache.1 = read(&self.path)?.tokens;
            cache.0 = mtime;
        }
        let h = hash(token);
        // Comparing hashes, not tokens: timing reveals nothing about a valid token. A token of
        // the reserved team `local` (made before it was reserved) is refused like a revoked one.
        Ok(cache.1.iter().find(|t| t.sha256 == h && t.team != LOCAL_TEAM).map(|t| Caller {
            team: t.team.clone(),
            token_id: t.id.clone(),
            scopes: t.scopes,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_and_revokes_at_the_same_moment_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path();
        // Tokens to revoke, made first.
        let doomed: Vec<String> = (0..60).map(|_| add(data, "doomed", Scopes::DEFAULT).unwrap().1.id).collect();
        let added: Vec<String> = std::thread::scope(|s| {
            let adders: Vec<_> = (0..3)
                .map(|_| {
                    s.spawn(|| (0..40).map(|_| add(data, "kept", Scopes::DEFAULT).unwrap().1.id).collect::<Vec<_>>())
                })
                .collect();
            for chunk in doomed.chunks(20) {
                s.spawn(move || chunk.iter().for_each(|id| drop(revoke(data, id).unwrap())));
            }
            adders.into_iter().flat_map(|a| a.join().unwrap()).collect()
        });
        let now: Vec<TokenRecord> = list(data).unwrap();
        assert_eq!(now.len(), 120, "every added token is there, every revoked one gone");
        assert!(added.iter().all(|id| now.iter().any(|t| &t.id == id)));
        assert!(now.iter().all(|t| t.team == "kept"));
    }

    #[test]
    fn the_operators_team_is_reserved() {
        let dir = tempfile::tempdir().unwrap();
        let err = add(dir.path(), LOCAL_TEAM, Scopes::DEFAULT).unwrap_err().to_string();
        assert!(err.contains("the host operator's own"), "{err}");
        // One made before the name was reserved is refused like a revoked one.
        let (token, record) = add(dir.path(), "x", Scopes::DEFAULT).unwrap();
        let mut file = read(&path(dir.path())).unwrap();
        file.tokens[0].team = LOCAL_TEAM.into();
        write(&path(dir.path()), &file).unwrap();
        assert_eq!(record.team, "x");
        assert!(TokenSet::new(dir.path()).caller_of(&token).unwrap().is_none());
    }
}
