//! What crosses the host's doors as bytes: the control socket's calls and answers
//! ([`control`]) and the HTTP API's request bodies ([`http`]).

pub mod control;
pub mod http;
