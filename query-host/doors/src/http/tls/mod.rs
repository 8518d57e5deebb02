//! HTTPS for the API (rustls): `--tls-cert FILE --tls-key FILE`, and `--client-ca FILE` to
//! require client certificates signed by that CA (mTLS).
//!
//! Why here and not behind a proxy only: the agent runs as root and its bearer tokens may start
//! probes; on any address beyond loopback they must not cross the network in clear text, so the
//! server refuses to listen there without TLS unless told `--insecure-plaintext`.
//!
//! - [`rotating`]: no restart to rotate. The certificate, its key and the client CA are looked
//!   at (one `stat` each) on every handshake and read again when they changed; a file caught
//!   half-written keeps what was read before, and the log says why.
//! - [`listener`]: every connection is accepted at once and handshakes run beside the accept
//!   loop, bounded per peer address and in total, the oldest pending one dropped past a bound:
//!   clients that open connections and say nothing cannot keep a real one out.

pub mod listener;
pub mod rotating;

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use anyhow::{Context, Result, bail};
use rustls::{
    ServerConfig,
    crypto::ring::default_provider,
    pki_types::{CertificateDer, pem::PemObject},
};

pub use listener::{HANDSHAKE_TIMEOUT, MAX_HANDSHAKES, MAX_HANDSHAKES_PER_PEER, TlsListener};

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
    let resolver = Arc::new(rotating::ServerCert::load(files)?);
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?;
    let builder = match &files.client_ca {
        Some(ca) => builder.with_client_cert_verifier(Arc::new(rotating::ClientCa::load(ca, provider)?)),
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
