//! The CLI's client mode: `loupe --server URL --token T <command>` asks a remote host's API
//! instead of a local store. [`RemoteHost`] is a [`HostApi`](loupe_api::ops::HostApi) like the host itself: each
//! operation is the control socket's `Call`, sent to `POST /api/v1/call`, and its answer is the
//! control socket's too — the host's `CoreError` with its kind, code and words — so a command
//! prints the same error and exits the same way whichever way it went. The fleet's operations
//! go the same way (`FleetApi`, through an agent in the fleet). A component's bytes go to their
//! own REST route (`PUT /api/v1/udfs/{name}`), not base64 inside a call.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use loupe_api::wire::control::{Answer, Call, ControlClient, FleetCall, HTTP_CALL_PATH, Transport};
use serde::{Serialize, de::DeserializeOwned};
use ureq::tls::{ClientCert, PemItem, PrivateKey, RootCerts, TlsConfig, parse_pem};

use loupe_api::model::{ErrorBody, ErrorKind};
use loupe_core::{CoreError, CoreResult};

/// The host's operations on a remote host.
pub type RemoteHost = ControlClient<Client>;

/// Largest answer the client reads (a whole-day profile with a big flame graph fits).
const MAX_ANSWER: u64 = 512 << 20;
/// Largest error body the client reads.
const MAX_ERROR: usize = 1 << 20;

pub struct Client {
    base: String,
    token: Option<String>,
    agent: ureq::Agent,
}

/// How the client trusts an `https://` server, and proves itself to one that asks (mTLS).
#[derive(Clone, Debug, Default)]
pub struct ClientTls {
    /// Trust only the CAs in this PEM file (else the system's roots).
    pub cacert: Option<PathBuf>,
    /// A client certificate (PEM) and its key, for a server started with `--client-ca`.
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
}

impl ClientTls {
    /// ureq's TLS settings: the roots to verify against, and the client certificate if given.
    fn config(&self) -> anyhow::Result<TlsConfig> {
        use anyhow::Context;
        let read = |p: &Path| std::fs::read(p).with_context(|| format!("reading {}", p.display()));
        // The certificates of a PEM file (a file that is not PEM, or holds none, is an error).
        let certs = |flag: &str, path: &Path| -> anyhow::Result<Vec<ureq::tls::Certificate<'static>>> {
            let certs = parse_pem(&read(path)?)
                .filter_map(|item| match item {
                    Ok(PemItem::Certificate(c)) => Some(Ok(c)),
                    Ok(_) => None,
                    Err(e) => Some(Err(e)),
                })
                .collect::<Result<Vec<_>, _>>()
                .with_context(|| format!("{flag} {}: not PEM", path.display()))?;
            anyhow::ensure!(!certs.is_empty(), "{flag} {}: no certificate in it", path.display());
            Ok(certs)
        };
        let roots = match &self.cacert {
            Some(path) => RootCerts::new_with_certs(&certs("--cacert", path)?),
            None => system_roots(),
        };
        let client = match (&self.cert, &self.key) {
            (Some(cert), Some(key)) => {
                let chain = certs("--client-cert", cert)?;
                let key = PrivateKey::from_pem(&read(key)?)
                    .with_context(|| format!("--client-key {}: no PEM private key in it", key.display()))?;
                Some(ClientCert::new_with_certs(&chain, key))
            }
            (None, None) => None,
            _ => anyhow::bail!("give --client-cert and --client-key together"),
        };
        Ok(TlsConfig::builder().root_certs(roots).client_cert(client).build())
    }
}

/// The system's trusted roots (`/etc/ssl/certs` on Debian), or Mozilla's bundle if none load.
fn system_roots() -> RootCerts {
    match rustls_native_certs::load_native_certs() {
        Ok(certs) if !certs.is_empty() => {
            let certs: Vec<_> = certs.iter().map(|c| ureq::tls::Certificate::from_der(c.as_ref()).to_owned()).collect();
            RootCerts::new_with_certs(&certs)
        }
        _ => RootCerts::WebPki,
    }
}

impl Client {
    pub fn new(server: &str, token: Option<String>) -> anyhow::Result<Client> {
        Client::with_tls(server, token, &ClientTls::default())
    }

