//! A small Kafka wire client for Baton's Kafka door: one TCP connection, one
//! request at a time, on the `kafka-protocol` codec. It is what
//! `baton check history` records Kafka operations with, so it exposes the
//! protocol's knobs a history needs (an idempotent producer's explicit id,
//! epoch and base sequence; the exact batch bytes, to resend a batch
//! unchanged) and hides nothing the broker answered.
//!
//! - this file: connecting (with ApiVersions, choosing each API's version),
//!   framing, and one bounded, timed request/answer exchange;
//! - `ops`: the typed calls (Metadata, CreateTopics, InitProducerId, Produce,
//!   Fetch, OffsetCommit, OffsetFetch) and record batches;
//! - `txn`: the transactional calls, keyed batches with headers, and the
//!   read_committed Fetch.
//!
//! Owns how a request goes on the wire and how its answer is read back. Must
//! never retry anything by itself (whether a produce whose answer was lost is
//! sent again, and with which sequence, is the caller's decision), never read
//! a frame longer than its cap or wait past its timeout, never panic on what
//! the broker sends, and never reuse a connection after an exchange failed
//! half-way (the next answer on it could be the previous request's).

mod ops;
mod txn;

pub use ops::*;
pub use txn::*;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Answers larger than this are refused before anything is allocated for them:
/// a Fetch asks for at most [`FETCH_MAX_BYTES`], so anything near this is not a
/// Kafka answer.
pub const MAX_FRAME: usize = 16 << 20;

/// What went wrong with a Kafka request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KafkaError {
    /// Connecting, writing or reading failed (refused, reset, closed): a request
    /// that was written may or may not have been received and applied.
    Io(String),
    /// No answer within the timeout: the request may still be applied.
    Timeout,
    /// An answer that is not one: too long, cut short, undecodable, or for
    /// another request.
    Protocol(String),
    /// The broker does not offer a version of an API this client speaks.
    Unsupported(String),
    /// The broker answered with this Kafka error code (never 0).
    Code { code: i16, message: Option<String> },
}

impl KafkaError {
    /// The broker's Kafka error code, when it answered with one.
    pub fn code(&self) -> Option<i16> {
        match self {
            KafkaError::Code { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// The name of a Kafka error code (e.g. `OUT_OF_ORDER_SEQUENCE_NUMBER`), or `code_N`.
    pub fn code_name(code: i16) -> String {
        use kafka_protocol::error::ResponseError;
        match ResponseError::try_from_code(code) {
            Some(ResponseError::Unknown(_)) | None => format!("code_{code}"),
            Some(e) => screaming(&format!("{e:?}")),
        }
    }
}

/// `OutOfOrderSequenceNumber` -> `OUT_OF_ORDER_SEQUENCE_NUMBER`, Kafka's own spelling.
fn screaming(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 8);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

impl std::fmt::Display for KafkaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KafkaError::Io(m) => write!(f, "kafka i/o: {m}"),
            KafkaError::Timeout => write!(f, "kafka request timed out"),
            KafkaError::Protocol(m) => write!(f, "kafka answer unreadable: {m}"),
            KafkaError::Unsupported(m) => write!(f, "kafka version: {m}"),
            KafkaError::Code { code, message } => {
                write!(f, "kafka error {} ({code})", KafkaError::code_name(*code))?;
                match message {
                    Some(m) => write!(f, ": {m}"),
                    None => Ok(()),
                }
            }
        }
    }
}

impl std::error::Error for KafkaError {}

pub type KResult<T> = std::result::Result<T, KafkaError>;

