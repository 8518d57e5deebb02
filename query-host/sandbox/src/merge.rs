//! Merging the hosts' results of a fleet-wide analysis with the analysis' own `merge` export
//! (the WIT `fleet-analysis` world), in the same sandbox and under the same limits as any
//! invocation: a fresh `Store` per call, the time, memory and output limits, a concurrency slot.
//!
//! Partials are merged in groups of at most [`FAN_IN`], then the merged results again, until
//! one is left — a tree, which bounds what one call copies into the guest (at most `FAN_IN`
//! partials of at most 768 KiB each) however many hosts answered. That is only correct because
//! the contract makes `merge` commutative and associative; the property tests hold the example
//! analyses to it. The data functions refuse inside `merge` ([`super::host::DataHost::merging`]).

use std::time::Instant;

use loupe_store::{Store, TimeRange};

use super::{
    UdfError,
    bindings::{HostInfo, wit},
    log::InvocationLog,
    merge_world::Merger,
    output,
    params::resolve_params,
    partial::Decoded,
    runtime::{Compiled, InvocationReport, Runtime},
    sandbox::State,
};

/// Partials per `merge` call.
pub const FAN_IN: usize = 64;

/// The module's merge entry and its parameters, checked against its description.
fn merge_of<'a>(
    compiled: &'a Compiled,
    params: &serde_json::Map<String, serde_json::Value>,
) -> Result<(&'a Merger, Vec<wit::Param>), UdfError> {
    let pre = compiled.merge.as_ref().ok_or_else(|| UdfError::NotMergeable(compiled.description.name.clone()))?;
    Ok((pre, resolve_params(&compiled.description.params, params)?))
}

fn wit_range(range: TimeRange) -> wit::TimeRange {
    wit::TimeRange { from_ns: range.from_unix_ns(), to_ns: range.to_unix_ns() }
}

impl Runtime {
    /// Merges `partials` (each a result of `run` on some host) into one result, bounded like an
    /// invocation's. `store` and `info` only satisfy the sandbox: merge reads no data.
    #[allow(clippy::too_many_arguments)]
    pub fn merge(
        &self,
        compiled: &Compiled,
        team: &str,
        store: &Store,
        info: &HostInfo,
        range: TimeRange,
        params: &serde_json::Map<String, serde_json::Value>,
        partials: Vec<Decoded>,
    ) -> Result<InvocationReport, UdfError> {
        let started = Instant::now();
        let (raw, log, peak) = self.merge_raw(compiled, team, store, info, range, params, partials)?;
        let raw = match raw {
            Decoded::Output(o) => o,
            Decoded::Columns(c) => output::columns_output(c),
        };
        let output = output::bounded(raw, self.limits().output_bytes)?;
        let output_bytes = serde_json::to_vec(&output).map(|v| v.len()).unwrap_or(usize::MAX);
        if output_bytes > self.limits().output_bytes {
            return Err(UdfError::OutputTooLarge { size: output_bytes, limit: self.limits().output_bytes });
        }
        Ok(InvocationReport {
            output,
            log,
            elapsed_ns: started.elapsed().as_nanos() as u64,
            peak_memory_bytes: peak,
            output_bytes,
        })
    }

    /// Merges `partials` into one partial, encoded for the wire as a host's own would be
    /// (within the same bounds and [`super::partial::MAX_PARTIAL_BYTES`]): what a leaf's
    /// coordinator sends up a tree merge. Its log lines come back beside it.
    #[allow(clippy::too_many_arguments)]
    pub fn merge_to_partial(
        &self,
        compiled: &Compiled,
        team: &str,
        store: &Store,
        info: &HostInfo,
        range: TimeRange,
        params: &serde_json::Map<String, serde_json::Value>,
        partials: Vec<Decoded>,
    ) -> Result<(Vec<u8>, InvocationLog), UdfError> {
        let (raw, log, _peak) = self.merge_raw(compiled, team, store, info, range, params, partials)?;
        if let Decoded::Output(o) = &raw {
            output::bounded(o.clone(), self.limits().output_bytes)?;
        }
        Ok((super::partial::encode_decoded(&raw)?, log))
    }

