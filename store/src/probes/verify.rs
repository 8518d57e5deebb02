//! The probe part of [`crate::Store::verify`]: every session whole (metadata, index entry,
//! exactly the chunks its call count takes), every record decodable, byte counts and totals
//! exact, the id counter past every id.

use std::collections::BTreeMap;

use super::codec::{self, MetaRow};
use crate::keys::{self, ProbeTotals};
use crate::{Inner, StoreError, VerifyReport};

#[derive(Default)]
struct SessionSeen {
    meta: Option<MetaRow<'static>>,
    bytes: u64,
}

/// Probe records met during the verify scan.
#[derive(Default)]
pub(crate) struct ProbeSeen {
    sessions: BTreeMap<(u64, u64), SessionSeen>,
    /// `j` entries: id → (start it names, bytes).
    index: BTreeMap<u64, (Option<u64>, u64)>,
    totals: Option<ProbeTotals>,
}

impl ProbeSeen {
    /// Takes the record if it is a probe record; `false` if it is not one.
    pub(crate) fn observe(&mut self, k: &[u8], v: &[u8], report: &mut VerifyReport) -> bool {
        let size = (k.len() + v.len()) as u64;
        match k.first().copied() {
            Some(keys::PROBE_META) if k.len() == 17 => {
                let (start, id) = keys::parse_batch_key(k).unwrap_or_default();
                let seen = self.sessions.entry((start, id)).or_default();
                seen.bytes += size;
                match codec::decode_meta(v, start) {
                    Ok(row) => {
                        if let Err(d) = codec::decode_functions(&row.functions.0, &row.names) {
                            report.problems.push(format!("probe session {id} functions: {d}"));
                        }
                        seen.meta = Some(row.into_owned());
                    }
                    Err(d) => report.problems.push(format!("probe session {id} metadata: {d}")),
                }
                true
            }
            Some(keys::PROBE_CALLS) if k.len() == 21 => {
                let (start, id, _) = keys::parse_probe_calls_key(k).unwrap_or_default();
                self.sessions.entry((start, id)).or_default().bytes += size;
                true
            }
            Some(keys::PROBE_INDEX) if k.len() == 9 => {
                let id = keys::decode_u64(&k[1..]).unwrap_or_default();
                self.index.insert(id, (keys::decode_u64(v), size));
                true
            }
            _ if k == keys::PROBE_TOTALS => {
                match ProbeTotals::decode(v) {
                    Some(t) => self.totals = Some(t),
                    None => report.problems.push("probe totals record does not decode".into()),
                }
                true
            }
            _ => false,
        }
    }

    /// Cross-checks everything seen; decodes every session's calls, one session at a time.
    pub(crate) fn finish(mut self, inner: &Inner, report: &mut VerifyReport) -> Result<(), StoreError> {
        let totals = self.totals.unwrap_or_default();
        let mut max_id = 0;
        for (&(start, id), seen) in &self.sessions {
            max_id = max_id.max(id);
            let p = &mut report.problems;
            let index = self.index.remove(&id);
            let Some(meta) = &seen.meta else {
                p.push(format!("probe session {id}: records without metadata (half-written or half-deleted)"));
                continue;
            };
            report.probe_sessions += 1;
            report.probe_calls += meta.recorded_calls;
            report.probe_bytes += meta.stored_bytes;
            let index_bytes = match index {
                None => {
                    p.push(format!("probe session {id}: no index entry"));
                    0
                }
                Some((at, bytes)) => {
                    if at != Some(start) {
                        p.push(format!("probe session {id}: index says it starts at {at:?}, its key {start}"));
                    }
                    bytes
                }
            };
            if seen.bytes + index_bytes != meta.stored_bytes {
                p.push(format!(
                    "probe session {id}: records take {} bytes, metadata says {}",
                    seen.bytes + index_bytes,
                    meta.stored_bytes
                ));
            }
            let decoded = inner
                .probe_chunks(start, id)
                .and_then(|chunks| super::query::decode_calls(inner, id, start, meta, &chunks).map(drop));
            if let Err(e) = decoded {
                p.push(e.to_string());
            }
        }
        for id in self.index.keys() {
            report.problems.push(format!("probe session {id}: index entry without a session"));
            max_id = max_id.max(*id);
        }
        let counted = (report.probe_sessions, report.probe_calls, report.probe_bytes);
        let recorded = (totals.sessions, totals.calls, totals.bytes);
        if counted != recorded {
            report.problems.push(format!(
                "probe totals say (sessions, calls, bytes) = {recorded:?}, records add up to {counted:?}"
            ));
        }
        if max_id > totals.last_id {
            report.problems.push(format!(
                "probe session {max_id} is past the id counter {} (ids could be reused)",
                totals.last_id
            ));
        }
        Ok(())
    }
}
