//! Fleet keys: ed25519 key pairs written the way NATS operators already keep theirs — a user
//! seed (`SU…`, 58 characters) in a file only its owner reads, its public key (`U…`, 56
//! characters) shared in trust files. `nkeys` does the encoding and the cryptography.

use std::{
    fs,
    io::{Read, Write},
    os::unix::fs::{OpenOptionsExt, PermissionsExt},
    path::Path,
};

use nkeys::{KeyPair, KeyPairType};

/// Largest key file read (a seed and a comment line fit in far less).
const MAX_KEY_FILE: u64 = 4 << 10;

/// A fleet key pair: signs requests (an asker's key) or partial answers (a host's key).
pub struct FleetKey(KeyPair);

impl FleetKey {
    pub fn generate() -> FleetKey {
        FleetKey(KeyPair::new_user())
    }

    /// From a user seed (`SU…`).
    pub fn from_seed(seed: &str) -> Result<FleetKey, String> {
        let pair = KeyPair::from_seed(seed.trim()).map_err(|e| format!("not an nkeys seed: {e}"))?;
        if !matches!(pair.key_pair_type(), KeyPairType::User) {
            return Err("not a user seed (SU…): make one with `loupe fleet key new`".into());
        }
        Ok(FleetKey(pair))
    }

    /// Reads a key file: its first line that is not empty or a `#` comment is the seed. Refused
    /// when others may read it (a seed is a secret, as ssh refuses such a key).
    pub fn read(path: &Path) -> Result<FleetKey, String> {
        let shown = path.display();
        // Looked at before it is opened: opening a FIFO would wait for a writer.
        let meta = fs::metadata(path).map_err(|e| format!("reading fleet key {shown}: {e}"))?;
        if !meta.is_file() {
            return Err(format!("fleet key {shown} is not a regular file"));
        }
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(format!(
                "fleet key {shown} may be read by others (mode {:o}): `chmod 600 {shown}`",
                meta.permissions().mode() & 0o777
            ));
        }
        let file = fs::File::open(path).map_err(|e| format!("reading fleet key {shown}: {e}"))?;
        let mut text = String::new();
        file.take(MAX_KEY_FILE).read_to_string(&mut text).map_err(|e| format!("reading fleet key {shown}: {e}"))?;
        let seed = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'))
            .ok_or_else(|| format!("fleet key {shown} holds no seed"))?;
        FleetKey::from_seed(seed).map_err(|e| format!("fleet key {shown}: {e}"))
    }

    /// Writes the seed to a new file only its owner may read, with the public key in a comment.
    /// Refuses to replace an existing file (a key others trust would be lost).
    pub fn write_new(&self, path: &Path) -> Result<(), String> {
        let shown = path.display();
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| format!("writing fleet key {shown}: {e}"))?;
        let text = format!("# Loupe fleet key; public key {}\n{}\n", self.public_key(), self.seed());
        file.write_all(text.as_bytes()).and_then(|()| file.sync_all()).map_err(|e| format!("writing {shown}: {e}"))
    }

    /// The public key (`U…`), as trust files list it.
    pub fn public_key(&self) -> String {
        self.0.public_key()
    }

    /// The seed (`SU…`): a secret.
    pub fn seed(&self) -> String {
        self.0.seed().expect("a generated or read key pair holds its seed")
    }

    /// The ed25519 signature of `bytes`.
    pub fn sign(&self, bytes: &[u8]) -> Vec<u8> {
        self.0.sign(bytes).expect("a key pair with a seed signs")
    }
}

impl std::fmt::Debug for FleetKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FleetKey({})", self.public_key())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_written_owner_only_read_back_and_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ops.nk");
        let key = FleetKey::generate();
        assert!(key.public_key().starts_with('U') && key.public_key().len() == 56);
        key.write_new(&path).unwrap();
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let back = FleetKey::read(&path).unwrap();
        assert_eq!(back.public_key(), key.public_key());
        assert_eq!(back.sign(b"x"), key.sign(b"x"), "ed25519 signs deterministically");
        assert!(FleetKey::generate().write_new(&path).unwrap_err().contains("exists"));
        assert!(format!("{key:?}").contains(&key.public_key()) && !format!("{key:?}").contains(&key.seed()));
    }

    #[test]
    fn bad_key_files_say_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str, mode: u32| {
            let p = dir.path().join(name);
            fs::write(&p, text).unwrap();
            fs::set_permissions(&p, fs::Permissions::from_mode(mode)).unwrap();
            p
        };
        let seed = FleetKey::generate().seed();
        let open = write("open.nk", &seed, 0o644);
        assert!(FleetKey::read(&open).unwrap_err().contains("chmod 600"));
        let empty = write("empty.nk", "# nothing\n\n", 0o600);
        assert!(FleetKey::read(&empty).unwrap_err().contains("holds no seed"));
        let public = write("public.nk", &FleetKey::generate().public_key(), 0o600);
        assert!(FleetKey::read(&public).unwrap_err().contains("not an nkeys seed"));
        let account = write("account.nk", &KeyPair::new_account().seed().unwrap(), 0o600);
        assert!(FleetKey::read(&account).unwrap_err().contains("not a user seed"));
        assert!(FleetKey::read(dir.path()).unwrap_err().contains("not a regular file"));
        let ok = write("ok.nk", &format!("\n# a comment\n  {seed}  \n"), 0o400);
        FleetKey::read(&ok).unwrap();
    }
}
