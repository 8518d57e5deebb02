//! The core's one error type: what went wrong, typed, for every door to show its way — the
//! HTTP API maps [`CoreError::kind`] to a status and [`CoreError::code`] to its `code`, the CLI
//! prints the message as `loupe: error: …`, the control socket carries kind, code and message.

use std::time::Duration;

mod analysis;

pub use analysis::{Bound, UdfError};
pub use loupe_bpf_common::error::SamplerError;
use loupe_store::StoreError;

use crate::{
    clock::format_unix_ns,
    model::{ErrorBody, ErrorKind},
};

#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    #[error("bad time range: from {} is after to {}", format_unix_ns(*from), format_unix_ns(*to))]
    BadRange { from: u64, to: u64 },
    #[error("{what}: {reason}")]
    BadTime { what: String, reason: String },
    #[error("bad run id '{0}': expected a number from `loupe runs list` or /api/v1/runs")]
    BadId(String),
    #[error("bad interval '{text}': {reason} (e.g. 100us, 1ms, 10ms)")]
    BadInterval { text: String, reason: String },
    #[error("start: at most {} ahead", humantime::format_duration(*limit))]
    StartTooFar { limit: Duration },
    #[error("frequency must be at least 1 (the rate the samples were taken at, in Hz)")]
    BadFrequency,
    #[error("min_share {0} out of bounds: a share of the samples from 0 to 1 (e.g. 0.0001)")]
    BadShare(f64),
    #[error("limit {limit} out of bounds: 1 to {max}")]
    BadLimit { limit: usize, max: usize },
    #[error("bad cursor '{0}': pass the `next` of the previous page as it was given")]
    BadCursor(String),
    #[error("bad window: {0}")]
    BadWindow(String),
    #[error("the agent does not sample '{iface}' (it samples {known:?})")]
    UnknownIface { iface: String, known: Vec<String> },
    #[error("name the interface: one of {known:?}")]
    IfaceRequired { known: Vec<String> },
    #[error("no run with id {0}")]
    NoRun(u64),
    #[error("no samples of PID {0} in that time range")]
    NoSamples(u32),
    #[error("no probe session with id {0} (see `loupe probes list`)")]
    NoProbeSession(u64),
    #[error("no active probe {0} on this agent (it may have ended: see `loupe probes list`)")]
    NoActiveProbe(u64),
    #[error("{active} probe sessions are active; at most {max} at once (stop one with `loupe probes stop`)")]
    TooManyProbes { active: usize, max: usize },
    #[error(
        "team '{team}' has {active} probe sessions active; at most {max} per team (stop one with `loupe probes stop`)"
    )]
    TooManyTeamProbes { team: String, active: usize, max: usize },
    #[error("{0}")]
    Probe(String),
    /// A scope the caller lacks, or something of another team's.
    #[error(transparent)]
    Refused(#[from] crate::access::Refused),
    /// A fleet request or the module it names, refused by the host's gate.
    #[error(transparent)]
    FleetRefused(#[from] crate::signed::FleetRefusal),
    #[error("this server only serves a store (`loupe serve`); start runs and probes on a `loupe agent`")]
    NotCollecting,
    #[error("this server runs no analyses (start it with the HTTP API)")]
    NoAnalyses,
    #[error(
        "the run did not end within {}; it goes on and is stored when it ends (see `loupe runs list`)",
        humantime::format_duration(*waited)
    )]
    RunTimeout { waited: Duration },
    #[error("the agent is shutting down")]
    ShuttingDown,
    /// A question about the last seconds, asked before this host stored them: its answer would
    /// be short of samples it holds.
    #[error(
        "stack samples up to {to_unix_ns} are not stored yet (stored through {stored_unix_ns}); ask again in a few seconds"
    )]
    NotStoredYet { to_unix_ns: u64, stored_unix_ns: u64 },
    #[error(transparent)]
    Sampler(#[from] SamplerError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Analysis(#[from] UdfError),
    /// An error another process answered (the agent over its control socket, a remote host
    /// over HTTP), as it said it: the same words, kind and code as where it happened.
    #[error("{}", body.error)]
    Remote { kind: ErrorKind, body: ErrorBody },
    /// An operation this way to the host does not offer (the HTTP API does not import or
    /// symbolize), and why.
    #[error("{0}")]
    LocalOnly(&'static str),
    #[error("no agent is running on this data dir: there is nothing to stop")]
    NoAgent,
    /// A fleet operation asked where there is no fleet to ask (an agent started without
    /// `--nats`, the control socket), and where to ask instead.
    #[error("{0}")]
    NotInFleet(&'static str),
    /// Talking to the agent or the remote host failed (not its answer).
    #[error("{0}")]
    Transport(String),
    #[error("{0}")]
    Internal(String),
}

impl CoreError {
    pub fn kind(&self) -> ErrorKind {
        use CoreError::*;
        match self {
            BadRange { .. }
            | BadTime { .. }
            | BadId(_)
            | BadInterval { .. }
            | StartTooFar { .. }
            | BadFrequency
            | BadShare(_) => ErrorKind::Invalid,
            BadLimit { .. } | BadCursor(_) | BadWindow(_) => ErrorKind::Invalid,
            UnknownIface { .. } | IfaceRequired { .. } => ErrorKind::Invalid,
            NoRun(_) | NoSamples(_) | NoProbeSession(_) | NoActiveProbe(_) | NoAgent => ErrorKind::NotFound,
            Refused(_) | FleetRefused(_) => ErrorKind::Forbidden,
            LocalOnly(_) => ErrorKind::Invalid,
            Probe(_) => ErrorKind::Invalid,
            TooManyProbes { .. } | TooManyTeamProbes { .. } => ErrorKind::Conflict,
            NotCollecting | NoAnalyses | NotInFleet(_) => ErrorKind::Conflict,
            RunTimeout { .. } => ErrorKind::Timeout,
            ShuttingDown | NotStoredYet { .. } => ErrorKind::Unavailable,
            Sampler(e) => match e {
                SamplerError::UnknownInterface(_)
                | SamplerError::IntervalOutOfBounds(_)
                | SamplerError::SamplesOutOfBounds { .. }
                | SamplerError::FrequencyOutOfBounds(_)
                | SamplerError::OffCpuOutOfBounds(_)
                | SamplerError::StartOutOfBounds(_)
                | SamplerError::BadPrefix(_)
                | SamplerError::Probe(_) => ErrorKind::Invalid,
                SamplerError::Busy { .. } => ErrorKind::Conflict,
                SamplerError::Privilege { .. } | SamplerError::Denied { .. } => ErrorKind::Forbidden,
                SamplerError::Unsupported { .. } => ErrorKind::Conflict,
                SamplerError::Load(_)
                | SamplerError::Refused { .. }
                | SamplerError::Attach { .. }
                | SamplerError::ProbeAttach { .. }
                | SamplerError::Read(_)
                | SamplerError::Io { .. } => ErrorKind::Internal,
            },
            Store(e) => match e {
                StoreError::BadRange { .. } => ErrorKind::Invalid,
                StoreError::NoSpace { .. } => ErrorKind::NoSpace,
                StoreError::Locked { .. } => ErrorKind::Conflict,
                _ => ErrorKind::Internal,
            },
            Analysis(e) => e.kind(),
            Remote { kind, .. } => *kind,
            Transport(_) => ErrorKind::Unavailable,
            Internal(_) => ErrorKind::Internal,
        }
    }

    /// Stable machine-readable code.
    pub fn code(&self) -> &str {
        use CoreError::*;
        match self {
            BadRange { .. } => "bad_range",
            BadTime { .. } | StartTooFar { .. } => "bad_time",
            BadId(_) => "bad_id",
            BadInterval { .. } => "bad_interval",
            BadFrequency => "bad_frequency",
            BadShare(_) => "bad_share",
            BadLimit { .. } => "bad_limit",
            BadWindow(_) => "bad_window",
            BadCursor(_) => "bad_cursor",
            UnknownIface { .. } | IfaceRequired { .. } => "bad_iface",
            NoRun(_) => "not_found",
            NoSamples(_) => "no_samples",
            NoProbeSession(_) | NoActiveProbe(_) | NoAgent => "not_found",
            LocalOnly(_) => "local_only",
            Refused(e) => e.code(),
            FleetRefused(e) => e.code(),
            Probe(_) => "bad_probe",
            TooManyProbes { .. } => "too_many_probes",
            TooManyTeamProbes { .. } => "too_many_team_probes",
            NotCollecting => "not_collecting",
            NoAnalyses => "no_analyses",
            NotInFleet(_) => "not_in_fleet",
            RunTimeout { .. } => "run_timeout",
            ShuttingDown => "shutting_down",
            NotStoredYet { .. } => "not_stored_yet",
            Sampler(SamplerError::Busy { .. }) => "iface_busy",
            Sampler(SamplerError::Privilege { .. }) => "privilege",
            Sampler(SamplerError::Denied { .. }) => "kernel_denied",
            Sampler(SamplerError::Unsupported { .. }) => "kernel_lacks",
            Sampler(e) if self.kind() == ErrorKind::Invalid => match e {
                SamplerError::UnknownInterface(_) => "bad_iface",
                SamplerError::Probe(_) => "bad_probe",
                _ => "bad_run",
            },
            Sampler(SamplerError::ProbeAttach { .. }) => "probe_attach",
            Sampler(_) => "sampler",
            Store(StoreError::BadRange { .. }) => "bad_range",
            Store(StoreError::NoSpace { .. }) => "no_space",
            Store(StoreError::Locked { .. }) => "store_locked",
            Store(_) => "store",
            Analysis(e) => e.code(),
            Remote { body, .. } => &body.code,
            Transport(_) => "agent_unreachable",
            Internal(_) => "internal",
        }
    }

    /// The error as every door sends it.
    pub fn body(&self) -> ErrorBody {
        let log = match self {
            CoreError::Analysis(e) => e.log_lines(),
            CoreError::Remote { body, .. } => body.log.clone(),
            _ => Vec::new(),
        };
        ErrorBody { error: self.to_string(), code: self.code().to_string(), log }
    }
}

pub type CoreResult<T> = Result<T, CoreError>;
