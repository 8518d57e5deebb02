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
    access::{Caller, Scopes},
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

pub fn check_team(team: &str) -> Result<()> {
    if team.is_empty() || team.len() > 64 || !team.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)) {
        bail!("bad team name '{team}': use 1-64 letters, digits, '-', '_' or '.'");
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
        // Comparing hashes, not tokens: timing reveals nothing about a valid token.
        Ok(cache.1.iter().find(|t| t.sha256 == h).map(|t| Caller {
            team: t.team.clone(),
            token_id: t.id.clone(),
            scopes: t.scopes,
        }))
    }
}
