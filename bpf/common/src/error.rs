//! Why a sampler could not be set up or a run could not be done: the userspace's one error type.
//!
//! It lives here, beside the shared kernel types and behind the `std` feature, rather than in
//! `loupe-bpf`, so the query host's error type (and everything that decodes it, such as the
//! fuzz targets) can name it without building aya and the kernel programs.

use std::{
    io,
    string::{String, ToString},
    time::Duration,
};

/// Why a sampler could not be set up or a run could not be done. Messages are one line and name
/// the thing at fault, because they end up as the CLI's error output.
#[derive(Debug, thiserror::Error)]
pub enum SamplerError {
    #[error("unknown interface '{0}'")]
    UnknownInterface(String),
    /// The kernel said `EPERM` or `EACCES` and this process lacks a capability it needs
    /// (`capget`): `lacking` names them.
    #[error(
        "not enough privilege to {action}: this process lacks {lacking} (run as root, or grant CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN)"
    )]
    Privilege { action: &'static str, lacking: String },
    /// The kernel said `EPERM` or `EACCES` although this process holds every capability it
    /// needs: kernel lockdown, a security module, or (before Linux 5.11) the locked-memory limit.
    #[error(
        "the kernel denied {action} ({errno}) although this process holds CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN (kernel lockdown, a security module, or the locked-memory limit before Linux 5.11 can): {detail}"
    )]
    Denied { action: &'static str, errno: String, detail: String },
    /// A feature this kernel cannot have: it lacks a kernel facility the feature's programs use.
    #[error("{feature} needs Linux {needs}; this kernel is {release}")]
    Unsupported { feature: &'static str, needs: String, release: String },
    #[error("a run is already active on interface '{iface}' ({holder})")]
    Busy { iface: String, holder: String },
    #[error("interval {0:?} out of bounds ({min:?} to {max:?})", min = crate::MIN_INTERVAL, max = crate::MAX_INTERVAL)]
    IntervalOutOfBounds(Duration),
    #[error("sample count {samples} out of bounds (1 to {max})")]
    SamplesOutOfBounds { samples: u32, max: u32 },
    #[error("frequency {0} Hz out of bounds (1 to 1000)")]
    FrequencyOutOfBounds(u64),
    #[error("off-CPU sampling: {0}")]
    OffCpuOutOfBounds(String),
    #[error("start time {0} is in the past or more than a day ahead")]
    StartOutOfBounds(String),
    #[error("bad local prefix '{0}': expected CIDR such as 10.0.0.0/8 or 2001:db8::/32")]
    BadPrefix(String),
    #[error("loading the kernel programs failed: {0}")]
    Load(String),
    /// The kernel's verifier would not accept a program: the error number `BPF_PROG_LOAD`
    /// returned (`EACCES`: an access it could not prove safe; `EINVAL`: an instruction, helper
    /// or attach type it does not know; `E2BIG`: too many instructions) and the kernel's own
    /// reason, its last lines (the error and the verifier's statistics).
    #[error("this kernel's verifier refused {program} ({errno}): {verifier}")]
    Refused { program: String, errno: String, verifier: String },
    #[error("attaching to '{iface}' failed: {reason}")]
    Attach { iface: String, reason: String },
    #[error("{0}")]
    Probe(String),
    #[error("probing {function} ({place}) failed: {reason}")]
    ProbeAttach { function: String, place: String, reason: String },
    #[error("reading the kernel counters failed: {0}")]
    Read(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
}

impl SamplerError {
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        Self::Io { context: context.into(), source }
    }
}

/// An error and its sources on one line.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
