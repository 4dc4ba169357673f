//! SASL/PLAIN on the Kafka listener: the users file, the per-connection state
//! machine Kafka's SaslServerAuthenticator follows, and the password check.
//!
//! With users configured, a connection may send only ApiVersions,
//! SaslHandshake and SaslAuthenticate until it has authenticated; anything
//! else closes it, as Kafka does. Handshake v1 clients then send the PLAIN
//! token inside SaslAuthenticate; handshake v0 clients send it as a bare
//! size-prefixed frame and get a bare (empty) frame back. A wrong password is
//! answered (SASL_AUTHENTICATION_FAILED with a message, where the protocol
//! has room for one) and the connection closed. Without users, and once a
//! connection has authenticated, both SASL APIs answer ILLEGAL_SASL_STATE and
//! the connection stays open: that is what a Kafka broker's request handler
//! answers on a listener where SASL is over.

use crate::frame::Parsed;
use crate::KafkaStats;
use bytes::Bytes;
use kafka_protocol::error::ResponseError as E;
use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind, SaslAuthenticateResponse, SaslHandshakeResponse};
use kafka_protocol::protocol::StrBytes;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

pub const MECHANISM: &str = "PLAIN";

/// Largest frame a connection may send before it has authenticated (Kafka's
/// sasl.server.max.receive.size), so an unknown client cannot make the
/// server reserve the full --kafka-max-frame-bytes.
pub const MAX_UNAUTHENTICATED_FRAME: usize = 512 << 10;

const ILLEGAL_SASL_STATE: i16 = E::IllegalSaslState.code();
const UNSUPPORTED_SASL_MECHANISM: i16 = E::UnsupportedSaslMechanism.code();
const SASL_AUTHENTICATION_FAILED: i16 = E::SaslAuthenticationFailed.code();

/// The accounts PLAIN accepts, from a file of `user:password` lines.
pub struct SaslUsers {
    users: HashMap<String, Vec<u8>>,
}

impl std::fmt::Debug for SaslUsers {
    // Never print the passwords (the config is logged at start-up).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SaslUsers({} users)", self.users.len())
    }
}

impl SaslUsers {
    /// One `user:password` per line, split at the first colon: a user name
    /// holds no colon, a password may. Nothing is trimmed but a trailing CR;
    /// blank lines and lines starting with `#` are skipped. Errors name the
    /// line number, never its text (it holds a password).
    pub fn parse(text: &str) -> Result<SaslUsers, String> {
        let mut users = HashMap::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.strip_suffix('\r').unwrap_or(raw);
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let n = i + 1;
            let Some((user, password)) = line.split_once(':') else {
                return Err(format!("line {n}: expected user:password"));
            };
            if user.is_empty() || password.is_empty() {
                return Err(format!("line {n}: the user name and the password must not be empty"));
            }
            if user.contains('\0') || password.contains('\0') {
                return Err(format!("line {n}: NUL is not allowed (PLAIN uses it as the separator)"));
            }
            if users.insert(user.to_string(), password.as_bytes().to_vec()).is_some() {
                return Err(format!("line {n}: user {user:?} is listed twice"));
            }
        }
        if users.is_empty() {
            return Err("no users (one user:password per line)".into());
        }
        Ok(SaslUsers { users })
    }

    pub fn load(path: &Path) -> Result<SaslUsers, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let users = Self::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            if std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o004 != 0) {
                tracing::warn!(path = %path.display(), "the Kafka SASL users file is readable by everyone");
            }
        }
        Ok(users)
    }

    pub fn len(&self) -> usize {
        self.users.len()
    }

    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }

    /// The password check. The comparison does not stop at the first
    /// differing byte, and an unknown user is compared against a password of
    /// its own, so the time taken says nothing about how much of a password
    /// was right (user names are not secret).
    pub fn check(&self, user: &str, password: &[u8]) -> bool {
        const DECOY: &[u8] = b"no such user: compare anyway so the time is the same";
        match self.users.get(user) {
            Some(want) => ct_eq(want, password),
            None => {
                let _ = ct_eq(DECOY, password);
                false
            }
        }
    }
}

