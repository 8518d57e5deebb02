//! Hostile: `run` answers 8 MiB of text (tests the output size limit).

use loupe_udf::{Analysis, Context, Description, Output, ResultKind};

/// 8 MiB.
pub const SIZE: usize = 8 << 20;

struct HugeOutput;

impl Analysis for HugeOutput {
    fn describe() -> Description {
        Description::new("hostile-huge-output", ResultKind::Text)
            .summary("Answers 8 MiB of text (tests the output limit)")
    }

    fn run(_ctx: &Context) -> Result<Output, String> {
        Ok(Output::text("x".repeat(SIZE)))
    }
}

loupe_udf::export_analysis!(HugeOutput);
