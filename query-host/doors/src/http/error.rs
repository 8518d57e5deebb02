//! Every error the API returns: `{"error": "<one line>", "code": "<stable code>"}`, with the
//! status of its kind — one `IntoResponse` for the core's errors and the few the HTTP layer
//! makes itself (bad JSON, bad token, timeouts, overload).

use axum::{
    Json,
    http::StatusCode,
    response::{IntoResponse, Response},
};

use loupe_api::model::{ErrorBody, ErrorKind};
use loupe_core::CoreError;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub body: ErrorBody,
}

impl ApiError {
    pub fn new(kind: ErrorKind, code: &str, error: impl Into<String>) -> Self {
        ApiError { status: status(kind), body: ErrorBody { error: error.into(), code: code.into(), log: Vec::new() } }
    }

    pub fn internal(error: impl std::fmt::Display) -> Self {
        Self::new(ErrorKind::Internal, "internal", error.to_string())
    }
}

/// The HTTP status of an error of this kind (one mapping: `ErrorKind::http_status`).
pub(super) fn status(kind: ErrorKind) -> StatusCode {
    StatusCode::from_u16(kind.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body)).into_response()
    }
}

impl From<CoreError> for ApiError {
    fn from(e: CoreError) -> Self {
        ApiError { status: status(e.kind()), body: e.body() }
    }
}

impl From<loupe_sandbox::UdfError> for ApiError {
    fn from(e: loupe_sandbox::UdfError) -> Self {
        CoreError::from(e).into()
    }
}

impl From<crate::fleet::FleetError> for ApiError {
    fn from(e: crate::fleet::FleetError) -> Self {
        use crate::fleet::FleetError::*;
        let (kind, code) = match &e {
            Bus(_) => (ErrorKind::Unavailable, "fleet_unavailable"),
            NotFound(_) => (ErrorKind::NotFound, "not_found"),
            TooLarge(_) => (ErrorKind::TooLarge, "too_large"),
            BadRequest(_) => (ErrorKind::Invalid, "bad_request"),
            Remote { code, .. } => {
                let kind = match code.as_str() {
                    "not_found" | "no_samples" => ErrorKind::NotFound,
                    "too_large" => ErrorKind::TooLarge,
                    "busy" => ErrorKind::Busy,
                    c if c.starts_with("bad_") => ErrorKind::Invalid,
                    _ => ErrorKind::Unavailable,
                };
                let code = code.clone();
                return ApiError::new(kind, &code, e.to_string());
            }
            Core(_) => {
                let Core(core) = e else { unreachable!() };
                return core.into();
            }
        };
        ApiError::new(kind, code, e.to_string())
    }
}
