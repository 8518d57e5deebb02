//! The tc filter cut after each of its steps, loaded for `cargo bench -p loupe-testbed --bench
//! filter` so it can show what each step of a packet's path costs (`docs/hot-paths.md`). The
//! agent never loads it: it is the filter's own source (`bpf/ebpf/src/traffic/filter.rs`)
//! compiled into programs that stop early, with maps of their own.

use aya::{EbpfLoader, maps::Array, programs::SchedClassifier};
use loupe_bpf_common::{FILTER_STEPS, MAP_RUN_CONFIG, RunConfig};

use crate::{FILTER_STEPS_OBJECT, SamplerError, clock::monotonic_ns};

/// The cut programs, loaded (not attached: the bench runs them with `BPF_PROG_TEST_RUN`), with a
/// run that covers every packet they are given from [`FilterSteps::load`] on.
pub struct FilterSteps {
    ebpf: aya::Ebpf,
}

impl FilterSteps {
    /// Loads every program of [`FILTER_STEPS`] and starts a run of `samples` slots of
    /// `interval_ns`, counting Ethernet frames (14 bytes of link-layer header).
    pub fn load(interval_ns: u64, samples: u32) -> Result<Self, SamplerError> {
        crate::kernel::RUNS.check()?;
        let mut ebpf = EbpfLoader::new()
            .verifier_log_level(crate::verifier::LOG_LEVEL)
            .load(FILTER_STEPS_OBJECT)
            .map_err(|e| crate::privilege::classify("load eBPF programs", &e, SamplerError::Load))?;
        for name in FILTER_STEPS.iter().flat_map(|&(_, ingress, egress)| [ingress, egress]) {
            let prog: &mut SchedClassifier = crate::program_mut(&mut ebpf, name)?;
            prog.load().map_err(|e| crate::verifier::load_failed(name, e))?;
        }
        let mut config: Array<&mut aya::maps::MapData, RunConfig> = crate::map_mut(&mut ebpf, MAP_RUN_CONFIG)?;
        let run = RunConfig { start_ns: monotonic_ns(), interval_ns, samples, flags: 0, l2_len: 14, _pad: 0 };
        config.set(0, run, 0).map_err(|e| SamplerError::Read(format!("writing run config: {e}")))?;
        Ok(Self { ebpf })
    }

    /// The program of step `step` (an index into [`FILTER_STEPS`]) for one direction.
    pub fn program(&self, step: usize, ingress: bool) -> &SchedClassifier {
        let (_, in_name, out_name) = FILTER_STEPS[step];
        let name = if ingress { in_name } else { out_name };
        self.ebpf.program(name).and_then(|p| p.try_into().ok()).expect("loaded in FilterSteps::load")
    }
}
