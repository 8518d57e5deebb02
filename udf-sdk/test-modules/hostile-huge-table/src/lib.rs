//! Hostile: `run` answers a table of `rows` rows (default 3,000,000) of one unsigned cell. At the
//! default, the result is more than the host lets wasmtime copy out of a guest (its hostcall fuel,
//! 128 MiB); with `rows` = 150,000 it lifts fine and meets the host's table row limit.

use loupe_udf::{Analysis, Context, Description, Output, Param, ResultKind, Table, row};

/// Rows in the table by default.
pub const ROWS: u64 = 3_000_000;

struct HugeTable;

impl Analysis for HugeTable {
    fn describe() -> Description {
        Description::new("hostile-huge-table", ResultKind::Table)
            .summary("Answers a table of millions of rows (tests the copy and table row limits)")
            .param(Param::unsigned("rows", "rows to answer").default(ROWS))
    }

    fn run(ctx: &Context) -> Result<Output, String> {
        let rows = ctx.params.u64("rows")? as usize;
        let mut table = Table::new().column("n", "");
        table.rows.reserve_exact(rows);
        for i in 0..rows {
            table.push_row(row![i]);
        }
        Ok(table.into())
    }
}

loupe_udf::export_analysis!(HugeTable);
