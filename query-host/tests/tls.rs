//! HTTPS end to end against a real `loupe serve`, with certificates made here by `openssl` (a
//! CA, two server certificates, a client certificate): `curl --cacert` and `loupe --server
//! https://… --cacert` read through it; plain HTTP to that port gets no answer; a certificate
//! renamed over the old one on disk is served on the next connection, with no restart; with
//! `--client-ca` a client without a certificate is refused and one with it served; an address
//! beyond loopback without TLS is refused with the reason, and served with `--insecure-plaintext`.

mod common;

use std::process::Command;

use common::{Server, data::fill, loupe};
use loupe_testbed::pki::Pki;
use serde_json::Value;

fn need(tool: &str) -> bool {
    if Command::new(tool).arg("--version").output().is_ok() {
        return true;
    }
    assert!(std::env::var_os("CI").is_none(), "{tool} missing in CI: scripts/setup installs it");
    eprintln!("skipped: `{tool}` is not installed (scripts/setup installs it)");
    false
}

/// `curl ARGS URL`: exit status, and the server certificate's subject from its verbose log.
fn curl(args: &[&str], url: &str) -> (bool, String, String) {
    let out = Command::new("curl").args(["-sS", "-v", "--max-time", "10"]).args(args).arg(url).output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    let subject = log.lines().find_map(|l| l.split_once("subject: ").map(|(_, s)| s.trim().to_string()));
    (out.status.success(), subject.unwrap_or_default(), String::from_utf8_lossy(&out.stdout).into_owned() + &log)
}

#[test]
fn https_end_to_end_with_rotation_and_client_certificates() {
    if !need("curl") || !need("openssl") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    fill(&data);
    let pki = Pki::new(dir.path()).unwrap();
    let local = ["IP:127.0.0.1", "DNS:localhost"];
    pki.issue("one", "loupe-one", &local).unwrap();
    pki.issue("two", "loupe-two", &local).unwrap();
    pki.issue("client", "a-client", &[]).unwrap();
    let (cert, key) = (dir.path().join("server.pem"), dir.path().join("server.key"));
    std::fs::copy(pki.pem("one"), &cert).unwrap();
    std::fs::copy(pki.key("one"), &key).unwrap();
    let tls = ["--tls-cert", cert.to_str().unwrap(), "--tls-key", key.to_str().unwrap()];
    let server = Server::start(&data, &tls);
    assert!(server.url.starts_with("https://127.0.0.1:"), "{}", server.url);
    let token = server.token("sre");
    let ca = pki.pem("ca");
    let ca = ca.to_str().unwrap();
    let health = format!("{}/api/v1/health", server.url);

    // curl, trusting the CA: the certificate on disk is served.
    let (ok, subject, log) = curl(&["--cacert", ca], &health);
    assert!(ok && log.contains("\"status\":\"ok\""), "{log}");
    assert!(subject.contains("loupe-one"), "{subject}: {log}");
    // Without trusting it, curl refuses the server; plain HTTP to the port gets no answer.
    let (ok, _, log) = curl(&[], &health);
    assert!(!ok, "curl trusted a certificate of a private CA: {log}");
    let plain = health.replacen("https://", "http://", 1);
    let (ok, _, log) = curl(&[], &plain);
    assert!(!ok && !log.contains("\"status\""), "plain HTTP was answered: {log}");

    // The CLI: the same answers as over plain HTTP, verified against --cacert.
    let listed = loupe(&["--server", &server.url, "--cacert", ca, "--token", &token, "runs", "list", "--json"]);
    assert!(listed.status.success(), "{}", String::from_utf8_lossy(&listed.stderr));
    let runs: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(runs.as_array().map(Vec::len), Some(2), "{runs}");
    let untrusted = loupe(&["--server", &server.url, "--token", &token, "runs", "list"]);
    assert_eq!(untrusted.status.code(), Some(1));
    let said = String::from_utf8_lossy(&untrusted.stderr).to_lowercase();
    assert!(said.contains("cannot reach") && said.contains("certificate"), "{said}");

    // Rotation: the new pair renamed over the old one is served on the next connection.
    let (new_cert, new_key) = (dir.path().join("new.pem"), dir.path().join("new.key"));
    std::fs::copy(pki.pem("two"), &new_cert).unwrap();
    std::fs::copy(pki.key("two"), &new_key).unwrap();
    std::fs::rename(&new_key, &key).unwrap();
    std::fs::rename(&new_cert, &cert).unwrap();
    let (ok, subject, log) = curl(&["--cacert", ca], &health);
    assert!(ok && subject.contains("loupe-two"), "after rotation: {subject}: {log}");
    // A broken file on disk keeps the last good pair in service.
    std::fs::write(&cert, "-----BEGIN CERTIFICATE-----\ncut short").unwrap();
    let (ok, subject, log) = curl(&["--cacert", ca], &health);
    assert!(ok && subject.contains("loupe-two"), "a broken certificate file was served: {log}");
    server.stop();

    // mTLS: no client certificate, no answer; with one the CA signed, served.
    let client_ca = dir.path().join("client-ca.pem");
    std::fs::copy(ca, &client_ca).unwrap();
    let mut mtls = tls.to_vec();
    mtls.extend(["--client-ca", client_ca.to_str().unwrap()]);
    std::fs::copy(pki.pem("one"), &cert).unwrap();
    std::fs::copy(pki.key("one"), &key).unwrap();
    let server = Server::start(&data, &mtls);
    let health = format!("{}/api/v1/health", server.url);
    let (ok, _, log) = curl(&["--cacert", ca], &health);
    assert!(!ok && !log.contains("\"status\""), "served a client without a certificate: {log}");
    let (client, client_key) = (pki.pem("client"), pki.key("client"));
    let (client, client_key) = (client.to_str().unwrap(), client_key.to_str().unwrap());
    let (ok, _, log) = curl(&["--cacert", ca, "--cert", client, "--key", client_key], &health);
    assert!(ok && log.contains("\"status\":\"ok\""), "{log}");
    let token = server.token("sre");
    let with_cert = loupe(&[
        "--server",
        &server.url,
        "--cacert",
        ca,
        "--client-cert",
        client,
        "--client-key",
        client_key,
        "--token",
        &token,
        "days",
        "--json",
    ]);
    assert!(with_cert.status.success(), "{}", String::from_utf8_lossy(&with_cert.stderr));
    // The client CA is read again when it changes, like the certificate: another CA renamed
    // over it serves its clients and no longer the first CA's.
    let other = Pki::new(&dir.path().join("other")).unwrap();
    other.issue("client", "another-client", &[]).unwrap();
    let (other_client, other_key) = (other.pem("client"), other.key("client"));
    let other_args = ["--cacert", ca, "--cert", other_client.to_str().unwrap(), "--key", other_key.to_str().unwrap()];
    let (ok, _, log) = curl(&other_args, &health);
    assert!(!ok, "a client of an untrusted CA was served: {log}");
    let next_ca = dir.path().join("next-ca.pem");
    std::fs::copy(other.pem("ca"), &next_ca).unwrap();
    std::fs::rename(&next_ca, &client_ca).unwrap();
    let (ok, _, log) = curl(&other_args, &health);
    assert!(ok && log.contains("\"status\":\"ok\""), "the new client CA was not read: {log}");
    let (ok, _, log) = curl(&["--cacert", ca, "--cert", client, "--key", client_key], &health);
    assert!(!ok, "a client of the replaced CA was still served: {log}");
    server.stop();
}

