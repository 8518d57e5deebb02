//! Network namespaces made with `ip netns`, removed on drop, and a way to run a closure inside
//! one. `setns(CLONE_NEWNET)` applies to the calling thread only, so [`Netns::run`] uses a
//! fresh scoped thread: the test's own thread never changes namespace, and sockets opened inside
//! stay in the namespace where they were made.

use std::{
    fs::File,
    os::fd::AsRawFd,
    process::Command,
    sync::atomic::{AtomicU32, Ordering},
    thread,
};

use anyhow::{Context, Result, bail};

static NEXT: AtomicU32 = AtomicU32::new(0);

#[derive(Debug)]
pub struct Netns {
    pub name: String,
}

impl Netns {
    /// Creates a namespace with a name unique to this process and call.
    pub fn create(tag: &str) -> Result<Self> {
        let name = format!("loupe-{}-{}-{tag}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        ip(&["netns", "add", &name])?;
        let ns = Self { name };
        ns.exec(&["ip", "link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// Runs a command inside the namespace; fails with its stderr when it fails.
    pub fn exec(&self, args: &[&str]) -> Result<String> {
        let mut full = vec!["netns", "exec", &self.name];
        full.extend_from_slice(args);
        ip(&full)
    }

    /// Runs `f` on a thread that has entered this namespace.
    pub fn run<R: Send>(&self, f: impl FnOnce() -> R + Send) -> Result<R> {
        let file = File::open(format!("/var/run/netns/{}", self.name))
            .with_context(|| format!("opening netns {}", self.name))?;
        thread::scope(|s| {
            s.spawn(|| {
                // SAFETY: valid fd of a network namespace; affects this thread only.
                if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    bail!("setns({}): {}", self.name, std::io::Error::last_os_error());
                }
                Ok(f())
            })
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.name]);
    }
}

/// Runs `ip ARGS…`.
pub fn ip(args: &[&str]) -> Result<String> {
    run("ip", args)
}

/// Runs a program and returns its stdout; a failure carries the command line and stderr.
pub fn run(program: &str, args: &[&str]) -> Result<String> {
    let out = Command::new(program).args(args).output().with_context(|| format!("running {program}"))?;
    if !out.status.success() {
        bail!("{program} {} failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
