//! `noop`: reads nothing and answers TEXT "ok" — what one invocation costs on its own.

use loupe_udf::{Analysis, Context, Description, Output, ResultKind};

struct Noop;

impl Analysis for Noop {
    fn describe() -> Description {
        Description::new("noop", ResultKind::Text).summary("Reads nothing and answers \"ok\" (invocation overhead)")
    }

    fn run(_ctx: &Context) -> Result<Output, String> {
        Ok(Output::text("ok"))
    }
}

loupe_udf::export_analysis!(Noop);
