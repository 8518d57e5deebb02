//! JSON by default; MessagePack (`rmp-serde`, named fields) when the client sends
//! `Accept: application/msgpack`.

use axum::{
    extract::FromRequestParts,
    http::{HeaderValue, header, request::Parts},
    response::{IntoResponse, Response},
};
use serde::Serialize;

use super::error::ApiError;

pub const MSGPACK: &str = "application/msgpack";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    MsgPack,
}

impl<S: Send + Sync> FromRequestParts<S> for Format {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let accept = parts.headers.get_all(header::ACCEPT).iter().filter_map(|v| v.to_str().ok()).collect::<Vec<_>>();
        let wants = accept.iter().flat_map(|v| v.split(',')).any(|t| {
            let t = t.split(';').next().unwrap_or("").trim();
            t == MSGPACK || t == "application/x-msgpack"
        });
        Ok(if wants { Format::MsgPack } else { Format::Json })
    }
}

impl Format {
    /// The value as a response body in this format.
    pub fn reply<T: Serialize>(self, value: &T) -> Response {
        let encoded = match self {
            Format::Json => serde_json::to_vec(value).map(|b| (b, "application/json")).map_err(|e| e.to_string()),
            Format::MsgPack => rmp_serde::to_vec_named(value).map(|b| (b, MSGPACK)).map_err(|e| e.to_string()),
        };
        match encoded {
            Ok((body, ty)) => ([(header::CONTENT_TYPE, HeaderValue::from_static(ty))], body).into_response(),
            Err(e) => ApiError::internal(format!("encoding the answer: {e}")).into_response(),
        }
    }
}
