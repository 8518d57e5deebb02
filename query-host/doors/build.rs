//! Rebuild when the web UI's build output changes: it is embedded (see `src/http/web.rs`).
fn main() {
    println!("cargo:rerun-if-changed=../../web-ui/dist");
}
