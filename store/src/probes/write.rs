//! Storing a probe session: checked whole first, encoded outside the writer lock, then its
//! records and the updated totals (with the id counter) in one atomic sled batch, flushed; then
//! the caller's retention pass (the store's `put` module composes the two, so that this module
//! never names retention).

use super::codec::{self, CHUNK_CALLS};
use super::model::{MAX_SESSION_CALLS, MAX_SESSION_FUNCTIONS, ProbeSession};
#[cfg(doc)]
use crate::Store;
use crate::{Inner, RetentionReport, StoreError, keys};

/// What is wrong with a session, if anything: what `put_probe_session` refuses. The decoders
/// rely on it (function and parent indexes in range, parents before their children, exits not
/// before entries) and check the same bounds on their own for records that did not come this
/// way.
pub(crate) fn validate(s: &ProbeSession) -> Result<(), String> {
    if s.functions.len() > MAX_SESSION_FUNCTIONS {
        return Err(format!("{} functions, more than {MAX_SESSION_FUNCTIONS}", s.functions.len()));
    }
    if s.calls.len() > MAX_SESSION_CALLS {
        return Err(format!(
            "{} call records, more than {MAX_SESSION_CALLS}; keep the first ones and count the rest in calls_lost",
            s.calls.len()
        ));
    }
    for (i, f) in s.functions.iter().enumerate() {
        codec::check_function(f).map_err(|e| format!("function {i} ({:?}): {e}", short(&f.name)))?;
    }
    let n = s.functions.len();
    for (i, c) in s.calls.iter().enumerate() {
        if c.function as usize >= n {
            return Err(format!("call {i} names function {}, the session has {n}", c.function));
        }
        if let Some(p) = c.parent
            && p as usize >= i
        {
            return Err(format!("call {i} names call {p} as its parent; a parent must come before its children"));
        }
        if c.exit_unix_ns < c.entry_unix_ns {
            return Err(format!("call {i} exits at {} before it enters at {}", c.exit_unix_ns, c.entry_unix_ns));
        }
    }
    // Sizes of the rest (strings, PIDs, notes, times) as the reader checks them.
    codec::check_meta(&codec::meta_row_head(s), s.start_unix_ns)
}

/// A name as an error message shows it: at most 64 characters.
fn short(name: &str) -> String {
    match name.char_indices().nth(64) {
        Some((at, _)) => format!("{}…", &name[..at]),
        None => name.to_string(),
    }
}

impl Inner {
    /// Checks, encodes and stores a whole probe session: [`Store::put_probe_session`] but for
    /// retention. Once the session is durable, still under the writer lock, `retain(id)` runs:
    /// the caller's retention pass, which must spare session `id`; what it deleted is flushed
    /// before this returns.
    pub(crate) fn write_probe_session(
        &self,
        session: ProbeSession,
        retain: impl FnOnce(u64) -> Result<RetentionReport, StoreError>,
    ) -> Result<u64, StoreError> {
        let start = session.start_unix_ns;
        validate(&session)
            .map_err(|e| StoreError::InvalidProbeSession(format!("the session starting at {start}: {e}")))?;
        let chunks: Vec<Vec<u8>> = session
            .calls
            .chunks(CHUNK_CALLS)
            .enumerate()
            .map(|(c, calls)| codec::encode_chunk(calls, c * CHUNK_CALLS, start))
            .collect();
        let mut row = codec::meta_row(&session);
        drop(session);

        let inner = self;
        let _w = inner.lock_writer();
        let mut totals = inner.probe_totals()?;
        let id = totals.last_id.checked_add(1).ok_or_else(|| {
            StoreError::InvalidProbeSession("the probe session ids ran out (the totals record says 2^64 - 1)".into())
        })?;
        let mut records: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(chunks.len() + 2);
        for (c, v) in chunks.into_iter().enumerate() {
            records.push((keys::probe_calls_key(start, id, c as u32).to_vec(), v));
        }
        records.push((keys::probe_index_key(id).to_vec(), start.to_be_bytes().to_vec()));
        let others: u64 = records.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum();
        let key = keys::probe_key(keys::PROBE_META, start, id);
        let (stored_bytes, value) = crate::encoding::self_counting_record(others, key.len(), |bytes| {
            row.stored_bytes = bytes;
            codec::encode_meta(&row)
        });
        let max_bytes = inner.retention.max_bytes;
        if stored_bytes > max_bytes {
            return Err(StoreError::TooLarge { bytes: stored_bytes, max_bytes });
        }
        records.push((key.to_vec(), value));
        totals.sessions = totals.sessions.saturating_add(1);
        totals.calls = totals.calls.saturating_add(row.recorded_calls);
        totals.bytes = totals.bytes.saturating_add(stored_bytes);
        totals.last_id = id;
        let mut batch = sled::Batch::default();
        for (k, v) in records {
            batch.insert(k, v);
        }
        batch.insert(keys::PROBE_TOTALS, totals.encode());
        inner.apply_adding(batch, &format!("write probe session {id}"))?;
        inner.flush(&format!("flush probe session {id}"))?;
        let report = retain(id)?;
        if report.deleted_anything() {
            inner.flush("flush retention deletes")?;
        }
        Ok(id)
    }
}
