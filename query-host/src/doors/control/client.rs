//! The CLI's side of the control socket: typed calls with time limits, used when a running
//! agent holds the store. Each method knows which type its call answers, so there is no
//! "unexpected answer" to handle.

use std::{
    collections::BTreeSet,
    io::{BufRead, BufReader, Read, Write},
    os::unix::net::UnixStream,
    path::{Path, PathBuf},
};

use loupe_store::{NewRun, Profile, ProfileQuery, RunId, TimeRange, TimelineQuery};
use serde::de::DeserializeOwned;

use super::{
    protocol::{Call, IMPORT_CHUNK, IO_TIMEOUT, MAX_CALL_BYTES, decode},
    socket_path,
};
use crate::{
    core::{CoreError, CoreResult, ImportOutcome, ProbeOrder, RunFilter, RunOrder},
    model::{
        ActiveProbeView, ProbeList, ProbeView, RunListEntry, RunView, SymbolizeReport, TimelineEventsPage,
        TimelineSummary,
    },
};

pub struct AgentClient {
    path: PathBuf,
}

impl AgentClient {
    /// A client if an agent serves `data_dir`.
    pub fn find(data_dir: &Path) -> Option<Self> {
        let path = socket_path(data_dir);
        UnixStream::connect(&path).ok().map(|_| Self { path })
    }

    fn call<T: DeserializeOwned>(&self, call: &Call) -> CoreResult<T> {
        let unreachable =
            |e: std::io::Error| CoreError::Transport(format!("talking to the agent at {}: {e}", self.path.display()));
        let stream = UnixStream::connect(&self.path).map_err(unreachable)?;
        stream.set_write_timeout(Some(IO_TIMEOUT)).map_err(unreachable)?;
        stream.set_read_timeout(Some(call.timeout())).map_err(unreachable)?;
        let mut line = serde_json::to_vec(call).map_err(|e| CoreError::Internal(format!("encoding a call: {e}")))?;
        line.push(b'\n');
        (&stream).write_all(&line).map_err(unreachable)?;
        let mut answer = Vec::new();
        let read = BufReader::new((&stream).take(MAX_CALL_BYTES * 8)).read_until(b'\n', &mut answer);
        match read {
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                Err(CoreError::Transport(format!(
                    "the agent did not answer within {}",
                    humantime::format_duration(call.timeout())
                )))
            }
            Err(e) => Err(unreachable(e)),
            Ok(_) => decode(&answer),
        }
    }

    pub fn list_runs(&self, filter: RunFilter) -> CoreResult<Vec<RunListEntry>> {
        self.call(&Call::List(filter))
    }

    pub fn show_run(&self, id: RunId, per_cpu: bool) -> CoreResult<RunView> {
        self.call(&Call::Show { id: id.0, per_cpu })
    }

    pub fn start_run(&self, order: RunOrder) -> CoreResult<RunView> {
        self.call(&Call::Run(order))
    }

    pub fn import_runs(&self, runs: Vec<NewRun>) -> CoreResult<Vec<ImportOutcome>> {
        let mut out = Vec::with_capacity(runs.len());
        let mut runs = runs.into_iter().peekable();
        while runs.peek().is_some() {
            let chunk: Vec<NewRun> = runs.by_ref().take(IMPORT_CHUNK).collect();
            out.extend(self.call::<Vec<ImportOutcome>>(&Call::Import { runs: chunk })?);
        }
        Ok(out)
    }

    pub fn profile(&self, query: ProfileQuery) -> CoreResult<Profile> {
        self.call(&Call::Profile { query })
    }

    pub fn pids(&self, range: TimeRange) -> CoreResult<BTreeSet<u32>> {
        self.call(&Call::Pids { range })
    }

    pub fn symbolize(&self, range: TimeRange, debug_dirs: Vec<PathBuf>) -> CoreResult<SymbolizeReport> {
        self.call(&Call::Symbolize { range, debug_dirs })
    }

    pub fn timeline(&self, query: TimelineQuery) -> CoreResult<TimelineSummary> {
        self.call(&Call::Timeline { query })
    }

    pub fn timeline_events(
        &self,
        query: TimelineQuery,
        after: Option<String>,
        limit: Option<usize>,
    ) -> CoreResult<TimelineEventsPage> {
        self.call(&Call::TimelineEvents { query, after, limit })
    }

    pub fn start_probe(&self, order: ProbeOrder) -> CoreResult<ActiveProbeView> {
        self.call(&Call::ProbeStart(order))
    }

    pub fn stop_probe(&self, handle: u64) -> CoreResult<ProbeView> {
        self.call(&Call::ProbeStop { handle })
    }

    pub fn list_probes(&self, range: TimeRange) -> CoreResult<ProbeList> {
        self.call(&Call::ProbeList { range })
    }

    pub fn show_probe(&self, id: u64, calls: bool) -> CoreResult<ProbeView> {
        self.call(&Call::ProbeShow { id, calls })
    }
}
