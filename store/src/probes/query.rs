//! Reading probe sessions back: a listing from the metadata alone, a whole session by id, and
//! deleting one.

use super::codec::{self, MetaRow};
use super::model::{ProbeFunction, ProbeSession, ProbeSessionSummary};
use crate::{Inner, Store, StoreError, TimeRange};

/// A session from its metadata and decoded functions, without its calls.
pub(super) fn head(id: u64, start: u64, row: MetaRow<'_>, functions: Vec<ProbeFunction>) -> ProbeSession {
    ProbeSession {
        id,
        start_unix_ns: start,
        end_unix_ns: row.end,
        pids: row.pids,
        binary: row.binary,
        sample_every: row.sample_every,
        with_calls: row.with_calls,
        ended: row.ended,
        notes: row.notes,
        bias_ns: row.bias_ns,
        functions,
        calls: Vec::new(),
        calls_lost: row.calls_lost,
    }
}

pub(super) fn summary(id: u64, start: u64, row: MetaRow<'_>) -> ProbeSessionSummary {
    ProbeSessionSummary {
        id,
        start_unix_ns: start,
        end_unix_ns: row.end,
        pids: row.pids,
        binary: row.binary,
        functions: row.names,
        calls: row.calls,
        recorded_calls: row.recorded_calls,
        ended: row.ended,
        stored_bytes: row.stored_bytes,
    }
}

impl Store {
    /// Summaries of the probe sessions whose start lies in `range`, in start-time order (then
    /// id), at most `limit` (the first ones). Reads only the metadata records: neither calls
    /// nor histograms are decoded.
    pub fn probe_sessions(&self, range: TimeRange, limit: usize) -> Result<Vec<ProbeSessionSummary>, StoreError> {
        range.check()?;
        let mut out = Vec::new();
        if limit == 0 {
            return Ok(out);
        }
        self.inner.for_each_probe(range.from_unix_ns, range.to_unix_ns, |start, id, row| {
            out.push(summary(id, start, row));
            Ok(out.len() < limit)
        })?;
        Ok(out)
    }

    /// A whole probe session (functions, histograms, every call), or `None` if there is no
    /// session `id` (never stored, deleted, or aged out).
    pub fn probe_session(&self, id: u64) -> Result<Option<ProbeSession>, StoreError> {
        let inner = &*self.inner;
        // Read the records under the visibility lock (never half a session), decode after.
        let (start, row, chunks) = {
            let _r = inner.read_lock();
            let Some((start, row)) = inner.probe_meta_by_id(id)? else {
                return Ok(None);
            };
            let chunks = inner.probe_chunks(start, id)?;
            (start, row, chunks)
        };
        let functions = codec::decode_functions(&row.functions.0, &row.names)
            .map_err(|d| inner.corrupt(format!("probe session {id} functions"), d))?;
        let calls = decode_calls(inner, id, start, &row, &chunks)?;
        Ok(Some(ProbeSession { calls, ..head(id, start, row, functions) }))
    }

    /// Deletes a probe session and all its records in one atomic batch, with the totals.
    /// `false` if there was no such session. Its id is not reused.
    pub fn delete_probe_session(&self, id: u64) -> Result<bool, StoreError> {
        let inner = &*self.inner;
        let _w = inner.lock_writer();
        let Some((start, row)) = inner.probe_meta_by_id(id)? else {
            return Ok(false);
        };
        inner.delete_probe_locked(start, id, &row)?;
        inner.flush(&format!("flush delete of probe session {id}"))?;
        Ok(true)
    }
}

/// Decodes a session's chunks and checks them against its metadata: chunks 0, 1, … with no
/// gap, each full but the last, as many calls as the metadata says.
pub(crate) fn decode_calls(
    inner: &Inner,
    id: u64,
    start: u64,
    row: &MetaRow<'_>,
    chunks: &[(u32, sled::IVec)],
) -> Result<Vec<super::model::ProbeCall>, StoreError> {
    let what = || format!("probe session {id} calls");
    let want = row.chunks();
    let numbers: Vec<u32> = chunks.iter().map(|c| c.0).collect();
    if numbers.len() != want || numbers.iter().enumerate().any(|(i, &c)| c as usize != i) {
        return Err(inner.corrupt(
            what(),
            format!("{} calls take chunks 0..{want}, but chunks {numbers:?} are stored", row.recorded_calls),
        ));
    }
    // `recorded_calls` ≤ MAX_SESSION_CALLS (checked with the metadata).
    let mut calls = Vec::with_capacity(row.recorded_calls as usize);
    for (c, v) in chunks {
        let part = codec::decode_chunk(v, *c, start, row.names.len())
            .map_err(|d| inner.corrupt(format!("probe session {id} calls chunk {c}"), d))?;
        let expected = codec::chunk_len(row.recorded_calls, *c as usize);
        if part.len() != expected {
            return Err(inner.corrupt(
                format!("probe session {id} calls chunk {c}"),
                format!("{} calls, the metadata makes it {expected}", part.len()),
            ));
        }
        calls.extend(part);
    }
    Ok(calls)
}
