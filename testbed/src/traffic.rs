//! Traffic whose every byte is known: UDP datagrams of chosen sizes, ECN codepoints and source
//! ports, and TCP transfers whose sender's kernel tells us (via `TCP_INFO`) what it sent and
//! retransmitted.
//!
//! Sockets are made inside a namespace (`Netns::run`) and then used from any thread: a socket
//! belongs to the namespace it was created in.

use std::{
    io::{self, Read, Write},
    mem,
    net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket},
    os::fd::AsRawFd,
    thread,
    time::{Duration, Instant},
};

use anyhow::{Context, Result};

pub const ETH_HEADER: u64 = 14;
pub const UDP_HEADER: u64 = 8;

/// ECN codepoints of the IP header's two low TOS bits.
pub const NOT_ECT: u8 = 0;
pub const ECT0: u8 = 2;

/// Bytes of one UDP datagram on the wire as tc sees it (`skb->len`, Ethernet header included).
pub fn udp_frame_len(ip: IpAddr, payload: usize) -> u64 {
    let ip_header = if ip.is_ipv4() { 20 } else { 40 };
    ETH_HEADER + ip_header + UDP_HEADER + payload as u64
}

/// A UDP socket bound to `local`, with the IP TOS / IPv6 traffic class set to `tos` (the ECN
/// bits are the low two).
pub fn udp_socket(local: SocketAddr, tos: u8) -> Result<UdpSocket> {
    let socket = UdpSocket::bind(local).with_context(|| format!("binding UDP {local}"))?;
    let value = tos as libc::c_int;
    let (level, name) =
        if local.is_ipv4() { (libc::IPPROTO_IP, libc::IP_TOS) } else { (libc::IPPROTO_IPV6, libc::IPV6_TCLASS) };
    // SAFETY: valid socket and option buffer.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error()).context("setting TOS");
    }
    Ok(socket)
}

/// Sends `count` datagrams of `payload` bytes, `gap` apart, and returns the bytes the filter
/// must see for them (Ethernet header included).
pub fn udp_send(socket: &UdpSocket, dst: SocketAddr, count: usize, payload: usize, gap: Duration) -> Result<u64> {
    let buf = vec![0x5a; payload];
    for _ in 0..count {
        let sent = socket.send_to(&buf, dst).with_context(|| format!("sending to {dst}"))?;
        assert_eq!(sent, payload);
        if !gap.is_zero() {
            thread::sleep(gap);
        }
    }
    Ok(count as u64 * udp_frame_len(dst.ip(), payload))
}

const TCP_TIME_WAIT: u8 = 6;
const TCP_CLOSE: u8 = 7;

/// What the sending side's kernel reports about a finished TCP transfer.
#[derive(Clone, Copy, Debug)]
pub struct TcpReport {
    pub bytes_sent: u64,
    pub bytes_retrans: u64,
    pub total_retrans: u32,
    pub segs_out: u32,
    pub bytes_received_by_peer: u64,
    pub elapsed: Duration,
}

/// Sends `total` bytes over `client` to the peer accepted on `listener`, reads them all on the
/// other side, closes both ends, and returns the sender's final `TCP_INFO` (FINs included).
pub fn tcp_transfer(listener: TcpListener, client: TcpStream, total: u64) -> Result<TcpReport> {
    transfer(listener, client, total, None)
}

/// [`tcp_transfer`] with the sending thread on CPU `sender` and the receiving one on CPU
/// `receiver`; the caller's own affinity is left alone (the sender is a thread of its own).
///
/// On a veth the sender's CPU also runs the receive path up to the socket, so an unpinned
/// transfer's throughput depends on where the scheduler happens to put the two threads: on a
/// 2-CPU VM it swings between ~10 and ~23 Gbit/s from one transfer to the next, which buries a
/// difference of 1 % between configurations. Pinned, that choice is the same every time.
pub fn tcp_transfer_pinned(
    listener: TcpListener,
    client: TcpStream,
    total: u64,
    sender: usize,
    receiver: usize,
) -> Result<TcpReport> {
    thread::scope(|s| {
        s.spawn(|| {
            pin_current_thread(sender)?;
            transfer(listener, client, total, Some(receiver))
        })
        .join()
        .expect("sender thread")
    })
}

fn transfer(
    listener: TcpListener,
    mut client: TcpStream,
    total: u64,
    receiver_cpu: Option<usize>,
) -> Result<TcpReport> {
    let started = Instant::now();
    let reader = thread::spawn(move || -> io::Result<u64> {
        if let Some(cpu) = receiver_cpu {
            pin_current_thread(cpu).map_err(io::Error::other)?;
        }
        let (mut conn, _) = listener.accept()?;
        let mut buf = vec![0u8; 1 << 16];
        let mut got = 0u64;
        loop {
            let n = conn.read(&mut buf)?;
            if n == 0 {
                return Ok(got);
            }
            got += n as u64;
        }
    });
    let chunk = vec![0xa5u8; 1 << 16];
    let mut left = total;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        client.write_all(&chunk[..n]).context("writing TCP stream")?;
        left -= n as u64;
    }
    client.flush()?;
    // Wait until everything is acknowledged, so TCP_INFO's retransmission tally is final.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let info = tcp_info(&client)?;
        if info.tcpi_unacked == 0 && info.tcpi_notsent_bytes == 0 {
            break;
        }
        anyhow::ensure!(Instant::now() < deadline, "TCP transfer never fully acknowledged");
        thread::sleep(Duration::from_millis(5));
    }
    client.shutdown(std::net::Shutdown::Both)?;
    let received = reader.join().expect("reader thread").context("reading TCP stream")?;
    // Both FINs exchanged and ours acknowledged: the sender will send nothing more.
    let info = loop {
        let info = tcp_info(&client)?;
        if info.tcpi_state == TCP_CLOSE || info.tcpi_state == TCP_TIME_WAIT {
            break info;
        }
        anyhow::ensure!(Instant::now() < deadline, "TCP connection never closed (state {})", info.tcpi_state);
        thread::sleep(Duration::from_millis(1));
    };
    Ok(TcpReport {
        bytes_sent: info.tcpi_bytes_sent,
        bytes_retrans: info.tcpi_bytes_retrans,
        total_retrans: info.tcpi_total_retrans,
        segs_out: info.tcpi_segs_out,
        bytes_received_by_peer: received,
        elapsed: started.elapsed(),
    })
}

/// The kernel's `TCP_INFO` for a socket.
pub fn tcp_info(stream: &TcpStream) -> Result<libc::tcp_info> {
    // SAFETY: zeroed POD struct and its exact size.
    unsafe {
        let mut info: libc::tcp_info = mem::zeroed();
        let mut len = mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        let rc = libc::getsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        );
        if rc != 0 {
            return Err(io::Error::last_os_error()).context("getsockopt(TCP_INFO)");
        }
        Ok(info)
    }
}

/// Pins the calling thread to one CPU. A veth delivers each packet on the CPU that sent it, so
/// a sender that migrates between CPUs reorders its own flow on the receiving side; tests
/// whose ground truth assumes in-order delivery pin the sender.
pub fn pin_current_thread(cpu: usize) -> Result<()> {
    // SAFETY: a zeroed cpu_set_t with one bit set, passed with its exact size.
    unsafe {
        let mut set: libc::cpu_set_t = mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error()).context("sched_setaffinity");
        }
    }
    Ok(())
}
