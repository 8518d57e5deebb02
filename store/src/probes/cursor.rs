//! Reading probe sessions a piece at a time, for readers that must not hold a whole session
//! (the analyses' `probe-cursor`, `query-host/sandbox/src/probes.rs`): listings paged by
//! position ([`Store::probe_sessions_page`]), then a session's head — everything but its calls —
//! and its calls one stored chunk (≤ [`codec::CHUNK_CALLS`]) at a time
//! ([`Store::probe_session_parts`], [`ProbeCallChunks`]).
//!
//! *Why:* [`Store::probe_session`] decodes every call of a session at once, up to
//! [`MAX_SESSION_CALLS`](super::model::MAX_SESSION_CALLS) (1 M calls, ~40 MB in memory); a
//! cursor holding one chunk holds at most 65,536 (~2.6 MB), whatever the session.
//!
//! The store's lock is held for one record read at a time, never between calls, so a slow
//! reader never blocks the writer. A session deleted (retention, `loupe probes delete`)
//! between two chunks ends early: [`ProbeCallChunks::next_chunk`] answers `None` and
//! [`ProbeCallChunks::vanished`] says so. Ids are never reused, so a chunk read later is always
//! the same session's.

use std::ops::Bound;

use super::codec::{self, CHUNK_CALLS};
use super::model::{ProbeCall, ProbeSession, ProbeSessionSummary};
use super::query::{head, summary};
use crate::{Store, StoreError, TimeRange, keys};

/// Where a listing of probe sessions stopped: the last session listed (start, then id: the
/// listing's order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProbePos {
    pub start_unix_ns: u64,
    pub id: u64,
}

impl ProbeSessionSummary {
    /// Where this session sits in a listing.
    pub fn pos(&self) -> ProbePos {
        ProbePos { start_unix_ns: self.start_unix_ns, id: self.id }
    }
}

/// A session's calls, read one stored chunk at a time; see [`Store::probe_session_parts`].
#[derive(Clone)]
pub struct ProbeCallChunks {
    store: Store,
    id: u64,
    start: u64,
    recorded: u64,
    functions: usize,
    next: usize,
    vanished: bool,
}

impl Store {
    /// Up to `limit` summaries of the probe sessions whose start lies in `range`, in start-time
    /// order (then id), after `after` (the last one of the previous page; `None`: from the
    /// start of the range). Like [`Store::probe_sessions`], reads only the metadata records.
    pub fn probe_sessions_page(
        &self,
        range: TimeRange,
        after: Option<ProbePos>,
        limit: usize,
    ) -> Result<Vec<ProbeSessionSummary>, StoreError> {
        range.check()?;
        let (from, to) = (range.from_unix_ns, range.to_unix_ns);
        let mut out = Vec::new();
        if from >= to || limit == 0 || after.is_some_and(|p| p.start_unix_ns >= to) {
            return Ok(out);
        }
        let lo = match after {
            Some(p) if p.start_unix_ns >= from => {
                Bound::Excluded(keys::probe_key(keys::PROBE_META, p.start_unix_ns, p.id).to_vec())
            }
            _ => Bound::Included(keys::batch_bound(keys::PROBE_META, from).to_vec()),
        };
        let hi = Bound::Excluded(keys::batch_bound(keys::PROBE_META, to).to_vec());
        let inner = &*self.inner;
        for item in inner.runs.range::<Vec<u8>, _>((lo, hi)) {
            let (k, v) = item.map_err(|e| inner.storage("list probe sessions", e))?;
            let (start, id, row) = inner.decode_probe_meta(&k, &v)?;
            out.push(summary(id, start, row));
            if out.len() >= limit {
                break;
            }
        }
        Ok(out)
    }

    /// Session `id` without its calls (`calls` empty; functions, histograms and the rest
    /// whole), and a reader of its calls chunk by chunk; `None` if there is no session `id`.
    pub fn probe_session_parts(&self, id: u64) -> Result<Option<(ProbeSession, ProbeCallChunks)>, StoreError> {
        let inner = &*self.inner;
        let Some((start, row)) = ({
            let _r = inner.read_lock();
            inner.probe_meta_by_id(id)?
        }) else {
            return Ok(None);
        };
        let functions = codec::decode_functions(&row.functions.0, &row.names)
            .map_err(|d| inner.corrupt(format!("probe session {id} functions"), d))?;
        let chunks = ProbeCallChunks {
            store: self.clone(),
            id,
            start,
            recorded: row.recorded_calls,
            functions: functions.len(),
            next: 0,
            vanished: false,
        };
        Ok(Some((head(id, start, row, functions), chunks)))
    }
}

impl ProbeCallChunks {
    /// The session's id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Call records the session holds (the length of [`ProbeSession::calls`]).
    pub fn recorded_calls(&self) -> u64 {
        self.recorded
    }

    /// Calls handed out so far.
    pub fn read(&self) -> u64 {
        (self.next as u64 * CHUNK_CALLS as u64).min(self.recorded)
    }

    /// The session was deleted before all its calls were read.
    pub fn vanished(&self) -> bool {
        self.vanished
    }

