//! The CLI's client mode: `loupe --server URL --token T <command>` asks a remote host's API
//! instead of a local store. The answers are the same JSON the local commands print.

use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use serde::{Serialize, de::DeserializeOwned};

/// Largest answer the client reads (a whole-day profile with a big flame graph fits).
const MAX_ANSWER: u64 = 512 << 20;

pub struct Client {
    base: String,
    token: Option<String>,
    agent: ureq::Agent,
}

impl Client {
    pub fn new(server: &str, token: Option<String>) -> Result<Client> {
        let base = server.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            bail!("--server {server}: expected a URL such as http://host:7878");
        }
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(600)))
            .build()
            .into();
        Ok(Client { base, token, agent })
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

    fn finish(&self, what: &str, r: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> Result<Vec<u8>> {
        let mut resp = r.with_context(|| format!("{what}: cannot reach {}", self.base))?;
        let status = resp.status();
        let body = resp
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER)
            .read_to_vec()
            .with_context(|| format!("{what}: reading the answer"))?;
        if status.is_success() {
            return Ok(body);
        }
        // The API's errors are {"error", "code"}; say the server's words.
        match serde_json::from_slice::<serde_json::Value>(&body) {
            Ok(v) if v.get("error").is_some() => {
                let mut msg = format!(
                    "{} (HTTP {}, {})",
                    v["error"].as_str().unwrap_or("?"),
                    status.as_u16(),
                    v["code"].as_str().unwrap_or("?")
                );
                if let Some(log) = v.get("log").and_then(|l| l.as_array()) {
                    for line in log.iter().filter_map(|l| l.as_str()) {
                        msg.push_str(&format!("\n  log: {line}"));
                    }
                }
                Err(anyhow!("{msg}"))
            }
            _ => Err(anyhow!("{what}: HTTP {} from {}", status.as_u16(), self.base)),
        }
    }

    pub fn get_bytes(&self, path: &str, query: &[(&str, String)]) -> Result<Vec<u8>> {
        let mut req = self.auth(self.agent.get(self.url(path)));
        for (k, v) in query {
            req = req.query(*k, v);
        }
        self.finish(path, req.call())
    }

    pub fn get<T: DeserializeOwned>(&self, path: &str, query: &[(&str, String)]) -> Result<T> {
        let body = self.get_bytes(path, query)?;
        crate::formats::deep_json::from_slice(&body).with_context(|| format!("{path}: unexpected answer"))
    }

    pub fn post<B: Serialize, T: DeserializeOwned>(&self, path: &str, body: &B) -> Result<T> {
        let req = self.auth(self.agent.post(self.url(path)));
        let body = self.finish(path, req.send_json(body))?;
        crate::formats::deep_json::from_slice(&body).with_context(|| format!("{path}: unexpected answer"))
    }

    pub fn put_wasm<T: DeserializeOwned>(&self, path: &str, bytes: &[u8]) -> Result<T> {
        let req = self.auth(self.agent.put(self.url(path))).header("Content-Type", "application/wasm");
        let body = self.finish(path, req.send(bytes))?;
        crate::formats::deep_json::from_slice(&body).with_context(|| format!("{path}: unexpected answer"))
    }

    pub fn delete(&self, path: &str) -> Result<()> {
        let req = self.auth(self.agent.delete(self.url(path)));
        self.finish(path, req.call()).map(drop)
    }
}
