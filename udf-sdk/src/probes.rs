//! Reading stored probe sessions (`loupe probe`): each session's functions with their latency
//! histograms, then, batch by batch, its recorded calls with their parents.

use crate::bindings::loupe::udf::data as host;
use crate::data::{Batched, NextBatch};
use crate::{LatencyBucket, ProbeCall, ProbeFunction, ProbeSession, TimeRange};

/// Probe sessions that started in `range`, oldest first; [`open`](ProbeQuery::open) them, then
/// take each session and, if you want them, its calls:
///
/// ```no_run
/// # fn f(range: loupe_udf::TimeRange) -> Result<(), String> {
/// let mut sessions = loupe_udf::probes(range).open()?;
/// while let Some(session) = sessions.next_session() {
///     for f in &session.functions {
///         let p99 = f.quantile_ns(0.99).map(|ns| session.unbiased(ns));
///     }
///     for call in sessions.calls() {
///         // call.function indexes session.functions; call.parent indexes the calls before it
///     }
/// }
/// # Ok(()) }
/// ```
pub fn probes(range: TimeRange) -> ProbeQuery {
    ProbeQuery { range }
}

/// Which probe sessions to read; see [`probes`].
#[derive(Clone, Debug)]
#[must_use = "a query reads nothing until opened"]
pub struct ProbeQuery {
    range: TimeRange,
}

impl ProbeQuery {
    /// Opens the host cursor (one host call), or the host's reason why not.
    pub fn open(self) -> Result<ProbeSessions, String> {
        let cursor = host::open_probes(self.range)?;
        Ok(ProbeSessions { cursor, sessions: 0 })
    }
}

/// The sessions of an opened [`ProbeQuery`]: one host call per session
/// ([`next_session`](Self::next_session)), and one per batch of up to 16 Ki of its calls
/// ([`calls`](Self::calls)). As an iterator it yields the sessions alone (their calls are
/// skipped, never copied).
pub struct ProbeSessions {
    cursor: host::ProbeCursor,
    sessions: u64,
}

impl ProbeSessions {
    /// The next session: its functions with their histograms, not its calls (`None` when there
    /// are no more). Calls of the previous session not read yet are skipped.
    pub fn next_session(&mut self) -> Option<ProbeSession> {
        self.sessions += 1;
        self.cursor.next_session()
    }

    /// The current session's calls (the last [`next_session`](Self::next_session)'s), in stored
    /// order: by thread, then entry time. The `i`-th call handed out (from 0) is the one other
    /// calls name as `parent: Some(i)`; a parent always comes before its children. An
    /// iterator, and batch by batch with [`Batched::next_batch`]; empty before the first
    /// session or without recorded calls.
    pub fn calls(&mut self) -> ProbeCalls<'_> {
        Batched::new(CallBatches { cursor: &self.cursor })
    }

    /// `next-session` calls made so far.
    pub fn host_calls(&self) -> u64 {
        self.sessions
    }
}

impl Iterator for ProbeSessions {
    type Item = ProbeSession;

    fn next(&mut self) -> Option<ProbeSession> {
        self.next_session()
    }
}

/// The current session's calls as a [`NextBatch`] cursor (see [`ProbeSessions::calls`]).
pub struct CallBatches<'a> {
    cursor: &'a host::ProbeCursor,
}

impl NextBatch for CallBatches<'_> {
    type Item = ProbeCall;
    type Batch = std::vec::IntoIter<ProbeCall>;

    fn next_batch(&mut self) -> Self::Batch {
        self.cursor.next_calls().into_iter()
    }
}

/// The calls of one probe session, one host call per batch of up to 16 Ki.
pub type ProbeCalls<'a> = Batched<CallBatches<'a>>;

/// The `q` quantile (0–1) of a latency histogram, nearest rank, read at its bucket's midpoint —
/// what `loupe probes show` reports (before subtracting the bias); `None` for an empty one.
pub fn histogram_quantile(histogram: &[LatencyBucket], q: f64) -> Option<u64> {
    let total = histogram.iter().fold(0u64, |a, b| a.saturating_add(b.count));
    if total == 0 {
        return None;
    }
    let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
    let mut seen = 0u64;
    for b in histogram {
        seen = seen.saturating_add(b.count);
        if seen >= rank {
            return Some(b.low_ns + b.high_ns.saturating_sub(b.low_ns) / 2);
        }
    }
    histogram.last().map(|b| b.low_ns)
}

