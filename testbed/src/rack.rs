//! A rack on one machine: hosts in their own network namespaces joined by a bridge in a
//! top-of-rack namespace, plus a management network on which a real `nats-server` runs.
//!
//! ```text
//!   ns tor:  br0 (data, no address)  ─ p0 … pN-1 ─ veth ─  ns hI: eth0  10.77.0.(I+1)/24
//!            brm 10.78.0.254/24 (mgmt) ─ m0 … mN-1 ─ veth ─  ns hI: mgmt0 10.78.0.(I+1)/24
//!            nats-server on 10.78.0.254
//! ```
//!
//! Agents sample `eth0` only, so the fleet's own messages (heartbeats, replies on `mgmt0`)
//! never show in the runs, as on real hosts with a management network. The data network is
//! quiet: IPv6 is off in every namespace, ARP and the bridge's forwarding table are static, so
//! the only packets on `eth0` are the ones a test sends and a host's bytes can be checked
//! exactly. [`Rack::shape`] puts a token bucket on the switch port toward one host: its link
//! becomes the rack's bottleneck, where an incast queues and drops.

use std::{
    net::Ipv4Addr,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};

use crate::{netns::Netns, topology::LinkStats};

/// The data interface inside every host namespace.
pub const DATA_IF: &str = "eth0";
/// The management interface (NATS) inside every host namespace.
pub const MGMT_IF: &str = "mgmt0";
/// Where `nats-server` listens, inside the tor namespace.
pub const NATS_ADDR: Ipv4Addr = Ipv4Addr::new(10, 78, 0, 254);
pub const NATS_PORT: u16 = 4222;

/// The root namespace's address on the management network, when [`Rack::uplink`] joined it.
pub const UPLINK_ADDR: Ipv4Addr = Ipv4Addr::new(10, 78, 0, 253);
/// The root namespace's end of the uplink.
pub const UPLINK_IF: &str = "loupe-rack0";

pub struct RackHost {
    pub ns: Netns,
    /// `h0`, `h1`, …: the host's name in the fleet.
    pub name: String,
    pub v4: Ipv4Addr,
    pub mac: String,
}

pub struct Rack {
    pub tor: Netns,
    pub hosts: Vec<RackHost>,
    nats: Option<Child>,
    nats_dir: PathBuf,
    bus_tls: Option<BusTls>,
}

/// TLS on the rack's bus: nats-server's certificate (for [`NATS_ADDR`]), the CA that signed it,
/// and the client certificate every agent and CLI presents (the server verifies clients).
#[derive(Clone, Debug)]
pub struct BusTls {
    pub ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
}

fn data_v4(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 77, 0, i as u8 + 1)
}

fn mac(i: usize) -> String {
    format!("02:77:00:00:00:{:02x}", i + 1)
}

/// No IPv6 anywhere in the namespace: no router solicitations, DAD or MLD on the links.
fn no_ipv6(ns: &Netns) -> Result<()> {
    for key in ["all", "default"] {
        ns.exec(&["sysctl", "-qw", &format!("net.ipv6.conf.{key}.disable_ipv6=1")])?;
    }
    Ok(())
}

impl Rack {
    /// Builds the rack's namespaces and links (no NATS yet: [`Rack::start_nats`]).
    pub fn new(tag: &str, hosts: usize, nats_dir: &Path) -> Result<Rack> {
        if !(2..=200).contains(&hosts) {
            bail!("a rack of {hosts} hosts: give 2 to 200");
        }
        let tor = Netns::create(&format!("{tag}-tor"))?;
        no_ipv6(&tor)?;
        tor.exec(&["ip", "link", "add", "br0", "type", "bridge", "stp_state", "0", "mcast_snooping", "0"])?;
        tor.exec(&["ip", "link", "add", "brm", "type", "bridge", "stp_state", "0"])?;
        tor.exec(&["ip", "addr", "add", &format!("{NATS_ADDR}/24"), "dev", "brm"])?;
        let mut rack = Rack { tor, hosts: Vec::new(), nats: None, nats_dir: nats_dir.to_path_buf(), bus_tls: None };
        for i in 0..hosts {
            let host = rack.add_host(tag, i)?;
            rack.hosts.push(host);
        }
        // Every host knows every other's MAC, and the bridge knows every port's: nothing is
        // flooded, nothing asks.
        for (i, h) in rack.hosts.iter().enumerate() {
            rack.tor.exec(&["bridge", "fdb", "replace", &h.mac, "dev", &format!("p{i}"), "master", "static"])?;
            for other in rack.hosts.iter().filter(|o| o.name != h.name) {
                h.ns.exec(&[
                    "ip",
                    "neigh",
                    "replace",
                    &other.v4.to_string(),
                    "lladdr",
                    &other.mac,
                    "dev",
                    DATA_IF,
                    "nud",
                    "permanent",
                ])?;
            }
        }
        for dev in ["br0", "brm"] {
            rack.tor.exec(&["ip", "link", "set", dev, "up"])?;
        }
        Ok(rack)
    }

