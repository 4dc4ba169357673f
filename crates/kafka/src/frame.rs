//! Framing and request headers, with no I/O: cut size-prefixed frames out of a
//! read buffer (refusing negative or absurd lengths before allocating), decode
//! the request header by API key and version, gate the version against the
//! table, decode the body, and encode a response with the right header.
//!
//! Must never panic on any input: every way a frame can be wrong is a
//! `FrameError` or `ParseError`, and the connection closes with a log line.

use crate::versions;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, ResponseHeader, ResponseKind};
use kafka_protocol::protocol::{Decodable, Encodable};

/// api_key (2) + api_version (2) + correlation_id (4): the part of every
/// request header that is the same in all header versions.
pub const FIXED_HEADER: usize = 8;

#[derive(Debug, PartialEq, Eq)]
pub enum FrameError {
    Negative(i32),
    TooLarge {
        len: usize,
        max: usize,
    },
    /// Shorter than the fixed header fields.
    TooShort(usize),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::Negative(n) => write!(f, "negative frame length {n}"),
            FrameError::TooLarge { len, max } => write!(f, "frame length {len} exceeds the cap of {max} bytes"),
            FrameError::TooShort(n) => write!(f, "frame of {n} bytes is shorter than a request header"),
        }
    }
}

/// The bytes the frame at the head of `buf` will take, its length prefix
/// included, once its prefix is read and within `max`; `None` before that,
/// or for a length `next_frame` refuses.
pub fn claimed(buf: &[u8], max: usize) -> Option<usize> {
    let n = i32::from_be_bytes(buf.get(..4)?.try_into().ok()?);
    usize::try_from(n).ok().filter(|len| *len <= max).map(|len| len + 4)
}

/// Cut the next whole frame (without its length prefix) from `buf`.
/// `Ok(None)` means more bytes are needed; the caller reads and calls again.
pub fn next_frame(buf: &mut BytesMut, max: usize) -> Result<Option<Bytes>, FrameError> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let n = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    if n < 0 {
        return Err(FrameError::Negative(n));
    }
    let len = n as usize;
    if len > max {
        return Err(FrameError::TooLarge { len, max });
    }
    if len < FIXED_HEADER {
        return Err(FrameError::TooShort(len));
    }
    if buf.len() < 4 + len {
        // Reserve what the frame needs (already bounded by `max`) so the reads
        // that follow do not grow the buffer step by step.
        buf.reserve(4 + len - buf.len());
        return Ok(None);
    }
    buf.advance(4);
    Ok(Some(buf.split_to(len).freeze()))
}

/// Cut a bare size-prefixed frame of any length up to `max`: the SASL token
/// a SaslHandshake v0 client sends, which has no request header.
pub fn next_raw(buf: &mut BytesMut, max: usize) -> Result<Option<Bytes>, FrameError> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let n = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    if n < 0 {
        return Err(FrameError::Negative(n));
    }
    let len = n as usize;
    if len > max {
        return Err(FrameError::TooLarge { len, max });
    }
    if buf.len() < 4 + len {
        return Ok(None);
    }
    buf.advance(4);
    Ok(Some(buf.split_to(len).freeze()))
}

/// A decoded request.
#[derive(Debug)]
pub struct Request {
    pub header: RequestHeader,
    pub api: ApiKey,
    pub version: i16,
    pub body: RequestKind,
}

#[derive(Debug)]
pub enum Parsed {
    /// In the table: handle it.
    Request(Request),
    /// KIP-511: an ApiVersions request newer than we know. Answer v0 with
    /// UNSUPPORTED_VERSION and the table; the body is not decoded.
    ApiVersionsFallback { correlation_id: i32 },
    /// Decodable, but outside the table: answer with UNSUPPORTED_VERSION.
    Unsupported(Request),
}

#[derive(Debug)]
pub enum ParseError {
    /// An API key the codec does not know (Kafka closes the connection too).
    UnknownApi { key: i16, version: i16, correlation_id: i32 },
    /// A known API at a version the codec cannot decode.
    Undecodable { api: ApiKey, version: i16, correlation_id: i32 },
    /// The header or body did not decode.
    Malformed { api: ApiKey, version: i16, correlation_id: i32, reason: String },
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParseError::UnknownApi { key, version, correlation_id } => {
                write!(f, "unknown API key {key} (version {version}, correlation {correlation_id})")
            }
            ParseError::Undecodable { api, version, correlation_id } => {
                write!(f, "{api:?} version {version} cannot be decoded (correlation {correlation_id})")
            }
            ParseError::Malformed { api, version, correlation_id, reason } => {
                write!(f, "malformed {api:?} v{version} (correlation {correlation_id}): {reason}")
            }
        }
    }
}

