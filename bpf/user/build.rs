//! Builds the kernel programs (`bpf/ebpf`) for the BPF target with the pinned nightly and
//! bpf-linker (`scripts/setup` installs both), and leaves the object in `OUT_DIR` (built once
//! for every profile: `ebpf_build.rs`).
use std::{fs, path::Path};

mod ebpf_build;

fn main() -> anyhow::Result<()> {
    // Read when run, not baked in when compiled: a target dir shared by two clones (CI's and a
    // developer's) reruns this binary for the other clone, whose sources are elsewhere.
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let root = Path::new(&manifest_dir).join("..");
    let ebpf = root.join("ebpf");
    let pin = ebpf.join("NIGHTLY");
    let toolchain = fs::read_to_string(&pin)?;
    // The shared types are compiled into the object too.
    println!("cargo:rerun-if-changed={}", root.join("common").display());
    println!("cargo:rerun-if-changed={}", pin.display());
    let package =
        aya_build::Package { name: "loupe-ebpf", root_dir: ebpf.to_str().expect("utf-8 path"), ..Default::default() };
    ebpf_build::build_shared(package, toolchain.trim())
}
