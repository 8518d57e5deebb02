//! A profile for a terminal: the top of the hot-function table.

use std::fmt::Write as _;

use crate::model::{ProfileView, SymbolizeReport};

/// `rows` functions, hottest first, with self and total shares.
pub fn summary(view: &ProfileView, rows: usize) -> String {
    let mut out = format!(
        "{} samples, {} lost\n{:>8} {:>7} {:>8} {:>7}  function\n",
        view.samples, view.lost, "self", "self%", "total", "total%"
    );
    let pct = |n: u64| if view.samples == 0 { 0.0 } else { n as f64 * 100.0 / view.samples as f64 };
    for f in view.functions.iter().take(rows) {
        let _ = writeln!(
            out,
            "{:>8} {:>6.1}% {:>8} {:>6.1}%  {}",
            f.self_samples,
            pct(f.self_samples),
            f.total,
            pct(f.total),
            f.name
        );
    }
    if !view.modules.is_empty() {
        let _ = writeln!(out, "\n{:>8} {:>7} {:>8} {:>7}  module", "self", "self%", "total", "total%");
        for m in view.modules.iter().take(rows) {
            let _ = writeln!(
                out,
                "{:>8} {:>6.1}% {:>8} {:>6.1}%  {}",
                m.self_samples,
                pct(m.self_samples),
                m.total,
                pct(m.total),
                m.name
            );
        }
    }
    out
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
