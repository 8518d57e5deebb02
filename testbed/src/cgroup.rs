//! A memory cgroup of a test's own: to run the agent under the limit an operator's unit sets
//! (`MemoryMax=`) and read what it is charged — anonymous memory, page cache and kernel memory
//! (the BPF maps among it, charged to the maker's cgroup since Linux 5.11), which RSS is not.
//!
//! cgroup v2 where its memory controller is enabled, else v1's memory hierarchy (this machine's
//! layout is hybrid: v2's unified tree has no controllers).

use std::{
    ffi::CString,
    fs,
    os::unix::process::CommandExt,
    path::{Path, PathBuf},
    process::Command,
    thread,
    time::Duration,
};

/// A memory cgroup made for one process, removed when dropped (once the process has gone).
pub struct MemoryCgroup {
    dir: PathBuf,
    v2: bool,
}

impl MemoryCgroup {
    /// `None` where there is no memory controller to make one in (or no privilege to).
    pub fn make(name: &str) -> Option<Self> {
        for (root, v2) in [("/sys/fs/cgroup", true), ("/sys/fs/cgroup/unified", true), ("/sys/fs/cgroup/memory", false)]
        {
            let root = Path::new(root);
            let usable = if v2 {
                fs::read_to_string(root.join("cgroup.subtree_control"))
                    .is_ok_and(|c| c.split_whitespace().any(|c| c == "memory"))
            } else {
                root.join("memory.usage_in_bytes").exists()
            };
            if usable {
                let dir = root.join(name);
                let _ = fs::remove_dir(&dir);
                fs::create_dir(&dir).ok()?;
                return Some(Self { dir, v2 });
            }
        }
        None
    }

    pub fn v2(&self) -> bool {
        self.v2
    }

    fn read(&self, file: &str) -> Option<u64> {
        fs::read_to_string(self.dir.join(file)).ok()?.trim().parse().ok()
    }

    /// Bytes charged now.
    pub fn usage(&self) -> u64 {
        self.read(if self.v2 { "memory.current" } else { "memory.usage_in_bytes" }).unwrap_or(0)
    }

    /// The cgroup's high-water mark (`memory.peak` needs Linux 5.19 on v2); `None` where the
    /// kernel keeps none.
    pub fn peak(&self) -> Option<u64> {
        self.read(if self.v2 { "memory.peak" } else { "memory.max_usage_in_bytes" })
    }

    /// Anonymous, file and kernel bytes charged now.
    pub fn split(&self) -> (u64, u64, u64) {
        let stat = fs::read_to_string(self.dir.join("memory.stat")).unwrap_or_default();
        let field = |key: &str| {
            stat.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.trim().parse::<u64>().ok()).unwrap_or(0)
        };
        if self.v2 {
            (field("anon"), field("file"), field("kernel"))
        } else {
            // v1's `memory.stat` has no kernel line: kernel memory is its own counter.
            (field("rss"), field("cache"), self.read("memory.kmem.usage_in_bytes").unwrap_or(0))
        }
    }

    /// Limits the cgroup to `bytes` (v2 `memory.max`, v1 `memory.limit_in_bytes`): beyond it the
    /// kernel reclaims, and where nothing can be reclaimed, kills.
    pub fn limit(&self, bytes: u64) -> std::io::Result<()> {
        fs::write(self.dir.join(if self.v2 { "memory.max" } else { "memory.limit_in_bytes" }), bytes.to_string())
    }

    /// How often the cgroup ran out of memory, and how often the kernel killed in it for that:
    /// v2's `memory.events` (`oom`, `oom_kill`). v1 counts only kills (`oom_kill` in
    /// `memory.oom_control`, Linux 4.13+), so `oom` is `None` there.
    pub fn ooms(&self) -> (Option<u64>, u64) {
        let file = if self.v2 { "memory.events" } else { "memory.oom_control" };
        let text = fs::read_to_string(self.dir.join(file)).unwrap_or_default();
        let field =
            |key: &str| text.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.trim().parse::<u64>().ok());
        (if self.v2 { Some(field("oom").unwrap_or(0)) } else { None }, field("oom_kill").unwrap_or(0))
    }

    /// Makes `command`'s process join the cgroup between fork and exec, before its first page.
    pub fn join_on_spawn(&self, command: &mut Command) {
        let procs = CString::new(self.dir.join("cgroup.procs").into_os_string().into_encoded_bytes()).unwrap();
        // SAFETY: between fork and exec the child only calls open, write and close on memory
        // made before the fork (no allocation).
        unsafe {
            command.pre_exec(move || {
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let written = libc::write(fd, b"0\n".as_ptr().cast(), 2);
                libc::close(fd);
                if written != 2 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        // Empty once its process has exited; the kernel may take a moment to let the cgroup go.
        for _ in 0..50 {
            if fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            thread::sleep(Duration::from_millis(100));
        }
        eprintln!("could not remove the cgroup {}", self.dir.display());
    }
}
