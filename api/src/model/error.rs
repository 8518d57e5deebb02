//! What kind of failure an error is, and its shape on the wire. Every door shows the same
//! error: the HTTP API as `{"error", "code"}` with the status of its [`ErrorKind`], the control
//! socket as the same body, the CLI as `loupe: error: <error>`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The class of a failure, which decides its HTTP status (and nothing else).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The request is wrong (400).
    Invalid,
    /// No or a bad token (401).
    Unauthorized,
    /// A scope the caller's token lacks, or another team's analysis or probe session (403).
    Forbidden,
    /// No such run, analysis or samples (404).
    NotFound,
    /// A time limit ran out (408).
    Timeout,
    /// The request named a host this server does not answer to, as a DNS-rebinding page's
    /// does (421); a name of this host is added with `--allowed-host`.
    Misdirected,
    /// Not possible in this state: a store-only server, an interface already busy (409).
    Conflict,
    /// A body beyond its size limit (413).
    TooLarge,
    /// A body in a format this route does not take (415).
    UnsupportedMedia,
    /// Understood but refused: an analysis broke one of its limits or failed (422).
    Refused,
    /// A concurrency limit is full; retry (429).
    Busy,
    /// Shutting down or overloaded (503).
    Unavailable,
    /// The data dir's disk is full (507).
    NoSpace,
    /// A fault of Loupe or its host (500).
    Internal,
}

impl ErrorKind {
    pub fn http_status(self) -> u16 {
        match self {
            ErrorKind::Invalid => 400,
            ErrorKind::Unauthorized => 401,
            ErrorKind::Forbidden => 403,
            ErrorKind::NotFound => 404,
            ErrorKind::Timeout => 408,
            ErrorKind::Misdirected => 421,
            ErrorKind::Conflict => 409,
            ErrorKind::TooLarge => 413,
            ErrorKind::UnsupportedMedia => 415,
            ErrorKind::Refused => 422,
            ErrorKind::Busy => 429,
            ErrorKind::Internal => 500,
            ErrorKind::Unavailable => 503,
            ErrorKind::NoSpace => 507,
        }
    }

    /// The kind an HTTP status stands for ([`ErrorKind::http_status`] backwards), so a client
    /// of the API gets back the kind the server's error had.
    pub fn from_http_status(status: u16) -> Option<ErrorKind> {
        use ErrorKind::*;
        [
            Invalid,
            Unauthorized,
            Forbidden,
            NotFound,
            Timeout,
            Misdirected,
            Conflict,
            TooLarge,
            UnsupportedMedia,
            Refused,
            Busy,
            Unavailable,
            NoSpace,
            Internal,
        ]
        .into_iter()
        .find(|k| k.http_status() == status)
    }
}

/// An error as every door sends it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong, in one line a person can act on.
    pub error: String,
    /// Stable machine-readable code (`bad_range`, `time_limit`, `not_owner`, …).
    pub code: String,
    /// Lines the analysis logged before it failed, when there are any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log: Vec<String>,
}
