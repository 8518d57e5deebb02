//! The Pythons on this machine and the Python workloads the frame walker's tests run
//! (`fixtures/pyhot.py`, `pyzlib.py`, `pychurn.py`).

use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
};

/// Debian's `python3.11`, then pyenv's 3.8–3.13, those installed.
pub fn installed() -> Vec<PathBuf> {
    let mut found = vec![PathBuf::from("/usr/bin/python3.11")];
    if let Ok(dirs) = std::fs::read_dir("/root/.pyenv/versions") {
        let mut dirs: Vec<PathBuf> = dirs.filter_map(|d| d.ok()).map(|d| d.path()).collect();
        dirs.sort();
        for dir in dirs {
            let name = dir.file_name().unwrap_or_default().to_string_lossy().to_string();
            if let Some(minor) = name.strip_prefix("3.").and_then(|r| r.split('.').next()?.parse::<u32>().ok())
                && (8..=13).contains(&minor)
            {
                found.push(dir.join(format!("bin/python3.{minor}")));
            }
        }
    }
    found.retain(|p| p.exists());
    found
}

/// A fixture script's path.
pub fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures").join(name)
}

/// Starts `python SCRIPT ARGS…` (a script that prints its PID, then "ready"); returns it and
/// its PID once it says it runs.
pub fn start(python: &Path, script: &Path, args: &[&str]) -> (Child, u32) {
    let mut child = Command::new(python)
        .arg(script)
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", python.display()));
    let mut out = BufReader::new(child.stdout.take().expect("piped"));
    let mut line = String::new();
    out.read_line(&mut line).expect("reading its PID");
    let pid = line.trim().parse().unwrap_or_else(|_| panic!("a PID first, not {line:?}"));
    line.clear();
    out.read_line(&mut line).expect("reading its start");
    assert_eq!(line.trim(), "ready", "{} {}", python.display(), script.display());
    (child, pid)
}
