//! Which names may reach the API, and from which pages it may be changed: the answer to DNS
//! rebinding and to cross-site requests, on by default, with or without tokens.
//!
//! - **Rebinding.** A web page the user opens at `evil.example` can make its own name resolve
//!   to 127.0.0.1. Its scripts then reach the agent as the same origin, and can read answers
//!   and send writes: under `--no-auth` (what `scripts/start` runs), every scope but `admin`.
//!   The browser still sends `Host: evil.example`. So a request is served only if its `Host`
//!   (or HTTP/2 `:authority`) names this server: an IP address literal (no page can rebind one:
//!   rebinding needs a name it controls), `localhost` or a name under `.localhost` (browsers
//!   resolve those to loopback themselves), the machine's own host name (`web-12`, as
//!   `hostname` prints it: a page cannot make the user's browser ask for that name), or a name
//!   given with `--allowed-host` (a fully qualified name, an alias). Anything else is refused
//!   with 421 before any route runs. A request without a `Host` comes from no browser and is
//!   served.
//! - **Cross-site writes.** A page on another origin can still send a form's `POST` to
//!   `http://127.0.0.1:7878` without reading the answer. A state-changing method (anything but
//!   `GET`, `HEAD` and `OPTIONS`) that carries an `Origin` is served only if that origin's
//!   host and port are the request's `Host` (the agent's own web UI); others, `Origin: null`
//!   among them, get 403. Command-line clients send no `Origin`.

use std::{net::IpAddr, sync::Arc};

use axum::{
    extract::{Request, State},
    http::{Method, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use loupe_api::model::ErrorKind;

use super::error::ApiError;

/// Longest name kept from `--allowed-host` or shown from a refused header.
const MAX_NAME: usize = 253;

/// The names this server answers to, besides address literals and `localhost`.
#[derive(Clone, Debug, Default)]
pub struct AllowedHosts {
    names: Vec<String>,
}

impl AllowedHosts {
    /// `names` as given with `--allowed-host` (any case, with or without a port: the port is
    /// not compared), and the machine's own host name.
    pub fn new(names: &[String]) -> Result<AllowedHosts, String> {
        let mut kept = Vec::with_capacity(names.len() + 1);
        for name in names {
            match valid_name(name) {
                Some(host) => kept.push(host),
                None => return Err(format!("--allowed-host '{}' is not a host name", clip(name))),
            }
        }
        // As the kernel holds it for this process's UTS namespace (what `hostname` prints).
        if let Some(own) = valid_name(&loupe_api::clock::hostname()) {
            kept.push(own);
        }
        Ok(AllowedHosts { names: kept })
    }

    /// Whether a `Host` header's value names this server.
    pub fn allows(&self, authority: &str) -> bool {
        let Some(host) = host_of(authority) else { return false };
        let host = host.to_ascii_lowercase();
        host.parse::<IpAddr>().is_ok()
            || host == "localhost"
            || host.ends_with(".localhost")
            || self.names.iter().any(|n| *n == host)
    }
}

/// `name[:port]`'s host, lowercased, if it is one.
fn valid_name(name: &str) -> Option<String> {
    host_of(name).filter(|h| !h.is_empty() && h.len() <= MAX_NAME).map(str::to_ascii_lowercase)
}

/// The host part of `name[:port]` or `[v6]:port`, without brackets; `None` if malformed.
fn host_of(authority: &str) -> Option<&str> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (v6, after) = rest.split_once(']')?;
        return (after.is_empty() || after.strip_prefix(':').is_some_and(is_port)).then_some(v6);
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    };
    let name_char = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_';
    (port.is_none_or(is_port) && host.chars().all(name_char)).then_some(host)
}

fn is_port(port: &str) -> bool {
    !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit())
}

fn clip(text: &str) -> String {
    text.chars().take(64).collect()
}

/// The layer: refuses a request whose `Host` names another server (421), and a state-changing
/// request from a page of another origin (403).
pub async fn check(State(allowed): State<Arc<AllowedHosts>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let host = match headers.get(header::HOST) {
        Some(value) => Some(value.to_str().unwrap_or("\u{fffd}")),
        None => request.uri().authority().map(|a| a.as_str()),
    };
    if let Some(host) = host
        && !allowed.allows(host)
    {
        return ApiError::new(
            ErrorKind::Misdirected,
            "misdirected_host",
            format!(
                "this server does not answer to the host '{}' (a page that rebinds its name to this \
                 address?); start it with --allowed-host NAME to be reached by that name",
                clip(host)
            ),
        )
        .into_response();
    }
    let safe = matches!(*request.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if !safe && let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("\u{fffd}");
        let same = origin
            .split_once("://")
            .is_some_and(|(_, authority)| host.is_some_and(|h| authority.eq_ignore_ascii_case(h)));
        if !same {
            return ApiError::new(
                ErrorKind::Forbidden,
                "foreign_origin",
                format!(
                    "a page of '{}' may not change this server; only its own web UI may (or a client \
                     that sends no Origin)",
                    clip(origin)
                ),
            )
            .into_response();
        }
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_literals_localhost_and_named_hosts_are_allowed_with_any_port() {
        let allowed = AllowedHosts::new(&["Loupe.Example:8443".into(), "h1".into()]).unwrap();
        for ok in [
            "127.0.0.1:7878",
            "10.1.2.3",
            "[::1]:7878",
            "[fe80::1]",
            "localhost:7878",
            "LOCALHOST",
            "ui.localhost:3000",
            "loupe.example",
            "loupe.example:7878",
            "h1:1",
        ] {
            assert!(allowed.allows(ok), "{ok}");
        }
        for refused in [
            "evil.example:7878",
            "evil.example",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
            "loupe.example.evil",
            "h1:",
            "h1:port",
            "[::1",
            "[::1]x",
            "a b",
            "",
            "\u{fffd}",
        ] {
            assert!(!allowed.allows(refused), "{refused}");
        }
        assert!(!AllowedHosts::default().allows("loupe.example"));
        let own = loupe_api::clock::hostname();
        assert!(allowed.allows(&format!("{}:7878", own.to_uppercase())), "the machine's own name");
        assert!(!allowed.allows(&format!("{own}.evil.example")));
    }

    #[test]
    fn a_bad_allowed_host_is_refused_by_name() {
        assert!(AllowedHosts::new(&["a/b".into()]).unwrap_err().contains("'a/b' is not a host name"));
        assert!(AllowedHosts::new(&["".into()]).is_err());
        assert!(AllowedHosts::new(&["x".repeat(300)]).is_err());
    }
}
