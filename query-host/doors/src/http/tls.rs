//! HTTPS for the API (rustls): `--tls-cert FILE --tls-key FILE`, and `--client-ca FILE` to
//! require client certificates signed by that CA (mTLS).
//!
//! Why here and not behind a proxy only: the agent runs as root and its bearer tokens may start
//! probes; on any address beyond loopback they must not cross the network in clear text, so the
//! server refuses to listen there without TLS unless told `--insecure-plaintext`.
//!
//! Rotation needs no restart: the certificate and key are looked at (one `stat` each) on every
//! handshake and read again when either file changed, so the next connection is served the new
//! certificate. A rotation caught half-written (a key that does not match, a file cut short)
//! keeps the previous pair and logs why. Handshakes run beside the accept loop, at most
//! [`MAX_HANDSHAKES`] at once, each within [`HANDSHAKE_TIMEOUT`]: a client that opens a
//! connection and says nothing holds neither the loop nor a worker.

use std::{
    fs,
    net::SocketAddr,
    os::unix::fs::MetadataExt,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::{Duration, SystemTime},
};

use anyhow::{Context, Result, bail};
use rustls::{
    ServerConfig,
    crypto::ring::default_provider,
    pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject},
    server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier},
    sign::CertifiedKey,
};
use tokio::{
    net::{TcpListener, TcpStream},
    sync::{Semaphore, mpsc},
};
use tokio_rustls::{TlsAcceptor, server::TlsStream};

/// Handshakes in progress at once; more connections wait to be accepted.
pub const MAX_HANDSHAKES: usize = 128;
/// Time a client has to finish its handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the server's certificate, key and (for mTLS) client CA are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// Require a client certificate signed by one of these CAs.
    pub client_ca: Option<PathBuf>,
}

/// The rustls configuration for `files`: checked now (a bad file is an error at start, not at
/// the first connection), re-read on change afterwards.
pub fn server_config(files: &TlsFiles) -> Result<Arc<ServerConfig>> {
    let provider = Arc::new(default_provider());
    let resolver = Arc::new(Rotating::load(files)?);
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?;
    let builder = match &files.client_ca {
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in certs(ca)? {
                roots
                    .add(cert)
                    .with_context(|| format!("--client-ca {}: a certificate rustls refuses", ca.display()))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .with_context(|| format!("--client-ca {}", ca.display()))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut config = builder.with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

fn certs(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path)
        .with_context(|| format!("reading {}", path.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("{}: not PEM certificates", path.display()))?;
    if certs.is_empty() {
        bail!("{}: no certificate in it (expected PEM, -----BEGIN CERTIFICATE-----)", path.display());
    }
    Ok(certs)
}

/// The certificate and key, as last read, and what the files looked like then.
struct Rotating {
    files: TlsFiles,
    current: Mutex<(Stamp, Arc<CertifiedKey>)>,
}

/// Enough of two files' metadata to see a change (a rename over them changes the inode).
type Stamp = [(u64, u64, Option<SystemTime>); 2];

fn stamp(files: &TlsFiles) -> Option<Stamp> {
    let one = |p: &Path| fs::metadata(p).ok().map(|m| (m.ino(), m.len(), m.modified().ok()));
    Some([one(&files.cert)?, one(&files.key)?])
}

impl Rotating {
    fn load(files: &TlsFiles) -> Result<Rotating> {
        let stamp = stamp(files).with_context(|| {
            format!("--tls-cert {} / --tls-key {}: cannot read them", files.cert.display(), files.key.display())
        })?;
        Ok(Rotating { files: files.clone(), current: Mutex::new((stamp, read_pair(files)?)) })
    }

    /// The pair to serve: re-read if the files changed since, kept if the new ones are bad.
    fn now(&self) -> Arc<CertifiedKey> {
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(seen) = stamp(&self.files)
            && seen != current.0
        {
            match read_pair(&self.files) {
                Ok(pair) => {
                    tracing::info!(cert = %self.files.cert.display(), "TLS certificate changed on disk: serving the new one");
                    *current = (seen, pair);
                }
                // Not remembered as seen: the next handshake tries again (a copy half done).
                Err(e) => {
                    tracing::warn!("TLS certificate changed on disk but is not usable yet ({e:#}); keeping the old one")
                }
            }
        }
        Arc::clone(&current.1)
    }
}

impl std::fmt::Debug for Rotating {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Rotating({})", self.files.cert.display())
    }
}

impl ResolvesServerCert for Rotating {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.now())
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

/// A listener of TLS connections for `axum::serve`: TCP accepted in a task of its own, each
/// handshake in a task of its own, finished connections handed over in order of completion.
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
    accepting: tokio::task::JoinHandle<()>,
}

impl TlsListener {
    pub fn new(tcp: TcpListener, config: Arc<ServerConfig>) -> std::io::Result<TlsListener> {
        let local = tcp.local_addr()?;
        let (done, ready) = mpsc::channel(MAX_HANDSHAKES);
        let acceptor = TlsAcceptor::from(config);
        let slots = Arc::new(Semaphore::new(MAX_HANDSHAKES));
        let accepting = tokio::spawn(async move {
            loop {
                let Ok(slot) = Arc::clone(&slots).acquire_owned().await else { return };
                let (stream, addr) = match tcp.accept().await {
                    Ok(conn) => conn,
                    Err(e) => {
                        tracing::debug!("accepting a TCP connection: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let (acceptor, done) = (acceptor.clone(), done.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            drop(slot);
                            let _ = done.send((tls, addr)).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%addr, "TLS handshake refused: {e}"),
                        Err(_) => tracing::debug!(%addr, "TLS handshake not finished within {HANDSHAKE_TIMEOUT:?}"),
                    }
                });
            }
        });
        Ok(TlsListener { ready, local, accepting })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(conn) => conn,
            // The accept task ended (its runtime is stopping): nothing will come again.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}
