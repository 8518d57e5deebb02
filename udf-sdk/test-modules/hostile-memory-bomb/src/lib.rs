//! Hostile: `run` allocates 1 MiB chunks and writes to every page of each, forever; only the
//! host's memory limit stops it (when an allocation fails, std prints "memory allocation of …
//! failed" to stderr and traps).

use loupe_udf::{Analysis, Context, Description, Output, ResultKind};

struct MemoryBomb;

impl Analysis for MemoryBomb {
    fn describe() -> Description {
        Description::new("hostile-memory-bomb", ResultKind::Text).summary("Allocates forever (tests the memory limit)")
    }

    fn run(_ctx: &Context) -> Result<Output, String> {
        let mut chunks: Vec<Vec<u8>> = Vec::new();
        loop {
            let mut chunk = vec![0u8; 1 << 20];
            for i in (0..chunk.len()).step_by(4096) {
                chunk[i] = (chunks.len() as u8) | 1;
            }
            chunks.push(std::hint::black_box(chunk));
        }
    }
}

loupe_udf::export_analysis!(MemoryBomb);
