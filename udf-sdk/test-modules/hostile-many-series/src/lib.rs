//! Hostile: `run` answers 100,000 series (`s0` … `s99999`) of one point each (tests the host's
//! series-count limit).

use loupe_udf::{Analysis, Context, Description, Output, ResultKind, Series};

/// Series in the output.
pub const SERIES: usize = 100_000;

struct ManySeries;

impl Analysis for ManySeries {
    fn describe() -> Description {
        Description::new("hostile-many-series", ResultKind::Series)
            .summary("Answers 100,000 series of one point (tests the series count limit)")
    }

    fn run(ctx: &Context) -> Result<Output, String> {
        Ok(Output::series((0..SERIES).map(|i| Series::new(&format!("s{i}"), "").point(ctx.range.from_ns, i as f64))))
    }
}

loupe_udf::export_analysis!(ManySeries);
