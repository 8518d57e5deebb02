//! Many distinct programs, as a busy host runs them: each its own binary and build ID, so an
//! agent reads and keeps an unwind table and names frames for every one.
//!
//! Built with `cc` from one source with a different constant each (`-DSEED=i`). A process wakes
//! every 50 ms for a short loop in a function of its own (`work`, ~0.1 % of a core), for ever or
//! for a lifetime given as its argument in milliseconds. Every binary is named `program` in a
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
__attribute__((noinline)) static void work(void) { for (unsigned long i = 0; i < 20000 + SEED; i++) sink += i; }
int main(int argc, char **argv) {
    long lifetime_ms = argc > 1 ? atol(argv[1]) : -1;
    struct timespec nap = {0, 50 * 1000 * 1000}, start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        work();
        nanosleep(&nap, 0);
        clock_gettime(CLOCK_MONOTONIC, &now);
        long ms = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
        if (lifetime_ms >= 0 && ms >= lifetime_ms) return 0;
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

    /// A process of program `i % count`, living `lifetime` (for ever if `None`).
    pub fn spawn(&self, i: usize, lifetime: Option<Duration>) -> Child {
        let mut command = Command::new(&self.paths[i % self.paths.len()]);
        if let Some(lifetime) = lifetime {
            command.arg(lifetime.as_millis().to_string());
        }
        command.stdin(Stdio::null()).stdout(Stdio::null()).spawn().expect("a program starts")
    }

    /// `processes` running for ever, the programs in turn; stopped when dropped.
    pub fn run(&self, processes: usize) -> Running {
        Running((0..processes).map(|i| self.spawn(i, None)).collect())
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