/// Decode one frame (as cut by `next_frame`) into a request.
pub fn parse(frame: Bytes) -> Result<Parsed, ParseError> {
    if frame.len() < FIXED_HEADER {
        // next_frame never yields these; a direct caller (the fuzzer) may.
        return Err(ParseError::Malformed {
            api: ApiKey::ApiVersions,
            version: -1,
            correlation_id: -1,
            reason: format!("{} bytes is shorter than a request header", frame.len()),
        });
    }
    let key = i16::from_be_bytes([frame[0], frame[1]]);
    let version = i16::from_be_bytes([frame[2], frame[3]]);
    let correlation_id = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
    let Ok(api) = ApiKey::try_from(key) else {
        return Err(ParseError::UnknownApi { key, version, correlation_id });
    };
    if api == ApiKey::ApiVersions && version > versions::range(api).map_or(0, |r| r.1) {
        return Ok(Parsed::ApiVersionsFallback { correlation_id });
    }
    let valid = api.valid_versions();
    if version < valid.min || version > valid.max {
        return Err(ParseError::Undecodable { api, version, correlation_id });
    }
    let malformed = |reason: String| ParseError::Malformed { api, version, correlation_id, reason };
    let mut buf = frame;
    // The codec is patched to fail rather than over-allocate; catching a panic
    // as well keeps one hostile frame from ever taking more than its connection.
    let decoded = std::panic::catch_unwind(move || {
        let header =
            RequestHeader::decode(&mut buf, api.request_header_version(version)).map_err(|e| format!("header: {e}"))?;
        let body = RequestKind::decode(api, &mut buf, version).map_err(|e| format!("body: {e}"))?;
        Ok::<_, String>((header, body))
    });
    let (header, body) = match decoded {
        Ok(Ok(x)) => x,
        Ok(Err(reason)) => return Err(malformed(reason)),
        Err(_) => return Err(malformed("the decoder panicked".into())),
    };
    let req = Request { header, api, version, body };
    if versions::is_supported(api, version) {
        Ok(Parsed::Request(req))
    } else {
        Ok(Parsed::Unsupported(req))
    }
}

/// The header version of a response. ApiVersions always answers with v0 so
/// that a client which sent a version we do not know can still read it.
pub fn response_header_version(api: ApiKey, version: i16) -> i16 {
    if api == ApiKey::ApiVersions {
        0
    } else {
        api.response_header_version(version)
    }
}

