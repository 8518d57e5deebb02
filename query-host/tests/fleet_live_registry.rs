//! The leaf registry a leading agent keeps by a watch (`fleet::live_registry`) against a real
//! `nats-server` with JetStream: it lists what a read of the bucket lists, and follows what
//! is written after it started — a host joining, a heartbeat, a clean stop, an entry removed.

mod common;

use std::{
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use loupe_api::model::{FleetHost, FleetPlace};
use loupe_doors::fleet::{
    Connection, connect,
    live_registry::LiveRegistry,
    registry::{self, Registration},
    subjects::Selector,
};

const PORT: u16 = 4710;

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

#[test]
fn the_watched_registry_lists_what_a_read_does_and_follows_later_writes() {
    if !common::fleet::nats_available("fleet_live_registry") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let _server = Server(
        Command::new("nats-server")
            .args(["-js", "-a", "127.0.0.1", "-p", &PORT.to_string(), "-sd"])
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let conn = Connection::plain(format!("nats://127.0.0.1:{PORT}"), "test");
        let started = Instant::now();
        let client = loop {
            match connect(&conn, false).await {
                Ok(c) => break c,
                Err(e) if started.elapsed() > Duration::from_secs(10) => panic!("nats-server did not start: {e}"),
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        };
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
