//! Loupe's testbed: everything needed to prove, on a real kernel, that the numbers Loupe reports
//! are the numbers that crossed the wire.
//!
//! * [`netns`] — network namespaces, and running code inside one.
//! * [`nf`] — a packet-loop program that times its own calls (the function probes' truth).
//! * [`topology`] — two namespaces joined by a veth pair, addressed and quiet.
//! * [`traffic`] — generators whose bytes, packets, ECN bits and flows are known.
//! * [`faults`] — eBPF fault injectors: CE marking and segment drops.
//! * [`cgroup`] — a memory cgroup of a test's own: a limit, and what it is charged.
//! * [`programs`] — many distinct programs, as a busy host runs them.
//! * [`pythons`] — the Pythons on the machine, and the workloads the Python frame tests run.
//! * [`rack`] — a rack: hosts behind a bridge as their top-of-rack switch, and a nats-server.
//! * [`pki`] — a CA and the certificates it signs (`openssl`), for the HTTPS and TLS-bus tests.
//! * [`privilege`] — the root check that turns kernel tests into clear skips elsewhere.
//! * [`sampling`] — how many samples a thread should get, and the band a loaded machine allows.
//! * [`synthetic`] — stored data with known answers (API and browser tests, `loupe-synth`).
//! * [`waits`] — the waits fixture: known off-CPU times beside busy blocking, and their estimates.
//! * [`wasm`] — where the analyses built from `udf-sdk/` are ([`wasm_component`]).

pub mod bpftool;
pub mod cgroup;
pub mod faults;
pub mod netns;
pub mod nf;
pub mod pki;
pub mod privilege;
pub mod programs;
pub mod pythons;
pub mod rack;
pub mod sampling;
pub mod synthetic;
pub mod test_run;
pub mod topology;
pub mod traffic;
pub mod waits;
pub mod wasm;

pub use wasm::{find_wasm_component, wasm_component};

pub(crate) static TESTBED_OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/loupe-testbed-ebpf"));
