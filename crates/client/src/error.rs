//! The client's one error type: what went wrong talking to Baton.
//!
//! Owns the decoding of an error answer (`{"error", "code"}` and the HTTP
//! status) into [`Error::Api`]. Must never lose the distinction callers rely
//! on: a transport error or a 5xx means "the outcome is unknown" for anything
//! that writes; a 4xx means the server refused and changed nothing.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// Connection refused or reset, timeout, body cut short: nothing is known.
    Transport(String),
    /// The server answered a non-2xx status. `code` and `message` are the
    /// body's `code` and `error` when it had that shape (every Baton error
    /// does); `body` is the raw text, cut to [`BODY_KEPT`] bytes.
    Api { status: u16, code: Option<String>, message: String, body: String },
    /// A 2xx whose body is not the shape we expect.
    Shape(String),
    /// Refused here, nothing sent: a base URL or a request that cannot be built.
    Invalid(String),
}

/// How much of an error answer's body is kept: a proxy's HTML page or a huge
/// body must not be held in every error value.
pub const BODY_KEPT: usize = 4096;

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The error a non-2xx answer means.
    pub fn from_answer(status: u16, body: &[u8]) -> Error {
        #[derive(serde::Deserialize)]
        struct Shape {
            error: Option<serde_json::Value>,
            code: Option<String>,
        }
        let text = String::from_utf8_lossy(&body[..body.len().min(BODY_KEPT)]);
        let text = truncate(&text, BODY_KEPT).to_string();
        let (code, message) = match serde_json::from_slice::<Shape>(body) {
            Ok(Shape { error, code }) => {
                let message = match error {
                    Some(serde_json::Value::String(s)) => s,
                    Some(v) => v.to_string(),
                    None => truncate(&text, 300).to_string(),
                };
                (code, message)
            }
            Err(_) => (None, truncate(&text, 300).to_string()),
        };
        Error::Api { status, code, message, body: text }
    }

    /// 5xx or transport: whatever the request would have written may or may not be there.
    pub fn is_unknown(&self) -> bool {
        match self {
            Error::Transport(_) => true,
            Error::Api { status, .. } => *status >= 500,
            Error::Shape(_) | Error::Invalid(_) => false,
        }
    }

    /// The HTTP status of an API error.
    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Api { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The server's machine code of an API error (`queue_full`, `invalid_batch`, ...).
    pub fn code(&self) -> Option<&str> {
        match self {
            Error::Api { code, .. } => code.as_deref(),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Transport(m) => write!(f, "transport: {m}"),
            Error::Api { status, code: Some(c), message, .. } => write!(f, "HTTP {status} {c}: {message}"),
            Error::Api { status, code: None, message, .. } => write!(f, "HTTP {status}: {message}"),
            Error::Shape(m) => write!(f, "unexpected answer: {m}"),
            Error::Invalid(m) => write!(f, "invalid: {m}"),
        }
    }
}

impl std::error::Error for Error {}

/// The longest prefix of `s` of at most `n` bytes that ends on a character boundary.
pub fn truncate(s: &str, n: usize) -> &str {
    if s.len() <= n {
        return s;
    }
    let mut end = n;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// A reqwest error with its chain of causes (reqwest's own text alone says
/// "error sending request" and hides "connection refused").
pub(crate) fn describe(e: &reqwest::Error) -> String {
    use std::error::Error as _;
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(x) = src {
        s.push_str(": ");
        s.push_str(&x.to_string());
        src = x.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_baton_error_body_gives_status_code_and_message() {
        let e = Error::from_answer(409, br#"{"error":"queue q is full (maxSize 3)","code":"queue_full"}"#);
        assert_eq!(e.status(), Some(409));
        assert_eq!(e.code(), Some("queue_full"));
        match &e {
            Error::Api { message, .. } => assert_eq!(message, "queue q is full (maxSize 3)"),
            other => panic!("{other:?}"),
        }
        assert_eq!(e.to_string(), "HTTP 409 queue_full: queue q is full (maxSize 3)");
        assert!(!e.is_unknown(), "a 4xx changed nothing");
    }

    #[test]
    fn a_5xx_is_unknown_and_a_body_of_another_shape_is_kept_as_text() {
        let e = Error::from_answer(502, b"<html>Bad Gateway</html>");
        assert!(e.is_unknown());
        assert_eq!(e.code(), None);
        assert_eq!(e.to_string(), "HTTP 502: <html>Bad Gateway</html>");
        let e = Error::from_answer(503, b"");
        assert_eq!(e.to_string(), "HTTP 503: ");
        assert!(Error::Transport("reset".into()).is_unknown());
        assert!(!Error::Shape("x".into()).is_unknown());
    }

    #[test]
    fn an_error_field_that_is_not_a_string_and_a_missing_code_are_shown() {
        let e = Error::from_answer(400, br#"{"error":{"why":1}}"#);
        assert_eq!(e.to_string(), r#"HTTP 400: {"why":1}"#);
        let e = Error::from_answer(400, br#"{"code":"invalid_batch"}"#);
        assert_eq!(e.code(), Some("invalid_batch"));
    }

    #[test]
    fn a_huge_or_non_utf8_body_is_cut_on_a_character_boundary() {
        let mut b = "é".repeat(BODY_KEPT).into_bytes();
        b.push(0xff);
        let Error::Api { body, message, .. } = Error::from_answer(500, &b) else { panic!() };
        assert!(body.len() <= BODY_KEPT);
        assert!(message.len() <= 300);
        assert!(message.chars().all(|c| c == 'é'));
    }
}
