//! Builds the fault injectors (`testbed/ebpf`) with the same pinned nightly as Loupe's programs
//! (once for every profile: `bpf/user/ebpf_build.rs`).
use std::{fs, path::Path};

#[path = "../bpf/user/ebpf_build.rs"]
mod ebpf_build;

fn main() -> anyhow::Result<()> {
    // Read when run, not compiled in (see bpf/user/build.rs).
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let here = Path::new(&manifest_dir);
    let pin = here.join("../bpf/ebpf/NIGHTLY");
    let toolchain = fs::read_to_string(&pin)?;
    println!("cargo:rerun-if-changed={}", here.join("common").display());
    println!("cargo:rerun-if-changed={}", pin.display());
    let ebpf = here.join("ebpf");
    let package = aya_build::Package {
        name: "loupe-testbed-ebpf",
        root_dir: ebpf.to_str().expect("utf-8 path"),
        ..Default::default()
    };
    ebpf_build::build_shared(package, toolchain.trim())
}
