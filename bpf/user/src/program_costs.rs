//! What each kernel program costs the verifier, measured by loading it as the agent does: the
//! figures `tests/verifier_headroom.rs` prints and holds under [`crate::HEADROOM`].

use std::time::{Duration, Instant};

use aya::{EbpfLoader, programs::Program};
use loupe_bpf_common::{
    probes::PROG_SESSION,
    stacks::{MAP_OFF_CPU_PENDING, OFF_CPU_PENDING_ENTRIES},
};

use crate::{
    SamplerError, kernel,
    verifier::{LOG_LEVEL, load_failed, processed_insns},
};

/// What loading one program cost.
#[derive(Clone, Debug)]
pub struct ProgramCost {
    /// The object it comes from: `stacks`, `traffic` or `probes`.
    pub object: &'static str,
    pub program: String,
    /// Instructions the verifier processed (`bpf_prog_info.verified_insns`; `None` before Linux
    /// 5.16).
    pub verified_insns: Option<u32>,
    /// How long the load took, the verification nearly all of it.
    pub load_time: Duration,
    /// The verifier's words when it refused the program (`verified_insns` then comes from its
    /// statistics).
    pub refused: Option<String>,
    /// Why it was not loaded: the kernel lacks a facility it needs (`crate::kernel`), and what
    /// Loupe does instead.
    pub off: Option<String>,
}

/// Loads every program of the three objects as the agent would with its largest options
/// (off-CPU sampling on, a session-link probe program), each into the kernel and out again, and
/// says what each cost, a refused one included. Nothing is attached. A program of a feature this
/// kernel is too old for, or the session program below uprobe session links' first kernel, is
/// not loaded: its cost says why (`off`).
pub fn program_costs() -> Result<Vec<ProgramCost>, SamplerError> {
    let mut costs = Vec::new();
    let open = |object: &[u8], pending: bool| {
        let mut loader = EbpfLoader::new();
        loader.verifier_log_level(LOG_LEVEL);
        if pending {
            loader.map_max_entries(MAP_OFF_CPU_PENDING, OFF_CPU_PENDING_ENTRIES);
        }
        loader.load(object).map_err(|e| crate::privilege::classify("load eBPF programs", &e, SamplerError::Load))
    };
    for (object, bytes) in
        [("stacks", crate::STACKS_OBJECT), ("traffic", crate::EBPF_OBJECT), ("probes", crate::PROBES_OBJECT)]
    {
        let mut ebpf = open(bytes, object == "stacks")?;
        let names: Vec<String> = ebpf.programs().map(|(name, _)| name.to_string()).collect();
        let feature = match object {
            "stacks" => kernel::STACKS,
            "traffic" => kernel::RUNS,
            _ => kernel::PROBES,
        };
        // Once per object: the feature's minimum, and session links' for the session program.
        let feature_off = feature.check().err().map(|e| e.to_string());
        let sessions_off = kernel::UPROBE_SESSION.missing_here().map(|release| {
            format!(
                "needs Linux {}; this kernel is {release}: probes use perf-event uprobes",
                kernel::UPROBE_SESSION.needs()
            )
        });
        let too_old =
            |name: &str| feature_off.clone().or_else(|| if name == PROG_SESSION { sessions_off.clone() } else { None });
        for name in names {
            if let Some(off) = too_old(&name) {
                costs.push(ProgramCost {
                    object,
                    program: name,
                    verified_insns: None,
                    load_time: Duration::ZERO,
                    refused: None,
                    off: Some(off),
                });
                continue;
            }
            if object == "probes" && name == PROG_SESSION {
                // Loaded as the probes load it, with the session attach type aya cannot give.
                let began = Instant::now();
                let (_fd, verified_insns) = crate::session_link::load_session_program(bytes, &ebpf, &name)?;
                costs.push(ProgramCost {
                    object,
                    program: name,
                    verified_insns,
                    load_time: began.elapsed(),
                    refused: None,
                    off: None,
                });
                continue;
            }
            let program = ebpf.program_mut(&name).expect("a program the object just listed");
            let began = Instant::now();
            let loaded = match program {
                Program::PerfEvent(p) => p.load(),
                Program::RawTracePoint(p) => p.load(),
                Program::SchedClassifier(p) => p.load(),
                Program::UProbe(p) => p.load(),
                other => {
                    return Err(SamplerError::Load(format!(
                        "{name}: a {:?} program, which this list does not load",
                        other.prog_type()
                    )));
                }
            };
            let load_time = began.elapsed();
            let cost = match loaded.map_err(|e| load_failed(&name, e)) {
                Ok(()) => {
                    let verified_insns = program.info().ok().and_then(|info| info.verified_instruction_count());
                    ProgramCost { object, program: name, verified_insns, load_time, refused: None, off: None }
                }
                Err(SamplerError::Refused { verifier, .. }) => ProgramCost {
                    object,
                    program: name,
                    verified_insns: processed_insns(&verifier),
                    load_time,
                    refused: Some(verifier),
                    off: None,
                },
                Err(e) => return Err(e),
            };
            costs.push(cost);
        }
    }
    Ok(costs)
}
