//! A profile for a terminal: the top of the hot-function and module tables.

use std::fmt::Write as _;

use crate::model::{ProfileView, SymbolizeReport};

/// `rows` functions, hottest first, with self and total shares; then as many modules.
pub fn summary(view: &ProfileView, rows: usize) -> String {
    let mut out = format!("{} samples, {} lost\n", view.samples, view.lost);
    let stacks = &view.user_stacks;
    if stacks.samples > 0 {
        out += &format!(
            "user stacks whole (to their thread's root): {:.1} % of {}",
            100.0 * stacks.whole as f64 / stacks.samples as f64,
            stacks.samples
        );
        let cut: Vec<String> = stacks.cut.iter().map(|c| format!("{} {}", c.reason, c.samples)).collect();
        if !cut.is_empty() {
            out += &format!("; the others end at: {}", cut.join(", "));
        }
        out.push('\n');
    }
    let functions = view.functions.iter().map(|f| (f.self_samples, f.total, f.name.as_str()));
    table(&mut out, view.samples, "function", functions.take(rows));
    if !view.modules.is_empty() {
        out.push('\n');
        let modules = view.modules.iter().map(|m| (m.self_samples, m.total, m.name.as_str()));
        table(&mut out, view.samples, "module", modules.take(rows));
    }
    out
}

/// Rows of `(self, total, name)` with their shares of `samples`.
fn table<'a>(out: &mut String, samples: u64, what: &str, rows: impl Iterator<Item = (u64, u64, &'a str)>) {
    let pct = |n: u64| if samples == 0 { 0.0 } else { n as f64 * 100.0 / samples as f64 };
    let _ = writeln!(out, "{:>8} {:>7} {:>8} {:>7}  {what}", "self", "self%", "total", "total%");
    for (own, total, name) in rows {
        let _ = writeln!(out, "{own:>8} {:>6.1}% {total:>8} {:>6.1}%  {name}", pct(own), pct(total));
    }
}

/// What `loupe symbolize` named, per module.
pub fn symbolized(report: &SymbolizeReport) -> String {
    let mut out = format!("{} of {} unnamed frames named\n", report.named, report.unnamed);
    for m in &report.modules {
        let from = m.debug_file.as_deref().unwrap_or("no debug file found");
        let _ = writeln!(out, "{:>8} of {:>8}  {} ({})  {}", m.named, m.frames, m.module, m.build_id, from);
    }
    out
}
