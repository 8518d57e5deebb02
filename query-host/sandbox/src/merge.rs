//! Merging the hosts' results of a fleet-wide analysis with the analysis' own `merge` export
//! (the WIT `fleet-analysis` world), in the same sandbox and under the same limits as any
//! invocation: a fresh `Store` per call, the time, memory and output limits, a concurrency slot.
//!
//! Partials are merged in groups of at most [`CALL_BYTES`] (by [`Decoded::weight`]) and
//! [`FAN_IN`] partials, then the merged results again, until one is left — a tree, which bounds
//! what one call copies into the guest however many hosts answered. The bound is in bytes, not
//! partials: a thousand small columnar partials are one call (measured on `rack-contention`,
//! 1,000 partials of 300 rows: groups of 64 spent a fifth of the merge writing and re-reading
//! 16 intermediate results), while the largest ones (768 KiB) go 64 to a call, as before. That
//! is only correct because the contract makes `merge` commutative and associative; the property
//! tests hold the example analyses to it. The data functions refuse inside `merge` ([`super::host::DataHost::merging`]).

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

/// Most partials per `merge` call, however small.
pub const FAN_IN: usize = 1024;
/// Most bytes of partials (by [`Decoded::weight`]) per `merge` call: 64 partials of the
/// largest size a host may send.
pub const CALL_BYTES: usize = 64 * super::partial::MAX_PARTIAL_BYTES;

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
        let output_bytes = output::json_bytes(&output, self.limits().output_bytes)?;
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

    /// The merge itself: groups within [`CALL_BYTES`] and [`FAN_IN`], then their results
    /// again, until one is left; with the calls' logs and the peak memory of any call.
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
            let mut next = Vec::new();
            for group in groups(level) {
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
            Merger::Columns { pre, batches } => {
                let group = of_kind(group, "a table partial for an analysis with columnar partials", |d| match d {
                    Decoded::Columns(c) => Some(c),
                    Decoded::Output(_) => None,
                })?;
                // One batch when the analysis takes them and the group is of one shape.
                let group = match batches {
                    Some(batches) => {
                        let merged = self.spare.with_batch(group, |batch| match batches.instantiate(&mut st) {
                            Ok(analysis) => analysis
                                .call_merge_batch(&mut st, range, params, batch)
                                .map_err(|e| (e, "merge-batch()")),
                            Err(e) => Err((e, "instantiating")),
                        });
                        match merged {
                            Ok(merged) => {
                                let merged = merged.map_err(|(e, what)| self.classify(e, &mut st, what))?;
                                return self.merged(st, merged.map(Decoded::Columns));
                            }
                            Err(group) => group,
                        }
                    }
                    None => group,
                };
                let analysis = pre.instantiate(&mut st).map_err(|e| self.classify(e, &mut st, "instantiating"))?;
                let merged = analysis.call_merge_columns(&mut st, range, params, &group);
                merged.map_err(|e| self.classify(e, &mut st, "merge-columns()"))?.map(Decoded::Columns)
            }
        };
        self.merged(st, result)
    }

    /// A merge call's result, checked, with the call's state (its log and peak memory).
    fn merged(
        &self,
        mut st: wasmtime::Store<State>,
        result: Result<Decoded, String>,
    ) -> Result<(Decoded, State), UdfError> {
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

/// `partials` cut, in order, into groups of at most [`FAN_IN`] partials and [`CALL_BYTES`]; a
/// group takes two partials even past the bytes, so that each level of the tree has fewer.
fn groups(partials: Vec<Decoded>) -> Vec<Vec<Decoded>> {
    let mut groups: Vec<Vec<Decoded>> = Vec::new();
    let mut bytes = 0;
    for p in partials {
        let weight = p.weight();
        match groups.last_mut() {
            Some(g) if g.len() < 2 || (g.len() < FAN_IN && bytes + weight <= CALL_BYTES) => {
                bytes += weight;
                g.push(p);
            }
            _ => {
                bytes = weight;
                groups.push(vec![p]);
            }
        }
    }
    groups
}

/// Every partial of `group` as the analysis' kind (`pick`), or a `bad_partial` saying it is
/// `other` (made by another version of the analysis?).
fn of_kind<T>(group: Vec<Decoded>, other: &str, pick: fn(Decoded) -> Option<T>) -> Result<Vec<T>, UdfError> {
    group
        .into_iter()
        .map(|d| pick(d).ok_or_else(|| UdfError::BadPartial(format!("{other} (another version of it?)"))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::partial::MAX_PARTIAL_BYTES;

    /// A columnar partial of one column of `n` counts, the first one `id`.
    fn partial(id: u64, n: usize) -> Decoded {
        let mut values = vec![0; n];
        values[0] = id;
        Decoded::Columns(wit::Columns {
            columns: vec![wit::NamedColumn {
                name: "n".into(),
                unit: String::new(),
                values: wit::ColumnValues::Unsigned(values),
            }],
            series: vec![],
        })
    }

    fn ids(groups: &[Vec<Decoded>]) -> Vec<Vec<u64>> {
        let id = |d: &Decoded| match d {
            Decoded::Columns(c) => match &c.columns[0].values {
                wit::ColumnValues::Unsigned(v) => v[0],
                _ => unreachable!(),
            },
            Decoded::Output(_) => unreachable!(),
        };
        groups.iter().map(|g| g.iter().map(id).collect()).collect()
    }

    #[test]
    fn small_partials_merge_in_one_call_large_ones_within_the_bytes() {
        // A thousand partials of 300 counts: one call.
        let small = groups((0..1000).map(|i| partial(i, 300)).collect());
        assert_eq!(ids(&small), [(0..1000).collect::<Vec<u64>>()]);
        // More than FAN_IN: cut at FAN_IN, in order.
        let many = ids(&groups((0..2500).map(|i| partial(i, 1)).collect()));
        assert_eq!(many.iter().map(Vec::len).collect::<Vec<_>>(), [FAN_IN, FAN_IN, 2500 - 2 * FAN_IN]);
        assert_eq!(many.concat(), (0..2500).collect::<Vec<u64>>());
        // Partials of the largest size a host sends: 64 to a call, as before the bound was bytes.
        let large = groups((0..200).map(|i| partial(i, MAX_PARTIAL_BYTES / 8 - 4)).collect());
        assert!(large.iter().all(|g| g.iter().map(Decoded::weight).sum::<usize>() <= CALL_BYTES));
        assert_eq!(large.iter().map(Vec::len).collect::<Vec<_>>(), [64, 64, 64, 8]);
    }

    #[test]
    fn partials_past_the_bytes_still_go_two_to_a_call_so_the_tree_ends() {
        let huge = groups((0..5).map(|i| partial(i, CALL_BYTES / 8)).collect());
        assert_eq!(ids(&huge), [vec![0, 1], vec![2, 3], vec![4]]);
    }
}
