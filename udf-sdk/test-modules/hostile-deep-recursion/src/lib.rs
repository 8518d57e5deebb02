//! Hostile: `run` recurses without bound (not a tail call: each frame uses the callee's result),
//! until the host's wasm stack limit traps it.

use loupe_udf::{Analysis, Context, Description, Output, ResultKind};

#[inline(never)]
fn dive(depth: u64) -> u64 {
    // A base case the optimizer cannot see through, so the recursion stays a real call.
    if std::hint::black_box(depth) == u64::MAX {
        return 0;
    }
    let below = dive(std::hint::black_box(depth + 1));
    std::hint::black_box(below.wrapping_mul(31).wrapping_add(depth))
}

struct DeepRecursion;

impl Analysis for DeepRecursion {
    fn describe() -> Description {
        Description::new("hostile-deep-recursion", ResultKind::Text).summary("Recurses forever (tests the stack limit)")
    }

    fn run(_ctx: &Context) -> Result<Output, String> {
        Ok(Output::text(dive(0).to_string()))
    }
}

loupe_udf::export_analysis!(DeepRecursion);
