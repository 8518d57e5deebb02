//! Parts of the fleet against a real `nats-server`, without agents:
//! - the leaf registry a leading agent keeps by a watch (`fleet::live_registry`): it lists what
//!   a read of the bucket lists, and follows what is written after it started — a host
//!   joining, a clean stop, an entry removed;
//! - a registry on a nats-server killed and restarted on its store lists each host once,
//!   through a read and through the watch;
//! - a tree's second ask (`gather::Resend`): a leaf whose coordinator dies holding the request
//!   is asked again on its own subject, and its queue group hands it to another agent.

mod common;

use std::{
    collections::BTreeSet,
    process::{Child, Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use futures_util::StreamExt;

use loupe_api::model::{FleetHost, FleetPlace};
use loupe_fleet::{
    Connection, connect,
    gate::{Gate, Trust},
    gather::{Ask, Gathered, KeyBy, Resend, gather_by},
    live_registry::LiveRegistry,
    registry::{self, Registration},
    signer::Signer,
    subjects::{self, Selector, Verb},
    wire::{self, Reply, WIRE_VERSION},
};

const PORT: u16 = 4710;
const RESEND_PORT: u16 = 4711;
const RESTART_PORT: u16 = 4712;

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn registration(host: &str, rack: &str) -> Registration {
    let now = loupe_api::clock::now_unix_ns();
    Registration {
        place: FleetPlace { host: host.into(), rack: rack.into(), dc: "d1".into() },
        version: "test".into(),
        ifaces: vec!["eth0".into()],
        retained_from_unix_ns: 0,
        retained_to_unix_ns: 0,
        joined_unix_ns: now,
        heartbeat_unix_ns: now,
        left: false,
        domain: None,
    }
}

fn names(hosts: &[FleetHost]) -> Vec<(String, String)> {
    hosts.iter().map(|h| (h.place.host.clone(), h.status.clone())).collect()
}

/// A `nats-server` on `port` (JetStream in `dir`).
fn server(port: u16, dir: &std::path::Path) -> Server {
    Server(
        Command::new("nats-server")
            .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

/// A client of the server on `port`, once it listens.
async fn client(port: u16, name: &str) -> async_nats::Client {
    let conn = Connection::plain(format!("nats://127.0.0.1:{port}"), name);
    let started = Instant::now();
    loop {
        match connect(&conn, false).await {
            Ok(c) => return c,
            Err(e) if started.elapsed() > Duration::from_secs(10) => panic!("nats-server did not start: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

#[test]
fn the_watched_registry_lists_what_a_read_does_and_follows_later_writes() {
    if !common::fleet::nats_available("fleet_bus") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let _server = server(PORT, dir.path());
    runtime().block_on(async {
        let client = client(PORT, "test").await;
        let js = async_nats::jetstream::new(client);
        let bucket = registry::bucket(&js).await.unwrap();
        let live = LiveRegistry::new();
        // An empty bucket: nothing, and the first put arrives through the watch.
        assert!(live.list(&js, &Selector::default()).await.unwrap().is_empty());
        for (h, r) in [("a1", "r1"), ("a2", "r1"), ("b1", "r2")] {
            registry::put(&bucket, &registration(h, r)).await.unwrap();
        }
        // A read as the agent does one: through a handle fetched now (its status is its stream's
        // state when fetched).
        let read =
            || async { registry::list(&registry::bucket(&js).await.unwrap(), &Selector::default()).await.unwrap() };
        // Written after the watch started: seen once the watch has applied it.
        let until = |want: Vec<(String, String)>| {
            let live = live.clone();
            let js = js.clone();
            async move {
                let started = Instant::now();
                loop {
                    let got = names(&live.list(&js, &Selector::default()).await.unwrap());
                    if got == want {
                        return;
                    }
                    assert!(started.elapsed() < Duration::from_secs(10), "watched {got:?}, want {want:?}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        };
        until(names(&read().await)).await;
        assert_eq!(names(&read().await).len(), 3);
        let rack = Selector { rack: Some("r1".into()), ..Selector::default() };
        let fresh = registry::bucket(&js).await.unwrap();
        assert_eq!(names(&live.list(&js, &rack).await.unwrap()), names(&registry::list(&fresh, &rack).await.unwrap()));

        // A clean stop, a host joining, an entry removed.
        let mut gone = registration("a2", "r1");
        gone.left = true;
        registry::put(&bucket, &gone).await.unwrap();
        registry::put(&bucket, &registration("b2", "r2")).await.unwrap();
        bucket.delete("b1").await.unwrap();
        let want = vec![("a1".to_string(), "up".to_string()), ("a2".into(), "left".into()), ("b2".into(), "up".into())];
        until(want.clone()).await;
        assert_eq!(names(&read().await), want, "the bucket read says the same");

        // A new watch (another agent leading the leaf) starts from what is there now.
        assert_eq!(names(&LiveRegistry::new().list(&js, &Selector::default()).await.unwrap()), want);
    });
}

#[test]
fn a_restarted_servers_registry_lists_each_host_once() {
    if !common::fleet::nats_available("fleet_bus") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut server = server(RESTART_PORT, dir.path());
    runtime().block_on(async {
        let client = client(RESTART_PORT, "test").await;
        let js = async_nats::jetstream::new(client);
        let bucket = registry::bucket(&js).await.unwrap();
        let live = LiveRegistry::new();
        let hosts: Vec<String> = (0..8).map(|i| format!("h{i}")).collect();
        // Heartbeats as eight agents write them, many times over, each written last at `beat`.
        let beat = |round: u64| {
            let mut reg = registration("h0", "r1");
            reg.heartbeat_unix_ns = round;
            reg
        };
        let beats = |from: u64, rounds: u64| {
            let (bucket, hosts) = (bucket.clone(), hosts.clone());
            async move {
                for round in from..from + rounds {
                    for h in &hosts {
                        let mut reg = beat(round);
                        reg.place.host = h.clone();
                        // Right after a restart a put can fail until the stream is back.
                        let started = Instant::now();
                        while let Err(e) = registry::put(&bucket, &reg).await {
                            assert!(started.elapsed() < Duration::from_secs(20), "{e}");
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                    }
                }
            }
        };
        // Each host once, at its latest heartbeat, through a fresh read and the watch.
        let once_each = |last: u64, when: &'static str| {
            let (js, live, hosts) = (js.clone(), live.clone(), hosts.clone());
            async move {
                let started = Instant::now();
                loop {
                    let read = registry::list(&registry::bucket(&js).await.unwrap(), &Selector::default()).await;
                    let watched = live.list(&js, &Selector::default()).await;
                    let beats = |l: &[FleetHost]| {
                        l.iter().map(|h| (h.place.host.clone(), h.heartbeat_unix_ns)).collect::<Vec<_>>()
                    };
                    let want: Vec<(String, u64)> = hosts.iter().map(|h| (h.clone(), last)).collect();
                    if let (Ok(read), Ok(watched)) = (&read, &watched) {
                        assert!(read.len() <= hosts.len(), "{when}: read {:?}", beats(read));
                        if beats(read) == want && beats(watched) == want {
                            return;
                        }
                        assert!(watched.len() <= hosts.len(), "{when}: watched {:?}", beats(watched));
                    }
                    assert!(
                        started.elapsed() < Duration::from_secs(20),
                        "{when}: read {:?}, watched {:?}",
                        read.map(|l| beats(&l)),
                        watched.map(|l| beats(&l))
                    );
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        };
        beats(1, 20).await;
        once_each(20, "before the restart").await;
        // SIGKILL, as a host dying: nothing flushed. Then the same store again.
        server.0.kill().unwrap();
        server.0.wait().unwrap();
        server = self::server(RESTART_PORT, dir.path());
        beats(21, 3).await;
        once_each(23, "after the restart").await;
    });
    drop(server);
}

/// Two agents of leaf `r1` in its queue group. The first to receive a request dies with it
/// (its connection closed, as a killed process's is); the other answers for the leaf. Their
/// connections, to close when done.
async fn leaf_agents(died: Arc<AtomicBool>) -> Vec<async_nats::Client> {
    let mut clients = Vec::new();
    for name in ["a", "b"] {
        let client = client(RESEND_PORT, name).await;
        let mut subs = Vec::new();
        for s in subjects::leaf_subjects("r1") {
            subs.push(client.queue_subscribe(s, subjects::leaf_queue("r1")).await.unwrap());
        }
        client.flush().await.unwrap();
        clients.push(client.clone());
        let died = Arc::clone(&died);
        let place = FleetPlace { host: name.into(), rack: "r1".into(), dc: "d1".into() };
        let gate = Gate::new(Trust::Insecure, place.clone());
        tokio::spawn(async move {
            let mut requests = futures_util::stream::select_all(subs);
            while let Some(msg) = requests.next().await {
                if !died.swap(true, Ordering::SeqCst) {
                    drop(requests);
                    client.drain().await.unwrap();
                    return;
                }
                let env = gate.open::<()>(&msg.payload, 1 << 20, &msg.subject).unwrap().unwrap().envelope;
                let reply = Reply {
                    v: WIRE_VERSION,
                    query: env.query,
                    place: place.clone(),
                    leaf: Some("r1".into()),
                    result: Ok(7u64),
                };
                client.publish(msg.reply.unwrap(), wire::encode(&reply).into()).await.unwrap();
                client.flush().await.unwrap();
            }
        });
    }
    clients
}

/// Asks leaf `r1` as a tree's asker does, asking again at `resend` if given.
async fn ask_leaf(asker: &async_nats::Client, resend: Option<Duration>, deadline: Duration) -> Gathered<u64> {
    let now = Instant::now();
    let signer = Signer::one_off();
    let query = asker.new_inbox();
    let deadline_unix_ns = loupe_api::clock::now_unix_ns() + deadline.as_nanos() as u64;
    let request = || signer.seal(&query, &Selector::default(), deadline_unix_ns, ());
    let ask = Ask {
        subject: subjects::leaf_subject(Verb::Invoke, None),
        expected: BTreeSet::from(["r1".to_string()]),
        deadline: now + deadline,
        key: KeyBy::Leaf,
        resend: resend.map(|after| Resend {
            at: now + after,
            subject: |leaf| subjects::leaf_subject(Verb::Invoke, Some(leaf)),
            request: request(),
        }),
        at_least: None,
    };
    gather_by(asker, &request(), ask).await.unwrap()
}

#[test]
fn a_leaf_whose_coordinator_dies_with_the_request_is_asked_again_and_another_agent_answers() {
    if !common::fleet::nats_available("fleet_bus") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let _server = server(RESEND_PORT, dir.path());
    runtime().block_on(async {
        let asker = client(RESEND_PORT, "asker").await;

        // Asked once: the coordinator dies holding the request, the leaf is missing at the deadline.
        let died = Arc::new(AtomicBool::new(false));
        let first = leaf_agents(Arc::clone(&died)).await;
        let once = ask_leaf(&asker, None, Duration::from_millis(1500)).await;
        assert!(died.load(Ordering::SeqCst), "an agent took the request");
        assert!(once.answers.is_empty(), "nobody else was asked: {:?}", once.answers.len());
        assert_eq!(once.missing, BTreeSet::from(["r1".to_string()]));
        // The survivor leaves too: the next leaf is two fresh agents.
        for c in first {
            let _ = c.drain().await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;

        // Asked again at 500 ms on the leaf's own subject: the queue group's other agent answers.
        let died = Arc::new(AtomicBool::new(false));
        leaf_agents(Arc::clone(&died)).await;
        let started = Instant::now();
        let again = ask_leaf(&asker, Some(Duration::from_millis(500)), Duration::from_secs(5)).await;
        let took = started.elapsed();
        assert!(died.load(Ordering::SeqCst), "an agent took the first request");
        assert!(again.missing.is_empty(), "{:?}", again.missing);
        assert_eq!(again.answers.len(), 1);
        let answer = &again.answers[0];
        assert_eq!(answer.leaf.as_deref(), Some("r1"));
        assert_eq!(answer.result.as_ref().ok(), Some(&7));
        assert!(took >= Duration::from_millis(500), "answered by the second ask, after {took:?}");
        assert!(took < Duration::from_secs(4), "not at the deadline: {took:?}");
    });
}
