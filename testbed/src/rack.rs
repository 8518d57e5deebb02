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
//!
//! With [`Rack::use_leaves`] the bus is a fleet of NATS leaf nodes instead of one server: a hub
//! (JetStream domain `hub`, leaf connections on [`LEAF_PORT`]) and one leaf server per group of
//! hosts, each with JetStream in a domain named after it, all on the tor's management address
//! on ports of their own; each host's agent connects to its leaf.

use std::{
    net::Ipv4Addr,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use loupe_api::signed::FleetKey;

use crate::{netns::Netns, topology::LinkStats};

/// The data interface inside every host namespace.
pub const DATA_IF: &str = "eth0";
/// The management interface (NATS) inside every host namespace.
pub const MGMT_IF: &str = "mgmt0";
/// Where `nats-server` listens, inside the tor namespace.
pub const NATS_ADDR: Ipv4Addr = Ipv4Addr::new(10, 78, 0, 254);
pub const NATS_PORT: u16 = 4222;
/// The hub's monitoring port (`/varz`, `/leafz`), and where it takes leaf connections.
pub const HUB_MONITOR_PORT: u16 = 8222;
pub const LEAF_PORT: u16 = 7422;
/// Leaf `k` listens for clients on `LEAF_CLIENT_PORT + k`, for monitoring on
/// `LEAF_MONITOR_PORT + k`.
pub const LEAF_CLIENT_PORT: u16 = 4230;
pub const LEAF_MONITOR_PORT: u16 = 8230;

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
    leaves: Option<Leaves>,
    keys: FleetKeys,
}

/// The rack's fleet keys, as an operator would set them up: an operator key the fleet commands
/// sign with, a key per host (its HTTP fleet routes sign with it), and the trust file every
/// agent reads — the operator's key for team `ops`, each host key for any team (`*`).
#[derive(Clone, Debug)]
pub struct FleetKeys {
    pub operator: PathBuf,
    pub hosts: Vec<PathBuf>,
    pub trust: PathBuf,
}

/// The scopes the rack's trust file gives the operator's key and the host keys.
pub const RACK_SCOPES: &str = "read,invoke,upload,run";

impl FleetKeys {
    /// Makes them in `dir` (a key file per host, then the trust file naming them all).
    pub fn make(dir: &Path, hosts: usize) -> Result<FleetKeys> {
        std::fs::create_dir_all(dir)?;
        let new_key = |name: &str| -> Result<(PathBuf, String)> {
            let path = dir.join(name);
            let _ = std::fs::remove_file(&path);
            let key = FleetKey::generate();
            key.write_new(&path).map_err(anyhow::Error::msg)?;
            Ok((path, key.public_key()))
        };
        let (operator, operator_public) = new_key("operator.nk")?;
        let mut trust = format!("{operator_public} ops {RACK_SCOPES}\n");
        let mut host_keys = Vec::new();
        for i in 0..hosts {
            let (path, public) = new_key(&format!("h{i}.nk"))?;
            trust.push_str(&format!("{public} * {RACK_SCOPES}   # host h{i}\n"));
            host_keys.push(path);
        }
        let path = dir.join("trust");
        std::fs::write(&path, trust)?;
        Ok(FleetKeys { operator, hosts: host_keys, trust: path })
    }
}

/// The leaf servers of a rack whose bus is a fleet of leaf nodes.
struct Leaves {
    /// Each leaf's name, which is also its JetStream domain.
    names: Vec<String>,
    /// The leaf of each host.
    leaf_of: Vec<usize>,
    servers: Vec<Option<Child>>,
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
        let keys = FleetKeys::make(&nats_dir.join("keys"), hosts)?;
        let mut rack = Rack {
            tor,
            hosts: Vec::new(),
            nats: None,
            nats_dir: nats_dir.to_path_buf(),
            bus_tls: None,
            leaves: None,
            keys,
        };
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

    /// The hub's URL (the only server without leaves).
    pub fn nats_url(&self) -> String {
        let scheme = if self.bus_tls.is_some() { "tls" } else { "nats" };
        format!("{scheme}://{NATS_ADDR}:{NATS_PORT}")
    }

    /// From the next [`Rack::start_nats`] on, the bus is a hub and one leaf server per name in
    /// `names` (each its JetStream domain); host `i` connects to leaf `leaf_of[i]`. No TLS.
    pub fn use_leaves(&mut self, names: &[&str], leaf_of: Vec<usize>) -> Result<()> {
        if leaf_of.len() != self.hosts.len() || leaf_of.iter().any(|&k| k >= names.len()) {
            bail!("give a leaf (0 to {}) for each of the {} hosts", names.len().saturating_sub(1), self.hosts.len());
        }
        let names = names.iter().map(|n| n.to_string()).collect();
        self.leaves = Some(Leaves { names, leaf_of, servers: Vec::new() });
        Ok(())
    }

    /// Leaf `k`'s URL.
    pub fn leaf_url(&self, k: usize) -> String {
        format!("nats://{NATS_ADDR}:{}", LEAF_CLIENT_PORT + k as u16)
    }

    /// The bus URL of host `i`'s agent: its leaf's, or the one server's.
    pub fn host_nats_url(&self, i: usize) -> String {
        match &self.leaves {
            Some(l) => self.leaf_url(l.leaf_of[i]),
            None => self.nats_url(),
        }
    }

