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
