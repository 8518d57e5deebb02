//! What the fleet commands answer (`loupe fleet hosts|run|invoke`, `/api/v1/fleet/…`): every
//! answer names the hosts that were asked and did not answer, and those that failed with why —
//! a fleet query returns at its deadline with what it has, never waits on the slowest host.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{AnalysisOutput, ClockView, LogLine};

/// Where a host sits in the fleet: the scopes a query can select it by.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FleetPlace {
    pub host: String,
    pub rack: String,
    pub dc: String,
}

/// One host's registration, as its agent keeps it alive in the fleet's key-value bucket.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FleetHost {
    #[serde(flatten)]
    pub place: FleetPlace,
    /// Loupe's version on that host.
    pub version: String,
    /// Interfaces its agent samples.
    pub ifaces: Vec<String>,
    /// The retained data, `[from, to)` Unix ns (zeros when it holds nothing yet).
    pub retained_from_unix_ns: u64,
    pub retained_to_unix_ns: u64,
    /// When the agent joined the fleet, and its last heartbeat (Unix ns, its own clock).
    pub joined_unix_ns: u64,
    pub heartbeat_unix_ns: u64,
    /// `up` (heartbeat within three periods), `silent` (registered, but no heartbeat for longer:
    /// crashed, partitioned or overloaded) or `left` (stopped cleanly).
    pub status: String,
    /// Seconds since the last heartbeat, by the asking host's clock.
    pub silent_s: u64,
    /// The JetStream domain of the NATS server the agent is connected to: its leaf (rack or
    /// pod) in a fleet of leaf nodes. Absent on a single server without a domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaf: Option<String>,
}

/// `loupe fleet hosts`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FleetHostsView {
    pub hosts: Vec<FleetHost>,
    /// Hosts whose status is `up`.
    pub up: u64,
}

/// A host that was expected to answer and did not, or answered with an error.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FleetMiss {
    #[serde(flatten)]
    pub place: FleetPlace,
    /// Why: `no answer before the deadline`, or the host's own error.
    pub why: String,
    /// A stable code for the why: `deadline`, `silent` (not heard from before the query), or the
    /// error kind the host returned (`bad_request`, `not_found`, `too_large`, …).
    pub code: String,
}

/// Who answered a fleet query, in the order the coordinator heard them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FleetAnswered {
    #[serde(flatten)]
    pub place: FleetPlace,
    /// From publishing the query to receiving this host's answer, ns.
    pub elapsed_ns: u64,
}

/// One host's run of a synchronized rack run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct FleetRunHost {
    #[serde(flatten)]
    pub place: FleetPlace,
    /// The run's id in that host's store (`GET /api/v1/runs/{id}` on that host).
    pub run_id: u64,
    pub iface: String,
    pub start_unix_ns: u64,
    pub interval_ns: u64,
    pub samples: u32,
    /// Per-slot ingress and egress bytes (summed over CPUs): the rack heatmap's rows.
    pub in_bytes: Vec<u64>,
    pub out_bytes: Vec<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub clock: Option<ClockView>,
    /// How late this host's agent configured the run relative to the common start (negative:
    /// ahead, as it should be), ns. Slots are counted in the kernel from the common instant, so
    /// this does not move slot boundaries; it shows the scheduling margin.
    pub configured_before_start_ns: i64,
}

/// `loupe fleet run`: one synchronized run on every host of a rack.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct FleetRunView {
    /// The common start instant every host counted slot 0 from (Unix ns).
    pub start_unix_ns: u64,
    pub interval_ns: u64,
    pub samples: u32,
    pub hosts: Vec<FleetRunHost>,
    /// Asked but missed the run (no answer before the deadline, or an error).
    pub missed: Vec<FleetMiss>,
    /// The largest clock error bound among the hosts that ran (ns): how far apart two hosts'
    /// slot k may be at most, by their own clocks' accounts.
    pub max_clock_error_ns: u64,
}

/// `loupe fleet invoke`: an analysis run next to each host's data, the partial results merged
/// in the sandbox.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct FleetInvokeView {
    /// The analysis, and the SHA-256 of the module every host ran.
    pub name: String,
    pub sha256: String,
    #[serde(flatten)]
    pub output: AnalysisOutput,
    pub answered: Vec<FleetAnswered>,
    /// Selected hosts that did not answer before the deadline.
    pub missing: Vec<FleetMiss>,
    /// Hosts that answered with an error (their analysis failed, its partial was too large, …).
    pub failed: Vec<FleetMiss>,
    /// The merge's log (the hosts' logs stay on the hosts).
    pub log: Vec<LogLine>,
    /// From publishing the query to the merged result, ns.
    pub elapsed_ns: u64,
    /// Of which merging in the sandbox, ns.
    pub merge_ns: u64,
    /// In a fleet of leaf nodes, each leaf that answered with one merged partial of its hosts:
    /// the merge ran as a tree. Empty when every host answered the asker directly.
    #[serde(default)]
    pub leaves: Vec<FleetLeafAnswer>,
}

/// One leaf's answer to a tree merge: its coordinator (an agent of the leaf, chosen by the
/// leaf's NATS queue group so that exactly one answers) invoked the leaf's hosts and merged
/// their partials before answering.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FleetLeafAnswer {
    /// The leaf: its NATS server's JetStream domain.
    pub leaf: String,
    /// The agent that coordinated the leaf.
    pub coordinator: FleetPlace,
    /// Hosts of the leaf whose partials it merged.
    pub hosts: u64,
    /// From the asker publishing the query to receiving the leaf's answer, ns.
    pub elapsed_ns: u64,
    /// Of which the leaf's own merge, ns.
    pub merge_ns: u64,
}
