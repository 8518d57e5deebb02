//! The web UI: `web-ui/dist`, built by `npm run build` (scripts/setup) and embedded in the
//! binary at compile time, served at `/`. Paths the UI routes itself get `index.html`; a binary
//! built before the UI was says so instead of serving nothing.

use axum::{
    http::{StatusCode, Uri, header},
    response::{IntoResponse, Response},
};
use rust_embed::Embed;

use super::error::ApiError;
use loupe_api::model::ErrorKind;

#[derive(Embed)]
#[folder = "../../web-ui/dist/"]
#[allow_missing = true]
struct Assets;

pub async fn serve(uri: Uri) -> Response {
    let path = uri.path().trim_start_matches('/');
    if path.starts_with("api/") {
        return ApiError::new(ErrorKind::NotFound, "no_route", "no such route (see /api/v1/openapi.json)")
            .into_response();
    }
    let (file, name) = match Assets::get(path).filter(|_| !path.is_empty()) {
        Some(f) => (f, path),
        None => match Assets::get("index.html") {
            Some(f) => (f, "index.html"),
            None => {
                return (
                    StatusCode::SERVICE_UNAVAILABLE,
                    [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                    "The web UI was not built into this binary: run `scripts/setup` (npm ci && npm run build in web-ui/), then `cargo build --release`.\n",
                )
                    .into_response();
            }
        },
    };
    // Vite names assets by content hash: they never change, index.html always may.
    let cache = if name.starts_with("assets/") { "public, max-age=31536000, immutable" } else { "no-cache" };
    (
        [(header::CONTENT_TYPE, file.metadata.mimetype().to_string()), (header::CACHE_CONTROL, cache.to_string())],
        file.data.into_owned(),
    )
        .into_response()
}
