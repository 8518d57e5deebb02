//! Many distinct programs, as a busy host runs them: each its own binary and build ID, so an
//! agent reads and keeps an unwind table and names frames for every one.
//!
//! Built with `cc` from one source with a different constant each (`-DSEED=i`). A process wakes
//! every 50 ms (its first nap comes first) for a short loop in a function of its own (`work`,
//! ~0.1 % of a core) or for a given time on the CPU, for ever or for a given lifetime. Built at
//! `-O1`, which leaves out frame pointers: a frame-pointer walk does not reach `main`. Every binary is named `program` in a
//! directory of its own, so its processes' command name is `program` whatever the binary.

use std::{
    fs,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::Duration,
};

/// The command name of every process of these programs (`loupe profile --comm program`).
pub const COMM: &str = "program";

const SOURCE: &str = r#"#include <stdlib.h>
#include <time.h>
static volatile unsigned long sink;
static long since_us(const struct timespec *t0) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - t0->tv_sec) * 1000000 + (now.tv_nsec - t0->tv_nsec) / 1000;
}
/* A short loop, or until busy_us have passed. */
__attribute__((noinline)) static void work(long busy_us) {
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        for (unsigned long i = 0; i < 20000 + SEED; i++) sink += i;
    } while (busy_us > 0 && since_us(&t0) < busy_us);
}
/* program [LIFETIME_MS [BUSY_US]]: for ever (or until LIFETIME_MS), nap 50 ms then work. */
int main(int argc, char **argv) {
    long lifetime_ms = argc > 1 ? atol(argv[1]) : -1;
    long busy_us = argc > 2 ? atol(argv[2]) : 0;
    struct timespec nap = {0, 50 * 1000 * 1000}, start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        nanosleep(&nap, 0);
        work(busy_us);
        if (lifetime_ms >= 0 && since_us(&start) >= lifetime_ms * 1000) return 0;
    }
}
"#;

/// The programs built.
pub struct Programs {
    paths: Vec<PathBuf>,
}

impl Programs {
    /// `count` programs under `dir`; `None` if `cc` cannot build them.
    pub fn build(dir: &Path, count: usize) -> Option<Programs> {
        fs::create_dir_all(dir).ok()?;
        let src = dir.join("program.c");
        fs::write(&src, SOURCE).ok()?;
        let mut paths = Vec::with_capacity(count);
        for i in 0..count {
            let exe = dir.join(i.to_string()).join(COMM);
            fs::create_dir_all(exe.parent()?).ok()?;
            let ok = Command::new("cc").args(["-O1", &format!("-DSEED={i}"), "-o"]).arg(&exe).arg(&src).status();
            if !ok.is_ok_and(|s| s.success()) {
                return None;
            }
            paths.push(exe);
        }
        Some(Programs { paths })
    }

    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }

    /// A process of program `i % count`, living `lifetime` (for ever if `None`), on the CPU for
    /// `busy` of every 50 ms (a short loop if zero).
    pub fn spawn(&self, i: usize, lifetime: Option<Duration>, busy: Duration) -> Child {
        let mut command = Command::new(&self.paths[i % self.paths.len()]);
        let lifetime_ms = lifetime.map_or(-1, |l| l.as_millis() as i64);
        command.arg(lifetime_ms.to_string()).arg(busy.as_micros().to_string());
        command.stdin(Stdio::null()).stdout(Stdio::null()).spawn().expect("a program starts")
    }

    /// `processes` running for ever, the programs in turn, each a short loop every 50 ms;
    /// stopped when dropped.
    pub fn run(&self, processes: usize) -> Running {
        Running((0..processes).map(|i| self.spawn(i, None, Duration::ZERO)).collect())
    }
}

/// Processes killed and reaped when dropped.
pub struct Running(pub Vec<Child>);

impl Drop for Running {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
        }
        for child in &mut self.0 {
            let _ = child.wait();
        }
    }
}
