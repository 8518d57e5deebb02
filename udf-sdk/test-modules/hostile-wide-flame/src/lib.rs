//! Hostile: `run` answers a flame graph of 300,000 distinct stacks of 3 frames each, every frame
//! a distinct function (`s<i>_f<j>`), count 1 each — about 900,000 tree nodes (tests the host's
//! flame-graph size limit).
//!
//! Built as the raw weighted stacks rather than through `Flamegraph` (whose merging map would
//! hold every frame twice), so the module stays well inside the memory limit.

use loupe_udf::{Analysis, Context, Description, Frame, Output, ResultKind, WeightedStack};

/// Distinct stacks.
pub const STACKS: usize = 300_000;
/// Frames per stack.
pub const FRAMES: usize = 3;

struct WideFlame;

impl Analysis for WideFlame {
    fn describe() -> Description {
        Description::new("hostile-wide-flame", ResultKind::Flamegraph)
            .summary("Answers 300,000 distinct 3-frame stacks, ~900k nodes (tests the flame-graph size limit)")
    }

    fn run(_ctx: &Context) -> Result<Output, String> {
        let stacks: Vec<WeightedStack> = (0..STACKS)
            .map(|i| WeightedStack {
                // Leaf first; the root (`s<i>_f2`) differs per stack, so no two stacks share a node.
                frames: (0..FRAMES).map(|j| Frame::new(&format!("s{i}_f{j}"), "", false)).collect(),
                count: 1,
            })
            .collect();
        Ok(Output::Flamegraph(stacks))
    }
}

loupe_udf::export_analysis!(WideFlame);
