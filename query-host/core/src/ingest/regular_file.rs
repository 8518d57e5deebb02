//! Opening a file that someone else named, as root, without the side effects of opening it.
//!
//! A probe's target (`--binary`, a library of `/proc/PID/maps`), a debug file, a process's
//! mapped object: the agent opens each one as root. A plain `open(2)` of a FIFO blocks until a
//! writer comes, and an open of a character device runs its driver (a watchdog starts counting
//! down). Checking with `stat` first leaves a window in which the path can be swapped.
//!
//! So the path is opened with `O_PATH`. That resolves it, following links (`/usr/bin/python3`,
//! the build-ID links under `/usr/lib/debug`, `/proc/PID/exe` are all meant to be followed), but
//! runs no driver and never blocks on a FIFO. The file's type is checked on that handle (`fstat`).
//! Only a regular file is then opened for reading through `/proc/self/fd/N`, which reaches the
//! same inode whatever the path names by then, with `O_NONBLOCK | O_NOCTTY` for good measure.

use std::{
    fs::{File, FileType, OpenOptions},
    io,
    os::{
        fd::AsRawFd,
        unix::fs::{FileTypeExt, OpenOptionsExt},
    },
    path::Path,
};

/// Opens `path` for reading if it is a regular file. Anything else is an
/// [`io::ErrorKind::InvalidInput`] error that names what it is, and was never opened for reading.
pub fn open(path: &Path) -> io::Result<File> {
    let located = OpenOptions::new().read(true).custom_flags(libc::O_PATH).open(path)?;
    let kind = located.metadata()?.file_type();
    if !kind.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}, not a regular file: name a program or library file", what(kind)),
        ));
    }
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(format!("/proc/self/fd/{}", located.as_raw_fd()))
}

/// What a file that is not a regular one is, in words.
fn what(kind: FileType) -> &'static str {
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

#[cfg(test)]
mod tests {
    use std::{io::Read, time::Instant};

    use super::*;

    #[test]
    fn reads_a_regular_file_and_follows_links_to_one() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"bytes").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        for path in [&file, &link] {
            let mut text = String::new();
            open(path).unwrap().read_to_string(&mut text).unwrap();
            assert_eq!(text, "bytes");
        }
    }

    #[test]
    fn a_fifo_a_device_a_directory_and_a_socket_are_refused_at_once_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        let socket = dir.path().join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        let link_to_fifo = dir.path().join("to-fifo");
        std::os::unix::fs::symlink(&fifo, &link_to_fifo).unwrap();
        let started = Instant::now();
        for (path, named) in [
            (fifo.as_path(), "a FIFO"),
            (link_to_fifo.as_path(), "a FIFO"),
            (Path::new("/dev/null"), "a character device"),
            (dir.path(), "a directory"),
            (socket.as_path(), "a socket"),
        ] {
            let err = open(path).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{path:?}: {err}");
            assert!(err.to_string().starts_with(named), "{path:?}: {err}");
        }
        // A blocking open of the FIFO would wait for a writer for ever.
        assert!(started.elapsed().as_secs() < 5, "took {:?}", started.elapsed());
        assert_eq!(open(&dir.path().join("missing")).unwrap_err().kind(), io::ErrorKind::NotFound);
    }
}
