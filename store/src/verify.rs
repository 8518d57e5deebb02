//! Full consistency check of the `runs` tree (an `fsck`): runs, stack samples, timeline events,
//! probe sessions.
//!
//! Scans every record once and checks the invariants that atomic batches are meant to keep:
//! each run has its metadata, index entry and exactly the CPU rows its metadata lists; no
//! record belongs to a run without metadata; every row decodes; each run's `stored_bytes`
//! equals the bytes of its records; and the running totals equal the sums. Used by the crash
//! tests, and useful to an operator after an unclean shutdown.

use std::collections::BTreeMap;

use crate::{Inner, RunId, RunMeta, Store, StoreError, VerifyReport, codec, keys};

#[derive(Default)]
struct Seen {
    meta: Option<RunMeta>,
    cpus: Vec<u32>,
    indexed: bool,
    bytes: u64,
}

impl Store {
    /// Checks every record of the store; see the module docs. Holds off writers while it runs.
    pub fn verify(&self) -> Result<VerifyReport, StoreError> {
        let inner: &Inner = &self.inner;
        let _w = inner.lock_writer();
        let mut runs: BTreeMap<RunId, Seen> = BTreeMap::new();
        let mut report = VerifyReport::default();
        let mut totals = None;
        let mut samples = crate::samples::verify::SampleSeen::default();
        let mut timeline = crate::timeline::verify::TimelineSeen::default();
        let mut probes = crate::probes::verify::ProbeSeen::default();
        for item in inner.runs.iter() {
            let (k, v) = item.map_err(|e| inner.storage("verify", e))?;
            let size = (k.len() + v.len()) as u64;
            let run_of = |k: &[u8]| RunId(u64::from_be_bytes(k[9..17].try_into().unwrap()));
            match k.first().copied() {
                Some(keys::META) if k.len() == 17 => {
                    let id = run_of(&k);
                    let seen = runs.entry(id).or_default();
                    seen.bytes += size;
                    match inner.decode_meta_record(&k, &v) {
                        Ok(m) => seen.meta = Some(m),
                        Err(e) => report.problems.push(e.to_string()),
                    }
                }
                Some(keys::CPU) if k.len() == 21 => {
                    let id = run_of(&k);
                    let cpu = keys::parse_cpu_key(&k).unwrap_or_default();
                    let seen = runs.entry(id).or_default();
                    seen.bytes += size;
                    seen.cpus.push(cpu);
                }
                Some(keys::CONN_COUNTS) if k.len() == 17 => {
                    runs.entry(run_of(&k)).or_default().bytes += size;
                }
                Some(keys::INDEX) if k.len() == 9 => {
                    let id = RunId(keys::decode_u64(&k[1..]).unwrap_or_default());
                    let seen = runs.entry(id).or_default();
                    seen.bytes += size;
                    seen.indexed = true;
                }
                _ if k.as_ref() == keys::STATS => totals = Some(inner.totals()?),
                _ if samples.observe(&k, &v, &mut report) => {}
                _ if timeline.observe(&k, &v, &mut report) => {}
                _ if probes.observe(&k, &v, &mut report) => {}
                _ => report.problems.push(format!("unknown key {:?}", k.as_ref())),
            }
        }
        for (id, seen) in &runs {
            let Some(meta) = &seen.meta else {
                report.problems.push(format!("run {id}: records without metadata (half-written or half-deleted)"));
                continue;
            };
            report.runs += 1;
            report.stored_bytes += meta.stored_bytes;
            if !seen.indexed {
                report.problems.push(format!("run {id}: no index entry"));
            }
            if seen.cpus != meta.cpus {
                report
                    .problems
                    .push(format!("run {id}: metadata lists cpus {:?}, rows exist for {:?}", meta.cpus, seen.cpus));
            }
            if seen.bytes != meta.stored_bytes {
                report
                    .problems
                    .push(format!("run {id}: records take {} bytes, metadata says {}", seen.bytes, meta.stored_bytes));
            }
            if let Err(e) = self.decode_all(inner, meta) {
                report.problems.push(e.to_string());
            }
        }
        let totals = totals.unwrap_or_default();
        if totals.runs != report.runs || totals.stored_bytes != report.stored_bytes {
            report.problems.push(format!(
                "totals record says {} runs / {} bytes, records add up to {} runs / {} bytes",
                totals.runs, totals.stored_bytes, report.runs, report.stored_bytes
            ));
        }
        samples.finish(inner, &mut report)?;
        timeline.finish(inner, &mut report)?;
        probes.finish(inner, &mut report)?;
        Ok(report)
    }

    fn decode_all(&self, inner: &Inner, meta: &RunMeta) -> Result<(), StoreError> {
        let (start, id) = (meta.start_unix_ns, meta.id);
        for item in inner.runs.scan_prefix(keys::cpu_prefix(start, id)) {
            let (k, v) = item.map_err(|e| inner.storage("verify", e))?;
            let cpu = keys::parse_cpu_key(&k).unwrap_or_default();
            codec::decode_cpu(cpu, &v, meta.samples)
                .map_err(|d| inner.corrupt(format!("run {id} cpu {cpu} row"), d))?;
        }
        if let Some(v) = inner.runs.get(keys::conn_counts_key(start, id)).map_err(|e| inner.storage("verify", e))? {
            codec::decode_conn_counts(&v, meta.samples)
                .map_err(|d| inner.corrupt(format!("run {id} connection counts"), d))?;
        }
        Ok(())
    }
}
