//! What HTTPS costs the API: requests per second and p99 latency of `GET /api/v1/runs` from 64
//! concurrent clients with keep-alive, against a real `loupe serve` over plain HTTP and then over
//! HTTPS (rustls, a P-256 certificate made by `openssl`), in one run, on the same store. Rounds
//! alternate plain and HTTPS so a busy neighbour hurts both alike; the figure is the median
//! round's ratio (goal: HTTPS ≥ 0.8 of plain).
//!
//! `cargo bench -p loupe-query-host --bench https` (`LOUPE_BENCH_SECONDS` per round, default 4;
//! `LOUPE_BENCH_ROUNDS`, default 3).

use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Child, Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    thread,
    time::{Duration, Instant},
};

use loupe_testbed::{pki::Pki, synthetic::fill_known};

const CLIENTS: usize = 64;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// `loupe serve` on `data` with `extra`; its URL once it listens.
fn serve(data: &Path, extra: &[&str]) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_loupe"))
        .args(["serve", "--no-auth", "--listen", "127.0.0.1:0", "--retention", "36500days", "--data-dir"])
        .arg(data)
        .args(extra)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_string();
    (child, url)
}

fn stop(mut child: Child) {
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let _ = child.wait();
}

/// Requests per second and p99 (µs) of `CLIENTS` threads asking `url` for `seconds`.
fn load(url: &str, ca: Option<&Path>, seconds: u64) -> (f64, f64) {
    let tls = ca.map(|ca| {
        let pem = std::fs::read(ca).unwrap();
        let certs: Vec<_> = ureq::tls::parse_pem(&pem)
            .filter_map(|i| match i {
                Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
                _ => None,
            })
            .collect();
        ureq::tls::TlsConfig::builder().root_certs(ureq::tls::RootCerts::new_with_certs(&certs)).build()
    });
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let workers: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (url, tls, stop) = (format!("{url}/api/v1/runs"), tls.clone(), Arc::clone(&stop));
            thread::spawn(move || {
                let mut config = ureq::Agent::config_builder().timeout_global(Some(Duration::from_secs(30)));
                if let Some(tls) = tls {
                    config = config.tls_config(tls);
                }
                let agent: ureq::Agent = config.build().into();
                let mut latencies = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let t = Instant::now();
                    let body = agent.get(&url).call().unwrap().body_mut().read_to_vec().unwrap();
                    assert!(body.starts_with(b"["), "not the runs list");
                    latencies.push(t.elapsed().as_micros() as u64);
                }
                latencies
            })
        })
        .collect();
    thread::sleep(Duration::from_secs(seconds));
    stop.store(true, Ordering::Relaxed);
    let mut all: Vec<u64> = workers.into_iter().flat_map(|w| w.join().unwrap()).collect();
    let elapsed = started.elapsed().as_secs_f64();
    all.sort_unstable();
    let p99 = all[(all.len() * 99 / 100).min(all.len() - 1)] as f64;
    (all.len() as f64 / elapsed, p99)
}

fn main() {
    if Command::new("openssl").arg("version").output().is_err() {
        println!("https bench skipped: openssl is not installed (scripts/setup installs it)");
        return;
    }
    let seconds = env_or("LOUPE_BENCH_SECONDS", 4);
    let rounds = env_or("LOUPE_BENCH_ROUNDS", 3) as usize;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    fill_known(&data);
    let pki = Pki::new(dir.path()).unwrap();
    pki.issue("server", "loupe bench", &["IP:127.0.0.1"]).unwrap();
    let (cert, key) = (pki.pem("server"), pki.key("server"));
    let tls = ["--tls-cert", cert.to_str().unwrap(), "--tls-key", key.to_str().unwrap()];
    println!("GET /api/v1/runs, {CLIENTS} clients with keep-alive, {seconds} s a round, {rounds} rounds");
    let mut rows = Vec::new();
    for round in 1..=rounds {
        let (child, url) = serve(&data, &[]);
        let plain = load(&url, None, seconds);
        stop(child);
        let (child, url) = serve(&data, &tls);
        let https = load(&url, Some(&pki.pem("ca")), seconds);
        stop(child);
        println!(
            "  round {round}: plain {:>7.0} req/s p99 {:>6.0} us   https {:>7.0} req/s p99 {:>6.0} us   ratio {:.2}",
            plain.0,
            plain.1,
            https.0,
            https.1,
            https.0 / plain.0
        );
        rows.push((plain, https));
    }
    rows.sort_by(|a, b| (a.1.0 / a.0.0).total_cmp(&(b.1.0 / b.0.0)));
    let (plain, https) = rows[rows.len() / 2];
    let ratio = https.0 / plain.0;
    println!("median round: HTTPS {:.2} of plain HTTP's requests per second (goal >= 0.8)", ratio);
    println!(r#"BENCH {{"name": "api_plain_rps", "value": {:.0}, "unit": "req/s"}}"#, plain.0);
    println!(
        r#"BENCH {{"name": "api_https_rps", "value": {:.0}, "unit": "req/s", "baseline": {:.0}}}"#,
        https.0, plain.0
    );
    println!(r#"BENCH {{"name": "api_https_rps_ratio", "value": {ratio:.3}, "unit": "ratio"}}"#);
    println!(r#"BENCH {{"name": "api_plain_p99", "value": {:.0}, "unit": "us"}}"#, plain.1);
    println!(r#"BENCH {{"name": "api_https_p99", "value": {:.0}, "unit": "us", "baseline": {:.0}}}"#, https.1, plain.1);
}
