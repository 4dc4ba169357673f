//! A lean HTTP/1.1 transport for the load generator's hot loop: keep-alive connections to one
//! server, checked out per request, on hyper's connection-level API.
//!
//! Owns only the idle connections. The load generator shares the 2 cores with
//! the server under test, so its CPU per request is part of what the server's
//! latency pays: reqwest spent ~32 µs per request here (URL parsing, IDNA,
//! pool bookkeeping, header maps); this path builds no URL and keeps no pool
//! state beyond a stack of ready senders. Must never retry a request by
//! itself: a failed request is reported to the caller, whose step decides
//! (a transaction retried blindly could commit twice).

use crate::error::{Error, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{CONTENT_TYPE, HOST};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use std::sync::Mutex;
use std::time::Duration;

type Body = http_body_util::Either<Full<Bytes>, Empty<Bytes>>;

pub struct Http1 {
    /// `host:port`, for connecting and for the Host header.
    authority: String,
    idle: Mutex<Vec<SendRequest<Body>>>,
    timeout: Duration,
}

impl Http1 {
    /// A client for `base` (`http://host:port`, no path); nothing is connected yet.
    pub fn new(base: &str) -> Result<Http1> {
        let authority = base
            .trim_end_matches('/')
            .strip_prefix("http://")
            .filter(|a| !a.is_empty() && !a.contains('/'))
            .ok_or_else(|| Error::Invalid(format!("url {base}: expected http://host:port")))?
            .to_string();
        Ok(Http1 { authority, idle: Mutex::new(Vec::new()), timeout: Duration::from_secs(120) })
    }

    async fn connect(&self) -> Result<SendRequest<Body>> {
        let tcp = tokio::net::TcpStream::connect(&self.authority)
            .await
            .map_err(|e| Error::Transport(format!("connect {}: {e}", self.authority)))?;
        tcp.set_nodelay(true).map_err(|e| Error::Transport(format!("TCP_NODELAY: {e}")))?;
        let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| Error::Transport(format!("HTTP handshake with {}: {e}", self.authority)))?;
        // The connection task ends when the sender is dropped or the server closes.
        tokio::spawn(conn);
        Ok(send)
    }

    async fn checkout(&self) -> Result<SendRequest<Body>> {
        loop {
            let next = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
            let Some(mut s) = next else { return self.connect().await };
            // A closed connection (server restart, idle timeout) is dropped, not used.
            if s.ready().await.is_ok() {
                return Ok(s);
            }
        }
    }

    /// `GET path` (path and query).
    pub async fn get(&self, path: &str) -> Result<(StatusCode, Bytes)> {
        self.send(Method::GET, path, None).await
    }

    /// `POST path` with a JSON body.
    pub async fn post(&self, path: &str, body: Vec<u8>) -> Result<(StatusCode, Bytes)> {
        self.send(Method::POST, path, Some(body)).await
    }

    async fn send(&self, method: Method, path: &str, body: Option<Vec<u8>>) -> Result<(StatusCode, Bytes)> {
        let mut s = self.checkout().await?;
        let mut req = Request::builder().method(method).uri(path).header(HOST, &self.authority);
        let body = match body {
            Some(b) => {
                req = req.header(CONTENT_TYPE, "application/json");
                Body::Left(Full::new(Bytes::from(b)))
            }
            None => Body::Right(Empty::new()),
        };
        let req = req.body(body).map_err(|e| Error::Invalid(format!("{path}: {e}")))?;
        let exchange = async {
            let res = s.send_request(req).await.map_err(|e| Error::Transport(format!("{path}: {e}")))?;
            let status = res.status();
            let bytes = res
                .into_body()
                .collect()
                .await
                .map_err(|e| Error::Transport(format!("{path}: reading the answer: {e}")))?
                .to_bytes();
            Ok::<_, Error>((status, bytes))
        };
        let out = tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| Error::Transport(format!("{path}: no answer in {:?}", self.timeout)))??;
        // Only a connection that finished its exchange cleanly goes back for reuse.
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).push(s);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_base_url_must_be_plain_http_host_and_port() {
        assert_eq!(Http1::new("http://127.0.0.1:6632/").unwrap().authority, "127.0.0.1:6632");
        for bad in ["https://h:1", "127.0.0.1:6632", "http://", "http://h:1/x"] {
            assert!(Http1::new(bad).is_err(), "{bad}");
        }
    }

    /// A real server (a raw TCP listener answering two requests on one
    /// connection, then closing): answers come back with status and body,
    /// the connection is reused, and a closed one is replaced.
    #[tokio::test]
    async fn reuses_a_connection_and_replaces_a_closed_one() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let mut accepted = 0;
            for _ in 0..2 {
                let (mut c, _) = l.accept().await.unwrap();
                accepted += 1;
                let mut buf = Vec::new();
                let mut answered = 0;
                while answered < 2 {
                    let mut chunk = [0u8; 4096];
                    let n = c.read(&mut chunk).await.unwrap();
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..end]).to_string();
                        let len: usize = head
                            .lines()
                            .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length: ").map(str::to_string))
                            .map_or(0, |v| v.trim().parse().unwrap());
                        if buf.len() < end + 4 + len {
                            break;
                        }
                        let body = String::from_utf8_lossy(&buf[end + 4..end + 4 + len]).to_string();
                        buf.drain(..end + 4 + len);
                        let answer = format!("{}|{}", head.lines().next().unwrap(), body);
                        let res = format!("HTTP/1.1 201 Created\r\ncontent-length: {}\r\n\r\n{answer}", answer.len());
                        c.write_all(res.as_bytes()).await.unwrap();
                        answered += 1;
                    }
                }
            }
            accepted
        });
        let h = Http1::new(&format!("http://{addr}")).unwrap();
        let (st, b) = h.post("/a?x=1", b"{}".to_vec()).await.unwrap();
        assert_eq!(st, StatusCode::CREATED);
        assert_eq!(&b[..], b"POST /a?x=1 HTTP/1.1|{}");
        let (_, b) = h.get("/b").await.unwrap();
        assert_eq!(&b[..], b"GET /b HTTP/1.1|", "second request on the same connection");
        // The server closed the first connection after two answers: once the client has seen
        // that, the next request opens another.
        for _ in 0..200 {
            if h.idle.lock().unwrap().iter().all(|s| s.is_closed()) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let (_, b) = h.get("/c").await.unwrap();
        assert_eq!(&b[..], b"GET /c HTTP/1.1|");
        drop(h);
        assert_eq!(server.await.unwrap(), 2, "two connections in all");
    }
}
