//! Hostile: `run` answers a flame graph of ONE stack of 200,000 frames (`f0` … `f199999`, each
//! function distinct), count 1 — a tree 200,000 levels deep (tests the host's flame-graph depth
//! limit: it must refuse the output, not recurse through it).

use loupe_udf::{Analysis, Context, Description, Flamegraph, Frame, Output, ResultKind};

/// Frames in the one stack.
pub const DEPTH: usize = 200_000;

struct DeepFlame;

impl Analysis for DeepFlame {
    fn describe() -> Description {
        Description::new("hostile-deep-flame", ResultKind::Flamegraph)
            .summary("Answers one stack 200,000 frames deep (tests the flame-graph depth limit)")
    }

    fn run(_ctx: &Context) -> Result<Output, String> {
        let frames: Vec<Frame> = (0..DEPTH).map(|i| Frame::new(&format!("f{i}"), "hostile", false)).collect();
        let mut flame = Flamegraph::new();
        flame.add(&frames, 1);
        Ok(flame.into())
    }
}

loupe_udf::export_analysis!(DeepFlame);
