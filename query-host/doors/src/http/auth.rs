//! Who is calling: a bearer token names a team. Reading needs any valid token (or nothing,
//! on a server started with `--no-auth`, which only binds loopback); changing an analysis
//! needs the token of the team that owns it (checked by the registry).

use axum::{
    extract::FromRequestParts,
    http::{header, request::Parts},
};
use std::sync::Arc;

use super::{AppState, error::ApiError};
use loupe_api::model::ErrorKind;

/// The team a request acts for.
#[derive(Clone, Debug)]
pub struct Caller {
    pub team: String,
}

/// The team of requests on a `--no-auth` server that carry no token.
pub const LOCAL_TEAM: &str = "local";

impl FromRequestParts<Arc<AppState>> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &Arc<AppState>) -> Result<Self, Self::Rejection> {
        let header = parts.headers.get(header::AUTHORIZATION);
        let Some(header) = header else {
            if state.no_auth {
                return Ok(Caller { team: LOCAL_TEAM.into() });
            }
            return Err(unauthorized(
                "missing bearer token: send `Authorization: Bearer <token>` (see `loupe token add`)",
            ));
        };
        let token = header
            .to_str()
            .ok()
            .and_then(|h| h.strip_prefix("Bearer ").or_else(|| h.strip_prefix("bearer ")))
            .map(str::trim)
            .ok_or_else(|| unauthorized("malformed Authorization header: expected `Bearer <token>`"))?;
        match state.tokens.team_of(token) {
            Ok(Some(team)) => Ok(Caller { team }),
            Ok(None) => Err(unauthorized("unknown or revoked token")),
            Err(e) => Err(ApiError::internal(format!("{e:#}"))),
        }
    }
}

fn unauthorized(msg: &str) -> ApiError {
    ApiError::new(ErrorKind::Unauthorized, "unauthorized", msg)
}
