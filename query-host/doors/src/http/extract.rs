//! What the routes take from a request, each parsed in one place with the API's error shape:
//! a JSON or MessagePack body ([`ApiJson`]), query parameters ([`ApiQuery`]), and the time
//! range every listing and profile takes from `from` and `to` ([`Range`], documented by
//! [`RangeQuery`], shared with the HTTP client) — parsed as the CLI parses them
//! (`loupe_api::time::parse_range`).

use axum::{
    Json,
    extract::{FromRequest, FromRequestParts, Query, Request},
    http::{StatusCode, header, request::Parts},
};
pub use loupe_api::wire::http::RangeQuery;
use loupe_store::TimeRange;
use serde::de::DeserializeOwned;

use super::error::ApiError;
use loupe_api::model::ErrorKind;

/// A JSON body — or MessagePack with `Content-Type: application/msgpack` — whose rejection is
/// an [`ApiError`] (so a bad body gets the usual error shape).
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let msgpack = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with(super::negotiate::MSGPACK) || t.starts_with("application/x-msgpack"));
        if msgpack {
            let bytes = axum::body::Bytes::from_request(req, state)
                .await
                .map_err(|e| ApiError::new(kind_of(e.status()), "bad_body", e.body_text()))?;
            return loupe_api::formats::msgpack::from_slice(&bytes)
                .map(ApiJson)
                .map_err(|e| ApiError::new(ErrorKind::Invalid, "bad_body", format!("bad MessagePack body: {e}")));
        }
        match Json::<T>::from_request(req, state).await {
            Ok(Json(v)) => Ok(ApiJson(v)),
            Err(e) => Err(ApiError::new(kind_of(e.status()), "bad_body", e.body_text())),
        }
    }
}

/// The kind of a body rejection axum made.
fn kind_of(status: StatusCode) -> ErrorKind {
    match status {
        StatusCode::PAYLOAD_TOO_LARGE => ErrorKind::TooLarge,
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ErrorKind::UnsupportedMedia,
        // Well-formed, but not the body this route takes.
        StatusCode::UNPROCESSABLE_ENTITY => ErrorKind::Refused,
        _ => ErrorKind::Invalid,
    }
}

/// Query parameters whose rejection is an [`ApiError`].
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Query::<T>::from_request_parts(parts, state).await {
            Ok(Query(v)) => Ok(ApiQuery(v)),
            Err(e) => Err(ApiError::new(ErrorKind::Invalid, "bad_query", e.body_text())),
        }
    }
}

/// `[from, to)` from the query string (both optional), or a `bad_time` / `bad_range` error.
/// The route's other parameters come in a struct of their own beside it.
pub struct Range(pub TimeRange);

impl<S: Send + Sync> FromRequestParts<S> for Range {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let ApiQuery(q) = ApiQuery::<RangeQuery>::from_request_parts(parts, state).await?;
        Ok(Range(q.range()?))
    }
}
