//! Hostile: `run` answers a table of 3,000,000 rows of one unsigned cell (tests the host's table
//! row limit).

use loupe_udf::{Analysis, Context, Description, Output, ResultKind, Table, row};

/// Rows in the table.
pub const ROWS: usize = 3_000_000;

struct HugeTable;

impl Analysis for HugeTable {
    fn describe() -> Description {
        Description::new("hostile-huge-table", ResultKind::Table)
            .summary("Answers a table of 3,000,000 rows (tests the table row limit)")
    }

    fn run(_ctx: &Context) -> Result<Output, String> {
        let mut table = Table::new().column("n", "");
        table.rows.reserve_exact(ROWS);
        for i in 0..ROWS {
            table.push_row(row![i]);
        }
        Ok(table.into())
    }
}

loupe_udf::export_analysis!(HugeTable);
