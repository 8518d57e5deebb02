//! What crosses the control socket: a [`Call`] (one JSON line) and its answer (one JSON line),
//! `{"ok": <the core's value>}` or `{"err": {"kind", "error", "code", "log"}}` — the core's
//! result, serialized as it is, so a full disk during a run reads as `no_space` on both ends.

use std::{path::PathBuf, time::Duration};

use loupe_store::{NewRun, ProfileQuery, TimeRange, TimelineQuery};
use serde::{Deserialize, Serialize, de::DeserializeOwned};

use crate::{
    error::{CoreError, CoreResult},
    model::{ErrorBody, ErrorKind},
    orders::{ProbeOrder, RunFilter, RunOrder},
};

/// Largest call the server reads (imports carry runs; the client sends them in chunks of
/// [`IMPORT_CHUNK`]).
pub const MAX_CALL_BYTES: u64 = 64 << 20;
/// Runs per import call.
pub const IMPORT_CHUNK: usize = 32;
/// Time to send a call or an answer once connected.
pub const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// Time to answer a call other than a run (store reads: a whole-day profile takes seconds).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// Time a probe session may take to detach, gather its records and be stored once stopped.
pub const PROBE_STOP: Duration = Duration::from_secs(60);
/// Time an on-demand run may take beyond its own length before the agent stops waiting.
pub const RUN_MARGIN: Duration = Duration::from_secs(30);

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "call", rename_all = "snake_case")]
pub enum Call {
    List(RunFilter),
    Show { id: u64, per_cpu: bool },
    Run(RunOrder),
    Import { runs: Vec<NewRun> },
    Profile { query: ProfileQuery },
    Pids { range: TimeRange },
    Symbolize { range: TimeRange, debug_dirs: Vec<PathBuf> },
    Timeline { query: TimelineQuery },
    TimelineEvents { query: TimelineQuery, after: Option<String>, limit: Option<usize> },
    ProbeStart(ProbeOrder),
    ProbeStop { handle: u64 },
    ProbeList { range: TimeRange },
    ProbeShow { id: u64, calls: bool },
}

impl Call {
    /// How long the client waits for the answer.
    pub fn timeout(&self) -> Duration {
        match self {
            Call::Run(order) => order.duration_from_now() + RUN_MARGIN + IO_TIMEOUT,
            Call::ProbeStop { .. } => PROBE_STOP + IO_TIMEOUT,
            _ => CALL_TIMEOUT,
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer<T> {
    Ok(T),
    Err {
        kind: ErrorKind,
        #[serde(flatten)]
        body: ErrorBody,
    },
}

impl<T> Answer<T> {
    pub fn from_result(r: CoreResult<T>) -> Self {
        match r {
            Ok(v) => Answer::Ok(v),
            Err(e) => Answer::Err { kind: e.kind(), body: e.body() },
        }
    }

    pub fn into_result(self) -> CoreResult<T> {
        match self {
            Answer::Ok(v) => Ok(v),
            Answer::Err { kind, body } => Err(CoreError::Agent { kind, body }),
        }
    }
}

/// One answer line.
pub fn encode<T: Serialize>(r: CoreResult<T>) -> Vec<u8> {
    let mut line = serde_json::to_vec(&Answer::from_result(r)).unwrap_or_else(|e| {
        let e = CoreError::Internal(format!("encoding the answer: {e}"));
        serde_json::to_vec(&Answer::<()>::from_result(Err(e))).expect("an error encodes")
    });
    line.push(b'\n');
    line
}

/// One answer line read back.
pub fn decode<T: DeserializeOwned>(line: &[u8]) -> CoreResult<T> {
    crate::formats::deep_json::from_slice::<Answer<T>>(line)
        .map_err(|e| CoreError::Transport(format!("reading the agent's answer: {e}")))?
        .into_result()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_keep_their_kind_and_code_across_the_socket() {
        let e = CoreError::Analysis(crate::error::UdfError::NoSpace("storing a run".into()));
        let back = decode::<u64>(&encode::<u64>(Err(e))).unwrap_err();
        assert_eq!((back.kind(), back.code()), (ErrorKind::NoSpace, "no_space"));
        assert!(back.to_string().contains("storing a run"), "{back}");
        let back = decode::<u64>(&encode::<u64>(Err(CoreError::NoRun(9)))).unwrap_err();
        assert_eq!(
            (back.kind(), back.code(), back.to_string().as_str()),
            (ErrorKind::NotFound, "not_found", "no run with id 9")
        );
        assert_eq!(decode::<u64>(&encode(Ok(7u64))).unwrap(), 7);
        assert!(matches!(decode::<u64>(b"{\"ok\": \"seven\"}\n"), Err(CoreError::Transport(_))));
    }
}
