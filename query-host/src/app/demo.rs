//! `loupe agent --demo`: for a host with nothing interesting on its links, a network namespace
//! `loupe-demo` joined to this one by the veth pair `loupe-demo0` ↔ `loupe-demo1`, and a
//! generator sending bursty traffic across it: incast-like UDP bursts from many source ports
//! into this host and an occasional TCP transfer out of it. The agent samples `loupe-demo0` like any other interface.

use std::{
    fs::File,
    io::{Read, Write},
    net::{TcpListener, TcpStream, UdpSocket},
    os::fd::AsRawFd,
    process::Command,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    thread,
    time::Duration,
};

use anyhow::{Context, Result, bail};
use rand::Rng;
use tracing::{info, warn};

pub const HOST_IF: &str = "loupe-demo0";
const PEER_IF: &str = "loupe-demo1";
const NETNS: &str = "loupe-demo";
const HOST_ADDR: &str = "10.254.77.1";
const PEER_ADDR: &str = "10.254.77.2";

pub struct Demo {
    shutdown: Arc<AtomicBool>,
}

impl Demo {
    pub fn start(shutdown: Arc<AtomicBool>) -> Result<Self> {
        let _ = ip(&["netns", "del", NETNS]); // left over from a killed demo
        ip(&["netns", "add", NETNS])?;
        ip(&["link", "add", HOST_IF, "type", "veth", "peer", "name", PEER_IF, "netns", NETNS])?;
        ip(&["addr", "add", &format!("{HOST_ADDR}/30"), "dev", HOST_IF])?;
        ip(&["link", "set", HOST_IF, "up"])?;
        ip(&["-n", NETNS, "addr", "add", &format!("{PEER_ADDR}/30"), "dev", PEER_IF])?;
        ip(&["-n", NETNS, "link", "set", PEER_IF, "up"])?;
        ip(&["-n", NETNS, "link", "set", "lo", "up"])?;

        // UDP bursts flow into this host (ingress on loupe-demo0), TCP transfers out of it.
        let udp_sink = UdpSocket::bind((HOST_ADDR, 9999))?;
        let (udp_senders, tcp_sink) = in_netns(|| -> Result<_> {
            let senders = (0..40).map(|_| UdpSocket::bind((PEER_ADDR, 0))).collect::<Result<Vec<_>, _>>()?;
            Ok((senders, TcpListener::bind((PEER_ADDR, 9998))?))
        })??;
        thread::spawn(move || drain_udp(udp_sink));
        thread::spawn(move || drain_tcp(tcp_sink));
        let flag = Arc::clone(&shutdown);
        thread::spawn(move || {
            if let Err(e) = generate(&udp_senders, &flag) {
                warn!("demo traffic stopped: {e:#}");
            }
        });
        info!(iface = HOST_IF, "demo traffic running across {HOST_IF} -> netns {NETNS}");
        Ok(Self { shutdown })
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        self.shutdown.store(true, Ordering::Relaxed);
        let _ = ip(&["netns", "del", NETNS]); // takes the veth pair with it
    }
}

/// Bursts of 1400-byte datagrams from up to 40 source ports every few tens of milliseconds —
/// the fan-in pattern of an incast — and a 4 MB TCP transfer now and then.
fn generate(senders: &[UdpSocket], shutdown: &AtomicBool) -> Result<()> {
    let mut rng = rand::rng();
    let payload = [0x42u8; 1400];
    let mut ticks = 0u64;
    while !shutdown.load(Ordering::Relaxed) {
        let flows = rng.random_range(1..=senders.len());
        let per_flow = rng.random_range(1..=8);
        for s in &senders[..flows] {
            for _ in 0..per_flow {
                let _ = s.send_to(&payload, (HOST_ADDR, 9999));
            }
        }
        ticks += 1;
        if ticks.is_multiple_of(100)
            && let Ok(mut tcp) = TcpStream::connect((PEER_ADDR, 9998))
        {
            let chunk = [0x17u8; 64 * 1024];
            for _ in 0..64 {
                if tcp.write_all(&chunk).is_err() {
                    break;
                }
            }
        }
        thread::sleep(Duration::from_millis(rng.random_range(5..60)));
    }
    Ok(())
}

fn drain_udp(socket: UdpSocket) {
    let mut buf = [0u8; 2048];
    while socket.recv(&mut buf).is_ok() {}
}

fn drain_tcp(listener: TcpListener) {
    for mut conn in listener.incoming().flatten() {
        thread::spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            while matches!(conn.read(&mut buf), Ok(n) if n > 0) {}
        });
    }
}

/// Runs `f` on a thread inside the demo namespace (sockets made there stay there).
fn in_netns<R: Send>(f: impl FnOnce() -> R + Send) -> Result<R> {
    let ns = File::open(format!("/var/run/netns/{NETNS}")).context("opening demo netns")?;
    thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: valid netns fd; affects only this thread.
            if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                bail!("entering netns {NETNS}: {}", std::io::Error::last_os_error());
            }
            Ok(f())
        })
        .join()
        .expect("netns thread")
    })
}

fn ip(args: &[&str]) -> Result<()> {
    let out = Command::new("ip").args(args).output().context("running ip (iproute2)")?;
    if !out.status.success() {
        bail!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(())
}
