//! Hostile: `run` answers a table of one row whose one text cell is 2 MiB (tests the host's cell
//! size limit; the whole output stays under the 4 MiB output limit).

use loupe_udf::{Analysis, Context, Description, Output, ResultKind, Table, row};

/// Bytes in the cell: 2 MiB.
pub const SIZE: usize = 2 << 20;

struct HugeCell;

impl Analysis for HugeCell {
    fn describe() -> Description {
        Description::new("hostile-huge-cell", ResultKind::Table)
            .summary("Answers one text cell of 2 MiB (tests the cell size limit)")
    }

    fn run(_ctx: &Context) -> Result<Output, String> {
        Ok(Table::new().column("text", "").row(row!["x".repeat(SIZE)]).into())
    }
}

loupe_udf::export_analysis!(HugeCell);
