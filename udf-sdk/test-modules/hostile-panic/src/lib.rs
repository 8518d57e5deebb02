//! Hostile: `run` panics. std prints the message to stderr (wasi:cli/stderr), then traps.

use loupe_udf::{Analysis, Context, Description, Output, ResultKind};

struct Panic;

impl Analysis for Panic {
    fn describe() -> Description {
        Description::new("hostile-panic", ResultKind::Text).summary("Panics (tests trap reporting)")
    }

    fn run(_ctx: &Context) -> Result<Output, String> {
        panic!("hostile module panicked on purpose")
    }
}

loupe_udf::export_analysis!(Panic);
