//! The one error shape every route answers with: `{error, code}` and a status
//! that says whose fault it was.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use baton_core::{CoreError, ErrorKind};

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

impl From<CoreError> for ApiError {
    fn from(e: CoreError) -> Self {
        let status = match e.kind {
            ErrorKind::BadRequest => StatusCode::BAD_REQUEST,
            ErrorKind::NotFound => StatusCode::NOT_FOUND,
            ErrorKind::Conflict => StatusCode::CONFLICT,
            ErrorKind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ErrorKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            ErrorKind::Overloaded => StatusCode::TOO_MANY_REQUESTS,
        };
        ApiError { status, code: e.code, message: e.message }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
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

pub async fn unsupported() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "ephemeral_unsupported", "ephemeral queues are not supported by Baton")
}
