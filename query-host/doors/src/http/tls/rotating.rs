//! What TLS reads from files, read again when they change: the server's certificate and key,
//! and the client CA of mTLS. Each handshake `stat`s the files (a rename over one changes its
//! inode); a change is read at once, and a file caught half-written (a key that does not fit,
//! a CA file cut short) keeps what was read before and is tried again at the next handshake.

use std::{
    fs,
    os::unix::fs::MetadataExt,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::SystemTime,
};

use anyhow::{Context, Result};
use rustls::{
    DigitallySignedStruct, DistinguishedName, SignatureScheme,
    client::danger::HandshakeSignatureValid,
    crypto::{CryptoProvider, ring::default_provider},
    pki_types::{CertificateDer, PrivateKeyDer, UnixTime, pem::PemObject},
    server::{
        ClientHello, ResolvesServerCert, WebPkiClientVerifier,
        danger::{ClientCertVerified, ClientCertVerifier},
    },
    sign::CertifiedKey,
};

use super::{TlsFiles, certs};

/// Enough of a file's metadata to see a change.
type Stamp = Vec<(u64, u64, Option<SystemTime>)>;

fn stamp(paths: &[PathBuf]) -> Option<Stamp> {
    paths.iter().map(|p| fs::metadata(p).ok().map(|m| (m.ino(), m.len(), m.modified().ok()))).collect()
}

/// A value read from `paths`, and what they looked like then.
struct Reloading<T> {
    paths: Vec<PathBuf>,
    /// What it is, for the log (`TLS certificate`, `client CA`).
    what: &'static str,
    read: Box<dyn Fn() -> Result<T> + Send + Sync>,
    current: Mutex<(Stamp, T)>,
}

impl<T: Clone> Reloading<T> {
    fn load(
        what: &'static str,
        paths: Vec<PathBuf>,
        read: impl Fn() -> Result<T> + Send + Sync + 'static,
    ) -> Result<Self> {
        let seen = stamp(&paths).with_context(|| format!("{}: cannot read it", show(&paths)))?;
        let value = read()?;
        Ok(Reloading { paths, what, read: Box::new(read), current: Mutex::new((seen, value)) })
    }

    /// The value to use now: read again if the files changed, kept if the new ones are bad.
    fn now(&self) -> T {
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(seen) = stamp(&self.paths)
            && seen != current.0
        {
            match (self.read)() {
                Ok(value) => {
                    tracing::info!(file = %show(&self.paths), "{} changed on disk: using the new one", self.what);
                    *current = (seen, value);
                }
                // Not remembered as seen: the next handshake tries again (a copy half done).
                Err(e) => {
                    tracing::warn!("{} changed on disk but is not usable yet ({e:#}); keeping the old one", self.what)
                }
            }
        }
        current.1.clone()
    }
}

fn show(paths: &[PathBuf]) -> String {
    paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" / ")
}

/// The server's certificate and key.
pub struct ServerCert(Reloading<Arc<CertifiedKey>>);

impl ServerCert {
    pub fn load(files: &TlsFiles) -> Result<ServerCert> {
        let pair = files.clone();
        Ok(ServerCert(Reloading::load("TLS certificate", vec![files.cert.clone(), files.key.clone()], move || {
            read_pair(&pair)
        })?))
    }
}

impl std::fmt::Debug for ServerCert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ServerCert({})", show(&self.0.paths))
    }
}

impl ResolvesServerCert for ServerCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.now())
    }
}

fn read_pair(files: &TlsFiles) -> Result<Arc<CertifiedKey>> {
    let chain = certs(&files.cert).with_context(|| format!("--tls-cert {}", files.cert.display()))?;
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .with_context(|| format!("--tls-key {}: no PEM private key in it", files.key.display()))?;
    let pair = CertifiedKey::from_der(chain, key, &default_provider()).with_context(|| {
        format!("--tls-key {} does not fit --tls-cert {}", files.key.display(), files.cert.display())
    })?;
    Ok(Arc::new(pair))
}

/// The client CA of mTLS: rustls's WebPKI verifier, built again from the file when it changes.
/// It sends no CA names to clients (they are optional hints, and a hint list borrowed from a
/// verifier that may be replaced cannot be lent out): a client offers the certificate it has.
pub struct ClientCa(Reloading<Arc<dyn ClientCertVerifier>>);

impl ClientCa {
    pub fn load(ca: &Path, provider: Arc<CryptoProvider>) -> Result<ClientCa> {
        let path = ca.to_path_buf();
        Ok(ClientCa(Reloading::load("client CA", vec![path.clone()], move || verifier(&path, &provider))?))
    }
}

fn verifier(ca: &Path, provider: &Arc<CryptoProvider>) -> Result<Arc<dyn ClientCertVerifier>> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in certs(ca).with_context(|| format!("--client-ca {}", ca.display()))? {
        roots.add(cert).with_context(|| format!("--client-ca {}: a certificate rustls refuses", ca.display()))?;
    }
    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), Arc::clone(provider))
        .build()
        .with_context(|| format!("--client-ca {}", ca.display()))
}

impl std::fmt::Debug for ClientCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClientCa({})", show(&self.0.paths))
    }
}

impl ClientCertVerifier for ClientCa {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        self.0.now().verify_client_cert(end_entity, intermediates, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.now().verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.now().verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.now().supported_verify_schemes()
    }
}
