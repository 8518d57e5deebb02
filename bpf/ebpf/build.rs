//! Re-run when bpf-linker changes: the object depends on the linker that produced it.
fn main() {
    if let Ok(linker) = which::which("bpf-linker") {
        println!("cargo:rerun-if-changed={}", linker.display());
    }
}
