//! Bad input to the `loupe` command line: a one-line error naming the problem, a non-zero exit,
//! and a store left as it was. (Needs no root: every case fails before anything is attached.)

use std::{path::Path, process::Command};

fn loupe(data_dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_loupe"))
        .args(args)
        .arg("--data-dir")
        .arg(data_dir)
        .env("RUST_LOG", "off")
        .output()
        .expect("running loupe");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// A store holding one imported run, so every test can check it survives.
fn store_with_one_run() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rackId_7_hostId_42.txt");
    std::fs::write(
        &file,
        r#"{"server_hostname":"h42","sampling_freq":1000,"ingressBytes":[5,0,9],"egressBytes":[1,2,3],
        "inRxmitBytes":[0,0,0],"outRxmitBytes":[0,0,0],"inCongestionExperiencedBytes":[0,0,0],"connections":[1,2,3]}"#,
    )
    .unwrap();
    let data = dir.path().join("data");
    let (code, out, err) = loupe(&data, &["import", "millisampler", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    (dir, out.trim().to_string())
}

fn assert_one_line_error(code: i32, stderr: &str, needle: &str) {
    assert_eq!(code, 1, "exit code for: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "expected one line, got: {stderr}");
    assert!(lines[0].starts_with("loupe: error: "), "{stderr}");
    assert!(lines[0].contains(needle), "expected '{needle}' in: {stderr}");
}

fn assert_intact(data: &Path, id: &str) {
    let (code, out, err) = loupe(data, &["runs", "show", id, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["metrics"]["in_bytes"], serde_json::json!([5, 0, 9]));
}

#[test]
fn bad_requests_fail_cleanly_and_lose_nothing() {
    let (dir, id) = store_with_one_run();
    let data = dir.path().join("data");
    let cases: &[(&[&str], &str)] = &[
        (&["run", "--iface", "lo", "--interval", "1ns"], "interval 1ns out of bounds"),
        (&["run", "--iface", "lo", "--interval", "1h"], "out of bounds"),
        (&["run", "--iface", "lo", "--samples", "0"], "sample count 0 out of bounds"),
        (&["run", "--iface", "lo", "--samples", "1000000"], "sample count 1000000 out of bounds"),
        (&["run", "--iface", "lo", "--local-prefix", "10.0.0.0/99"], "bad local prefix '10.0.0.0/99'"),
        (&["runs", "list", "--from", "2026-01-02T00:00:00Z", "--to", "2026-01-01T00:00:00Z"], "bad time range"),
        (&["runs", "show", "12345"], "no run with id 12345"),
        (&["runs", "show", "yesterday"], "bad run id 'yesterday'"),
        (&["runs", "export", "999", "--format", "millisampler"], "no run with id 999"),
        (&["sample", "--seconds", "1", "--frequency", "0"], "frequency 0 Hz out of bounds"),
        (&["sample", "--seconds", "1", "--frequency", "5000"], "frequency 5000 Hz out of bounds"),
        (&["sample", "--seconds", "0"], "--seconds 0 out of bounds"),
        (&["profile", "--from", "2026-01-02T00:00:00Z", "--to", "2026-01-01T00:00:00Z"], "bad time range"),
        (&["profile", "--pid", "4000000"], "no samples of PID 4000000"),
    ];
    for (args, needle) in cases {
        let (code, _, err) = loupe(&data, args);
        assert_one_line_error(code, &err, needle);
    }
    assert_intact(&data, &id);
}

#[test]
fn unknown_interface_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = loupe(dir.path(), &["run", "--iface", "nosuch0"]);
    // Without root the lock or the load fails first; either way one clear line.
    if unsafe { libc::geteuid() } == 0 {
        assert_one_line_error(code, &err, "unknown interface 'nosuch0'");
    } else {
        assert_eq!(code, 1, "{err}");
    }
}

#[test]
fn unusable_data_dir_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain-file");
    std::fs::write(&file, "x").unwrap();
    let data = file.join("store");
    for args in [&["runs", "list"][..], &["profile"][..]] {
        let (code, _, err) = loupe(&data, args);
        assert_one_line_error(code, &err, &data.display().to_string());
    }
}

#[test]
fn bad_import_files_are_reported_and_good_ones_land() {
    let (dir, id) = store_with_one_run();
    let data = dir.path().join("data");
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"server_hostname":"x","sampling_freq":1000,"ingressBytes":[1,2]}"#).unwrap();
    let good = dir.path().join("rackId_1_hostId_2.txt");
    std::fs::write(
        &good,
        r#"{"server_hostname":"h2","sampling_freq":100,"ingressBytes":[1],"egressBytes":[2],"inRxmitBytes":[3],
        "outRxmitBytes":[4],"inCongestionExperiencedBytes":[5],"connections":[6]}"#,
    )
    .unwrap();
    let (code, out, err) = loupe(&data, &["import", "millisampler", bad.to_str().unwrap(), good.to_str().unwrap()]);
    assert_one_line_error(code, &err, "bad.json");
    let new_id = out.trim();
    assert!(!new_id.is_empty() && new_id != id, "good file's id: {out}");
    let (_, out, _) = loupe(&data, &["runs", "show", new_id, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["interval_ns"], 10_000_000);
    assert_eq!(v["metrics"]["in_ce_bytes"], serde_json::json!([5]));
    assert_intact(&data, &id);
}

#[test]
fn fleet_keys_are_made_owner_only_shown_and_never_replaced() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ops.nk");
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_loupe")).args(args).env("RUST_LOG", "off").output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let file = path.to_str().unwrap();
    let (code, public, err) = run(&["fleet", "key", "new", "-o", file]);
    assert_eq!(code, 0, "{err}");
    let public = public.trim();
    assert!(public.starts_with('U') && public.len() == 56, "{public}");
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    let (code, shown, _) = run(&["fleet", "key", "show", file]);
    assert_eq!((code, shown.trim()), (0, public));
    // A second key into the same file: refused, the first kept.
    let (code, _, err) = run(&["fleet", "key", "new", "-o", file]);
    assert_one_line_error(code, &err, "exists");
    assert_eq!(run(&["fleet", "key", "show", file]).1.trim(), public);
    // A seed others may read is refused when signing.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (code, _, err) = run(&["fleet", "key", "show", file]);
    assert_one_line_error(code, &err, "chmod 600");
}