    /// A client of `server`, trusting and presenting what `tls` says for an `https://` URL.
    pub fn with_tls(server: &str, token: Option<String>, tls: &ClientTls) -> anyhow::Result<Client> {
        let base = server.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            anyhow::bail!("--server {server}: expected a URL such as http://host:7878 or https://host:7878");
        }
        let mut config =
            ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(Duration::from_secs(600)));
        if base.starts_with("https://") {
            config = config.tls_config(tls.config()?);
        }
        Ok(Client { base, token, agent: config.build().into() })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn auth<B>(&self, req: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        match &self.token {
            Some(t) => req.header("Authorization", &format!("Bearer {t}")),
            None => req,
        }
    }

    /// The answer's status and bytes.
    fn read(&self, what: &str, r: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> CoreResult<(u16, Vec<u8>)> {
        let mut resp = r.map_err(|e| {
            CoreError::Transport(format!("{what}: cannot reach {}: {e}", loupe_api::formats::url::redacted(&self.base)))
        })?;
        let status = resp.status().as_u16();
        let body = resp
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER)
            .read_to_vec()
            .map_err(|e| CoreError::Transport(format!("{what}: reading the answer: {e}")))?;
        Ok((status, body))
    }

    /// The answer's bytes, or the server's error as the core's.
    fn finish(&self, what: &str, r: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> CoreResult<Vec<u8>> {
        let (status, body) = self.read(what, r)?;
        if (200..300).contains(&status) { Ok(body) } else { Err(self.error_of(what, status, &body)) }
    }

    /// A failed answer as the core's error: the API's errors are {"error", "code"}, said in the
    /// server's words with the kind its status names.
    fn error_of(&self, what: &str, status: u16, body: &[u8]) -> CoreError {
        let error = (body.len() <= MAX_ERROR)
            .then(|| loupe_api::formats::deep_json::from_slice::<ErrorBody>(body).ok())
            .flatten();
        match (error, ErrorKind::from_http_status(status)) {
            (Some(body), Some(kind)) => CoreError::Remote { kind, body },
            _ => CoreError::Transport(format!("{what}: HTTP {status} from {}", loupe_api::formats::url::redacted(&self.base))),
        }
    }

    fn decode<T: DeserializeOwned>(path: &str, body: &[u8]) -> CoreResult<T> {
        loupe_api::formats::deep_json::from_slice(body)
            .map_err(|e| CoreError::Transport(format!("{path}: unexpected answer: {e}")))
    }
}

/// `POST /api/v1/call`. Operations the HTTP API does not serve are refused here, as the server
/// would, without sending their arguments.
impl Transport for Client {
    fn call<T: DeserializeOwned>(&self, call: &Call) -> CoreResult<T> {
        let op = call.op();
        if !op.http().served() {
            return Err(op.refused());
        }
        // A component goes as itself to its REST route, not as base64 inside a JSON call.
        if let Call::UploadUdf { name, component } = call {
            let path = format!("/api/v1/udfs/{name}");
            let req = self.auth(self.agent.put(self.url(&path))).header("Content-Type", "application/wasm");
            return Self::decode(&path, &self.finish(&path, req.send(&component.0[..]))?);
        }
        self.send_call(op.name(), call)
    }

    /// The agent asks the fleet for the token's team (the token needs the `fleet` scope).
    fn fleet_call<T: DeserializeOwned>(&self, call: &FleetCall) -> CoreResult<T> {
        self.send_call(call.op().name(), call)
    }
}

impl Client {
    /// A call of either list to `POST /api/v1/call`, its answer as the core's result.
    fn send_call<C: Serialize, T: DeserializeOwned>(&self, name: &str, call: &C) -> CoreResult<T> {
        let req = self.auth(self.agent.post(self.url(HTTP_CALL_PATH)));
        let (status, body) = self.read(name, req.send_json(call))?;
        match loupe_api::formats::deep_json::from_slice::<Answer<T>>(&body) {
            Ok(answer) => answer.into_result(),
            // Not an answer: the layers' own errors (a token refused, overload, a timeout).
            Err(_) if !(200..300).contains(&status) => Err(self.error_of(name, status, &body)),
            Err(e) => Err(CoreError::Transport(format!("{name}: unexpected answer: {e}"))),
        }
    }
}

impl Client {
    /// This client as the host's operations.
    pub fn host(self) -> RemoteHost {
        ControlClient(self)
    }
}