/// Equal in time that depends only on the lengths, not on the contents.
fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = (a.len() != b.len()) as u8;
    for i in 0..a.len().max(b.len()) {
        diff |= a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0);
    }
    std::hint::black_box(diff) == 0
}

/// A PLAIN token (`authzid NUL authcid NUL password`, RFC 4616) checked the
/// way Kafka's PlainSaslServer checks it; the error is the message the
/// client is sent.
pub fn verify_plain(users: &SaslUsers, token: &[u8]) -> Result<String, String> {
    let parts: Vec<&[u8]> = token.split(|b| *b == 0).collect();
    let [authzid, user, password] = parts[..] else {
        return Err(format!("Invalid SASL/PLAIN response: expected 3 tokens, got {}", parts.len()));
    };
    let Ok(user) = std::str::from_utf8(user) else {
        return Err("Authentication failed: the username is not UTF-8".into());
    };
    if user.is_empty() {
        return Err("Authentication failed: username not specified".into());
    }
    if password.is_empty() {
        return Err("Authentication failed: password not specified".into());
    }
    if !authzid.is_empty() && authzid != user.as_bytes() {
        return Err(
            "Authentication failed: Client requested an authorization id that is different from username".into()
        );
    }
    if users.check(user, password) {
        Ok(user.to_string())
    } else {
        Err("Authentication failed: Invalid username or password".into())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// Waiting for ApiVersions or SaslHandshake.
    Handshake,
    /// Handshake v1 done: the token comes in SaslAuthenticate.
    Authenticate,
    /// Handshake v0 done: the token comes as a bare size-prefixed frame.
    RawToken,
    /// Authenticated (or SASL is off): every request is served.
    Done,
}

/// What the connection does with a request.
pub enum Verdict {
    /// Serve it as usual.
    Pass,
    /// A SASL request, answered here; `close` is why the connection ends
    /// after this answer, if it does.
    Answer { body: Box<ResponseKind>, close: Option<String> },
    /// Not allowed yet: close without answering.
    Refuse(String),
}

/// One connection's SASL state.
pub struct Gate {
    users: Option<Arc<SaslUsers>>,
    state: State,
    user: Option<String>,
}

impl Gate {
    pub fn new(users: Option<Arc<SaslUsers>>) -> Gate {
        let state = if users.is_some() { State::Handshake } else { State::Done };
        Gate { users, state, user: None }
    }

    pub fn authenticated(&self) -> bool {
        self.state == State::Done
    }

    /// The user this connection authenticated as.
    pub fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }

    /// After a v0 handshake the next frame is a bare token, not a request.
    pub fn expects_raw_token(&self) -> bool {
        self.state == State::RawToken
    }

    pub fn max_frame(&self, configured: usize) -> usize {
        if self.authenticated() {
            configured
        } else {
            configured.min(MAX_UNAUTHENTICATED_FRAME)
        }
    }

    /// Decide a decoded request.
    pub fn admit(&mut self, parsed: &Parsed, stats: &KafkaStats) -> Verdict {
        let (api, version, body) = match parsed {
            Parsed::ApiVersionsFallback { .. } => return Verdict::Pass,
            Parsed::Request(r) => (r.api, r.version, Some(&r.body)),
            Parsed::Unsupported(r) => (r.api, r.version, None),
        };
        match (api, body) {
            (ApiKey::ApiVersions, _) => Verdict::Pass,
            (ApiKey::SaslHandshake, Some(RequestKind::SaslHandshake(q))) => {
                self.handshake(q.mechanism.as_str(), version)
            }
            (ApiKey::SaslAuthenticate, Some(RequestKind::SaslAuthenticate(q))) => {
                self.authenticate(&q.auth_bytes, stats)
            }
            _ if self.authenticated() => Verdict::Pass,
            _ => Verdict::Refuse(format!("{api:?} v{version} before SASL authentication")),
        }
    }

    fn handshake(&mut self, mechanism: &str, version: i16) -> Verdict {
        let answer = |code: i16, mechanisms: Vec<StrBytes>, close: Option<String>| Verdict::Answer {
            body: Box::new(ResponseKind::SaslHandshake(
                SaslHandshakeResponse::default().with_error_code(code).with_mechanisms(mechanisms),
            )),
            close,
        };
        let enabled = || vec![StrBytes::from_static_str(MECHANISM)];
        match self.state {
            State::Done => answer(ILLEGAL_SASL_STATE, Vec::new(), None),
            State::Authenticate | State::RawToken => {
                answer(ILLEGAL_SASL_STATE, enabled(), Some("SaslHandshake sent twice".into()))
            }
            State::Handshake if mechanism != MECHANISM => answer(
                UNSUPPORTED_SASL_MECHANISM,
                enabled(),
                Some(format!("SASL mechanism {mechanism:?} is not enabled (only {MECHANISM})")),
            ),
            State::Handshake => {
                self.state = if version == 0 { State::RawToken } else { State::Authenticate };
                answer(0, enabled(), None)
            }
        }
    }

    fn authenticate(&mut self, token: &[u8], stats: &KafkaStats) -> Verdict {
        let answer = |code: i16, message: Option<String>, close: Option<String>| Verdict::Answer {
            body: Box::new(ResponseKind::SaslAuthenticate(
                SaslAuthenticateResponse::default()
                    .with_error_code(code)
                    .with_error_message(message.map(StrBytes::from_string)),
            )),
            close,
        };
        match (&self.state, &self.users) {
            (State::Done, None) => {
                answer(ILLEGAL_SASL_STATE, Some("SASL authentication is not enabled on this listener".into()), None)
            }
            (State::Done, Some(_)) => answer(
                ILLEGAL_SASL_STATE,
                Some("SaslAuthenticate request received after successful authentication".into()),
                None,
            ),
            (State::Authenticate, Some(users)) => match verify_plain(users, token) {
                Ok(user) => {
                    KafkaStats::bump(&stats.sasl_successes);
                    self.state = State::Done;
                    self.user = Some(user);
                    answer(0, None, None)
                }
                Err(msg) => {
                    KafkaStats::bump(&stats.sasl_failures);
                    let reason = format!("SASL/PLAIN authentication failed: {msg}");
                    answer(SASL_AUTHENTICATION_FAILED, Some(msg), Some(reason))
                }
            },
            _ => {
                let msg = "SaslAuthenticate before a SaslHandshake".to_string();
                answer(ILLEGAL_SASL_STATE, Some(msg.clone()), Some(msg))
            }
        }
    }

    /// A bare token after a v0 handshake. Success is answered with an empty
    /// bare frame (PLAIN has no challenge); failure closes without an
    /// answer, as Kafka does for v0 clients (they have nowhere to read one).
    pub fn raw_token(&mut self, token: &[u8], stats: &KafkaStats) -> Result<Bytes, String> {
        let users = self.users.as_ref().expect("raw tokens only follow a handshake with SASL on");
        match verify_plain(users, token) {
            Ok(user) => {
                KafkaStats::bump(&stats.sasl_successes);
                self.state = State::Done;
                self.user = Some(user);
                Ok(Bytes::from_static(&[0, 0, 0, 0]))
            }
            Err(msg) => {
                KafkaStats::bump(&stats.sasl_failures);
                Err(format!("SASL/PLAIN authentication failed: {msg}"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::Request;
    use kafka_protocol::messages::{MetadataRequest, RequestHeader, SaslAuthenticateRequest, SaslHandshakeRequest};

    fn users() -> Arc<SaslUsers> {
        Arc::new(SaslUsers::parse("# accounts\nalice:s3cret\n\nbob:pa:ss:word\r\n").unwrap())
    }

    fn req(api: ApiKey, version: i16, body: RequestKind) -> Parsed {
        Parsed::Request(Request { header: RequestHeader::default(), api, version, body })
    }

    fn handshake(mech: &'static str, version: i16) -> Parsed {
        let q = SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(mech));
        req(ApiKey::SaslHandshake, version, RequestKind::SaslHandshake(q))
    }

    fn authenticate(token: &'static [u8]) -> Parsed {
        let q = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from_static(token));
        req(ApiKey::SaslAuthenticate, 2, RequestKind::SaslAuthenticate(q))
    }

    fn metadata() -> Parsed {
        req(ApiKey::Metadata, 9, RequestKind::Metadata(MetadataRequest::default()))
    }

    /// (error code, closes) of an answered SASL request.
    fn answered(v: Verdict) -> (i16, bool, Option<String>) {
        match v {
            Verdict::Answer { body, close } => match *body {
                ResponseKind::SaslHandshake(r) => (r.error_code, close.is_some(), None),
                ResponseKind::SaslAuthenticate(r) => {
                    (r.error_code, close.is_some(), r.error_message.map(|m| m.to_string()))
                }
                _ => panic!("not a SASL answer"),
            },
            Verdict::Pass => panic!("passed"),
            Verdict::Refuse(r) => panic!("refused: {r}"),
        }
    }

    #[test]
    fn users_file_shapes() {
        let u = users();
        assert_eq!(u.len(), 2);
        assert!(u.check("alice", b"s3cret"));
        assert!(u.check("bob", b"pa:ss:word"), "split at the first colon; CR dropped");
        assert!(!u.check("alice", b"s3cre"));
        assert!(!u.check("alice", b"s3cret "));
        assert!(!u.check("carol", b"s3cret"));
        assert!(format!("{u:?}").contains("2 users") && !format!("{u:?}").contains("s3cret"));
        for bad in ["", "# only a comment\n", "alice", "alice:", ":pw", "a:1\na:2"] {
            let e = SaslUsers::parse(bad).unwrap_err();
            assert!(!e.contains("pw") && !e.contains(":2"), "errors never echo the line: {e}");
        }
        assert!(SaslUsers::parse("a:1\na:2").unwrap_err().starts_with("line 2"));
    }

    #[test]
    fn constant_time_compare_is_still_a_compare() {
        assert!(ct_eq(b"", b""));
        assert!(ct_eq(b"abc", b"abc"));
        assert!(!ct_eq(b"abc", b"abd"));
        assert!(!ct_eq(b"abc", b"ab"));
        assert!(!ct_eq(b"ab\0", b"ab"), "a shorter password padded with zeros is not equal");
    }

    #[test]
    fn plain_tokens() {
        let u = users();
        assert_eq!(verify_plain(&u, b"\0alice\0s3cret").unwrap(), "alice");
        assert_eq!(verify_plain(&u, b"alice\0alice\0s3cret").unwrap(), "alice");
        let wrong = verify_plain(&u, b"\0alice\0nope").unwrap_err();
        assert!(wrong.contains("Invalid username or password"), "{wrong}");
        assert!(verify_plain(&u, b"mallory\0alice\0s3cret").unwrap_err().contains("authorization id"));
        assert!(verify_plain(&u, b"alice\0s3cret").unwrap_err().contains("expected 3 tokens, got 2"));
        assert!(verify_plain(&u, b"\0\0s3cret").unwrap_err().contains("username not specified"));
        assert!(verify_plain(&u, b"\0alice\0").unwrap_err().contains("password not specified"));
    }

    #[test]
    fn v1_handshake_then_authenticate() {
        let stats = KafkaStats::default();
        let mut g = Gate::new(Some(users()));
        assert!(!g.authenticated());
        assert_eq!(g.max_frame(100 << 20), MAX_UNAUTHENTICATED_FRAME);
        let api_versions = req(
            ApiKey::ApiVersions,
            3,
            RequestKind::ApiVersions(kafka_protocol::messages::ApiVersionsRequest::default()),
        );
        assert!(matches!(g.admit(&api_versions, &stats), Verdict::Pass));
        assert_eq!(answered(g.admit(&handshake("PLAIN", 1), &stats)), (0, false, None));
        assert!(!g.expects_raw_token());
        assert_eq!(answered(g.admit(&authenticate(b"\0alice\0s3cret"), &stats)), (0, false, None));
        assert!(g.authenticated());
        assert_eq!(g.user(), Some("alice"));
        assert_eq!(g.max_frame(100 << 20), 100 << 20);
        assert!(matches!(g.admit(&metadata(), &stats), Verdict::Pass));
        // Once in, more SASL requests are answered ILLEGAL_SASL_STATE and the connection stays.
        assert_eq!(answered(g.admit(&handshake("PLAIN", 1), &stats)).0, ILLEGAL_SASL_STATE);
        let (code, close, _) = answered(g.admit(&authenticate(b"\0alice\0s3cret"), &stats));
        assert_eq!((code, close), (ILLEGAL_SASL_STATE, false));
        assert_eq!(stats.sasl_successes.load(std::sync::atomic::Ordering::Relaxed), 1);
    }

    #[test]
    fn wrong_password_answers_then_closes() {
        let stats = KafkaStats::default();
        let mut g = Gate::new(Some(users()));
        g.admit(&handshake("PLAIN", 1), &stats);
        let (code, close, msg) = answered(g.admit(&authenticate(b"\0alice\0guess"), &stats));
        assert_eq!((code, close), (SASL_AUTHENTICATION_FAILED, true));
        assert!(msg.unwrap().contains("Invalid username or password"));
        assert!(!g.authenticated());
        assert_eq!(stats.sasl_failures.load(std::sync::atomic::Ordering::Relaxed), 1);
    }

    #[test]
    fn requests_before_authentication_are_refused() {
        let stats = KafkaStats::default();
        let mut g = Gate::new(Some(users()));
        assert!(matches!(g.admit(&metadata(), &stats), Verdict::Refuse(_)));
        // SaslAuthenticate before the handshake: answered, then closed.
        let (code, close, _) = answered(g.admit(&authenticate(b"\0alice\0s3cret"), &stats));
        assert_eq!((code, close), (ILLEGAL_SASL_STATE, true));
        // After a handshake but before authenticating: still refused.
        let mut g = Gate::new(Some(users()));
        g.admit(&handshake("PLAIN", 1), &stats);
        assert!(matches!(g.admit(&metadata(), &stats), Verdict::Refuse(_)));
    }

    #[test]
    fn other_mechanisms_are_refused_with_the_enabled_list() {
        let stats = KafkaStats::default();
        let mut g = Gate::new(Some(users()));
        match g.admit(&handshake("SCRAM-SHA-256", 1), &stats) {
            Verdict::Answer { body, close } => {
                let ResponseKind::SaslHandshake(r) = *body else { panic!("not a handshake answer") };
                assert_eq!(r.error_code, UNSUPPORTED_SASL_MECHANISM);
                assert_eq!(r.mechanisms, vec![StrBytes::from_static_str("PLAIN")]);
                assert!(close.is_some());
            }
            _ => panic!("expected a handshake answer"),
        }
    }

    #[test]
    fn v0_handshake_takes_a_bare_token() {
        let stats = KafkaStats::default();
        let mut g = Gate::new(Some(users()));
        assert_eq!(answered(g.admit(&handshake("PLAIN", 0), &stats)).0, 0);
        assert!(g.expects_raw_token());
        assert_eq!(&g.raw_token(b"\0bob\0pa:ss:word", &stats).unwrap()[..], &[0, 0, 0, 0]);
        assert!(g.authenticated());
        let mut g = Gate::new(Some(users()));
        g.admit(&handshake("PLAIN", 0), &stats);
        assert!(g.raw_token(b"\0bob\0wrong", &stats).is_err());
        assert!(!g.authenticated());
    }

    #[test]
    fn without_users_nothing_is_gated() {
        let stats = KafkaStats::default();
        let mut g = Gate::new(None);
        assert!(g.authenticated());
        assert!(matches!(g.admit(&metadata(), &stats), Verdict::Pass));
        assert_eq!(answered(g.admit(&handshake("PLAIN", 1), &stats)), (ILLEGAL_SASL_STATE, false, None));
        let (code, close, msg) = answered(g.admit(&authenticate(b"\0a\0b"), &stats));
        assert_eq!((code, close), (ILLEGAL_SASL_STATE, false));
        assert!(msg.unwrap().contains("not enabled"));
    }
}