/// The version range of each API this client can speak: every field the calls
/// in `ops` set or read exists in all of them (Metadata from 4: auto-create;
/// Fetch up to 12: topics by name; OffsetFetch up to 7: one group).
const SPOKEN: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 9),
    (ApiKey::Fetch, 4, 12),
    (ApiKey::Metadata, 4, 9),
    (ApiKey::OffsetCommit, 2, 8),
    (ApiKey::OffsetFetch, 1, 7),
    (ApiKey::CreateTopics, 2, 5),
    (ApiKey::InitProducerId, 0, 4),
    // The transactional calls in `txn`. EndTxn stops at 4: 5 is transactions v2
    // (KIP-890), where every end moves the producer to a new epoch.
    (ApiKey::FindCoordinator, 1, 3),
    (ApiKey::AddPartitionsToTxn, 0, 3),
    (ApiKey::AddOffsetsToTxn, 0, 3),
    (ApiKey::TxnOffsetCommit, 0, 3),
    (ApiKey::EndTxn, 0, 4),
    // SASL/PLAIN (`authenticate_plain`): the handshake from 1, where the token goes in
    // SaslAuthenticate rather than as a bare frame.
    (ApiKey::SaslHandshake, 1, 1),
    (ApiKey::SaslAuthenticate, 0, 2),
];

/// SASL/PLAIN credentials (RFC 4616) for a listener that demands them.
#[derive(Clone)]
pub struct SaslPlain {
    pub user: String,
    pub password: String,
}

impl std::fmt::Debug for SaslPlain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the password, in a log or a panic.
        f.debug_struct("SaslPlain").field("user", &self.user).finish_non_exhaustive()
    }
}

/// One connection to a Kafka listener.
pub struct KafkaConn {
    stream: TcpStream,
    next_correlation: i32,
    /// The version chosen per API in [`SPOKEN`], from the broker's ApiVersions.
    versions: Vec<(ApiKey, i16)>,
    timeout: Duration,
    /// An exchange failed half-way: the stream's position is unknown.
    broken: bool,
}

