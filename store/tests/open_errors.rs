//! Opening where the store cannot live, and running out of disk.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use loupe_store::{FREE_FLOOR, Retention, Store, StoreError, TimeRange};

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
    let fs = match Tmpfs::mount(&mnt, "8m") {
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
        assert!(written.len() < 10_000, "8 MiB tmpfs never filled up");
    };
    let msg = err.to_string();
    assert!(matches!(err, StoreError::NoSpace { .. }), "{err:?}");
    assert!(msg.contains("no space left"), "{msg}");
    assert!(msg.contains(&dir.display().to_string()), "{msg}");
    // Refused by the store at its floor, before sled met the full disk (see `faults`).
    assert!(msg.contains(&format!("the store keeps {FREE_FLOOR} free")), "{msg}");
    assert!(!written.is_empty(), "not even one run fit");

    // So the handle is whole: it reads every acknowledged run, and writes again once the
    // operator frees space, without a reopen.
    for (meta, run) in &written {
        assert_eq!(store.run(meta.id).unwrap().expect("acknowledged run present").per_cpu, run.per_cpu);
    }
    let late = bursty_run(&mut r, T0 + 50_000 * SEC, 100_000, 2000, 4, 0.3);
    assert!(matches!(store.put_run(late.clone(), T0), Err(StoreError::NoSpace { .. })));
    fs.resize("64m");
    written.push((store.put_run(late.clone(), T0).unwrap(), late));
    drop(store);
    println!("disk full after {} runs", written.len() - 1);

    fs.resize("8m"); // full again: opening still works (it writes nothing new), or fails clearly
    if let Err(e) = Store::open(&dir, Retention::default()) {
        let msg = e.to_string();
        assert!(matches!(e, StoreError::NoSpace { .. }), "{e:?}");
        assert!(msg.contains("no space left") && msg.contains(&dir.display().to_string()), "{msg}");
    }
    fs.resize("64m");
    let store = open_store(&dir, Retention::default());
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
