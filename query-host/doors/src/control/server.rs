//! The agent's side of the control socket. Accepting waits in `poll()` on the listening socket
//! and on one end of a socket pair, so stopping is a byte written to the other end: it never
//! depends on the filesystem (an agent whose data dir or `agent.sock` was removed still stops
//! at once). Each call is read with a time limit and a size limit, answered on a thread of its
//! own, at most [`MAX_CONNECTIONS`] at a time. The socket is root's alone (mode 0600), and a call
//! acts as the host's operator ([`Caller::operator`]): every scope, recorded in the audit trail
//! as `operator`.

use std::{
    io::{BufRead, BufReader, Read, Write},
    os::{
        fd::AsRawFd,
        unix::net::{UnixListener, UnixStream},
    },
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    thread,
    time::Duration,
};

use tracing::warn;

use super::{
    protocol::{Call, IO_TIMEOUT, MAX_CALL_BYTES, answer as answer_call, encode},
    socket_path,
};
use loupe_api::access::Caller;
use loupe_core::{CoreError, CoreResult, Host};
use std::os::unix::fs::PermissionsExt;

/// Calls answered at once; more are told to retry.
pub const MAX_CONNECTIONS: usize = 64;

/// A serving control socket; [`ControlServer::stop`] (or drop) ends it and removes the file.
pub struct ControlServer {
    wake: UnixStream,
    thread: Option<thread::JoinHandle<()>>,
}

impl ControlServer {
    /// Binds `<data_dir>/agent.sock` and serves calls against `host`.
    pub fn start(data_dir: &Path, host: Arc<Host>) -> CoreResult<ControlServer> {
        let path = socket_path(data_dir);
        // We hold the store's lock, so a socket file here is a dead agent's.
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path)
            .map_err(|e| CoreError::Internal(format!("binding the control socket {}: {e}", path.display())))?;
        // Root's alone: a call here acts as the host's operator, with every scope.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| CoreError::Internal(format!("making {} root's alone: {e}", path.display())))?;
        let (wake, woken) = UnixStream::pair().map_err(|e| CoreError::Internal(format!("socket pair: {e}")))?;
        let thread = thread::Builder::new()
            .name("loupe-control".into())
            .spawn(move || serve(listener, woken, path, host))
            .map_err(|e| CoreError::Internal(format!("spawning the control thread: {e}")))?;
        Ok(ControlServer { wake, thread: Some(thread) })
    }

    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let _ = (&self.wake).write_all(b"x");
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn serve(listener: UnixListener, woken: UnixStream, path: PathBuf, host: Arc<Host>) {
    let busy = Arc::new(AtomicUsize::new(0));
    loop {
        let mut fds = [
            libc::pollfd { fd: listener.as_raw_fd(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: woken.as_raw_fd(), events: libc::POLLIN, revents: 0 },
        ];
        // SAFETY: `fds` is a valid array of two pollfd for the duration of the call, and both
        // descriptors stay open (owned by `listener` and `woken`) until this function returns.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            warn!("control socket poll: {}", std::io::Error::last_os_error());
            thread::sleep(Duration::from_millis(50));
            continue;
        }
        if fds[1].revents != 0 {
            break;
        }
        if fds[0].revents == 0 {
            continue;
        }
        match listener.accept() {
            Ok((stream, _)) => {
                if busy.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                    busy.fetch_sub(1, Ordering::SeqCst);
                    let _ = stream.set_write_timeout(Some(IO_TIMEOUT));
                    let e = CoreError::Internal(format!("the agent answers {MAX_CONNECTIONS} calls at once; retry"));
                    let _ = (&stream).write_all(&encode::<()>(Err(e)));
                    continue;
                }
                let (host, done) = (Arc::clone(&host), Arc::clone(&busy));
                let spawned = thread::Builder::new().name("loupe-control-call".into()).spawn(move || {
                    if let Err(e) = answer(&stream, &host) {
                        warn!("control socket: {e}");
                    }
                    done.fetch_sub(1, Ordering::SeqCst);
                });
                if let Err(e) = spawned {
                    busy.fetch_sub(1, Ordering::SeqCst);
                    warn!("control socket: spawning a thread: {e}");
                }
            }
            Err(e) => {
                warn!("control socket accept: {e}");
                thread::sleep(Duration::from_millis(50));
            }
        }
    }
    let _ = std::fs::remove_file(&path);
}

fn answer(stream: &UnixStream, host: &Host) -> std::io::Result<()> {
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut line = Vec::new();
    BufReader::new(stream.take(MAX_CALL_BYTES + 1)).read_until(b'\n', &mut line)?;
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(()); // a liveness probe (`AgentClient::find`)
    }
    let reply = if line.len() as u64 > MAX_CALL_BYTES {
        encode::<()>(Err(CoreError::Internal(format!("call larger than {MAX_CALL_BYTES} bytes"))))
    } else {
        match serde_json::from_slice::<Call>(&line) {
            Ok(call) => answer_call(&host.acting_for(Caller::operator()), call),
            Err(e) => encode::<()>(Err(CoreError::Transport(format!("bad call: {e}")))),
        }
    };
    let mut out = stream;
    out.write_all(&reply)
}
