//! Hostile: `run` answers one series of 2,000,000 points (tests the host's points-per-series
//! limit).

use loupe_udf::{Analysis, Context, Description, Output, ResultKind, Series};

/// Points in the series.
pub const POINTS: usize = 2_000_000;

struct ManyPoints;

impl Analysis for ManyPoints {
    fn describe() -> Description {
        Description::new("hostile-many-points", ResultKind::Series)
            .summary("Answers one series of 2,000,000 points (tests the series point limit)")
    }

    fn run(ctx: &Context) -> Result<Output, String> {
        let mut series = Series::new("points", "");
        series.points.reserve_exact(POINTS);
        for i in 0..POINTS {
            series.push(ctx.range.from_ns.wrapping_add(i as u64), i as f64);
        }
        Ok(Output::series([series]))
    }
}

loupe_udf::export_analysis!(ManyPoints);
