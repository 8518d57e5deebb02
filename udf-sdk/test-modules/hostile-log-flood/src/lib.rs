//! Hostile: `run` logs 1,000,000 lines of 100 bytes, then answers TEXT "done" (tests the log cap
//! and the cost of many host calls).

use loupe_udf::{Analysis, Context, Description, Level, Output, ResultKind};

pub const LINES: u32 = 1_000_000;
pub const LINE_BYTES: usize = 100;

struct LogFlood;

impl Analysis for LogFlood {
    fn describe() -> Description {
        Description::new("hostile-log-flood", ResultKind::Text).summary("Logs a million lines (tests the log cap)")
    }

    fn run(_ctx: &Context) -> Result<Output, String> {
        let mut line = String::with_capacity(LINE_BYTES);
        for i in 0..LINES {
            line.clear();
            line.push_str("hostile log flood, line ");
            line.push_str(&format!("{i:07} "));
            while line.len() < LINE_BYTES {
                line.push('.');
            }
            debug_assert_eq!(line.len(), LINE_BYTES);
            loupe_udf::log::log(Level::Info, &line);
        }
        Ok(Output::text("done"))
    }
}

loupe_udf::export_analysis!(LogFlood);
