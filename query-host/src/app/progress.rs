//! Progress of long work on a terminal (indicatif): a run that lasts 20 s, a sample capture, an
//! import of many files, an upload. Nothing is drawn when stdout is not a terminal (a script
//! reads it) or the command prints JSON.

use std::{
    io::IsTerminal,
    time::{Duration, Instant},
};

use indicatif::{ProgressBar, ProgressStyle};

/// Whether to draw: stdout and stderr are terminals and the output is not JSON.
pub fn wanted(json: bool) -> bool {
    !json && std::io::stdout().is_terminal() && std::io::stderr().is_terminal()
}

/// A bar that fills with time, for work whose length is known (a run, a capture). Drawn by
/// indicatif's own ticker thread; cleared when dropped.
pub struct Timed(Option<ProgressBar>);

impl Timed {
    pub fn start(show: bool, what: &str, length: Duration) -> Timed {
        if !show {
            return Timed(None);
        }
        let millis = length.as_millis().max(1) as u64;
        let bar = ProgressBar::new(millis).with_message(what.to_string());
        bar.set_style(
            ProgressStyle::with_template("{msg} [{bar:30}] {elapsed}/{len_s}")
                .expect("a valid template")
                .with_key("len_s", move |_: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{}s", millis.div_ceil(1000));
                })
                .progress_chars("=> "),
        );
        let started = Instant::now();
        let ticker = bar.clone();
        std::thread::spawn(move || {
            while !ticker.is_finished() {
                ticker.set_position((started.elapsed().as_millis() as u64).min(millis));
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        Timed(Some(bar))
    }
}

impl Drop for Timed {
    fn drop(&mut self) {
        if let Some(bar) = self.0.take() {
            bar.finish_and_clear();
        }
    }
}

/// A counter over items (files of an import).
pub fn counter(show: bool, what: &str, total: u64) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total).with_message(what.to_string());
    bar.set_style(
        ProgressStyle::with_template("{msg} {pos}/{len} [{bar:30}]").expect("a valid template").progress_chars("=> "),
    );
    bar
}

/// A spinner for work of unknown length (an upload being compiled).
pub fn spinner(show: bool, what: &str) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner().with_message(what.to_string());
    bar.enable_steady_tick(Duration::from_millis(100));
    bar
}
