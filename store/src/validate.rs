//! Checking a run before anything of it is written.
//!
//! *Why before, and why here:* a run is written as one atomic batch, so an inconsistent run
//! must be refused whole, with [`StoreError::InvalidRun`] naming what is wrong, before an id is
//! allocated or a byte is encoded. The decoders ([`crate::codec`]) rely on what is checked here
//! (every column has exactly `samples` entries, CPUs are distinct), and on their own bounds for
//! records that did not come through this check.

use crate::{Counter, MAX_RUN_SAMPLES, NewRun, StoreError};

/// Checks a run before anything is written.
pub(crate) fn validate(run: &NewRun) -> Result<(), StoreError> {
    let what = format!("run on {:?} starting at {}", run.iface, run.start_unix_ns);
    let bad = |msg: String| Err(StoreError::InvalidRun(format!("{what}: {msg}")));
    if run.samples == 0 {
        return bad("samples is 0".into());
    }
    if run.samples > MAX_RUN_SAMPLES {
        return bad(format!("{} samples, more than the limit of {MAX_RUN_SAMPLES}", run.samples));
    }
    if run.interval_ns == 0 {
        return bad("interval_ns is 0".into());
    }
    if run.per_cpu.is_empty() {
        return bad("no per-CPU columns".into());
    }
    let n = run.samples as usize;
    let mut seen = std::collections::BTreeSet::new();
    for cols in &run.per_cpu {
        let cpu = cols.cpu;
        if !seen.insert(cpu) {
            return bad(format!("cpu {cpu} appears twice"));
        }
        let named = Counter::ALL
            .iter()
            .map(|c| (c.name(), cols.counters[c.index()].len()))
            .chain([("in_conns", cols.in_conns.len()), ("out_conns", cols.out_conns.len())]);
        for (name, len) in named {
            if len != n {
                return bad(format!("cpu {cpu} column {name} has {len} entries, expected samples = {n}"));
            }
        }
    }
    if let Some(c) = &run.conn_counts {
        for (name, len) in [("in_conns", c.in_conns.len()), ("out_conns", c.out_conns.len())] {
            if len != n {
                return bad(format!("conn_counts {name} has {len} entries, expected samples = {n}"));
            }
        }
    }
    Ok(())
}
