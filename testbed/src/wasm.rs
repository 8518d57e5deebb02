//! Where the analyses built from `udf-sdk/` are: the wasm components the API tests and the `udf`
//! benchmark upload.

use std::path::{Path, PathBuf};

/// The command that builds every component of `udf-sdk/` (`scripts/test` runs it).
pub const BUILD_COMMAND: &str =
    "cargo build --release --target wasm32-wasip2 --manifest-path udf-sdk/Cargo.toml --workspace";

/// The path of the component `<name>.wasm` (`name` is the crate name with underscores:
/// `burst_detector`), looked for in `$CARGO_TARGET_DIR`, then in `udf-sdk/target`, under
/// `wasm32-wasip2/release/`; or why it is not there, saying which command builds it.
pub fn find_wasm_component(name: &str) -> Result<PathBuf, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dirs = [std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from), Some(root.join("udf-sdk/target"))];
    let candidates: Vec<PathBuf> =
        dirs.into_iter().flatten().map(|dir| dir.join("wasm32-wasip2/release").join(format!("{name}.wasm"))).collect();
    candidates.iter().find(|path| path.is_file()).cloned().ok_or_else(|| {
        format!(
            "{name}.wasm not built (looked for {}): run `{BUILD_COMMAND}` (scripts/test does)",
            candidates.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        )
    })
}

/// [`find_wasm_component`] for tests and benches.
///
/// # Panics
/// When the component is not built, saying which command builds it.
pub fn wasm_component(name: &str) -> PathBuf {
    find_wasm_component(name).unwrap_or_else(|e| panic!("{e}"))
}
