//! Two namespaces, `a` and `b`, joined by a veth pair `a0` ↔ `b0`:
//!
//! ```text
//!   ns a: a0 10.0.0.1/8 fd00::1/64  <== veth ==>  ns b: b0 10.0.0.2/8 fd00::2/64
//! ```
//!
//! Every address lives in its own namespace, so pairs built concurrently never collide. The
//! links are made quiet so that the only packets on them are the ones a test sends: static
//! neighbour entries (no ARP/NDP), no IPv6 link-local address, router solicitations or DAD, MLD
//! reports dropped by nftables, and [`VethPair::wait_quiet`] as a final check.

use std::{
    collections::HashMap,
    fs,
    net::{IpAddr, Ipv4Addr, Ipv6Addr},
    thread,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};

use crate::netns::{Netns, ip};

pub const A_IF: &str = "a0";
pub const B_IF: &str = "b0";
pub const A_MAC: &str = "02:00:00:00:00:0a";
pub const B_MAC: &str = "02:00:00:00:00:0b";
pub const A_V4: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
pub const B_V4: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
pub const A_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1);
pub const B_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2);

/// nftables rules that keep MLD reports off the test links.
const QUIET_RULES: &str = "add table inet loupe_quiet; \
    add chain inet loupe_quiet out { type filter hook output priority 0; }; \
    add rule inet loupe_quiet out icmpv6 type { mld-listener-report, mld2-listener-report } drop";

#[derive(Debug)]
pub struct VethPair {
    pub a: Netns,
    pub b: Netns,
}

impl VethPair {
    pub fn new(tag: &str) -> Result<Self> {
        let a = Netns::create(&format!("{tag}-a"))?;
        let b = Netns::create(&format!("{tag}-b"))?;
        ip(&[
            "link", "add", A_IF, "address", A_MAC, "netns", &a.name, "type", "veth", "peer", "name", B_IF, "address",
            B_MAC, "netns", &b.name,
        ])?;
        for (ns, dev, v4, v6, peer_v4, peer_v6, peer_mac) in
            [(&a, A_IF, A_V4, A_V6, B_V4, B_V6, B_MAC), (&b, B_IF, B_V4, B_V6, A_V4, A_V6, A_MAC)]
        {
            for key in ["accept_ra", "router_solicitations", "accept_dad", "dad_transmits"] {
                ns.exec(&["sysctl", "-qw", &format!("net.ipv6.conf.{dev}.{key}=0")])?;
            }
            // Joining the solicited-node group of each address sends MLD reports at random
            // times up to seconds later; nothing in these tests routes multicast, so drop them
            // before they reach the link (nftables' output hook runs before tc egress).
            ns.exec(&["nft", QUIET_RULES])?;
            ns.exec(&["ip", "link", "set", dev, "addrgenmode", "none"])?;
            ns.exec(&["ip", "addr", "add", &format!("{v4}/8"), "dev", dev])?;
            ns.exec(&["ip", "-6", "addr", "add", &format!("{v6}/64"), "dev", dev, "nodad"])?;
            ns.exec(&["ip", "link", "set", dev, "up"])?;
            static_neighbour(ns, dev, peer_v4.into(), peer_mac)?;
            static_neighbour(ns, dev, peer_v6.into(), peer_mac)?;
        }
        let pair = Self { a, b };
        pair.wait_quiet()?;
        Ok(pair)
    }

    /// Adds another address on `a0` (e.g. a source in another region) that `b` can answer.
    pub fn add_a_address(&self, addr: IpAddr) -> Result<()> {
        let (cidr, family) = match addr {
            IpAddr::V4(v4) => (format!("{v4}/8"), "-4"),
            IpAddr::V6(v6) => (format!("{v6}/64"), "-6"),
        };
        let mut args = vec!["ip", family, "addr", "add", &cidr, "dev", A_IF];
        if addr.is_ipv6() {
            args.push("nodad");
        }
        self.a.exec(&args)?;
        static_neighbour(&self.b, B_IF, addr, A_MAC)?;
        self.wait_quiet()
    }

    /// Interface counters (as the veth driver counts them) of `a0` and `b0`.
    pub fn link_stats(&self) -> Result<(LinkStats, LinkStats)> {
        let a = self.a.run(|| LinkStats::read(A_IF))??;
        let b = self.b.run(|| LinkStats::read(B_IF))??;
        Ok((a, b))
    }

    /// Waits until neither end has sent a packet for 300 ms (at most 10 s).
    pub fn wait_quiet(&self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut last = self.link_stats()?;
        let mut since = Instant::now();
        while since.elapsed() < Duration::from_millis(300) {
            if Instant::now() > deadline {
                bail!("veth pair never went quiet: {last:?}");
            }
            thread::sleep(Duration::from_millis(50));
            let now = self.link_stats()?;
            if now != last {
                last = now;
                since = Instant::now();
            }
        }
        Ok(())
    }
}

/// A permanent neighbour entry in `ns`: `addr` is reached at `mac` through `dev`, no ARP or NDP.
fn static_neighbour(ns: &Netns, dev: &str, addr: IpAddr, mac: &str) -> Result<()> {
    let family = if addr.is_ipv4() { "-4" } else { "-6" };
    let addr = addr.to_string();
    ns.exec(&["ip", family, "neigh", "replace", &addr, "lladdr", mac, "dev", dev, "nud", "permanent"]).map(drop)
}

/// One interface's counters from `/proc/thread-self/net/dev` (the calling thread's namespace).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    pub rx_bytes: u64,
    pub rx_packets: u64,
    pub tx_bytes: u64,
    pub tx_packets: u64,
}

impl LinkStats {
    /// The traffic between an earlier reading and this one.
    pub fn since(&self, earlier: &Self) -> Self {
        Self {
            rx_bytes: self.rx_bytes - earlier.rx_bytes,
            rx_packets: self.rx_packets - earlier.rx_packets,
            tx_bytes: self.tx_bytes - earlier.tx_bytes,
            tx_packets: self.tx_packets - earlier.tx_packets,
        }
    }

    pub fn read(iface: &str) -> Result<Self> {
        let text = fs::read_to_string("/proc/thread-self/net/dev").context("reading /proc/thread-self/net/dev")?;
        let table: HashMap<&str, Vec<u64>> = text
            .lines()
            .skip(2)
            .filter_map(|l| {
                let (name, rest) = l.split_once(':')?;
                Some((name.trim(), rest.split_whitespace().filter_map(|v| v.parse().ok()).collect()))
            })
            .collect();
        let v = table.get(iface).with_context(|| format!("no interface {iface} in this namespace"))?;
        Ok(Self { rx_bytes: v[0], rx_packets: v[1], tx_bytes: v[8], tx_packets: v[9] })
    }
}