    fn add_host(&self, tag: &str, i: usize) -> Result<RackHost> {
        let name = format!("h{i}");
        let ns = Netns::create(&format!("{tag}-{name}"))?;
        no_ipv6(&ns)?;
        let (port, mport) = (format!("p{i}"), format!("m{i}"));
        let m = mac(i);
        crate::netns::ip(&[
            "link",
            "add",
            DATA_IF,
            "address",
            &m,
            "netns",
            &ns.name,
            "type",
            "veth",
            "peer",
            "name",
            &port,
            "netns",
            &self.tor.name,
        ])?;
        crate::netns::ip(&[
            "link",
            "add",
            MGMT_IF,
            "netns",
            &ns.name,
            "type",
            "veth",
            "peer",
            "name",
            &mport,
            "netns",
            &self.tor.name,
        ])?;
        self.tor.exec(&["ip", "link", "set", &port, "master", "br0", "up"])?;
        self.tor.exec(&["ip", "link", "set", &mport, "master", "brm", "up"])?;
        let v4 = data_v4(i);
        ns.exec(&["ip", "addr", "add", &format!("{v4}/24"), "dev", DATA_IF])?;
        ns.exec(&["ip", "addr", "add", &format!("10.78.0.{}/24", i + 1), "dev", MGMT_IF])?;
        ns.exec(&["ip", "link", "set", DATA_IF, "up"])?;
        ns.exec(&["ip", "link", "set", MGMT_IF, "up"])?;
        Ok(RackHost { ns, name, v4, mac: m })
    }

    /// Limits the switch port toward host `i` to `mbit` Mbit/s (a token bucket with a short
    /// queue): the host's downlink becomes the bottleneck an incast fills.
    pub fn shape(&self, i: usize, mbit: u32) -> Result<()> {
        self.tor.exec(&[
            "tc",
            "qdisc",
            "replace",
            "dev",
            &format!("p{i}"),
            "root",
            "tbf",
            "rate",
            &format!("{mbit}mbit"),
            "burst",
            "32kb",
            "latency",
            "20ms",
        ])?;
        Ok(())
    }

    /// Packets the switch dropped on its way to host `i` (the shaped port's queue overflowing).
    pub fn port_drops(&self, i: usize) -> Result<u64> {
        let out = self.tor.exec(&["tc", "-s", "qdisc", "show", "dev", &format!("p{i}")])?;
        let dropped = out
            .split("dropped ")
            .nth(1)
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        Ok(dropped)
    }

    /// The data interface's counters of host `i`.
    pub fn data_stats(&self, i: usize) -> Result<LinkStats> {
        self.hosts[i].ns.run(|| LinkStats::read(DATA_IF))?
    }

    pub fn nats_url(&self) -> String {
        let scheme = if self.bus_tls.is_some() { "tls" } else { "nats" };
        format!("{scheme}://{NATS_ADDR}:{NATS_PORT}")
    }

    /// From now on, nats-server requires TLS and a client certificate (mutual TLS), and agents
    /// and fleet commands connect with `tls` (takes effect at the next [`Rack::start_nats`]).
    pub fn use_bus_tls(&mut self, tls: BusTls) {
        self.bus_tls = Some(tls);
    }

