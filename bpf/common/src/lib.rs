//! The contract between Loupe's kernel programs and their userspace.
//!
//! Everything here is `#[repr(C)]` and `no_std`: the same definitions are compiled into the eBPF
//! object and into the loader, so a field can never mean one thing in the kernel and another in
//! userspace. The connection sketch's hash lives here for the same reason: the testbed recomputes,
//! in userspace, the exact bit the kernel sets for a known 5-tuple.
//!
//! With the `std` feature (userspace only) it also holds [`error::SamplerError`] and the slot
//! bounds it names, so crates that report sampler errors need neither aya nor the kernel objects.
#![no_std]

#[cfg(feature = "std")]
extern crate std;

#[cfg(feature = "std")]
pub mod error;

pub mod probes;
pub mod python;
pub mod sketch;
pub mod stacks;
pub mod unwind;

/// Name of the single-entry array holding the [`RunConfig`].
pub const MAP_RUN_CONFIG: &str = "RUN_CONFIG";
/// Name of the per-CPU array of [`SlotCounters`], one entry per sample slot.
pub const MAP_SLOTS: &str = "SLOTS";
/// Name of the LPM trie of local-region prefixes (IPv4 stored IPv4-mapped in IPv6).
pub const MAP_LOCAL_PREFIXES: &str = "LOCAL_PREFIXES";
/// Name of the array of [`FlowEntry`] that remembers, per ingress TCP flow, the highest
/// sequence seen: a two-way set-associative table of [`FLOW_SLOTS`] entries.
pub const MAP_INGRESS_FLOWS: &str = "INGRESS_FLOWS";
/// Entries of [`MAP_INGRESS_FLOWS`] (a power of two): 32,768 sets of two.
pub const FLOW_SLOTS: u32 = 65_536;

/// Program names (kernel program names are limited to 15 characters).
pub const PROG_INGRESS: &str = "loupe_ingress";
pub const PROG_EGRESS: &str = "loupe_egress";

/// The filter cut after each of its steps (the bench's `loupe-traffic-steps` object): the step,
/// then its ingress and egress program. Each step includes the ones before it; the last is the
/// whole filter.
pub const FILTER_STEPS: [(&str, &str, &str); 5] = [
    ("config, clock and slot number", "in_clock", "out_clock"),
    ("slot's counters: bytes, packets", "in_count", "out_count"),
    ("headers parsed", "in_parse", "out_parse"),
    ("flow hash, sketch bit, CE", "in_sketch", "out_sketch"),
    ("retransmission check", "in_all", "out_all"),
];

/// Slots compiled into the object; the loader resizes [`MAP_SLOTS`] to the capacity it needs.
pub const DEFAULT_SLOTS: u32 = 2_000;

/// Narrowest slot accepted: below ~10 µs the per-packet clock read dominates the slot.
pub const MIN_INTERVAL: core::time::Duration = core::time::Duration::from_micros(10);
/// Widest slot accepted.
pub const MAX_INTERVAL: core::time::Duration = core::time::Duration::from_secs(10);

/// `RunConfig::flags`: local prefixes are configured, so a miss in the trie means cross-region.
/// Without it the cross-region counters stay zero rather than claim all traffic is remote.
pub const FLAG_REGION_CONFIGURED: u32 = 1;
/// `RunConfig::flags`: `start_ns` is on `CLOCK_TAI` (`bpf_ktime_get_tai_ns`), the clock every
/// host of a fleet shares (wall-clock time without leap seconds), rather than on this host's
/// `CLOCK_MONOTONIC`. Synchronized runs use it, so slot k is the same interval on every host
/// that took part, whenever each one's agent woke up; other runs keep the monotonic clock,
/// which no clock step can move.
pub const FLAG_CLOCK_TAI: u32 = 2;

/// What the tc program reads on every packet. `samples == 0` means "no run": the program returns
/// after this one lookup.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunConfig {
    /// When slot 0 begins: `CLOCK_MONOTONIC` (`bpf_ktime_get_ns`), or `CLOCK_TAI` with
    /// [`FLAG_CLOCK_TAI`].
    pub start_ns: u64,
    /// Width of one slot.
    pub interval_ns: u64,
    /// Number of slots; slots at or beyond it are not counted.
    pub samples: u32,
    /// `FLAG_*` bits.
    pub flags: u32,
    /// Bytes of link-layer header before the network header (14 on Ethernet and loopback,
    /// 0 on raw-IP devices such as tun or WireGuard).
    pub l2_len: u32,
    pub _pad: u32,
}

/// Counters of one slot on one CPU. Field order is the wire order of the per-CPU array.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SlotCounters {
    pub in_bytes: u64,
    pub out_bytes: u64,
    pub in_packets: u64,
    pub out_packets: u64,
    pub in_ce_bytes: u64,
    pub in_retx_bytes: u64,
    pub out_retx_bytes: u64,
    pub in_cross_region_bytes: u64,
    pub out_cross_region_bytes: u64,
    /// 128-bit connection sketches (see [`sketch`]): bit `i` lives in word `i / 64`.
    pub in_conns: [u64; 2],
    pub out_conns: [u64; 2],
}

/// One entry of [`MAP_INGRESS_FLOWS`]: an ingress TCP flow, named by its 64-bit hash, and its
/// highest sequence in the current run. 32 bytes, so a set's two entries share a cache line.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowEntry {
    /// The flow's [`sketch::flow_hash64`]. The two flows of a set share 15 of its bits (the set
    /// index) and are told apart by the other 49: two flows of one set with the same 64-bit
    /// hash would share an entry, a chance of 2⁻⁴⁹ per pair that meet in a set.
    pub flow: u64,
    /// `RunConfig::start_ns` of the run that last updated the entry: state from an earlier
    /// run is stale (the flow may have wrapped its sequence space since) and is reset.
    pub run_start_ns: u64,
    /// When the flow last sent (the run's clock): of a set's two entries, the one seen longer
    /// ago makes way for a new flow.
    pub seen_ns: u64,
    /// One past the highest sequence number seen on this flow.
    pub high_seq: u32,
    pub _pad: u32,
}

#[cfg(feature = "user")]
mod pod {
    // SAFETY: plain-old-data, `#[repr(C)]`, no padding holes the kernel would not also see.
    unsafe impl aya::Pod for super::RunConfig {}
    unsafe impl aya::Pod for super::SlotCounters {}
    unsafe impl aya::Pod for super::FlowEntry {}
    unsafe impl aya::Pod for super::stacks::StackEvent {}
    unsafe impl aya::Pod for super::stacks::OffCpuConfig {}
    unsafe impl aya::Pod for super::stacks::OffCpuBurst {}
    unsafe impl aya::Pod for super::stacks::OffCpuLast {}
    unsafe impl aya::Pod for super::stacks::OffCpuTask {}
    unsafe impl aya::Pod for super::stacks::OffCpuCounts {}
    unsafe impl aya::Pod for super::python::PyProcess {}
    unsafe impl aya::Pod for super::python::PyFrame {}
    unsafe impl aya::Pod for super::unwind::UnwindRow {}
    unsafe impl aya::Pod for super::unwind::PageInfo {}
    unsafe impl aya::Pod for super::unwind::Mapping {}
    unsafe impl aya::Pod for super::probes::FunctionCounters {}
    unsafe impl aya::Pod for super::probes::CallRecord {}
    unsafe impl aya::Pod for super::probes::ThreadCalls {}
}
