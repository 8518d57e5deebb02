//! Stack samples as a core service: profiles of a range (hot functions and flame graph), the
//! same as pprof, what changed against a baseline range, the PIDs that were sampled, and naming
//! stored frames later.

use std::{collections::BTreeSet, path::PathBuf};

use loupe_store::{Profile, ProfileQuery, SampleKind, TimeRange};

use super::{
    Host,
    error::{CoreError, CoreResult},
};
use crate::ingest::symbolize::later::name_stored_frames;
use loupe_api::{
    clock::now_unix_ns,
    formats::pprof,
    model::{ProfileDiffView, ProfileView, SymbolizeReport},
};

/// pprof of a profile of `kind`: of CPU samples taken at `frequency_hz`, each sample stands for
/// one sampling period of CPU time; of waits off the CPU, each stack's value is nanoseconds
/// waited. The profile's time and duration are those of `range` clipped to the data's own
/// first and last samples (so `--from 0` does not claim 56 years).
pub fn pprof_of(profile: &Profile, kind: SampleKind, range: TimeRange, frequency_hz: u64) -> CoreResult<Vec<u8>> {
    if frequency_hz == 0 {
        return Err(CoreError::BadFrequency);
    }
    let period = 1_000_000_000 / frequency_hz.min(1_000_000_000) as i64;
    let (start, end) = match profile.span {
        Some((first, last)) => (first.max(range.from_unix_ns()), last.min(range.to_unix_ns()).max(first)),
        None => (range.from_unix_ns(), range.to_unix_ns().min(now_unix_ns()).max(range.from_unix_ns())),
    };
    Ok(match kind {
        SampleKind::OnCpu => pprof::pprof(profile, period, start, end - start),
        SampleKind::OffCpu => pprof::pprof_off_cpu(profile, start, end - start),
    })
}

impl Host {
    /// Samples of a range (filtered by pid, comm, CPU), aggregated by stack: of the CPU, or the
    /// waits off it (`query.kind`). A PID that was never sampled in the range is an error, not
    /// an empty profile (a typo should say so).
    pub fn profile(&self, query: &ProfileQuery) -> CoreResult<Profile> {
        self.check_pid(query)?;
        let profile = self.store.profile(query)?;
        self.check_waits(query, profile.samples)?;
        Ok(profile)
    }

    /// A PID that was never sampled on a CPU in the range is an error.
    fn check_pid(&self, query: &ProfileQuery) -> CoreResult<()> {
        match query.pid {
            Some(pid) if query.kind == SampleKind::OnCpu && !self.store.pids(query.range)?.contains(&pid) => {
                Err(CoreError::NoSamples(pid))
            }
            _ => Ok(()),
        }
    }

    /// Nor is a PID with no wait in the range (off-CPU profiles are checked once summed: a
    /// profile of one PID is cheap, and a wait-only PID list would be another scan).
    fn check_waits(&self, query: &ProfileQuery, waits: u64) -> CoreResult<()> {
        match query.pid {
            Some(pid) if query.kind == SampleKind::OffCpu && waits == 0 => Err(CoreError::NoSamples(pid)),
            _ => Ok(()),
        }
    }

    /// [`Host::profile`] as the hot-function table and the flame graph, leaving out the
    /// flame-graph nodes under `min_share` of the samples (see [`ProfileView::pruned`]). Reads
    /// the store's [`loupe_store::IndexedProfile`], which holds each frame once.
    pub fn profile_view(&self, query: &ProfileQuery, min_share: f64) -> CoreResult<ProfileView> {
        if !(0.0..=1.0).contains(&min_share) {
            return Err(CoreError::BadShare(min_share));
        }
        self.check_pid(query)?;
        let profile = self.store.indexed_profile(query)?;
        self.check_waits(query, profile.samples)?;
        Ok(ProfileView::pruned_indexed(&profile, min_share).of_kind(query.kind))
    }

    /// The profile of `query` against the same filters over `base` ([`ProfileDiffView`]): both
    /// read as the store's [`loupe_store::IndexedProfile`]. A PID sampled in neither range is an
    /// error; one sampled in only one of them is what the comparison is for.
    pub fn profile_diff(&self, query: &ProfileQuery, base: TimeRange, min_share: f64) -> CoreResult<ProfileDiffView> {
        if !(0.0..=1.0).contains(&min_share) {
            return Err(CoreError::BadShare(min_share));
        }
        let base_query = ProfileQuery { range: base, ..query.clone() };
        // The two ranges are read side by side: reading one 1-hour range of a 96-CPU host takes
        // about as long as building the whole comparison (110 and 97 ms, `benches/profile_diff.rs`).
        let (now, before) = std::thread::scope(|s| {
            let before = s.spawn(|| self.store.indexed_profile(&base_query));
            let now = self.store.indexed_profile(query);
            (now, before.join().expect("reading the baseline panicked"))
        });
        let (now, before) = (now?, before?);
        if let Some(pid) = query.pid
            && now.samples == 0
            && before.samples == 0
        {
            return Err(CoreError::NoSamples(pid));
        }
        Ok(ProfileDiffView::new(&now, &before, query.kind, min_share))
    }

    /// PIDs with samples in a range.
    pub fn pids(&self, range: TimeRange) -> CoreResult<BTreeSet<u32>> {
        Ok(self.store.pids(range)?)
    }

    /// Names the frames of a range that were stored as `module+address` from debug files found
    /// now (in `debug_dirs`, then `/usr/lib/debug`), matched by build ID.
    pub fn symbolize(&self, range: TimeRange, debug_dirs: &[PathBuf]) -> CoreResult<SymbolizeReport> {
        Ok(name_stored_frames(&self.store, range, debug_dirs)?)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use loupe_store::Frame;

    use super::*;

    /// The two fields of `profile.proto` that say when and how long.
    #[derive(Clone, PartialEq, prost::Message)]
    struct Times {
        #[prost(int64, tag = "9")]
        time_nanos: i64,
        #[prost(int64, tag = "10")]
        duration_nanos: i64,
        #[prost(int64, tag = "12")]
        period: i64,
    }

    fn times(gz: &[u8]) -> Times {
        let mut bytes = Vec::new();
        flate2::read::GzDecoder::new(gz).read_to_end(&mut bytes).unwrap();
        prost::Message::decode(&bytes[..]).unwrap()
    }

    #[test]
    fn pprof_time_is_the_datas_span_within_the_range() {
        let s = 1_795_392_000_000_000_000u64;
        let stacks = vec![(vec![Frame::user("f", "m")], 3)];
        let profile = Profile { samples: 3, lost: 0, stacks, span: Some((s, s + 60_000_000_000)) };
        // `--from 0`: the data's minute, not 56 years.
        let t = times(&pprof_of(&profile, SampleKind::OnCpu, TimeRange::ALL, 10).unwrap());
        assert_eq!((t.time_nanos as u64, t.duration_nanos, t.period), (s, 60_000_000_000, 100_000_000));
        // A range inside the data clips it.
        let r = TimeRange::new(s + 10_000_000_000, s + 20_000_000_000).unwrap();
        let t = times(&pprof_of(&profile, SampleKind::OnCpu, r, 100).unwrap());
        assert_eq!((t.time_nanos as u64, t.duration_nanos, t.period), (s + 10_000_000_000, 10_000_000_000, 10_000_000));
        assert!(matches!(pprof_of(&profile, SampleKind::OnCpu, r, 0), Err(CoreError::BadFrequency)));
    }
}
