//! Waking when files appear in a directory (inotify), so a collector with nothing to read
//! sleeps instead of listing the directory several times a second.
//!
//! Why: the timeline collector found new ring files by listing its directory every 250 ms and
//! woke every 50 ms to read rings even when there were none; on an idle 2-CPU host that was 6
//! of the agent's 10 CPU ticks a minute (`/proc/PID/task/*/stat`), more than the stack sampler.

use std::{
    ffi::CString,
    os::{
        fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd},
        unix::ffi::OsStrExt,
    },
    path::Path,
    time::Duration,
};

/// An inotify watch on one directory for files created, moved in or written to.
pub struct DirWatch {
    fd: OwnedFd,
    /// The directory went away (or the watch was dropped by the kernel): make a new one.
    dead: bool,
}

impl DirWatch {
    /// Watches `dir`; `None` when it cannot (the directory does not exist yet, or inotify is
    /// out of watches): the caller then lists the directory on a timer.
    pub fn new(dir: &Path) -> Option<DirWatch> {
        let path = CString::new(dir.as_os_str().as_bytes()).ok()?;
        // SAFETY: inotify_init1 takes flags only; a non-negative result is a new descriptor
        // that nothing else owns.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        // SAFETY: as above, `fd` is ours alone.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mask = libc::IN_CREATE
            | libc::IN_MOVED_TO
            | libc::IN_CLOSE_WRITE
            | libc::IN_DELETE_SELF
            | libc::IN_MOVE_SELF
            | libc::IN_ONLYDIR;
        // SAFETY: `fd` is an inotify descriptor and `path` a NUL-terminated string, both alive
        // for the call.
        let wd = unsafe { libc::inotify_add_watch(fd.as_raw_fd(), path.as_ptr(), mask) };
        (wd >= 0).then_some(DirWatch { fd, dead: false })
    }

    /// Whether the watch no longer reports anything (its directory was removed or moved).
    pub fn is_dead(&self) -> bool {
        self.dead
    }

    /// Waits up to `timeout` for the directory to change, or for `also` to be readable or
    /// closed (what the caller stops on). True when the directory changed (the events are
    /// consumed; the caller lists the directory again).
    pub fn wait(&mut self, timeout: Duration, also: Option<BorrowedFd<'_>>) -> bool {
        let mut pfds = [
            libc::pollfd { fd: self.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: also.map_or(-1, |fd| fd.as_raw_fd()), events: libc::POLLIN, revents: 0 },
        ];
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: two pollfds for the duration of the call (a negative fd is ignored by poll).
        let n = unsafe { libc::poll(pfds.as_mut_ptr(), 2, ms) };
        if n <= 0 || pfds[0].revents == 0 {
            return false;
        }
        // Events are read only to empty the queue and to notice the watch ending; which file
        // changed does not matter (the directory is listed again).
        let mut buf = [0u8; 4096];
        let mut changed = false;
        loop {
            // SAFETY: `buf` is writable for its length; the descriptor is non-blocking.
            let len = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if len <= 0 {
                break;
            }
            changed = true;
            let mut at = 0;
            let header = size_of::<libc::inotify_event>();
            while at + header <= len as usize {
                // SAFETY: the kernel wrote whole events; the header is read unaligned from them.
                let event: libc::inotify_event = unsafe { std::ptr::read_unaligned(buf[at..].as_ptr().cast()) };
                if event.mask & (libc::IN_IGNORED | libc::IN_DELETE_SELF | libc::IN_MOVE_SELF | libc::IN_Q_OVERFLOW)
                    != 0
                {
                    self.dead |= event.mask & libc::IN_Q_OVERFLOW == 0;
                }
                at += header + event.len as usize;
            }
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    #[test]
    fn wakes_on_a_new_file_and_notices_its_directory_going() {
        let dir = tempfile::tempdir().unwrap();
        let mut watch = DirWatch::new(dir.path()).expect("inotify on a temp dir");
        let t = Instant::now();
        assert!(!watch.wait(Duration::from_millis(50), None), "nothing happened");
        assert!(t.elapsed() >= Duration::from_millis(45), "it waited out its timeout");
        let writer = {
            let file = dir.path().join("ring-42");
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(100));
                std::fs::write(file, b"x").unwrap();
            })
        };
        let t = Instant::now();
        assert!(watch.wait(Duration::from_secs(10), None), "a new file wakes it");
        assert!(t.elapsed() < Duration::from_secs(5), "woken by the file, not the timeout");
        writer.join().unwrap();
        // The file's creation woke the wait; its close (IN_CLOSE_WRITE) may come after the wait
        // read the queue, when a loaded machine preempts the writer in between. Once the writer
        // is done, one wait takes whatever is left, and then nothing is.
        let _ = watch.wait(Duration::ZERO, None);
        assert!(!watch.wait(Duration::ZERO, None), "events were consumed");
        assert!(!watch.is_dead());
        let path = dir.path().to_path_buf();
        drop(dir);
        assert!(watch.wait(Duration::from_secs(5), None), "removing the directory is a change");
        assert!(watch.is_dead(), "and ends the watch");
        assert!(DirWatch::new(&path).is_none(), "a missing directory cannot be watched");
    }

    #[test]
    fn a_closed_stop_stream_ends_the_wait_at_once() {
        use std::os::fd::AsFd;
        let dir = tempfile::tempdir().unwrap();
        let mut watch = DirWatch::new(dir.path()).expect("inotify on a temp dir");
        let (reader, writer) = std::os::unix::net::UnixStream::pair().unwrap();
        let t = Instant::now();
        assert!(!watch.wait(Duration::from_millis(50), Some(reader.as_fd())), "nothing happened");
        assert!(t.elapsed() >= Duration::from_millis(45), "an open stream does not end the wait");
        drop(writer);
        let t = Instant::now();
        assert!(!watch.wait(Duration::from_secs(30), Some(reader.as_fd())), "no change in the directory");
        assert!(t.elapsed() < Duration::from_secs(10), "the stream's close ended the wait, not the timeout");
    }
}
