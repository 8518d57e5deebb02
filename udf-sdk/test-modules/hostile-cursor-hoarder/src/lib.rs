//! Hostile: `run` opens run cursors and sample cursors over the whole time range
//! (`0..u64::MAX`) in a loop that never ends, asks each for one batch, and never drops any (every
//! cursor is kept, so its host resource stays alive). When opening fails it just tries again:
//! only the host's own limits (resource table, memory, time) can stop it with a trap — a polite
//! error from `open-runs` / `open-samples` does not (tests the host's cap on open cursors).

use loupe_udf::{Analysis, Context, Description, Output, ResultKind, Runs, Samples, TimeRange};

struct CursorHoarder;

impl Analysis for CursorHoarder {
    fn describe() -> Description {
        Description::new("hostile-cursor-hoarder", ResultKind::Text)
            .summary("Opens cursors forever and never drops them (tests the open-cursor limit)")
    }

    fn run(_ctx: &Context) -> Result<Output, String> {
        let everything = TimeRange::new(0, u64::MAX);
        let mut runs: Vec<Runs> = Vec::new();
        let mut samples: Vec<Samples> = Vec::new();
        let mut refused = 0u64;
        loop {
            match loupe_udf::runs(everything).open() {
                Ok(mut cursor) => {
                    // One host call; the batch itself is not kept, the cursor is.
                    drop(std::hint::black_box(cursor.next_batch()));
                    runs.push(cursor);
                }
                Err(_) => refused += 1,
            }
            match loupe_udf::samples(everything).include_idle(true).open() {
                Ok(mut cursor) => {
                    drop(std::hint::black_box(cursor.next_batch()));
                    samples.push(cursor);
                }
                Err(_) => refused += 1,
            }
            std::hint::black_box((&runs, &samples, refused));
        }
    }
}

loupe_udf::export_analysis!(CursorHoarder);