    /// The merge itself: groups of at most [`FAN_IN`], then their results again, until one is
    /// left; with the calls' logs and the peak memory of any call.
    #[allow(clippy::too_many_arguments)]
    fn merge_raw(
        &self,
        compiled: &Compiled,
        team: &str,
        store: &Store,
        info: &HostInfo,
        range: TimeRange,
        params: &serde_json::Map<String, serde_json::Value>,
        partials: Vec<Decoded>,
    ) -> Result<(Decoded, InvocationLog, usize), UdfError> {
        if partials.is_empty() {
            return Err(UdfError::BadPartial("nothing to merge".into()));
        }
        let (pre, params) = merge_of(compiled, params)?;
        let _slot = self.slot(team)?;
        let _ticking = self.ticking();
        let range = wit_range(range);
        let mut log = InvocationLog::new(self.limits().log_bytes);
        let mut peak = 0;
        let mut level = partials;
        loop {
            let mut next = Vec::with_capacity(level.len().div_ceil(FAN_IN));
            let mut rest = level.into_iter().peekable();
            while rest.peek().is_some() {
                let group: Vec<Decoded> = rest.by_ref().take(FAN_IN).collect();
                let (merged, state) = self.merge_once(pre, store, info, range, &params, group)?;
                for line in state.data.log.lines {
                    log.push_line(line);
                }
                peak = peak.max(state.limiter.peak_memory);
                next.push(merged);
            }
            level = next;
            if level.len() == 1 {
                break;
            }
        }
        Ok((level.pop().expect("one merged result"), log, peak))
    }

    /// One `merge` call over `group`, its raw result (itself a partial): what [`Runtime::merge`]
    /// does per group, open to tests that build their own trees of merges.
    #[allow(clippy::too_many_arguments)]
    pub fn merge_group(
        &self,
        compiled: &Compiled,
        team: &str,
        store: &Store,
        info: &HostInfo,
        range: TimeRange,
        params: &serde_json::Map<String, serde_json::Value>,
        group: Vec<Decoded>,
    ) -> Result<Decoded, UdfError> {
        let (pre, params) = merge_of(compiled, params)?;
        let _slot = self.slot(team)?;
        let _ticking = self.ticking();
        Ok(self.merge_once(pre, store, info, wit_range(range), &params, group)?.0)
    }

    /// One `merge` (or `merge-columns`) call in a fresh store. Every partial must be of the
    /// analysis' kind: a table from an older version of a columnar analysis is refused.
    fn merge_once(
        &self,
        merger: &Merger,
        store: &Store,
        info: &HostInfo,
        range: wit::TimeRange,
        params: &[wit::Param],
        group: Vec<Decoded>,
    ) -> Result<(Decoded, State), UdfError> {
        let mut st = self.new_store(store, info, self.limits().clone());
        st.data_mut().data.merging = true;
        let result = match merger {
            Merger::Rows(pre) => {
                let group = of_kind(group, "a columnar partial for an analysis that merges results", |d| match d {
                    Decoded::Output(o) => Some(o),
                    Decoded::Columns(_) => None,
                })?;
                let analysis = pre.instantiate(&mut st).map_err(|e| self.classify(e, &mut st, "instantiating"))?;
                let merged = analysis.call_merge(&mut st, range, params, &group);
                merged.map_err(|e| self.classify(e, &mut st, "merge()"))?.map(Decoded::Output)
            }
            Merger::Columns(pre) => {
                let group = of_kind(group, "a table partial for an analysis with columnar partials", |d| match d {
                    Decoded::Columns(c) => Some(c),
                    Decoded::Output(_) => None,
                })?;
                let analysis = pre.instantiate(&mut st).map_err(|e| self.classify(e, &mut st, "instantiating"))?;
                let merged = analysis.call_merge_columns(&mut st, range, params, &group);
                merged.map_err(|e| self.classify(e, &mut st, "merge-columns()"))?.map(Decoded::Columns)
            }
        };
        st.data_mut().collect_output();
        match result {
            Ok(Decoded::Columns(c)) => {
                output::check_columns(&c).map_err(UdfError::BadColumns)?;
                Ok((Decoded::Columns(c), st.into_data()))
            }
            Ok(merged) => Ok((merged, st.into_data())),
            Err(message) => {
                let log = std::mem::take(&mut st.data_mut().data.log);
                Err(UdfError::AnalysisFailed { message: format!("merge(): {message}"), log: log.lines })
            }
        }
    }
}

/// Every partial of `group` as the analysis' kind (`pick`), or a `bad_partial` saying it is
/// `other` (made by another version of the analysis?).
fn of_kind<T>(group: Vec<Decoded>, other: &str, pick: fn(Decoded) -> Option<T>) -> Result<Vec<T>, UdfError> {
    group
        .into_iter()
        .map(|d| pick(d).ok_or_else(|| UdfError::BadPartial(format!("{other} (another version of it?)"))))
        .collect()
}
