//! Analyses over HTTP: upload (`PUT`), list, describe, delete, invoke — each the host's
//! operation of the same name, for the token's team (upload needs `upload`, invoking `invoke`;
//! replacing or deleting stays the owning team's).

use std::sync::Arc;

use axum::{
    body::{Body, Bytes},
    extract::{Path, State},
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Response},
};
use http_body_util::BodyExt;
use utoipa_axum::{router::OpenApiRouter, routes};

use loupe_api::wire::http::InvokeRequest;

use super::{AppState, acting, auth::Caller, error::ApiError, extract::ApiJson, negotiate::Format};
use loupe_api::{
    formats::base64::Base64,
    model::{ErrorBody, ErrorKind, InvokeResponse, UdfMeta, Uploaded},
    ops::HostApi,
};
use loupe_sandbox::registry::check_name;

pub fn routes() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::new()
        .routes(routes!(list_udfs))
        .routes(routes!(put_udf, get_udf, delete_udf))
        .routes(routes!(invoke))
}

/// Analyses on this host: name, owner, version, size, hash, description.
#[utoipa::path(get, path = "/api/v1/udfs", tag = "analyses", responses((status = 200, body = Vec<UdfMeta>), (status = 401, body = ErrorBody)))]
async fn list_udfs(State(state): State<Arc<AppState>>, caller: Caller, fmt: Format) -> Result<Response, ApiError> {
    Ok(fmt.reply(&acting(&state, caller, |api| api.list_udfs()).await?))
}

/// One analysis' listing.
#[utoipa::path(get, path = "/api/v1/udfs/{name}", tag = "analyses", params(("name" = String, Path)), responses((status = 200, body = UdfMeta), (status = 404, body = ErrorBody)))]
async fn get_udf(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    fmt: Format,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    Ok(fmt.reply(&acting(&state, caller, move |api| api.show_udf(name)).await?))
}

/// Uploads (or replaces, for its owning team) an analysis: the body is the component
/// (`application/wasm`). It is validated, compiled and kept, precompiled, across restarts.
#[utoipa::path(put, path = "/api/v1/udfs/{name}", tag = "analyses", params(("name" = String, Path)),
    request_body(content = Vec<u8>, content_type = "application/wasm"),
    responses((status = 201, body = Uploaded), (status = 200, body = Uploaded, description = "replaced"),
        (status = 400, body = ErrorBody), (status = 403, body = ErrorBody), (status = 413, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn put_udf(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    fmt: Format,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let limit = state.host.analyses()?.limits().module_bytes;
    let body = read_upload(body, limit).await?;
    check_name(&name)?;
    if let Some(ty) = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok())
        && !matches!(ty, "application/wasm" | "application/octet-stream")
    {
        return Err(ApiError::new(
            ErrorKind::UnsupportedMedia,
            "bad_content_type",
            format!("send the component as application/wasm, not {ty}"),
        ));
    }
    let uploaded = acting(&state, caller, move |api| api.upload_udf(name, Base64(body.into()))).await?;
    state.metrics.uploads.inc();
    let status = if uploaded.replaced { StatusCode::OK } else { StatusCode::CREATED };
    Ok((status, fmt.reply(&uploaded)).into_response())
}

/// Reads an upload of at most `limit` bytes. Beyond the limit it keeps reading (and dropping)
/// up to 4× the limit before answering 413: a client that sends the whole body before reading
/// the answer (most do) then gets the error instead of a broken pipe.
async fn read_upload(mut body: Body, limit: usize) -> Result<Bytes, ApiError> {
    let mut kept = Vec::new();
    let mut total = 0usize;
    while let Some(frame) = body.frame().await {
        let frame =
            frame.map_err(|e| ApiError::new(ErrorKind::Invalid, "bad_body", format!("reading the upload: {e}")))?;
        let Ok(data) = frame.into_data() else { continue };
        total += data.len();
        if total <= limit {
            kept.extend_from_slice(&data);
        } else if total > limit.saturating_mul(4) {
            break;
        }
    }
    if total > limit {
        return Err(ApiError::new(
            ErrorKind::TooLarge,
            "module_too_large",
            format!("component exceeds the module size limit of {limit} bytes"),
        ));
    }
    Ok(kept.into())
}

/// Deletes an analysis (its owning team only).
#[utoipa::path(delete, path = "/api/v1/udfs/{name}", tag = "analyses", params(("name" = String, Path)),
    responses((status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn delete_udf(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    acting(&state, caller, move |api| api.delete_udf(name)).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Runs an analysis next to the data and returns its typed result
/// (`{"kind": "table" | "series" | "flamegraph" | "text", …}`).
#[utoipa::path(post, path = "/api/v1/udfs/{name}/invoke", tag = "analyses", params(("name" = String, Path)),
    request_body = InvokeRequest,
    responses((status = 200, body = InvokeResponse), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 408, body = ErrorBody, description = "time limit"), (status = 422, body = ErrorBody, description = "a limit of the sandbox or of the result, a trap, an analysis error"),
        (status = 429, body = ErrorBody, description = "concurrency limit")))]
async fn invoke(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    fmt: Format,
    Path(name): Path<String>,
    ApiJson(req): ApiJson<InvokeRequest>,
) -> Result<Response, ApiError> {
    let range = req.range()?;
    let n = name.clone();
    let outcome = acting(&state, caller, move |api| api.invoke(n, range, req.params)).await;
    state.metrics.invoked(&name, outcome.as_ref().err().map(|e| e.body.code.as_str()));
    Ok(fmt.reply(&outcome?))
}
