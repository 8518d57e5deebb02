//! Hostile: a columnar fleet analysis (`fleet-columns`) whose results break their own shape —
//! `run-columns` codes a string past its dictionary, `merge-columns` answers columns of
//! different lengths. The host must refuse both with what they broke (`bad_columns`), before
//! encoding a partial or building a table from them.

use loupe_udf::{CodedText, ColumnValues, ColumnarAnalysis, Columns, Context, Description, ResultKind};

struct BadColumns;

impl ColumnarAnalysis for BadColumns {
    fn describe() -> Description {
        Description::new("hostile-bad-columns", ResultKind::Table).summary("columns that break their own shape")
    }

    fn run_columns(_ctx: &Context) -> Result<Columns, String> {
        let host = CodedText { dictionary: vec!["h1".into()], codes: vec![0, 7] };
        Ok(Columns::new().column("n", "", vec![1u64, 2]).column("host", "", ColumnValues::Text(host)))
    }

    fn merge_columns(_ctx: &Context, _partials: &[loupe_udf::Partial]) -> Result<Columns, String> {
        Ok(Columns::new().column("n", "", vec![1u64, 2, 3]).column("m", "", vec![1u64]))
    }
}

loupe_udf::export_fleet_columns!(BadColumns);
