//! Every error the API returns: `{"error": "<one line>", "code": "<stable code>"}` with a
//! status that fits.

use axum::{
    Json,
    http::StatusCode,
    response::{IntoResponse, Response},
};
use loupe_store::StoreError;
use serde::Serialize;
use utoipa::ToSchema;

use crate::udf::UdfError;

#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong, in one line a person can act on.
    pub error: String,
    /// Stable machine-readable code (`bad_range`, `time_limit`, `not_owner`, …).
    pub code: String,
    /// Lines the analysis logged before it failed, when there are any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub log: Vec<String>,
}

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub body: ErrorBody,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &str, error: impl Into<String>) -> Self {
        ApiError { status, body: ErrorBody { error: error.into(), code: code.into(), log: Vec::new() } }
    }

    pub fn bad_request(code: &str, error: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, error)
    }

    pub fn not_found(code: &str, error: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, code, error)
    }

    pub fn internal(error: impl std::fmt::Display) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", error.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body)).into_response()
    }
}

impl From<UdfError> for ApiError {
    fn from(e: UdfError) -> Self {
        let status = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let log = match &e {
            UdfError::AnalysisFailed { log, .. } => log.iter().map(|l| format!("{}: {}", l.level, l.message)).collect(),
            _ => Vec::new(),
        };
        ApiError { status, body: ErrorBody { error: e.to_string(), code: e.code().into(), log } }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::BadRange { .. } => ApiError::bad_request("bad_range", e.to_string()),
            StoreError::NoSpace { .. } => ApiError::new(StatusCode::INSUFFICIENT_STORAGE, "no_space", e.to_string()),
            _ => ApiError::internal(e),
        }
    }
}

impl From<anyhow::Error> for ApiError {
    fn from(e: anyhow::Error) -> Self {
        match e.downcast::<StoreError>() {
            Ok(s) => s.into(),
            Err(e) => ApiError::internal(format!("{e:#}")),
        }
    }
}

