//! What the fleet benches share: a throwaway store, a host's stack samples for
//! `fleet-hot-functions`, a columnar partial renamed to another host's, and a simulated agent's
//! registration.
#![allow(dead_code)]

use std::time::Duration;

use loupe_api::model::FleetPlace;
use loupe_fleet::registry::{self, Registration};
use loupe_sandbox::{bindings::wit, partial::Decoded};
use loupe_store::{Frame, Retention, StackSample, Store};
use rand::{Rng, rngs::StdRng};

pub const T0: u64 = 1_795_392_000_000_000_000;

/// A store in a temporary directory, keeping everything.
pub fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(
        dir.path(),
        Retention { max_age: std::time::Duration::from_secs(3_000_000_000), max_bytes: 1 << 40 },
    )
    .unwrap();
    (dir, s)
}

/// The leaf functions hosts share: 50 functions over libc, zlib, an app and the kernel.
pub fn leaf_pool() -> Vec<(String, String)> {
    (0..50).map(|i| (format!("fn_{i}"), ["libc.so.6", "libz.so.1", "app", "[kernel]"][i % 4].to_string())).collect()
}

/// A host's 2,000 samples, 1 ms apart from T0, each leaf drawn from `pool` under `main`.
pub fn samples(rng: &mut StdRng, pool: &[(String, String)]) -> Vec<StackSample> {
    (0..2000)
        .map(|i| {
            let (f, m) = &pool[rng.random_range(0..pool.len())];
            StackSample {
                time_unix_ns: T0 + i * 1_000_000,
                cpu: (i % 8) as u32,
                pid: 1,
                tid: 1,
                comm: "svc".into(),
                cgroup_id: 1,
                idle: false,
                frames: vec![Frame::user(f.clone(), m.clone()), Frame::user("main", "app")],
            }
        })
        .collect()
}

/// A columnar partial with host `from` replaced by `to` in every string (host columns and
/// comma-separated host lists): the partial of another host.
pub fn rename(d: &Decoded, from: &str, to: &str) -> Decoded {
    let Decoded::Columns(c) = d else { panic!("a columnar partial") };
    let mut c = c.clone();
    for col in &mut c.columns {
        if let wit::ColumnValues::Text(t) = &mut col.values {
            for s in &mut t.dictionary {
                *s = s.split(',').map(|h| if h == from { to } else { h }).collect::<Vec<_>>().join(",");
            }
        }
    }
    Decoded::Columns(c)
}

/// Registers a simulated agent at `place` (on leaf `domain`), up for an hour without
/// heartbeats. Many agents create their bucket at once: a refused put is retried, as the
/// agent's heartbeat does.
/// The testbed's fleet keys (an operator key of team `ops`, no host keys) as simulated agents
/// check requests: the operator's signer, the trust file, and the directory holding them.
pub fn fleet_keys()
-> (loupe_fleet::signer::Signer, std::sync::Arc<loupe_api::signed::trust::TrustFile>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let keys = loupe_testbed::rack::FleetKeys::make(dir.path(), 0).unwrap();
    let trust = std::sync::Arc::new(loupe_api::signed::trust::TrustFile::open(&keys.trust).unwrap());
    let key = loupe_api::signed::FleetKey::read(&keys.operator).unwrap();
    (loupe_fleet::signer::Signer::new(std::sync::Arc::new(key)), trust, dir)
}

pub async fn register(js: &async_nats::jetstream::Context, place: &FleetPlace, domain: Option<String>) {
    let now = loupe_api::clock::now_unix_ns();
    let reg = Registration {
        place: place.clone(),
        version: "bench".into(),
        ifaces: vec!["eth0".into()],
        retained_from_unix_ns: 0,
        retained_to_unix_ns: 0,
        joined_unix_ns: now,
        heartbeat_unix_ns: now + 3_600_000_000_000,
        left: false,
        domain,
    };
    for tries in 0.. {
        let put = match registry::bucket(js).await {
            Ok(bucket) => registry::put(&bucket, &reg).await,
            Err(e) => Err(e),
        };
        match put {
            Ok(()) => return,
            Err(e) if tries == 20 => panic!("{}: {e}", place.host),
            Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}
