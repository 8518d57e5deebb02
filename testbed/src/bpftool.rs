//! What the kernel holds, as `bpftool` lists it: programs by name and the links that run them.
//! The kernel tests use it to check that what Loupe attaches is there, and gone afterwards
//! (`scripts/setup` installs bpftool).

use std::process::Command;

fn bpftool(args: &[&str]) -> String {
    let out = Command::new("bpftool").args(args).output().expect("bpftool (scripts/setup installs it)");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Ids of the loaded programs whose name starts with one of `prefixes` (`bpftool prog show`).
pub fn program_ids(prefixes: &[&str]) -> Vec<String> {
    bpftool(&["prog", "show"])
        .lines()
        .filter(|l| prefixes.iter().any(|p| l.contains(&format!("name {p}"))))
        .filter_map(|l| l.split(':').next().map(|id| id.trim().to_string()))
        .collect()
}

/// The kernel's links whose program's name starts with one of `prefixes`, one
/// `bpftool link show` line each (`<id>: <type> … prog <id> …`; bpftools older than the
/// kernel print a newer type as `type <number>`).
pub fn links_of(prefixes: &[&str]) -> Vec<String> {
    let ids = program_ids(prefixes);
    bpftool(&["link", "show"])
        .lines()
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.iter().position(|&w| w == "prog").and_then(|i| f.get(i + 1)).is_some_and(|id| ids.iter().any(|i| i == id))
        })
        .map(str::to_string)
        .collect()
}