    /// The next chunk of calls (the first holds calls 0–65,535, and so on: parents are
    /// indexes into the whole session's calls, always smaller than the call's own), or `None`
    /// when every call was read or the session is gone. A chunk missing or not the length the
    /// metadata makes it is [`StoreError::Corrupt`].
    pub fn next_chunk(&mut self) -> Result<Option<Vec<ProbeCall>>, StoreError> {
        let expected = codec::chunk_len(self.recorded, self.next);
        if expected == 0 || self.vanished {
            return Ok(None);
        }
        let (id, chunk) = (self.id, self.next as u32);
        let inner = &*self.store.inner;
        let value = {
            let _r = inner.read_lock();
            let key = keys::probe_calls_key(self.start, id, chunk);
            let op = format!("read probe session {id} calls");
            match inner.runs.get(key).map_err(|e| inner.storage(&op, e))? {
                Some(v) => v,
                None if inner.probe_start(id)?.is_none() => {
                    self.vanished = true;
                    return Ok(None);
                }
                None => {
                    return Err(inner.corrupt(
                        format!("probe session {id} calls"),
                        format!("chunk {chunk} of {} calls is missing", self.recorded),
                    ));
                }
            }
        };
        let calls = codec::decode_chunk(&value, chunk, self.start, self.functions)
            .map_err(|d| inner.corrupt(format!("probe session {id} calls chunk {chunk}"), d))?;
        if calls.len() != expected {
            return Err(inner.corrupt(
                format!("probe session {id} calls chunk {chunk}"),
                format!("{} calls, the metadata makes it {expected}", calls.len()),
            ));
        }
        self.next += 1;
        Ok(Some(calls))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ProbeFunction, Retention};

    fn function(name: &str) -> ProbeFunction {
        ProbeFunction {
            name: name.into(),
            symbol: name.into(),
            binary: "/bin/nf".into(),
            address: 0x1000,
            probe_offset: 0,
            calls: 10,
            sampled: 10,
            total_ns: 1000,
            max_ns: 300,
            buckets: vec![(40, 7), (70, 3)],
        }
    }

    fn session(start: u64, calls: usize) -> ProbeSession {
        ProbeSession {
            id: 0,
            start_unix_ns: start,
            end_unix_ns: start + 1_000_000_000,
            pids: vec![42],
            binary: None,
            sample_every: 1,
            with_calls: calls > 0,
            ended: "duration".into(),
            notes: vec!["a note".into()],
            bias_ns: 25,
            functions: vec![function("handle"), function("parse")],
            calls: (0..calls)
                .map(|i| {
                    let root = i % 2 == 0;
                    let entry = start + i as u64 * 100;
                    ProbeCall {
                        function: u32::from(!root),
                        pid: 42,
                        tid: 42,
                        cpu: 1,
                        entry_unix_ns: entry,
                        exit_unix_ns: entry + 50 + (i % 7) as u64,
                        depth: u32::from(!root),
                        parent: (!root).then(|| i as u32 - 1),
                    }
                })
                .collect(),
            calls_lost: 3,
        }
    }

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), Retention::default()).unwrap();
        (dir, store)
    }

    #[test]
    fn pages_list_every_session_once_in_order() {
        let (_dir, store) = store();
        // Three sessions share a start: the page boundary falls between them.
        let starts = [100, 200, 200, 200, 300, 400];
        let ids: Vec<u64> = starts.iter().map(|&s| store.put_probe_session(session(s, 0)).unwrap()).collect();
        let range = TimeRange::new(150, 400).unwrap();
        let mut seen = Vec::new();
        let mut after = None;
        loop {
            let page = store.probe_sessions_page(range, after, 2).unwrap();
            assert!(page.len() <= 2);
            let Some(last) = page.last() else { break };
            after = Some(last.pos());
            seen.extend(page.iter().map(|s| s.id));
        }
        assert_eq!(seen, ids[1..5].to_vec());
        let all = store.probe_sessions(range, 100).unwrap();
        assert_eq!(store.probe_sessions_page(range, None, 100).unwrap(), all);
        // An `after` before the range starts at the range; one past it lists nothing.
        let before = Some(ProbePos { start_unix_ns: 0, id: 99 });
        assert_eq!(store.probe_sessions_page(range, before, 100).unwrap(), all);
        let past = Some(ProbePos { start_unix_ns: 400, id: 0 });
        assert!(store.probe_sessions_page(range, past, 100).unwrap().is_empty());
        assert!(store.probe_sessions_page(range, None, 0).unwrap().is_empty());
    }

    #[test]
    fn parts_are_the_whole_session_chunk_by_chunk() {
        let (_dir, store) = store();
        let n = 2 * CHUNK_CALLS + 17;
        let id = store.put_probe_session(session(1_000, n)).unwrap();
        let whole = store.probe_session(id).unwrap().unwrap();
        let (head, mut chunks) = store.probe_session_parts(id).unwrap().unwrap();
        assert_eq!(head, ProbeSession { calls: Vec::new(), ..whole.clone() });
        assert_eq!((chunks.id(), chunks.recorded_calls(), chunks.read()), (id, n as u64, 0));
        let mut calls = Vec::new();
        let mut sizes = Vec::new();
        while let Some(c) = chunks.next_chunk().unwrap() {
            sizes.push(c.len());
            calls.extend(c);
        }
        assert_eq!(sizes, vec![CHUNK_CALLS, CHUNK_CALLS, 17]);
        assert_eq!(calls, whole.calls);
        assert_eq!(chunks.read(), n as u64);
        assert!(!chunks.vanished());
        assert_eq!(chunks.next_chunk().unwrap(), None, "fused");
        assert!(store.probe_session_parts(id + 1).unwrap().is_none());
    }

    #[test]
    fn a_session_deleted_midway_ends_early() {
        let (_dir, store) = store();
        let id = store.put_probe_session(session(1_000, CHUNK_CALLS + 5)).unwrap();
        let (_, mut chunks) = store.probe_session_parts(id).unwrap().unwrap();
        assert_eq!(chunks.next_chunk().unwrap().map(|c| c.len()), Some(CHUNK_CALLS));
        assert!(store.delete_probe_session(id).unwrap());
        assert_eq!(chunks.next_chunk().unwrap(), None);
        assert!(chunks.vanished());
        assert_eq!(chunks.read(), CHUNK_CALLS as u64);
    }
}