    /// How a `loupe agent` or `loupe fleet` reaches the bus: `--nats URL`, and with TLS the CA
    /// and client certificate options.
    pub fn bus_args(&self) -> Vec<String> {
        let mut args = vec!["--nats".to_string(), self.nats_url()];
        if let Some(tls) = &self.bus_tls {
            for (flag, path) in
                [("--nats-ca", &tls.ca), ("--nats-cert", &tls.client_cert), ("--nats-key", &tls.client_key)]
            {
                args.push(flag.into());
                args.push(path.display().to_string());
            }
        }
        args
    }

    /// Starts `nats-server` with JetStream (its store under the rack's NATS dir, kept across
    /// restarts) in the tor namespace, and waits until it accepts connections.
    pub fn start_nats(&mut self) -> Result<()> {
        if self.nats.is_some() {
            bail!("nats-server is already running");
        }
        let store = self.nats_dir.join("jetstream");
        std::fs::create_dir_all(&store)?;
        let log = std::fs::File::create(self.nats_dir.join("nats-server.log"))?;
        let mut config = Vec::new();
        if let Some(tls) = &self.bus_tls {
            let conf = self.nats_dir.join("tls.conf");
            std::fs::write(
                &conf,
                format!(
                    "tls {{\n  cert_file: {:?}\n  key_file: {:?}\n  ca_file: {:?}\n  verify: true\n}}\n",
                    tls.server_cert, tls.server_key, tls.ca
                ),
            )?;
            config = vec!["-c".to_string(), conf.display().to_string()];
        }
        let child = Command::new("ip")
            .args(["netns", "exec", &self.tor.name, "nats-server"])
            .args(&config)
            .args(["-js", "-a", &NATS_ADDR.to_string()])
            .args(["-p", &NATS_PORT.to_string(), "-sd"])
            .arg(&store)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .context("starting nats-server (scripts/setup installs it)")?;
        self.nats = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        let addr = std::net::SocketAddr::from((NATS_ADDR, NATS_PORT));
        while Instant::now() < deadline {
            let up =
                self.tor.run(|| std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok())?;
            if up {
                return Ok(());
            }
            thread::sleep(Duration::from_millis(50));
        }
        bail!("nats-server did not accept connections within 10 s (see {})", self.nats_dir.display())
    }

    /// The command line of `loupe agent` in host `i`'s namespace: sampling its data interface,
    /// joined to the rack's NATS as host `hI` of `rack` in `dc`, stdout discarded. Callers add
    /// their options and where its log goes, then spawn it.
    pub fn agent(&self, i: usize, loupe: &Path, data_dir: &Path, rack: &str, dc: &str) -> Command {
        let host = &self.hosts[i];
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &host.ns.name])
            .arg(loupe)
            .args(["agent", "--iface", DATA_IF, "--data-dir"])
            .arg(data_dir)
            .args(self.bus_args())
            .args(["--host", &host.name, "--rack", rack, "--dc", dc])
            .stdout(Stdio::null());
        cmd
    }

    /// Joins this (the root) namespace to the management network ([`UPLINK_ADDR`]), so `loupe
    /// fleet … --nats` and a browser here reach the rack's NATS and agents. Removed on drop.
    pub fn uplink(&self) -> Result<Uplink> {
        let _ = crate::netns::ip(&["link", "del", UPLINK_IF]);
        crate::netns::ip(&["link", "add", UPLINK_IF, "type", "veth", "peer", "name", "up0", "netns", &self.tor.name])?;
        self.tor.exec(&["ip", "link", "set", "up0", "master", "brm", "up"])?;
        crate::netns::ip(&["addr", "add", &format!("{UPLINK_ADDR}/24"), "dev", UPLINK_IF])?;
        crate::netns::ip(&["link", "set", UPLINK_IF, "up"])?;
        Ok(Uplink)
    }

    /// Kills `nats-server` (SIGKILL: as if its host died).
    pub fn kill_nats(&mut self) -> Result<()> {
        if let Some(mut child) = self.nats.take() {
            // `ip netns exec` execs nats-server in place: the child is the server.
            child.kill()?;
            child.wait()?;
        }
        Ok(())
    }
}

/// The root namespace's link to the management network.
pub struct Uplink;

impl Drop for Uplink {
    fn drop(&mut self) {
        let _ = crate::netns::ip(&["link", "del", UPLINK_IF]);
    }
}

impl Drop for Rack {
    fn drop(&mut self) {
        let _ = self.kill_nats();
    }
}
