//! The API crate stays light: what decodes outside bytes must build without the host's runtime,
//! sandbox, bus or kernel loader, so the fuzz targets (built with sanitizers, from cold) compile
//! only the store and this crate. Asked of cargo itself: the crate's dependency tree as
//! `cargo build -p loupe-api` resolves it (features included).

use std::process::Command;

/// Crates that must not be in the tree: each drags in minutes of compilation.
const HEAVY: &[&str] = &[
    "wasmtime",
    "cranelift-codegen",
    "tokio",
    "axum",
    "hyper",
    "async-nats",
    "blazesym",
    "aya",
    "loupe-bpf",
    "loupe-query-host",
    "loupe-core",
    "loupe-doors",
    "loupe-sandbox",
];

#[test]
fn the_api_crate_builds_without_the_host_runtime() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["tree", "--offline", "-p", "loupe-api", "-e", "normal", "--prefix", "none", "-f", "{p}"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("running cargo tree");
    assert!(out.status.success(), "cargo tree failed: {}", String::from_utf8_lossy(&out.stderr));
    let tree = String::from_utf8(out.stdout).expect("cargo tree prints UTF-8");
    let names: Vec<&str> = tree.lines().filter_map(|l| l.split_whitespace().next()).collect();
    assert!(names.contains(&"loupe-store"), "the tree was not read: {tree}");
    let heavy: Vec<&str> = names.iter().copied().filter(|n| HEAVY.contains(n)).collect();
    assert!(heavy.is_empty(), "loupe-api depends on {heavy:?}; keep those in the host's crates");
}
