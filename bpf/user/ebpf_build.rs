//! Builds one eBPF crate with aya-build once for every profile of the workspace, and leaves its
//! objects in this build script's `OUT_DIR` (included by `bpf/user/build.rs` and
//! `testbed/build.rs`).
//!
//! Why: aya-build always builds the kernel side with `--release`, whatever the host build's
//! profile, so its objects are the same for every build script that asks — but it builds in a
//! target directory under `OUT_DIR`, which is new for each profile and each set of features. On a
//! fresh clone both eBPF crates were built three times (`scripts/start`'s release build, the
//! tests' release build with the dev-dependencies' features, the docs' dev profile), 1.1 to 1.3
//! minutes each. Here aya-build builds in one directory per crate shared by them all
//! (`<target>/ebpf/<crate>`): the second and third builds find it up to date.

use std::{
    env, fs,
    path::{Path, PathBuf},
};

use anyhow::Context;

pub fn build_shared(package: aya_build::Package, toolchain: &str) -> anyhow::Result<()> {
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").context("OUT_DIR not set")?);
    // OUT_DIR is <target>/<profile>/build/<package>-<hash>/out.
    let target = out_dir.ancestors().nth(4).context("OUT_DIR is not inside a target directory")?;
    let shared = target.join("ebpf").join(package.name);
    fs::create_dir_all(&shared).with_context(|| format!("creating {}", shared.display()))?;
    // One build of a crate at a time: two cargo commands may run this build script at once.
    let lock = fs::File::create(shared.join(".lock"))?;
    lock.lock()?;
    // SAFETY: this build script runs one thread until aya-build spawns its own, after it read
    // OUT_DIR; nothing else reads the environment meanwhile.
    unsafe { env::set_var("OUT_DIR", &shared) };
    let built = aya_build::build_ebpf([package], aya_build::Toolchain::Custom(toolchain));
    // SAFETY: as above; aya-build's threads have ended when it returns.
    unsafe { env::set_var("OUT_DIR", &out_dir) };
    built?;
    copy_objects(&shared, &out_dir)
}

/// Copies the objects aya-build left in `shared` (a file per binary target) to `out_dir`.
fn copy_objects(shared: &Path, out_dir: &Path) -> anyhow::Result<()> {
    for entry in fs::read_dir(shared)? {
        let entry = entry?;
        let name = entry.file_name();
        if entry.file_type()?.is_file() && name != ".lock" {
            fs::copy(entry.path(), out_dir.join(&name))
                .with_context(|| format!("copying {} to {}", entry.path().display(), out_dir.display()))?;
        }
    }
    Ok(())
}
