//! A profile for a terminal: the top of the hot-function and module tables.

use std::fmt::Write as _;

use loupe_store::SampleKind;

use loupe_api::model::{ProfileDiffView, ProfileView, SymbolizeReport};

/// `rows` functions, hottest first, with self and total shares; then as many modules. A
/// profile of waits off the CPU says its counts in milliseconds waited.
pub fn summary(view: &ProfileView, rows: usize) -> String {
    let off_cpu = view.kind == SampleKind::OffCpu;
    // What the shares are of: all samples, or all the time waited.
    let whole = if off_cpu { view.flamegraph.value } else { view.samples };
    let mut out = if off_cpu {
        format!("{} waits off the CPU sampled: {:.3} s waited in all\n", view.samples, whole as f64 / 1e9)
    } else {
        format!("{} samples, {} lost\n", view.samples, view.lost)
    };
    let stacks = &view.user_stacks;
    if stacks.samples > 0 {
        out += &format!(
            "user stacks whole (to their thread's root): {:.1} % of {}",
            100.0 * stacks.whole as f64 / stacks.samples as f64,
            if off_cpu { "the time waited".to_string() } else { stacks.samples.to_string() }
        );
        let cut: Vec<String> = stacks.cut.iter().map(|c| format!("{} {}", c.reason, c.samples)).collect();
        if !cut.is_empty() && !off_cpu {
            out += &format!("; the others end at: {}", cut.join(", "));
        }
        out.push('\n');
    }
    let functions = view.functions.iter().map(|f| (f.self_samples, f.total, f.name.as_str()));
    table(&mut out, whole, off_cpu, "function", functions.take(rows));
    if !view.modules.is_empty() {
        out.push('\n');
        let modules = view.modules.iter().map(|m| (m.self_samples, m.total, m.name.as_str()));
        table(&mut out, whole, off_cpu, "module", modules.take(rows));
    }
    out
}

/// Rows of `(self, total, name)` with their shares of `whole`; in milliseconds when the
/// counts are nanoseconds waited.
fn table<'a>(out: &mut String, whole: u64, ns: bool, what: &str, rows: impl Iterator<Item = (u64, u64, &'a str)>) {
    let pct = |n: u64| if whole == 0 { 0.0 } else { n as f64 * 100.0 / whole as f64 };
    let cell = |n: u64| if ns { format!("{:.1}ms", n as f64 / 1e6) } else { n.to_string() };
    let _ = writeln!(out, "{:>10} {:>7} {:>10} {:>7}  {what}", "self", "self%", "total", "total%");
    for (own, total, name) in rows {
        let _ = writeln!(out, "{:>10} {:>6.1}% {:>10} {:>6.1}%  {name}", cell(own), pct(own), cell(total), pct(total));
    }
}

/// `loupe profile --base-from … --base-to …`: both sides' totals, the functions whose share
/// changed most (in percentage points of each side's samples), and the functions only one side
/// has.
pub fn diff(view: &ProfileDiffView, rows: usize) -> String {
    let unit = if view.kind == SampleKind::OffCpu { "ns waited" } else { "samples" };
    let mut out = format!(
        "{} {unit} in the range against {} in the baseline; shares are of each side's own\n",
        view.samples, view.base_samples
    );
    let _ = writeln!(out, "{:>8} {:>8} {:>9} {:>9}  function", "self Δ", "total Δ", "total ×", "self");
    for f in view.functions.iter().take(rows) {
        let ratio = match f.total_ratio {
            Some(r) => format!("{r:.2}"),
            None => "new".to_string(),
        };
        let ratio = if f.total == 0 { "gone".to_string() } else { ratio };
        let _ = writeln!(
            out,
            "{:>+7.1}% {:>+7.1}% {:>9} {:>9}  {}",
            100.0 * f.self_change,
            100.0 * f.total_change,
            ratio,
            f.self_samples,
            f.name
        );
    }
    let list = |names: &[String]| {
        let shown: Vec<&str> = names.iter().take(rows).map(String::as_str).collect();
        let more = names.len().saturating_sub(rows);
        if more > 0 { format!("{} (and {more} more)", shown.join(", ")) } else { shown.join(", ") }
    };
    if !view.new.is_empty() {
        let _ = writeln!(out, "only in the range: {}", list(&view.new));
    }
    if !view.gone.is_empty() {
        let _ = writeln!(out, "only in the baseline: {}", list(&view.gone));
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
