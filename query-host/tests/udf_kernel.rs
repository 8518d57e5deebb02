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
        // Time for the debug binary to open the store and attach (~0.3 s here) before the start.
        .args(["--interval", "1ms", "--samples", "400", "--at", "+700ms", "--json", "--data-dir"])
        .arg(&data)
        .env("RUST_LOG", "off")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    thread::sleep(Duration::from_millis(780));
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

/// An upload onto a full disk fails with 507 and leaves what was stored serving; with room
/// again, the upload works. (Root: mounts a small tmpfs.)
#[test]
fn an_upload_onto_a_full_disk_fails_cleanly() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    let mount_point = dir.path().join("small");
    std::fs::create_dir(&mount_point).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=16m", "loupe-udf-full"])
        .arg(&mount_point)
        .status()
        .unwrap();
    assert!(mounted.success(), "mounting a tmpfs");
    struct Unmount<'a>(&'a std::path::Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let _unmount = Unmount(&mount_point);
    let data = mount_point.join("data");
    common::data::fill(&data);
    let server = Server::start(&data, &[]);
    let http = Http::new(&server.url, Some(&server.token("ops")));
    http.upload("noop", "noop");
    // Fill what is left.
    let filler = mount_point.join("filler");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&filler).unwrap();
        let chunk = vec![0u8; 64 << 10];
        while f.write_all(&chunk).is_ok() {}
    }
    http.put_wasm("/api/v1/udfs/bursts", &wasm("burst_detector")).assert_error(
        507,
        "no_space",
        "storing analysis 'bursts'",
    );
    http.put_wasm("/api/v1/udfs/noop", &wasm("sample_count")).assert_error(507, "no_space", "storing analysis 'noop'");
    // The stored one still serves, unchanged; nothing half-written is left.
    let list = http.get("/api/v1/udfs").json();
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list[0]["description"]["name"], "noop");
    assert_eq!(http.invoke("noop", json!({})).json()["text"], "ok");
    let leftovers: Vec<_> = std::fs::read_dir(data.join("udfs")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers, [std::ffi::OsString::from("noop")]);
    std::fs::remove_file(&filler).unwrap();
    http.upload("bursts", "burst_detector");
    server.stop();
}
