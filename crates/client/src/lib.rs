//! `baton-client`: the one Rust client of Baton's HTTP API (docs/api.md).
//!
//! - [`Client`]: typed async calls on reqwest (configure, push, pop, ack,
//!   lease extend, transaction, fetch, queues, groups, DLQ, health,
//!   metrics), used by `baton check`, the `baton` CLI and the bench's setup.
//! - [`wire`]: hand-written bodies and marker-counting checks, and
//!   [`Client::post_raw`] / [`Client::get_raw`] to send them on the same
//!   connection pool: the bench's produce/consume hot loop.
//! - [`kafka::KafkaConn`]: a small Kafka wire client (ApiVersions, Metadata,
//!   CreateTopics, InitProducerId, Produce with explicit producer fields,
//!   Fetch, OffsetCommit, OffsetFetch) for `baton check history`'s Kafka clients.
//! - [`http1::Http1`]: the lean hyper connection-level transport of the
//!   transaction benchmark's hot loop (no URL parsing, no pool bookkeeping).
//!
//! Owns how Baton is spoken to over HTTP: paths, bodies, answers, errors
//! ([`Error`]: the server's `{error, code}` and status). Must never retry a
//! write by itself (a retried push or transaction after an unknown outcome is
//! the caller's decision), and never hold an unbounded part of an answer in
//! an error.

mod api;
pub mod error;
pub mod http1;
pub mod kafka;
pub mod types;
pub mod wire;

pub use error::{Error, Result};
pub use types::*;

use bytes::Bytes;
use reqwest::{StatusCode, Url};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Baton's default HTTP address.
pub const DEFAULT_URL: &str = "http://127.0.0.1:6632";

/// How a [`Client`] connects.
#[derive(Debug, Clone)]
pub struct Options {
    /// Idle connections kept: one per concurrent caller keeps each on its own connection.
    pub pool: usize,
    pub connect_timeout: Duration,
    /// Timeout of every request except long polls (which get their wait on top).
    pub timeout: Duration,
    /// How long an idle pooled connection is kept.
    pub pool_idle_timeout: Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            pool: 8,
            connect_timeout: Duration::from_secs(2),
            timeout: Duration::from_secs(10),
            pool_idle_timeout: Duration::from_secs(90),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    /// Timeout of every request except long polls (which get their wait + this, at least 5 s).
    pub timeout: Duration,
}

impl Client {
    /// `base` like `http://127.0.0.1:6632`; `pool` = idle connections kept (one per concurrent caller).
    pub fn new(base: &str, pool: usize) -> Result<Client> {
        Self::with_options(base, Options { pool, ..Options::default() })
    }

    pub fn with_options(base: &str, o: Options) -> Result<Client> {
        let base = base.trim_end_matches('/').to_string();
        let url = Url::parse(&base).map_err(|e| Error::Invalid(format!("url {base}: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
            return Err(Error::Invalid(format!("url {base}: expected http://host:port")));
        }
        // Keep-alive, Nagle off, HTTP/1.1 only: Baton speaks HTTP/1.1 and a
        // small request must not wait for a delayed ACK.
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(o.pool.max(1))
            .pool_idle_timeout(o.pool_idle_timeout)
            .tcp_nodelay(true)
            .http1_only()
            .connect_timeout(o.connect_timeout)
            .build()
            .map_err(|e| Error::Transport(format!("http client: {e}")))?;
        Ok(Client { http, base, timeout: o.timeout })
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    /// The full URL of `path` (path and query), parsed once: the bench keeps
    /// its hot paths' URLs so that each request does not parse one again.
    pub fn url(&self, path: &str) -> Result<Url> {
        Url::parse(&format!("{}{}", self.base, path)).map_err(|e| Error::Invalid(format!("url {path}: {e}")))
    }

    fn path_url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// `POST url` with a body already written as JSON ([`wire`]): the status
    /// and the answer's bytes, whatever the status. Only transport errors are errors.
    pub async fn post_raw(&self, url: &Url, body: Vec<u8>) -> Result<(StatusCode, Bytes)> {
        let rb = self
            .http
            .post(url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body)
            .timeout(self.timeout);
        self.send_bytes(rb).await
    }

    /// `GET path` (path and query; for a long poll, `extra` is added to the timeout):
    /// the status and the answer's bytes, whatever the status.
    pub async fn get_raw(&self, path: &str, extra: Duration) -> Result<(StatusCode, Bytes)> {
        self.send_bytes(self.http.get(self.path_url(path)).timeout(self.timeout + extra)).await
    }

    async fn send_bytes(&self, rb: reqwest::RequestBuilder) -> Result<(StatusCode, Bytes)> {
        let r = rb.send().await.map_err(|e| Error::Transport(error::describe(&e)))?;
        let status = r.status();
        let body = r.bytes().await.map_err(|e| Error::Transport(error::describe(&e)))?;
        Ok((status, body))
    }

    /// Send; a non-2xx is [`Error::Api`]. The 2xx status and body are returned.
    async fn call(&self, rb: reqwest::RequestBuilder) -> Result<(StatusCode, Bytes)> {
        let (s, b) = self.send_bytes(rb).await?;
        if s.is_success() {
            Ok((s, b))
        } else {
            Err(Error::from_answer(s.as_u16(), &b))
        }
    }

    async fn get_json<T: for<'de> Deserialize<'de>>(&self, path: &str) -> Result<T> {
        let (_, b) = self.call(self.http.get(self.path_url(path)).timeout(self.timeout)).await?;
        parse(&b)
    }

    async fn post_json<B: Serialize + ?Sized, T: for<'de> Deserialize<'de>>(&self, path: &str, body: &B) -> Result<T> {
        let (_, b) = self.call(self.http.post(self.path_url(path)).json(body).timeout(self.timeout)).await?;
        parse(&b)
    }

    async fn delete_json(&self, path: &str) -> Result<serde_json::Value> {
        let (_, b) = self.call(self.http.delete(self.path_url(path)).timeout(self.timeout)).await?;
        if b.is_empty() {
            return Ok(serde_json::Value::Null);
        }
        parse(&b)
    }
}

fn parse<T: for<'de> Deserialize<'de>>(b: &[u8]) -> Result<T> {
    serde_json::from_slice(b).map_err(|e| Error::Shape(format!("{e}: {}", wire::snippet(b))))
}

/// Percent-encode one path segment (a queue, partition, group or id name):
/// names may hold spaces, `?`, `#` or `%`, which must not change the route.
pub fn segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Percent-encode a query value.
pub(crate) fn query_value(s: &str) -> String {
    segment(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_encoded_as_one_path_segment() {
        assert_eq!(segment("orders-1.a_b~"), "orders-1.a_b~");
        assert_eq!(segment("a b/c?d#%"), "a%20b%2Fc%3Fd%23%25");
        assert_eq!(segment("é"), "%C3%A9");
    }

    #[test]
    fn a_base_url_must_be_http_with_a_host() {
        assert!(Client::new("http://127.0.0.1:6632/", 1).is_ok());
        assert_eq!(Client::new("http://127.0.0.1:6632/", 1).unwrap().base(), "http://127.0.0.1:6632");
        for bad in ["127.0.0.1:6632", "ftp://h:1", "not a url"] {
            assert!(matches!(Client::new(bad, 1), Err(Error::Invalid(_))), "{bad}");
        }
    }
}
