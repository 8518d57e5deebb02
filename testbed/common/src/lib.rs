//! Configuration and tallies of the testbed's fault injectors (see `testbed/ebpf`).
#![no_std]

pub const PROG_CE_MARK: &str = "tb_ce_mark";
pub const PROG_DROP: &str = "tb_drop";
pub const PROG_NOOP: &str = "tb_noop";
pub const PROG_CLOCK: &str = "tb_clock";
pub const MAP_FAULT_CONFIG: &str = "FAULT_CONFIG";
pub const MAP_FAULT_TALLY: &str = "FAULT_TALLY";

/// Which packets a fault applies to: TCP or UDP packets to `dport` (IPv4 or IPv6), and of those
/// only every `every_nth` one, at most `max_hits` times (both counted per CPU).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct FaultConfig {
    pub dport: u16,
    /// 1 = TCP segments with payload only (drops); 0 = any packet to the port.
    pub data_only: u16,
    pub every_nth: u32,
    pub max_hits: u32,
    pub _pad: u32,
}

/// What a fault injector did, per CPU.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct FaultTally {
    /// Packets that matched the port filter.
    pub matched: u64,
    /// Packets the fault was applied to (marked CE, dropped).
    pub hits: u64,
    /// Their bytes (`skb->len`).
    pub hit_bytes: u64,
}

#[cfg(feature = "user")]
mod pod {
    unsafe impl aya::Pod for super::FaultConfig {}
    unsafe impl aya::Pod for super::FaultTally {}
}
