//! The tc filter cut after each of its steps, loaded for `cargo bench -p loupe-testbed --bench
//! filter` so it can show what each step of a packet's path costs (`docs/hot-paths.md`). The
//! agent never loads it: it is the filter's own source (`bpf/ebpf/src/traffic/filter.rs`)
//! compiled into programs that stop early, with maps of their own.

use aya::{
    EbpfLoader,
    maps::{Array, PerCpuArray},
    programs::SchedClassifier,
    util::nr_cpus,
};
use loupe_bpf_common::{FILTER_STEPS, MAP_RUN_CONFIG, MAP_SLOTS, RunConfig, SlotCounters};

use crate::{FILTER_STEPS_OBJECT, SamplerError, clock::monotonic_ns};

/// The cut programs, loaded (not attached: the bench runs them with `BPF_PROG_TEST_RUN`), with a
/// run that covers every packet they are given from [`FilterSteps::load`] on.
pub struct FilterSteps {
    ebpf: aya::Ebpf,
    samples: u32,
}

impl FilterSteps {
    /// Loads every program of [`FILTER_STEPS`] and starts a run of `samples` slots of
    /// `interval_ns`, counting Ethernet frames (14 bytes of link-layer header).
    pub fn load(interval_ns: u64, samples: u32) -> Result<Self, SamplerError> {
        crate::kernel::RUNS.check()?;
        let mut ebpf = EbpfLoader::new()
            .verifier_log_level(crate::verifier::LOG_LEVEL)
            .map_max_entries(MAP_SLOTS, samples.max(1))
            .load(FILTER_STEPS_OBJECT)
            .map_err(|e| crate::privilege::classify("load eBPF programs", &e, SamplerError::Load))?;
        for name in FILTER_STEPS.iter().flat_map(|&(_, ingress, egress)| [ingress, egress]) {
            let prog: &mut SchedClassifier = crate::program_mut(&mut ebpf, name)?;
            prog.load().map_err(|e| crate::verifier::load_failed(name, e))?;
        }
        let mut config: Array<&mut aya::maps::MapData, RunConfig> = crate::map_mut(&mut ebpf, MAP_RUN_CONFIG)?;
        let run = RunConfig { start_ns: monotonic_ns(), interval_ns, samples, flags: 0, l2_len: 14, _pad: 0 };
        config.set(0, run, 0).map_err(|e| SamplerError::Read(format!("writing run config: {e}")))?;
        Ok(Self { ebpf, samples })
    }

    /// What the cut programs counted so far, every slot of every CPU added up (the connection
    /// sketches ORed), so a test can check that each cut counts what its steps count.
    pub fn counted(&mut self) -> Result<SlotCounters, SamplerError> {
        let cpus = nr_cpus().map_err(|(what, e)| SamplerError::io(format!("reading {what}"), e))?;
        let slots: PerCpuArray<&mut aya::maps::MapData, SlotCounters> = crate::map_mut(&mut self.ebpf, MAP_SLOTS)?;
        let mut s = SlotCounters::default();
        for slot in 0..self.samples {
            let values = slots.get(&slot, 0).map_err(|e| SamplerError::Read(format!("slot {slot}: {e}")))?;
            for c in values.iter().take(cpus) {
                s.in_bytes += c.in_bytes;
                s.out_bytes += c.out_bytes;
                s.in_packets += c.in_packets;
                s.out_packets += c.out_packets;
                s.in_ce_bytes += c.in_ce_bytes;
                s.in_retx_bytes += c.in_retx_bytes;
                s.out_retx_bytes += c.out_retx_bytes;
                s.in_cross_region_bytes += c.in_cross_region_bytes;
                s.out_cross_region_bytes += c.out_cross_region_bytes;
                for w in 0..2 {
                    s.in_conns[w] |= c.in_conns[w];
                    s.out_conns[w] |= c.out_conns[w];
                }
            }
        }
        Ok(s)
    }

    /// The program of step `step` (an index into [`FILTER_STEPS`]) for one direction.
    pub fn program(&self, step: usize, ingress: bool) -> &SchedClassifier {
        let (_, in_name, out_name) = FILTER_STEPS[step];
        let name = if ingress { in_name } else { out_name };
        self.ebpf.program(name).and_then(|p| p.try_into().ok()).expect("loaded in FilterSteps::load")
    }
}