/// Encode a whole response frame: length prefix, header, body.
pub fn encode_response(correlation_id: i32, api: ApiKey, version: i16, body: &ResponseKind) -> Result<Bytes, String> {
    let mut out = BytesMut::with_capacity(256);
    out.put_i32(0);
    ResponseHeader::default()
        .with_correlation_id(correlation_id)
        .encode(&mut out, response_header_version(api, version))
        .map_err(|e| format!("encode {api:?} v{version} header: {e}"))?;
    body.encode(&mut out, version).map_err(|e| format!("encode {api:?} v{version}: {e}"))?;
    let len = (out.len() - 4) as i32;
    out[0..4].copy_from_slice(&len.to_be_bytes());
    Ok(out.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::{ApiVersionsRequest, MetadataRequest};
    use kafka_protocol::protocol::StrBytes;

    fn request_frame(api: ApiKey, version: i16, body: &impl Encodable) -> Bytes {
        let mut b = BytesMut::new();
        RequestHeader::default()
            .with_request_api_key(api as i16)
            .with_request_api_version(version)
            .with_correlation_id(7)
            .with_client_id(Some(StrBytes::from_static_str("t")))
            .encode(&mut b, api.request_header_version(version))
            .unwrap();
        body.encode(&mut b, version).unwrap();
        b.freeze()
    }

    fn prefixed(frame: &[u8]) -> BytesMut {
        let mut b = BytesMut::new();
        b.put_i32(frame.len() as i32);
        b.put_slice(frame);
        b
    }

    #[test]
    fn whole_frames_come_out_one_at_a_time() {
        let f = request_frame(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
        let mut buf = prefixed(&f);
        buf.extend_from_slice(&prefixed(&f));
        assert_eq!(next_frame(&mut buf, 1 << 20).unwrap().unwrap(), f);
        assert_eq!(next_frame(&mut buf, 1 << 20).unwrap().unwrap(), f);
        assert!(buf.is_empty());
        assert_eq!(next_frame(&mut buf, 1 << 20).unwrap(), None);
    }

    #[test]
    fn truncated_frames_wait_for_more() {
        let f = request_frame(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
        let whole = prefixed(&f);
        for cut in 0..whole.len() {
            let mut buf = BytesMut::from(&whole[..cut]);
            assert_eq!(next_frame(&mut buf, 1 << 20).unwrap(), None, "cut at {cut}");
        }
    }

    #[test]
    fn absurd_and_negative_lengths_are_refused_before_allocating() {
        let mut buf = BytesMut::from(&i32::MAX.to_be_bytes()[..]);
        assert!(matches!(next_frame(&mut buf, 100 << 20), Err(FrameError::TooLarge { .. })));
        assert!(buf.capacity() < 1 << 20, "must not reserve for a refused frame");
        let mut buf = BytesMut::from(&(-5i32).to_be_bytes()[..]);
        assert_eq!(next_frame(&mut buf, 100), Err(FrameError::Negative(-5)));
        let mut buf = BytesMut::from(&3i32.to_be_bytes()[..]);
        assert_eq!(next_frame(&mut buf, 100), Err(FrameError::TooShort(3)));
    }

    #[test]
    fn bare_tokens_have_no_minimum_length() {
        let mut buf = prefixed(b"\0a\0b");
        buf.extend_from_slice(&[0, 0, 0]);
        assert_eq!(&next_raw(&mut buf, 100).unwrap().unwrap()[..], b"\0a\0b");
        assert_eq!(next_raw(&mut buf, 100).unwrap(), None, "three bytes are not a length yet");
        let mut buf = prefixed(b"");
        assert_eq!(&next_raw(&mut buf, 100).unwrap().unwrap()[..], b"");
        let mut buf = prefixed(&[7u8; 200]);
        assert!(matches!(next_raw(&mut buf, 100), Err(FrameError::TooLarge { .. })));
    }

    #[test]
    fn unknown_api_key_is_an_error_not_a_panic() {
        let mut f = BytesMut::new();
        f.put_i16(999);
        f.put_i16(0);
        f.put_i32(42);
        f.put_i16(-1);
        match parse(f.freeze()) {
            Err(ParseError::UnknownApi { key: 999, correlation_id: 42, .. }) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn apiversions_too_new_falls_back() {
        let mut f = BytesMut::new();
        f.put_i16(ApiKey::ApiVersions as i16);
        f.put_i16(99);
        f.put_i32(5);
        f.put_slice(b"whatever follows is not decoded");
        assert!(matches!(parse(f.freeze()), Ok(Parsed::ApiVersionsFallback { correlation_id: 5 })));
    }

    #[test]
    fn versions_outside_the_table_are_flagged() {
        // Metadata v13 decodes but is above our maximum.
        let f = request_frame(ApiKey::Metadata, 13, &MetadataRequest::default());
        assert!(matches!(parse(f), Ok(Parsed::Unsupported(_))));
        let f = request_frame(ApiKey::Metadata, 12, &MetadataRequest::default());
        assert!(matches!(parse(f), Ok(Parsed::Request(_))));
        let mut f = BytesMut::new();
        f.put_i16(ApiKey::Produce as i16);
        f.put_i16(0);
        f.put_i32(1);
        assert!(matches!(parse(f.freeze()), Err(ParseError::Undecodable { .. })));
    }

    #[test]
    fn truncated_bodies_and_hostile_counts_fail_cleanly() {
        let f = request_frame(ApiKey::Metadata, 1, &MetadataRequest::default().with_topics(Some(vec![])));
        for cut in FIXED_HEADER..f.len() {
            assert!(parse(f.slice(..cut)).is_err(), "cut at {cut}");
        }
        // Metadata v1 with a topic array claiming i32::MAX entries: must not
        // try to reserve memory for them.
        let mut f = BytesMut::new();
        f.put_i16(ApiKey::Metadata as i16);
        f.put_i16(1);
        f.put_i32(9);
        f.put_i16(-1); // null client id
        f.put_i32(i32::MAX);
        f.put_slice(b"\x00\x01a");
        assert!(matches!(parse(f.freeze()), Err(ParseError::Malformed { .. })));
        // A compact (flexible) array and string with absurd varint lengths.
        let mut f = BytesMut::new();
        f.put_i16(ApiKey::Metadata as i16);
        f.put_i16(12);
        f.put_i32(9);
        f.put_i16(-1);
        f.put_u8(0); // header tagged fields
        f.put_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert!(matches!(parse(f.freeze()), Err(ParseError::Malformed { .. })));
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        // A cheap deterministic sweep; the fuzz target does the real search.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for round in 0..20_000 {
            let len = FIXED_HEADER + (round % 64);
            let mut f = BytesMut::with_capacity(len);
            for _ in 0..len {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                f.put_u8(x as u8);
            }
            let key = (round % 70) as i16;
            f[0..2].copy_from_slice(&key.to_be_bytes());
            f[2..4].copy_from_slice(&((round / 70 % 14) as i16).to_be_bytes());
            let _ = parse(f.freeze());
        }
    }

    #[test]
    fn apiversions_answers_with_header_v0() {
        let body = ResponseKind::ApiVersions(versions::api_versions_response(0));
        let out = encode_response(3, ApiKey::ApiVersions, 3, &body).unwrap();
        // length, correlation id, then the v3 body (error code first): no tagged header fields.
        assert_eq!(&out[4..8], &3i32.to_be_bytes());
        assert_eq!(&out[8..10], &0i16.to_be_bytes());
        assert_eq!(i32::from_be_bytes(out[0..4].try_into().unwrap()) as usize, out.len() - 4);
    }
}
