//! An analysis over data from a real kernel: `loupe run` samples a veth while the testbed
//! sends two UDP bursts whose bytes it knows; the burst detector, uploaded to `loupe serve`,
//! must account for exactly those bytes.

mod common;

use std::{
    net::{SocketAddr, UdpSocket},
    process::{Command, Stdio},
    thread,
    time::Duration,
};

use common::*;
use loupe_testbed::{require_root, topology::*, traffic};
use serde_json::json;

#[test]
fn burst_detector_finds_the_bytes_the_testbed_sent() {
    require_root!();
    let pair = VethPair::new("udfburst").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let _sink = pair.b.run(|| UdpSocket::bind((B_V4, 7002))).unwrap().unwrap();
    let sender = pair.a.run(|| UdpSocket::bind((A_V4, 0))).unwrap().unwrap();
    let run = Command::new("ip")
        .args(["netns", "exec", &pair.b.name, env!("CARGO_BIN_EXE_loupe"), "run", "--iface", B_IF])
        .args(["--interval", "1ms", "--samples", "400", "--at", "+300ms", "--json", "--data-dir"])
        .arg(&data)
        .env("RUST_LOG", "off")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    thread::sleep(Duration::from_millis(380));
    let to = SocketAddr::new(B_V4.into(), 7002);
    let first = traffic::udp_send(&sender, to, 120, 1000, Duration::ZERO).unwrap();
    thread::sleep(Duration::from_millis(60));
    let second = traffic::udp_send(&sender, to, 200, 1200, Duration::ZERO).unwrap();
    let out = run.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stored: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let in_bytes: u64 = stored["metrics"]["in_bytes"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(in_bytes, first + second, "the run saw exactly the bursts");

    let server = Server::start(&data, &[]);
    let http = Http::new(&server.url, Some(&server.token("sre")));
    http.upload("bursts", "burst_detector");
    // One 1,000-byte datagram in a 1-ms slot is 1 MB/s: every slot with a packet is hot.
    let v = http.invoke("bursts", json!({"params": {"threshold_bps": 500_000}}));
    assert_eq!(v.status, 200, "{}", String::from_utf8_lossy(&v.body));
    let v = v.json();
    let rows = v["rows"].as_array().unwrap();
    let bytes: u64 = rows.iter().map(|r| r[4].as_u64().unwrap()).sum();
    assert_eq!(bytes, first + second, "{v}");
    assert!(rows.len() >= 2, "two bursts 60 ms apart: {v}");
    let start = stored["start_unix_ns"].as_u64().unwrap();
    let gap = rows.last().unwrap()[1].as_u64().unwrap() - rows[0][1].as_u64().unwrap();
    assert!(gap >= 55_000_000, "the second burst starts ≥ 55 ms after the first: {v}");
    assert!(rows[0][1].as_u64().unwrap() >= start);
    server.stop();
}