impl KafkaConn {
    /// Connect to `addr` (`host:port`) and ask for the broker's API versions;
    /// every request on this connection, this one too, is bounded by `timeout`.
    pub async fn connect(addr: &str, timeout: Duration) -> KResult<KafkaConn> {
        let stream = match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
            Err(_) => return Err(KafkaError::Timeout),
            Ok(Err(e)) => return Err(KafkaError::Io(format!("connect {addr}: {e}"))),
            Ok(Ok(s)) => s,
        };
        // Small requests must not wait for a delayed ACK.
        let _ = stream.set_nodelay(true);
        let mut c = KafkaConn { stream, next_correlation: 1, versions: Vec::new(), timeout, broken: false };
        // v0: every broker answers it, and its answer has the whole table.
        let r: ApiVersionsResponse = c.call(ApiKey::ApiVersions, 0, &ApiVersionsRequest::default()).await?;
        if r.error_code != 0 {
            return Err(KafkaError::Code { code: r.error_code, message: None });
        }
        for (api, lo, hi) in SPOKEN {
            let offered = r.api_keys.iter().find(|k| k.api_key == *api as i16);
            let chosen = offered.and_then(|k| {
                let v = (*hi).min(k.max_version);
                (v >= (*lo).max(k.min_version)).then_some(v)
            });
            // An API the broker lacks fails only the calls that need it.
            if let Some(v) = chosen {
                c.versions.push((*api, v));
            }
        }
        Ok(c)
    }

    /// [`KafkaConn::connect`], then SASL/PLAIN when `sasl` is given: a connection that
    /// is not authenticated is never answered.
    pub async fn connect_with(addr: &str, timeout: Duration, sasl: Option<&SaslPlain>) -> KResult<KafkaConn> {
        let mut c = KafkaConn::connect(addr, timeout).await?;
        if let Some(s) = sasl {
            c.authenticate_plain(s).await?;
        }
        Ok(c)
    }

    /// SaslHandshake (PLAIN) and SaslAuthenticate with `\0user\0password`. A refusal is
    /// the broker's code and message (SASL_AUTHENTICATION_FAILED, 58, for bad credentials).
    async fn authenticate_plain(&mut self, s: &SaslPlain) -> KResult<()> {
        use kafka_protocol::messages::{
            SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
        };
        let h: SaslHandshakeResponse = self
            .request(
                ApiKey::SaslHandshake,
                &SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN")),
            )
            .await?;
        if h.error_code != 0 {
            let offered: Vec<&str> = h.mechanisms.iter().map(|m| m.as_str()).collect();
            return Err(KafkaError::Code {
                code: h.error_code,
                message: Some(format!("SASL PLAIN refused; the listener offers {offered:?}")),
            });
        }
        let mut token = Vec::with_capacity(2 + s.user.len() + s.password.len());
        token.push(0);
        token.extend_from_slice(s.user.as_bytes());
        token.push(0);
        token.extend_from_slice(s.password.as_bytes());
        let a: SaslAuthenticateResponse = self
            .request(ApiKey::SaslAuthenticate, &SaslAuthenticateRequest::default().with_auth_bytes(token.into()))
            .await?;
        if a.error_code != 0 {
            return Err(KafkaError::Code { code: a.error_code, message: a.error_message.map(|m| m.to_string()) });
        }
        Ok(())
    }

    /// The version this connection speaks `api` at.
    pub fn version(&self, api: ApiKey) -> KResult<i16> {
        self.versions.iter().find(|(k, _)| *k == api).map(|(_, v)| *v).ok_or_else(|| {
            KafkaError::Unsupported(format!("the broker offers no version of {api:?} this client speaks"))
        })
    }

    /// True once an exchange failed: drop it and connect again.
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// Send one request at the version chosen for `api` and read its answer.
    pub async fn request<Q: Encodable, R: Decodable>(&mut self, api: ApiKey, body: &Q) -> KResult<R> {
        let v = self.version(api)?;
        self.call(api, v, body).await
    }

    async fn call<Q: Encodable, R: Decodable>(&mut self, api: ApiKey, version: i16, body: &Q) -> KResult<R> {
        if self.broken {
            return Err(KafkaError::Io("the connection failed earlier".into()));
        }
        let cid = self.next_correlation;
        self.next_correlation = self.next_correlation.wrapping_add(1).max(1);
        let frame = encode(api, version, cid, body)?;
        // Broken until the whole answer is read: a timeout or error half-way
        // leaves the stream in an unknown place.
        self.broken = true;
        let timeout = self.timeout;
        let got = match tokio::time::timeout(timeout, self.exchange(&frame)).await {
            Err(_) => return Err(KafkaError::Timeout),
            Ok(r) => r?,
        };
        let r = decode(api, version, cid, got)?;
        self.broken = false;
        Ok(r)
    }

    async fn exchange(&mut self, frame: &[u8]) -> KResult<Bytes> {
        self.stream.write_all(frame).await.map_err(|e| KafkaError::Io(format!("write: {e}")))?;
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len).await.map_err(|e| KafkaError::Io(format!("read: {e}")))?;
        let n = i32::from_be_bytes(len);
        if n < 4 || n as usize > MAX_FRAME {
            return Err(KafkaError::Protocol(format!("answer frame length {n} (cap {MAX_FRAME})")));
        }
        let mut buf = vec![0u8; n as usize];
        self.stream.read_exact(&mut buf).await.map_err(|e| KafkaError::Io(format!("read: {e}")))?;
        Ok(Bytes::from(buf))
    }
}

/// A whole request frame: length, header, body.
fn encode<Q: Encodable>(api: ApiKey, version: i16, cid: i32, body: &Q) -> KResult<BytesMut> {
    let mut b = BytesMut::with_capacity(256);
    b.put_i32(0);
    RequestHeader::default()
        .with_request_api_key(api as i16)
        .with_request_api_version(version)
        .with_correlation_id(cid)
        .with_client_id(Some(StrBytes::from_static_str("baton")))
        .encode(&mut b, api.request_header_version(version))
        .map_err(|e| KafkaError::Protocol(format!("encode {api:?} v{version} header: {e}")))?;
    body.encode(&mut b, version).map_err(|e| KafkaError::Protocol(format!("encode {api:?} v{version}: {e}")))?;
    let len = i32::try_from(b.len() - 4).map_err(|_| KafkaError::Protocol("request over 2 GiB".into()))?;
    b[0..4].copy_from_slice(&len.to_be_bytes());
    Ok(b)
}