/// 200 connections that never start a handshake (more than the pending bound, all from one
/// address) cannot keep a real client out: it is served at once.
#[test]
fn idle_connections_cannot_keep_a_client_out() {
    if !need("curl") || !need("openssl") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new(dir.path()).unwrap();
    pki.issue("server", "loupe", &["IP:127.0.0.1"]).unwrap();
    let (cert, key) = (pki.pem("server"), pki.key("server"));
    let server = Server::start(
        &dir.path().join("data"),
        &["--tls-cert", cert.to_str().unwrap(), "--tls-key", key.to_str().unwrap()],
    );
    let addr = server.url.trim_start_matches("https://").to_string();
    let idle: Vec<std::net::TcpStream> = (0..200).map(|_| std::net::TcpStream::connect(&addr).unwrap()).collect();
    let health = format!("{}/api/v1/health", server.url);
    let ca = pki.pem("ca");
    let (ok, _, log) = curl(&["--cacert", ca.to_str().unwrap(), "-w", "\ntime_total=%{time_total}\n"], &health);
    assert!(ok && log.contains("\"status\":\"ok\""), "{log}");
    let took: f64 = log.lines().find_map(|l| l.strip_prefix("time_total=")).unwrap().trim().parse().unwrap();
    assert!(took < 1.0, "served after {took} s beside 200 idle connections");
    drop(idle);
    server.stop();
}

#[test]
fn beyond_loopback_plain_http_is_refused_unless_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let out = loupe(&["serve", "--listen", "0.0.0.0:0", "--data-dir", d]);
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("is not a loopback address") && said.contains("--tls-cert FILE --tls-key FILE"), "{said}");
    assert!(said.contains("--insecure-plaintext"), "{said}");
    let server = Server::start(dir.path(), &["--listen", "0.0.0.0:0", "--insecure-plaintext"]);
    let port = server.url.rsplit(':').next().unwrap().to_string();
    let health = common::Http::new(&format!("http://127.0.0.1:{port}"), None).get("/api/v1/health");
    assert_eq!(health.status, 200);
    server.stop();
}
