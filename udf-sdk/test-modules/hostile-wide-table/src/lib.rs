//! Hostile: `run` answers a table of 10,000 columns (`c0` … `c9999`) and one row of unsigned
//! cells (tests the host's table column limit).

use loupe_udf::{Analysis, Cell, Context, Description, Output, ResultKind, Table};

/// Columns in the table.
pub const COLUMNS: usize = 10_000;

struct WideTable;

impl Analysis for WideTable {
    fn describe() -> Description {
        Description::new("hostile-wide-table", ResultKind::Table)
            .summary("Answers a table of 10,000 columns (tests the table column limit)")
    }

    fn run(_ctx: &Context) -> Result<Output, String> {
        let mut table = (0..COLUMNS).fold(Table::new(), |t, i| t.column(&format!("c{i}"), ""));
        table.push_row((0..COLUMNS).map(Cell::from));
        Ok(table.into())
    }
}

loupe_udf::export_analysis!(WideTable);