fn decode<R: Decodable>(api: ApiKey, version: i16, cid: i32, mut b: Bytes) -> KResult<R> {
    // ApiVersions answers with header v0 whatever its version (KIP-511).
    let hv = if api == ApiKey::ApiVersions { 0 } else { api.response_header_version(version) };
    let h = ResponseHeader::decode(&mut b, hv)
        .map_err(|e| KafkaError::Protocol(format!("{api:?} v{version} answer header: {e}")))?;
    if h.correlation_id != cid {
        return Err(KafkaError::Protocol(format!("answer for request {} while waiting for {cid}", h.correlation_id)));
    }
    let r = R::decode(&mut b, version).map_err(|e| KafkaError::Protocol(format!("{api:?} v{version} answer: {e}")))?;
    if b.has_remaining() {
        return Err(KafkaError::Protocol(format!("{api:?} v{version} answer: {} bytes left over", b.remaining())));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    #[test]
    fn error_codes_have_kafkas_names() {
        assert_eq!(KafkaError::code_name(45), "OUT_OF_ORDER_SEQUENCE_NUMBER");
        assert_eq!(KafkaError::code_name(56), "KAFKA_STORAGE_ERROR");
        assert_eq!(KafkaError::code_name(-1), "UNKNOWN_SERVER_ERROR");
        assert_eq!(KafkaError::code_name(31_000), "code_31000");
    }

    /// A listener that answers the first request with `answer`, then holds the connection.
    async fn fake(answer: Vec<u8>) -> String {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let mut len = [0u8; 4];
            s.read_exact(&mut len).await.unwrap();
            let mut req = vec![0u8; i32::from_be_bytes(len) as usize];
            s.read_exact(&mut req).await.unwrap();
            s.write_all(&answer).await.unwrap();
            tokio::time::sleep(Duration::from_secs(10)).await;
        });
        addr
    }

    #[tokio::test]
    async fn an_absurd_frame_length_is_refused_before_reading_it() {
        let addr = fake(i32::MAX.to_be_bytes().to_vec()).await;
        let e = KafkaConn::connect(&addr, Duration::from_secs(2)).await.err().unwrap();
        assert!(matches!(e, KafkaError::Protocol(ref m) if m.contains("frame length")), "{e}");
        let addr = fake((-5i32).to_be_bytes().to_vec()).await;
        assert!(matches!(KafkaConn::connect(&addr, Duration::from_secs(2)).await, Err(KafkaError::Protocol(_))));
    }

    #[tokio::test]
    async fn silence_is_a_timeout_and_garbage_is_an_error() {
        let addr = fake(Vec::new()).await;
        let t = std::time::Instant::now();
        let e = KafkaConn::connect(&addr, Duration::from_millis(300)).await.err().unwrap();
        assert_eq!(e, KafkaError::Timeout);
        assert!(t.elapsed() < Duration::from_secs(3));
        // A frame for another correlation id.
        let mut a = 8i32.to_be_bytes().to_vec();
        a.extend_from_slice(&77i32.to_be_bytes());
        a.extend_from_slice(&[0, 0, 0, 0]);
        let addr = fake(a).await;
        let e = KafkaConn::connect(&addr, Duration::from_secs(2)).await.err().unwrap();
        assert!(matches!(e, KafkaError::Protocol(ref m) if m.contains("waiting for 1")), "{e}");
        // Cut short: the length promises more than is sent before the close.
        let mut a = 100i32.to_be_bytes().to_vec();
        a.extend_from_slice(&1i32.to_be_bytes());
        let addr = fake(a).await;
        let e = KafkaConn::connect(&addr, Duration::from_millis(500)).await.err().unwrap();
        assert!(matches!(e, KafkaError::Timeout | KafkaError::Io(_)), "{e}");
    }
}
