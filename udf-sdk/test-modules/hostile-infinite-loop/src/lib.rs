//! Hostile: `run` spins forever without a host call; only the host's time limit stops it.

use loupe_udf::{Analysis, Context, Description, Output, ResultKind};

struct InfiniteLoop;

impl Analysis for InfiniteLoop {
    fn describe() -> Description {
        Description::new("hostile-infinite-loop", ResultKind::Text).summary("Never returns (tests the time limit)")
    }

    fn run(_ctx: &Context) -> Result<Output, String> {
        let mut i = 0u64;
        loop {
            // Opaque to the optimizer, so the loop stays.
            i = std::hint::black_box(i.wrapping_add(1));
        }
    }
}

loupe_udf::export_analysis!(InfiniteLoop);
