//! The CLI's side of the control socket: the agent's socket as a [`Transport`], each call
//! sent with a time limit, its answer read with a size limit. The operations themselves are
//! [`ControlClient`]'s (`loupe_api::ops`): each knows which type its call answers, so there is
//! no "unexpected answer" to handle.

use std::{
    io::{BufRead, BufReader, Read, Write},
    os::unix::net::UnixStream,
    path::{Path, PathBuf},
};

use loupe_api::wire::control::{ControlClient, Transport};
use serde::de::DeserializeOwned;

use super::{
    protocol::{Call, IO_TIMEOUT, MAX_CALL_BYTES, decode},
    socket_path,
};
use loupe_core::{CoreError, CoreResult};

/// The host's operations through a running agent's control socket.
pub type AgentClient = ControlClient<AgentSocket>;

/// A running agent's `agent.sock`.
pub struct AgentSocket {
    path: PathBuf,
}

/// A client if an agent serves `data_dir`.
pub fn find(data_dir: &Path) -> Option<AgentClient> {
    let path = socket_path(data_dir);
    UnixStream::connect(&path).ok().map(|_| ControlClient(AgentSocket { path }))
}

impl Transport for AgentSocket {
    fn call<T: DeserializeOwned>(&self, call: &Call) -> CoreResult<T> {
        let unreachable =
            |e: std::io::Error| CoreError::Transport(format!("talking to the agent at {}: {e}", self.path.display()));
        let stream = UnixStream::connect(&self.path).map_err(unreachable)?;
        stream.set_write_timeout(Some(IO_TIMEOUT)).map_err(unreachable)?;
        stream.set_read_timeout(Some(call.timeout())).map_err(unreachable)?;
        let mut line = serde_json::to_vec(call).map_err(|e| CoreError::Internal(format!("encoding a call: {e}")))?;
        line.push(b'\n');
        (&stream).write_all(&line).map_err(unreachable)?;
        let mut answer = Vec::new();
        let read = BufReader::new((&stream).take(MAX_CALL_BYTES * 8)).read_until(b'\n', &mut answer);
        match read {
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                Err(CoreError::Transport(format!(
                    "the agent did not answer within {}",
                    humantime::format_duration(call.timeout())
                )))
            }
            Err(e) => Err(unreachable(e)),
            Ok(_) => decode(&answer),
        }
    }
}
