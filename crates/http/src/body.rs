//! Request bodies: read with a size limit and parsed as JSON, so that a body
//! too large is a 413 and a malformed or mistyped one a 400, each with the
//! standard error body (axum's own rejections are plain text).

use crate::error::ApiError;
use crate::App;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

pub struct JsonBody<T>(pub T);

/// The raw body, read with the size limit (413 past it); parse it with [`parse`]
/// to borrow strings from it.
pub struct RawBody(pub axum::body::Bytes);

impl FromRequest<App> for RawBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &App) -> Result<Self, Self::Rejection> {
        let limit = state.cfg.max_body_bytes;
        let within = state.cfg.request_read_timeout;
        // A body trickled in holds its request memory (D87): it arrives whole in time or
        // the request is refused, and the connection closes with the rest unread.
        let read = tokio::time::timeout(within, axum::body::to_bytes(req.into_body(), limit)).await;
        let bytes = read
            .map_err(|_| {
                ApiError::new(
                    StatusCode::REQUEST_TIMEOUT,
                    "request_timeout",
                    format!("the request body did not all arrive within {} s", within.as_secs_f64()),
                )
            })?
            .map_err(|_| {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "body_too_large",
                    format!("request body is larger than {limit} bytes"),
                )
            })?;
        Ok(RawBody(bytes))
    }
}

impl<T: DeserializeOwned> FromRequest<App> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &App) -> Result<Self, Self::Rejection> {
        let RawBody(bytes) = RawBody::from_request(req, state).await?;
        parse(&bytes).map(JsonBody)
    }
}

/// Parse JSON, borrowing strings from `bytes` where the type allows it.
pub fn parse<'a, T: serde::Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, ApiError> {
    if bytes.is_empty() {
        return Err(ApiError::bad("empty_body", "request body is empty; a JSON object is required"));
    }
    serde_json::from_slice(bytes).map_err(|e| {
        if e.is_syntax() || e.is_eof() {
            return ApiError::bad("invalid_json", format!("request body: {e}"));
        }
        // serde stops at the first shape error, before it has read the whole
        // body: `{"queue":"q"} junk` reports a missing field, not the junk.
        // Broken JSON is the first fault to name, so check the syntax (only
        // on this error path).
        if let Err(syntax) = serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
            return ApiError::bad("invalid_json", format!("request body: {syntax}"));
        }
        ApiError::bad("invalid_request", format!("request body: {e}"))
    })
}

/// A body that may be absent (Queen's lease extend sends none).
pub struct OptionalJson<T>(pub Option<T>);

impl<T: DeserializeOwned> FromRequest<App> for OptionalJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &App) -> Result<Self, Self::Rejection> {
        let RawBody(bytes) = RawBody::from_request(req, state).await?;
        if bytes.iter().all(|b| b.is_ascii_whitespace()) {
            return Ok(OptionalJson(None));
        }
        parse(&bytes).map(|v| OptionalJson(Some(v)))
    }
}
