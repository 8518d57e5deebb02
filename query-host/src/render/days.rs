//! The retained days for a terminal (`loupe days`): what each day holds, so an engineer sees
//! at a glance which days have runs of which width, stack samples, and what they cost on disk.

use std::fmt::Write as _;

use loupe_api::{clock::format_interval, model::DayView};

/// One line a day: date, runs by interval, samples, bytes.
pub fn table(days: &[DayView]) -> String {
    let mut out = format!("{:<10}  {:>6}  {:<30}  {:>10}  {:>12}\n", "date", "runs", "by interval", "samples", "bytes");
    for d in days {
        let widths: Vec<String> =
            d.runs_by_interval.iter().map(|(ns, n)| format!("{n} × {}", format_interval(*ns))).collect();
        let _ = writeln!(
            out,
            "{:<10}  {:>6}  {:<30}  {:>10}  {:>12}",
            d.date,
            d.runs,
            widths.join(", "),
            d.samples,
            d.run_bytes + d.sample_bytes
        );
    }
    if days.is_empty() {
        out.push_str("(no retained data)\n");
    }
    out
}