impl ProbeFunction {
    /// The `q` quantile (0–1) of its timed calls' durations, from the histogram (see
    /// [`histogram_quantile`]); the probes' own cost included: subtract it with
    /// [`ProbeSession::unbiased`].
    pub fn quantile_ns(&self, q: f64) -> Option<u64> {
        histogram_quantile(&self.histogram, q)
    }

    /// The mean duration of its timed calls (the probes' cost included); `None` if none was timed.
    pub fn mean_ns(&self) -> Option<u64> {
        (self.timed > 0).then(|| self.total_ns / self.timed)
    }
}

impl ProbeSession {
    /// A duration with the probes' own cost ([`bias_ns`](Self::bias_ns)) taken out, as
    /// `loupe probes show` reports quantiles and means.
    pub fn unbiased(&self, ns: u64) -> u64 {
        ns.saturating_sub(self.bias_ns)
    }

    /// `end_ns - start_ns`.
    pub fn duration_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }

    /// The name of function `index` (a call's `function`), `"#index"` if out of range.
    pub fn function_name(&self, index: u32) -> std::borrow::Cow<'_, str> {
        match self.functions.get(index as usize) {
            Some(f) => std::borrow::Cow::Borrowed(f.name.as_str()),
            None => std::borrow::Cow::Owned(format!("#{index}")),
        }
    }
}

impl ProbeCall {
    /// `exit_ns - entry_ns`.
    pub fn duration_ns(&self) -> u64 {
        self.exit_ns.saturating_sub(self.entry_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket(low_ns: u64, high_ns: u64, count: u64) -> LatencyBucket {
        LatencyBucket { low_ns, high_ns, count }
    }

    #[test]
    fn quantiles_are_nearest_rank_at_the_bucket_midpoint() {
        // 90 calls in [100, 110), 9 in [1000, 1064), 1 in [8192, 8704).
        let h = [bucket(100, 110, 90), bucket(1000, 1064, 9), bucket(8192, 8704, 1)];
        assert_eq!(histogram_quantile(&h, 0.5), Some(105));
        assert_eq!(histogram_quantile(&h, 0.9), Some(105), "rank 90 is the 90th call");
        assert_eq!(histogram_quantile(&h, 0.91), Some(1032));
        assert_eq!(histogram_quantile(&h, 0.99), Some(1032));
        assert_eq!(histogram_quantile(&h, 1.0), Some(8448));
        assert_eq!(histogram_quantile(&h, 0.0), Some(105), "rank 1 at least");
        assert_eq!(histogram_quantile(&h, 7.0), Some(8448), "q clamped");
        assert_eq!(histogram_quantile(&[], 0.5), None);
        // Hostile counts saturate instead of overflowing; the last bucket may end at 2^64 - 1.
        let huge = [bucket(5, 6, u64::MAX), bucket(u64::MAX - 1, u64::MAX, u64::MAX)];
        assert_eq!(histogram_quantile(&huge, 1.0), Some(5));
        assert_eq!(histogram_quantile(&[bucket(u64::MAX, u64::MAX, 1)], 0.5), Some(u64::MAX));
    }

    #[test]
    fn sessions_take_the_bias_out() {
        let f = ProbeFunction {
            name: "parse".into(),
            symbol: "parse".into(),
            binary: "/bin/nf".into(),
            calls: 4,
            timed: 2,
            total_ns: 300,
            max_ns: 200,
            histogram: vec![bucket(100, 101, 1), bucket(200, 201, 1)],
        };
        let s = ProbeSession {
            id: 1,
            start_ns: 10,
            end_ns: 25,
            pids: vec![],
            binary: None,
            sample_every: 1,
            ended: "duration".into(),
            notes: vec![],
            bias_ns: 30,
            functions: vec![f],
            recorded_calls: 0,
            calls_lost: 0,
        };
        let f = &s.functions[0];
        assert_eq!((f.quantile_ns(0.5), f.mean_ns()), (Some(100), Some(150)));
        assert_eq!((s.unbiased(100), s.unbiased(20)), (70, 0));
        assert_eq!((s.duration_ns(), s.function_name(0), s.function_name(3)), (15, "parse".into(), "#3".into()));
    }
}
