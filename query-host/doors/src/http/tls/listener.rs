//! A listener of TLS connections for `axum::serve`: TCP accepted in a task of its own, each
//! handshake in a task of its own, finished connections handed over in order of completion.
//!
//! Every connection is accepted as it comes. An earlier loop waited for one of 128 handshake
//! slots before accepting: 130 idle TCP connections, renewed every 9 s (the handshake timeout
//! was 10), kept every real client waiting in the kernel's backlog. Now the pending handshakes
//! are bounded per peer address ([`MAX_HANDSHAKES_PER_PEER`]) and in total
//! ([`MAX_HANDSHAKES`]), and past a bound the *oldest* pending one is dropped: a client that
//! opens connections and says nothing loses its own, and a new client always gets its turn.

use std::{
    collections::VecDeque,
    net::{IpAddr, SocketAddr},
    sync::{Arc, Mutex},
    time::Duration,
};

use rustls::ServerConfig;
use tokio::{
    net::{TcpListener, TcpStream},
    sync::mpsc,
    task::AbortHandle,
};
use tokio_rustls::{TlsAcceptor, server::TlsStream};

/// Handshakes in progress at once; past it, the oldest is dropped.
pub const MAX_HANDSHAKES: usize = 128;
/// Handshakes in progress from one address; past it, that address's oldest is dropped.
pub const MAX_HANDSHAKES_PER_PEER: usize = 16;
/// Time a client has to finish its handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The handshakes in progress, oldest first.
#[derive(Default)]
struct Pending {
    next: u64,
    tasks: VecDeque<(u64, IpAddr, AbortHandle)>,
}

impl Pending {
    /// Makes room for one more handshake from `peer`: drops that peer's oldest if it has
    /// [`MAX_HANDSHAKES_PER_PEER`], then the oldest of all if there are [`MAX_HANDSHAKES`].
    /// Returns how many were dropped.
    fn make_room(&mut self, peer: IpAddr) -> usize {
        let mut dropped = 0;
        if self.tasks.iter().filter(|t| t.1 == peer).count() >= MAX_HANDSHAKES_PER_PEER
            && let Some(at) = self.tasks.iter().position(|t| t.1 == peer)
            && let Some((_, _, task)) = self.tasks.remove(at)
        {
            task.abort();
            dropped += 1;
        }
        if self.tasks.len() >= MAX_HANDSHAKES
            && let Some((_, _, task)) = self.tasks.pop_front()
        {
            task.abort();
            dropped += 1;
        }
        dropped
    }

    fn done(&mut self, id: u64) {
        self.tasks.retain(|t| t.0 != id);
    }
}

pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
    accepting: tokio::task::JoinHandle<()>,
}

impl TlsListener {
    pub fn new(tcp: TcpListener, config: Arc<ServerConfig>) -> std::io::Result<TlsListener> {
        let local = tcp.local_addr()?;
        let (done, ready) = mpsc::channel(MAX_HANDSHAKES);
        let acceptor = TlsAcceptor::from(config);
        let pending = Arc::new(Mutex::new(Pending::default()));
        let accepting = tokio::spawn(async move {
            loop {
                let (stream, addr) = match tcp.accept().await {
                    Ok(conn) => conn,
                    Err(e) => {
                        tracing::debug!("accepting a TCP connection: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let mut waiting = pending.lock().unwrap_or_else(|e| e.into_inner());
                let dropped = waiting.make_room(addr.ip());
                if dropped > 0 {
                    tracing::debug!(%addr, dropped, "pending TLS handshakes at their bound: the oldest dropped");
                }
                let id = waiting.next;
                waiting.next += 1;
                let (acceptor, done, pending) = (acceptor.clone(), done.clone(), Arc::clone(&pending));
                // Spawned while the list is held: the task takes itself out of it only after
                // it is in.
                let task = tokio::spawn(async move {
                    let shaken = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await;
                    pending.lock().unwrap_or_else(|e| e.into_inner()).done(id);
                    match shaken {
                        Ok(Ok(tls)) => {
                            let _ = done.send((tls, addr)).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%addr, "TLS handshake refused: {e}"),
                        Err(_) => tracing::debug!(%addr, "TLS handshake not finished within {HANDSHAKE_TIMEOUT:?}"),
                    }
                });
                waiting.tasks.push_back((id, addr.ip(), task.abort_handle()));
            }
        });
        Ok(TlsListener { ready, local, accepting })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(conn) => conn,
            // The accept task ended (its runtime is stopping): nothing will come again.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_oldest_pending_handshake_of_a_peer_and_of_all_is_dropped_first() {
        let mut pending = Pending::default();
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let mut handles = Vec::new();
        let mut add = |pending: &mut Pending, peer| {
            let dropped = pending.make_room(peer);
            let task = tokio::spawn(std::future::pending::<()>());
            pending.tasks.push_back((pending.next, peer, task.abort_handle()));
            pending.next += 1;
            handles.push(task);
            dropped
        };
        for _ in 0..MAX_HANDSHAKES_PER_PEER {
            assert_eq!(add(&mut pending, a), 0);
        }
        assert_eq!(add(&mut pending, a), 1, "a's 17th drops a's first");
        assert_eq!(pending.tasks.front().unwrap().0, 1);
        assert_eq!(pending.tasks.iter().filter(|t| t.1 == a).count(), MAX_HANDSHAKES_PER_PEER);
        // Other peers fill the rest; each new one past the total drops the oldest of all.
        let mut peer = 0u32;
        while pending.tasks.len() < MAX_HANDSHAKES {
            peer += 1;
            assert_eq!(add(&mut pending, IpAddr::from(peer.to_be_bytes())), 0);
        }
        assert_eq!(add(&mut pending, b), 1);
        assert_eq!(pending.tasks.len(), MAX_HANDSHAKES);
        assert_eq!(pending.tasks.front().unwrap().0, 2, "a's oldest left went first");
        pending.done(pending.tasks.back().unwrap().0);
        assert_eq!(pending.tasks.len(), MAX_HANDSHAKES - 1);
        tokio::task::yield_now().await;
        assert!(handles[0].is_finished() && handles[1].is_finished(), "dropped handshakes are aborted");
        assert!(!handles[2].is_finished());
    }
}
