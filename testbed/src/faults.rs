//! The testbed's eBPF fault injectors (`testbed/ebpf`), attached behind Loupe's filter.

use anyhow::{Context, Result, anyhow};
use aya::{
    Ebpf,
    maps::{Array, MapData, PerCpuArray},
    programs::{
        LinkOrder, SchedClassifier, TcAttachType,
        tc::{self, NlOptions, TcAttachOptions},
    },
};
pub use loupe_testbed_common::{FaultConfig, FaultTally};
use loupe_testbed_common::{MAP_FAULT_CONFIG, MAP_FAULT_TALLY, PROG_CE_MARK, PROG_CLOCK, PROG_DROP, PROG_NOOP};

/// tc priority of fault injectors: after Loupe's filter (priority 1) on the same hook.
pub const FAULT_PRIORITY: u16 = 10;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// Set ECN CE on matching ECT packets.
    CeMark,
    /// Drop matching packets.
    Drop,
    /// Do nothing (a cost floor for benchmarks).
    Noop,
    /// Read the clock and do nothing else (what timestamping a packet costs, for benchmarks).
    Clock,
}

impl FaultKind {
    fn program(self) -> &'static str {
        match self {
            Self::CeMark => PROG_CE_MARK,
            Self::Drop => PROG_DROP,
            Self::Noop => PROG_NOOP,
            Self::Clock => PROG_CLOCK,
        }
    }
}

/// A loaded fault injector; attached to an interface unless made with [`Fault::load`].
pub struct Fault {
    ebpf: Ebpf,
    kind: FaultKind,
}

impl Fault {
    /// Loads the injector without attaching it (for `BPF_PROG_TEST_RUN`).
    pub fn load(kind: FaultKind, config: FaultConfig) -> Result<Self> {
        let mut ebpf = Ebpf::load(crate::TESTBED_OBJECT).context("loading testbed eBPF object")?;
        let mut cfg: Array<&mut MapData, FaultConfig> =
            ebpf.map_mut(MAP_FAULT_CONFIG).ok_or_else(|| anyhow!("no fault config map"))?.try_into()?;
        cfg.set(0, config, 0)?;
        let prog: &mut SchedClassifier =
            ebpf.program_mut(kind.program()).ok_or_else(|| anyhow!("no program {}", kind.program()))?.try_into()?;
        prog.load()?;
        Ok(Self { ebpf, kind })
    }

    /// Loads the injector and attaches it to `iface` (in the calling thread's namespace).
    pub fn attach(kind: FaultKind, iface: &str, direction: TcAttachType, config: FaultConfig) -> Result<Self> {
        let mut fault = Self::load(kind, config)?;
        let _ = tc::qdisc_add_clsact(iface);
        let options = TcAttachOptions::Netlink(NlOptions { priority: FAULT_PRIORITY, ..Default::default() });
        fault.program_mut().attach_with_options(iface, direction, options).context("attaching fault injector")?;
        Ok(fault)
    }

    /// Loads the injector and attaches it to `iface` with tcx, first among the hook's tcx
    /// programs (as Loupe's filter attaches), instead of a clsact qdisc and cls_bpf: for
    /// measuring what each hook costs.
    pub fn attach_tcx(kind: FaultKind, iface: &str, direction: TcAttachType, config: FaultConfig) -> Result<Self> {
        let mut fault = Self::load(kind, config)?;
        let options = TcAttachOptions::TcxOrder(LinkOrder::first());
        fault
            .program_mut()
            .attach_with_options(iface, direction, options)
            .context("attaching fault injector with tcx")?;
        Ok(fault)
    }

    pub fn program_mut(&mut self) -> &mut SchedClassifier {
        self.ebpf.program_mut(self.kind.program()).expect("loaded").try_into().expect("a classifier")
    }

    /// What the injector did, summed over CPUs.
    pub fn tally(&self) -> Result<FaultTally> {
        let map: PerCpuArray<&MapData, FaultTally> =
            self.ebpf.map(MAP_FAULT_TALLY).ok_or_else(|| anyhow!("no tally map"))?.try_into()?;
        let per_cpu = map.get(&0, 0)?;
        Ok(per_cpu.iter().fold(FaultTally::default(), |acc, t| FaultTally {
            matched: acc.matched + t.matched,
            hits: acc.hits + t.hits,
            hit_bytes: acc.hit_bytes + t.hit_bytes,
        }))
    }
}
