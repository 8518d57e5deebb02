//! Hostile: `run` lists `/`, so the component imports wasi:filesystem and must be refused at
//! upload.

use loupe_udf::{Analysis, Context, Description, Output, ResultKind};

struct Filesystem;

impl Analysis for Filesystem {
    fn describe() -> Description {
        Description::new("hostile-filesystem", ResultKind::Text).summary("Reads the filesystem (must be refused)")
    }

    fn run(_ctx: &Context) -> Result<Output, String> {
        let names: Vec<String> = std::fs::read_dir("/")
            .map_err(|e| format!("read_dir(\"/\"): {e}"))?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        Ok(Output::text(names.join("\n")))
    }
}

loupe_udf::export_analysis!(Filesystem);
