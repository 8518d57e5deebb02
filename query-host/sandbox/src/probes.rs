//! The `probe-cursor` of the `loupe:udf/data` interface: stored probe sessions (`loupe probe`)
//! that started in a range, one per `next-session`, each followed by its recorded calls in
//! batches of at most [`PROBE_CALL_PAGE`] (`next-calls`).
//!
//! What a probe cursor holds in the host is bounded whatever the sessions and the analysis:
//! the positions of one page of listed sessions ([`PROBE_SESSION_PAGE`]), and of the current
//! session one stored chunk of calls (at most 65,536, ~2.6 MB: the store reads a session's
//! calls a chunk at a time, `loupe_store::ProbeCallChunks`), never a whole session of up to a
//! million calls, never every session of the range. What one call hands the guest is bounded
//! too: a session's head is at most 64 functions of at most 1,024 buckets (~1.5 MiB of
//! histograms, plus the strings' and notes' bounds of the store), and a batch of calls
//! [`PROBE_CALL_PAGE`] calls of 48 bytes each in guest memory ([`MAX_PROBE_CALL_BATCH_BYTES`]).
//! The guest passes nothing but the range (checked like every other cursor's) and the cursor
//! handle (wasmtime's resource table checks it); a probe cursor counts against
//! [`MAX_OPEN_CURSORS`](super::host::MAX_OPEN_CURSORS) like the others.

use std::collections::VecDeque;

use loupe_store::{ProbeCall, ProbeSession, TimeRange as StoreRange};
use wasmtime::component::Resource;

use super::{
    bindings::{Level, loupe, wit},
    cursors::ProbeCursor,
    host::{DataHost, trap},
};

/// Most calls per `probe-cursor.next-calls` call.
pub const PROBE_CALL_PAGE: usize = 16 * 1024;
/// Guest memory of one `probe-call` in a list (the canonical ABI's layout: four `u32`, two
/// `u64`, a `u32` and an `option<u32>`, aligned to 8).
pub const PROBE_CALL_GUEST_BYTES: usize = 48;
/// Most bytes of calls one `next-calls` copies into the guest: 768 KiB.
pub const MAX_PROBE_CALL_BATCH_BYTES: usize = PROBE_CALL_PAGE * PROBE_CALL_GUEST_BYTES;
/// Sessions a probe cursor lists from the store at a time (positions only).
pub const PROBE_SESSION_PAGE: usize = 8;

impl ProbeCursor {
    pub fn new(range: StoreRange) -> Self {
        ProbeCursor {
            range,
            listed: VecDeque::new(),
            after: None,
            listed_all: false,
            calls: None,
            pending: VecDeque::new(),
        }
    }

    /// Calls held in the host now (the rest of one stored chunk at most).
    pub fn held_calls(&self) -> usize {
        self.pending.len()
    }
}

impl DataHost {
    pub(super) fn open_probe_cursor(
        &mut self,
        range: wit::TimeRange,
    ) -> wasmtime::Result<Result<Resource<ProbeCursor>, String>> {
        let range = match self.range(range) {
            Ok(r) => r,
            Err(e) => return Ok(Err(e)),
        };
        self.open_cursor()?;
        Ok(Ok(self.table.push(ProbeCursor::new(range))?))
    }
}

impl loupe::udf::data::HostProbeCursor for DataHost {
    fn next_session(&mut self, cursor: Resource<ProbeCursor>) -> wasmtime::Result<Option<wit::ProbeSession>> {
        let store = self.store.clone();
        let c = self.table.get_mut(&cursor)?;
        // Whatever is left of the previous session is skipped, not read.
        c.calls = None;
        c.pending = VecDeque::new();
        loop {
            if c.listed.is_empty() && !c.listed_all {
                let page = store.probe_sessions_page(c.range, c.after, PROBE_SESSION_PAGE).map_err(trap)?;
                c.listed_all = page.len() < PROBE_SESSION_PAGE;
                c.after = page.last().map(|s| s.pos()).or(c.after);
                c.listed = page.iter().map(|s| s.pos()).collect();
            }
            let Some(pos) = c.listed.pop_front() else { return Ok(None) };
            // A session deleted by retention since it was listed is skipped.
            if let Some((head, calls)) = store.probe_session_parts(pos.id).map_err(trap)? {
                let session = wit_session(&head, calls.recorded_calls());
                c.calls = Some(calls);
                return Ok(Some(session));
            }
        }
    }

    fn next_calls(&mut self, cursor: Resource<ProbeCursor>) -> wasmtime::Result<Vec<wit::ProbeCall>> {
        let c = self.table.get_mut(&cursor)?;
        let Some(chunks) = c.calls.as_mut() else { return Ok(Vec::new()) };
        if c.pending.is_empty() {
            match chunks.next_chunk().map_err(trap)? {
                Some(chunk) => c.pending = chunk.into(),
                None => {
                    let gone = chunks.vanished().then(|| (chunks.id(), chunks.read(), chunks.recorded_calls()));
                    c.calls = None;
                    if let Some((id, read, recorded)) = gone {
                        self.log.push(
                            Level::Warn,
                            format!(
                                "probe session {id} was deleted (retention) while being read: \
                                 {read} of its {recorded} calls were handed out"
                            ),
                        );
                    }
                    return Ok(Vec::new());
                }
            }
        }
        let n = c.pending.len().min(PROBE_CALL_PAGE);
        Ok(c.pending.drain(..n).map(wit_call).collect())
    }

    fn drop(&mut self, cursor: Resource<ProbeCursor>) -> wasmtime::Result<()> {
        self.table.delete(cursor)?;
        self.close_cursor();
        Ok(())
    }
}

fn wit_session(s: &ProbeSession, recorded_calls: u64) -> wit::ProbeSession {
    wit::ProbeSession {
        id: s.id,
        start_ns: s.start_unix_ns,
        end_ns: s.end_unix_ns,
        pids: s.pids.clone(),
        binary: s.binary.clone(),
        sample_every: s.sample_every,
        ended: s.ended.clone(),
        notes: s.notes.clone(),
        bias_ns: s.bias_ns,
        functions: s
            .functions
            .iter()
            .map(|f| wit::ProbeFunction {
                name: f.name.clone(),
                symbol: f.symbol.clone(),
                binary: f.binary.clone(),
                calls: f.calls,
                timed: f.sampled,
                total_ns: f.total_ns,
                max_ns: f.max_ns,
                histogram: f
                    .buckets
                    .iter()
                    .map(|&(b, count)| wit::LatencyBucket {
                        low_ns: loupe_bpf_common::probes::bucket_low(b),
                        high_ns: loupe_bpf_common::probes::bucket_high(b),
                        count,
                    })
                    .collect(),
            })
            .collect(),
        recorded_calls,
        calls_lost: s.calls_lost,
    }
}

fn wit_call(c: ProbeCall) -> wit::ProbeCall {
    wit::ProbeCall {
        function: c.function,
        pid: c.pid,
        tid: c.tid,
        cpu: c.cpu,
        entry_ns: c.entry_unix_ns,
        exit_ns: c.exit_unix_ns,
        depth: c.depth,
        parent: c.parent,
    }
}
