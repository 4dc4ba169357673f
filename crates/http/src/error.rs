//! The one error shape every route answers with: `{error, code}` and a status
//! that says whose fault it was.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use baton_core::{CoreError, ErrorKind};
use std::collections::BTreeMap;
use std::sync::{LazyLock, Mutex};

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError { status, code, message: message.into() }
    }
    pub fn bad(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }
}

/// The status an engine error answers with.
pub(crate) fn status_of(kind: ErrorKind) -> StatusCode {
    match kind {
        ErrorKind::BadRequest => StatusCode::BAD_REQUEST,
        ErrorKind::NotFound => StatusCode::NOT_FOUND,
        ErrorKind::Conflict => StatusCode::CONFLICT,
        ErrorKind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        ErrorKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorKind::Overloaded => StatusCode::TOO_MANY_REQUESTS,
    }
}

impl From<CoreError> for ApiError {
    fn from(e: CoreError) -> Self {
        ApiError { status: status_of(e.kind), code: e.code, message: e.message }
    }
}

/// Error answers by (status, code), for /metrics, so a client hitting a bound
/// shows there. Process-wide: an answer is made where the app state is not at
/// hand (`IntoResponse`, the listener). Error answers are not the hot path.
static ANSWERED: LazyLock<Mutex<BTreeMap<(u16, &'static str), u64>>> = LazyLock::new(Default::default);

pub(crate) fn count(status: u16, code: &'static str) {
    *ANSWERED.lock().unwrap_or_else(|e| e.into_inner()).entry((status, code)).or_default() += 1;
}

pub(crate) fn answered() -> Vec<((u16, &'static str), u64)> {
    ANSWERED.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|(k, v)| (*k, *v)).collect()
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        count(self.status.as_u16(), self.code);
        (self.status, Json(serde_json::json!({ "error": self.message, "code": self.code }))).into_response()
    }
}

pub async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "route_not_found", format!("no route for {}", uri.path()))
}

pub async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("{method} is not allowed on {}", uri.path()),
    )
}

/// Every answer of the router with an error status has the `{error, code}`
/// shape: axum's own rejections (a path segment that is not UTF-8 once
/// decoded, a query string of the wrong shape) come as plain text, and are
/// given it here, keeping their message. A URL with a `%` not followed by two
/// hex digits is refused first: axum would keep it as literal text, so
/// `/queues/%ZZ` would name a queue called `%ZZ`.
pub async fn json_errors(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let uri = req.uri();
    if let Some(what) = bad_percent(uri.path(), "path").or_else(|| bad_percent(uri.query().unwrap_or(""), "query")) {
        return ApiError::bad("invalid_url", what).into_response();
    }
    let res = next.run(req).await;
    let status = res.status();
    let is_json = res
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return res;
    }
    let (parts, body) = res.into_parts();
    let text = axum::body::to_bytes(body, 64 << 10).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let message = if text.trim().is_empty() {
        status.canonical_reason().unwrap_or("error").to_string()
    } else {
        text.to_string()
    };
    let code = match status.as_u16() {
        400 if message.starts_with("Invalid URL") => "invalid_url",
        400 if message.starts_with("Failed to deserialize query string") => "invalid_query",
        400 => "bad_request",
        404 => "not_found",
        405 => "method_not_allowed",
        413 => "body_too_large",
        415 => "unsupported_media_type",
        422 => "invalid_request",
        431 => "headers_too_large",
        s if s >= 500 => "internal_error",
        _ => "http_error",
    };
    let mut out = ApiError::new(status, code, message).into_response();
    // Keep what else it said (`allow` on a 405, say), not its old body's framing.
    for (k, v) in parts.headers.iter() {
        if k != axum::http::header::CONTENT_TYPE && k != axum::http::header::CONTENT_LENGTH {
            out.headers_mut().insert(k.clone(), v.clone());
        }
    }
    out
}

/// Why `s` (a path or a query) is not valid percent-encoding, if it is not:
/// a `%` without two hex digits, or (in the path) bytes that are not UTF-8
/// once decoded.
fn bad_percent(s: &str, what: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut decoded = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = |c: u8| (c as char).to_digit(16);
            match (b.get(i + 1).copied().and_then(hex), b.get(i + 2).copied().and_then(hex)) {
                (Some(h), Some(l)) => {
                    decoded.push((h * 16 + l) as u8);
                    i += 3;
                    continue;
                }
                _ => {
                    let at: String = s[i..].chars().take(3).collect();
                    return Some(format!("the {what} has {at:?} at byte {i}: a % must be followed by two hex digits"));
                }
            }
        }
        decoded.push(b[i]);
        i += 1;
    }
    if what == "path" && std::str::from_utf8(&decoded).is_err() {
        return Some("the path is not UTF-8 once percent-decoded".into());
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn percent_encoding_is_checked() {
        assert_eq!(super::bad_percent("/q/a%20b%C3%A9", "path"), None);
        assert!(super::bad_percent("/q/%ZZ", "path").unwrap().contains("\"%ZZ\" at byte 3"));
        assert!(super::bad_percent("/q/a%2", "path").is_some());
        assert!(super::bad_percent("/q/a%", "path").is_some());
        assert!(super::bad_percent("/q/%FF", "path").unwrap().contains("UTF-8"));
        assert_eq!(super::bad_percent("x=%FF", "query"), None, "a query's bytes are the handler's to judge");
        assert!(super::bad_percent("x=%G1", "query").is_some());
    }
}
