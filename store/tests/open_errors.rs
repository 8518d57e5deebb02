//! Opening where the store cannot live, and running out of disk.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use loupe_store::{Retention, Store, StoreError, TimeRange};

#[test]
fn parent_is_a_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let target = file.join("store");
    let err = Store::open(&target, Retention::default()).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, StoreError::CreateDir { .. }), "{err:?}");
    assert!(msg.contains(&target.display().to_string()), "{msg}");
    assert!(msg.to_lowercase().contains("not a directory"), "{msg}");
}

#[test]
fn path_is_a_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store");
    std::fs::write(&file, b"x").unwrap();
    let err = Store::open(&file, Retention::default()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains(&file.display().to_string()), "{msg}");
    assert!(msg.contains("not a directory"), "{msg}");
}

#[test]
fn read_only_directory() {
    if unsafe { libc::geteuid() } == 0 {
        println!("SKIP: read-only directory check is meaningless as root (root ignores modes)");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    let target = ro.join("store");
    let err = Store::open(&target, Retention::default()).unwrap_err();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o755)).unwrap();
    let msg = err.to_string();
    assert!(msg.contains(&target.display().to_string()), "{msg}");
    assert!(msg.to_lowercase().contains("permission denied"), "{msg}");
}

#[test]
fn second_open_in_same_process_names_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let _first = Store::open(dir.path(), Retention::default()).unwrap();
    // sled allows one open database per directory and process.
    let err = Store::open(dir.path(), Retention::default()).unwrap_err();
    assert!(err.to_string().contains(&dir.path().display().to_string()), "{err}");
    assert!(matches!(err, loupe_store::StoreError::Locked { .. }), "{err:?}");
}

/// A tmpfs mounted for the test and unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Result<Tmpfs, String> {
        std::fs::create_dir_all(at).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "loupe-store-test"])
            .arg(at)
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        Ok(Tmpfs(at.to_path_buf()))
    }

    fn resize(&self, size: &str) {
        let ok = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .unwrap()
            .success();
        assert!(ok, "remount of {} failed", self.0.display());
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn disk_full_fails_cleanly_and_keeps_earlier_runs() {
    if unsafe { libc::geteuid() } != 0 {
        println!("SKIP: needs root to mount tmpfs");
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let mnt = base.path().join("mnt");
    let fs = match Tmpfs::mount(&mnt, "1m") {
        Ok(fs) => fs,
        Err(e) => {
            println!("SKIP: needs root to mount tmpfs (mount failed: {e})");
            return;
        }
    };
    let dir = mnt.join("store");
    let store = Store::open(&dir, Retention::default()).unwrap();
    let mut r = rng(21);
    let mut written = Vec::new();
    let err = loop {
        let i = written.len() as u64;
        let run = bursty_run(&mut r, T0 + i * SEC, 100_000, 2000, 4, 0.3);
        match store.put_run(run.clone(), T0) {
            Ok(meta) => written.push((meta, run)),
            Err(e) => break e,
        }
        assert!(written.len() < 10_000, "1 MiB tmpfs never filled up");
    };
    let msg = err.to_string();
    assert!(matches!(err, StoreError::NoSpace { .. }), "{err:?}");
    assert!(msg.contains("no space left"), "{msg}");
    assert!(msg.contains(&dir.display().to_string()), "{msg}");
    assert!(!written.is_empty(), "not even one run fit");

    // This handle either still reads every acknowledged run intact or, once sled has
    // poisoned itself after the failed write, refuses with NoSpace: never wrong or missing data.
    let mut refused = 0;
    for (meta, run) in &written {
        match store.run(meta.id) {
            Ok(got) => assert_eq!(got.expect("acknowledged run present").per_cpu, run.per_cpu),
            Err(StoreError::NoSpace { .. }) => refused += 1,
            Err(e) => panic!("unexpected error reading run {}: {e}", meta.id),
        }
    }
    drop(store);
    // sled needs a free segment to open; on the full disk, opening fails clearly.
    if let Err(e) = Store::open(&dir, Retention::default()) {
        let msg = e.to_string();
        assert!(matches!(e, StoreError::NoSpace { .. }), "{e:?}");
        assert!(msg.contains("no space left") && msg.contains(&dir.display().to_string()), "{msg}");
    }
    println!("disk full after {} runs; the same handle refused {refused} reads afterwards", written.len());
    // Once the operator frees space, every acknowledged run reads back intact.
    fs.resize("16m");
    let store = Store::open(&dir, Retention::default()).unwrap();
    for (meta, run) in &written {
        let got = store.run(meta.id).unwrap().expect("acknowledged run present after reopen");
        assert_eq!(got.meta, *meta);
        assert_eq!(got.per_cpu, run.per_cpu);
    }
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    let listed = store.runs(TimeRange::ALL, None, None).unwrap();
    assert!(listed.len() >= written.len());
    // And the store works again.
    store.put_run(idle_run(T0 + 99_999 * SEC, 1000, 10, 1), T0).unwrap();
    drop(store);
    drop(fs);
}
