//! A real `loupe serve` on a temporary data dir, a real HTTP client, real wasm components.
#![allow(dead_code)]

use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::Duration,
};

pub mod data;
pub mod fleet;

use serde_json::Value;

pub struct Server {
    pub url: String,
    pub data: PathBuf,
    child: Child,
}

impl Server {
    /// Starts `loupe serve --listen 127.0.0.1:0 <extra>` on `data` (`extra` may name its own
    /// `--listen`); returns once it listens.
    pub fn start(data: &Path, extra: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_loupe"))
            // The synthetic data is dated 2026-11-23: keep it whatever today is.
            .arg("serve")
            .args(if extra.contains(&"--listen") { &[][..] } else { &["--listen", "127.0.0.1:0"][..] })
            .args(["--retention", "36500days", "--data-dir"])
            .arg(data)
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting loupe serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let url = line.trim().rsplit(' ').next().unwrap_or_default().to_string();
        assert!(url.starts_with("http://") || url.starts_with("https://"), "loupe serve printed {line:?}");
        Server { url, data: data.to_path_buf(), child }
    }

    pub fn stop(mut self) {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let status = self.child.wait().unwrap();
        assert!(status.success(), "loupe serve exited with {status}");
    }

    pub fn token(&self, team: &str) -> String {
        token(&self.data, team)
    }

    /// A token with these scopes (`read,run`).
    pub fn token_with(&self, team: &str, scopes: &str) -> String {
        token_with(&self.data, team, scopes)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `loupe token add TEAM`: the token it prints.
pub fn token(data: &Path, team: &str) -> String {
    let out = loupe(&["token", "add", team, "--data-dir", data.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// `loupe token add TEAM --scopes SCOPES`: the token it prints.
pub fn token_with(data: &Path, team: &str, scopes: &str) -> String {
    let out = loupe(&["token", "add", team, "--scopes", scopes, "--data-dir", data.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

pub fn loupe(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_loupe")).args(args).env("RUST_LOG", "off").output().expect("running loupe")
}

/// An HTTP answer: status and body.
pub struct Answer {
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn json(&self) -> Value {
        loupe_api::formats::deep_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    /// Asserts an API error: status, `code`, and the message containing `needle`.
    pub fn assert_error(&self, status: u16, code: &str, needle: &str) {
        let v = self.json();
        assert_eq!(self.status, status, "{v}");
        assert_eq!(v["code"], code, "{v}");
        let msg = v["error"].as_str().unwrap();
        assert!(msg.contains(needle), "expected '{needle}' in: {msg}");
    }
}

pub struct Http {
    agent: ureq::Agent,
    base: String,
    token: Option<String>,
}

impl Http {
    pub fn new(base: &str, token: Option<&str>) -> Http {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(120)))
            .build()
            .into();
        Http { agent, base: base.to_string(), token: token.map(str::to_string) }
    }

    fn finish(r: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> Answer {
        let mut r = r.expect("HTTP request");
        let status = r.status().as_u16();
        let content_type =
            r.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
        let body = r.body_mut().with_config().limit(1 << 30).read_to_vec().unwrap();
        Answer { status, content_type, body }
    }

    fn auth<B>(&self, mut req: ureq::RequestBuilder<B>, headers: &[(&str, &str)]) -> ureq::RequestBuilder<B> {
        if let Some(t) = &self.token {
            req = req.header("Authorization", &format!("Bearer {t}"));
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        req
    }

    pub fn get(&self, path: &str) -> Answer {
        self.get_with(path, &[])
    }

    pub fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> Answer {
        Self::finish(self.auth(self.agent.get(format!("{}{path}", self.base)), headers).call())
    }

    pub fn post(&self, path: &str, body: &Value) -> Answer {
        Self::finish(self.auth(self.agent.post(format!("{}{path}", self.base)), &[]).send_json(body))
    }

    pub fn post_bytes(&self, path: &str, content_type: &str, bytes: &[u8]) -> Answer {
        let req = self.auth(self.agent.post(format!("{}{path}", self.base)), &[("Content-Type", content_type)]);
        Self::finish(req.send(bytes))
    }

    pub fn put_wasm(&self, path: &str, bytes: &[u8]) -> Answer {
        let req = self.auth(self.agent.put(format!("{}{path}", self.base)), &[("Content-Type", "application/wasm")]);
        Self::finish(req.send(bytes))
    }

    pub fn delete(&self, path: &str) -> Answer {
        Self::finish(self.auth(self.agent.delete(format!("{}{path}", self.base)), &[]).call())
    }

    /// Uploads `udf-sdk` component `crate_name` as `name`; asserts success.
    pub fn upload(&self, name: &str, crate_name: &str) -> Value {
        let a = self.put_wasm(&format!("/api/v1/udfs/{name}"), &wasm(crate_name));
        assert!(
            a.status == 201 || a.status == 200,
            "uploading {name}: {} {}",
            a.status,
            String::from_utf8_lossy(&a.body)
        );
        a.json()
    }

    pub fn invoke(&self, name: &str, body: Value) -> Answer {
        self.post(&format!("/api/v1/udfs/{name}/invoke"), &body)
    }
}

/// The bytes of an example or test component built from `udf-sdk` (scripts/test builds them).
pub fn wasm(crate_name: &str) -> Vec<u8> {
    let path = loupe_testbed::wasm_component(crate_name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}