    /// Host `i`'s leaf (its index and name), with leaves.
    pub fn leaf_of(&self, i: usize) -> Option<(usize, &str)> {
        self.leaves.as_ref().map(|l| (l.leaf_of[i], l.names[l.leaf_of[i]].as_str()))
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

    /// The rack's fleet keys and trust file.
    pub fn keys(&self) -> &FleetKeys {
        &self.keys
    }

    /// What a `loupe fleet` command adds to sign as the rack's operator: `--fleet-key FILE`.
    pub fn fleet_key_args(&self) -> Vec<String> {
        vec!["--fleet-key".into(), self.keys.operator.display().to_string()]
    }

    /// Starts `nats-server` with JetStream (its store under the rack's NATS dir, kept across
    /// restarts) in the tor namespace, and waits until it accepts connections.
    pub fn start_nats(&mut self) -> Result<()> {
        if self.nats.is_some() {
            bail!("nats-server is already running");
        }
        if self.leaves.is_some() {
            return self.start_tree();
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
        self.wait_listening(NATS_PORT)
    }

    /// The hub and every leaf server, each waited for.
    fn start_tree(&mut self) -> Result<()> {
        let hub = format!(
            "listen: \"{NATS_ADDR}:{NATS_PORT}\"\nhttp: \"{NATS_ADDR}:{HUB_MONITOR_PORT}\"\nserver_name: hub\n\
             jetstream {{ store_dir: {:?}, domain: hub }}\nleafnodes {{ listen: \"{NATS_ADDR}:{LEAF_PORT}\" }}\n",
            self.nats_dir.join("hub")
        );
        self.nats = Some(self.spawn_server("hub", &hub, NATS_PORT)?);
        let count = self.leaves.as_ref().map_or(0, |l| l.names.len());
        for k in 0..count {
            self.start_leaf(k)?;
        }
        Ok(())
    }

    /// (Re)starts leaf server `k` (its JetStream store kept across restarts).
    pub fn start_leaf(&mut self, k: usize) -> Result<()> {
        let Some(name) = self.leaves.as_ref().and_then(|l| l.names.get(k)).cloned() else {
            bail!("no leaf {k}: call use_leaves first");
        };
        let port = LEAF_CLIENT_PORT + k as u16;
        let conf = format!(
            "listen: \"{NATS_ADDR}:{port}\"\nhttp: \"{NATS_ADDR}:{}\"\nserver_name: {name}\n\
             jetstream {{ store_dir: {:?}, domain: {name} }}\n\
             leafnodes {{ remotes: [ {{ url: \"nats://{NATS_ADDR}:{LEAF_PORT}\" }} ] }}\n",
            LEAF_MONITOR_PORT + k as u16,
            self.nats_dir.join(&name)
        );
        let child = self.spawn_server(&name, &conf, port)?;
        let leaves = self.leaves.as_mut().expect("leaves are set");
        if leaves.servers.len() <= k {
            leaves.servers.resize_with(k + 1, || None);
        }
        leaves.servers[k] = Some(child);
        Ok(())
    }

    /// Kills leaf server `k` (SIGKILL: as if its host died).
    pub fn kill_leaf(&mut self, k: usize) -> Result<()> {
        if let Some(mut child) = self.leaves.as_mut().and_then(|l| l.servers.get_mut(k)).and_then(Option::take) {
            child.kill()?;
            child.wait()?;
        }
        Ok(())
    }

    /// A nats-server named `name` with configuration `conf`, in the tor namespace, once it
    /// accepts connections on `port`.
    fn spawn_server(&self, name: &str, conf: &str, port: u16) -> Result<Child> {
        std::fs::create_dir_all(&self.nats_dir)?;
        let path = self.nats_dir.join(format!("{name}.conf"));
        std::fs::write(&path, conf)?;
        let log = std::fs::File::create(self.nats_dir.join(format!("{name}.log")))?;
        let child = Command::new("ip")
            .args(["netns", "exec", &self.tor.name, "nats-server", "-c"])
            .arg(&path)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .context("starting nats-server (scripts/setup installs it)")?;
        self.wait_listening(port)?;
        Ok(child)
    }

    /// Waits until a server in the tor namespace accepts connections on `port` (at most 10 s).
    fn wait_listening(&self, port: u16) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(10);
        let addr = std::net::SocketAddr::from((NATS_ADDR, port));
        while Instant::now() < deadline {
            let up =
                self.tor.run(|| std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok())?;
            if up {
                return Ok(());
            }
            thread::sleep(Duration::from_millis(50));
        }
        bail!("nats-server did not accept connections on {port} within 10 s (see {})", self.nats_dir.display())
    }

    /// A monitoring endpoint's JSON text (`/varz`, `/leafz`) of the server monitored on `port`
    /// ([`HUB_MONITOR_PORT`], or `LEAF_MONITOR_PORT + k`).
    pub fn monitor(&self, port: u16, path: &str) -> Result<String> {
        use std::io::{Read, Write};
        let addr = std::net::SocketAddr::from((NATS_ADDR, port));
        self.tor.run(|| -> Result<String> {
            let mut conn = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
            conn.set_read_timeout(Some(Duration::from_secs(5)))?;
            write!(conn, "GET {path} HTTP/1.0\r\nHost: {NATS_ADDR}\r\n\r\n")?;
            let mut text = String::new();
            conn.read_to_string(&mut text)?;
            let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
            Ok(body)
        })?
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
            .args(match &self.leaves {
                Some(_) => vec!["--nats".to_string(), self.host_nats_url(i)],
                None => self.bus_args(),
            })
            .args(["--host", &host.name, "--rack", rack, "--dc", dc])
            .arg("--fleet-trust")
            .arg(&self.keys.trust)
            .arg("--fleet-host-key")
            .arg(&self.keys.hosts[i])
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
        let leaves = self.leaves.as_ref().map_or(0, |l| l.servers.len());
        for k in 0..leaves {
            self.kill_leaf(k)?;
        }
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
