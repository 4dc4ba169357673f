//! The HTTP listener: accepts TCP connections and serves HTTP/1.1 on them
//! with hyper, in front of the router.
//!
//! Owns what is decided per connection, below the routes: at most
//! `max_connections` open (past it a connection is answered 503
//! `too_many_connections` and closed), the idle timeout (no request in
//! progress and no byte either way for that long; a long poll is a request in
//! progress), the lingering close (before a socket closes, what the client
//! still sends is read and thrown away, up to a bound, so a client sending a
//! body the server refused reads the 413 instead of a reset), and the JSON
//! body of the answers hyper writes by itself (400 for a request it cannot
//! parse, 431, 414), which it sends with an empty body.
//! Each request holds the node's request memory (D87) for its body's claimed
//! size before the body is read, until it is answered.
//! Must never stop accepting because an accept failed (EMFILE: log, back off,
//! go on), and never look into what a request means.

use axum::body::Body;
use axum::Router;
use baton_core::request_memory::RequestMemory;
use hyper::body::Body as _;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, LazyLock};
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tower_service::Service;

/// Connection bounds; see the `--http-*` flags of `baton serve`.
#[derive(Debug, Clone)]
pub struct ConnConfig {
    /// A connection with no request in progress and no byte read or written
    /// for this long is closed.
    pub idle_timeout: Duration,
    /// Most connections served at once.
    pub max_connections: usize,
    /// Longest a closing connection is read (and the bytes thrown away)
    /// before the socket closes.
    pub linger: Duration,
    /// Most bytes read that way.
    pub linger_bytes: u64,
}

/// The node's request memory and the largest body, which is what a body
/// of unknown length (chunked) holds.
#[derive(Debug, Clone)]
pub(crate) struct BodyMemory {
    pub memory: Arc<RequestMemory>,
    pub max_body: usize,
}

impl BodyMemory {
    fn claim(&self, req: &hyper::Request<Incoming>) -> usize {
        match req.body().size_hint().exact() {
            Some(n) => usize::try_from(n).unwrap_or(usize::MAX).min(self.max_body),
            None => self.max_body,
        }
    }
}

impl Default for ConnConfig {
    fn default() -> Self {
        ConnConfig {
            idle_timeout: Duration::from_secs(60),
            max_connections: 10_000,
            linger: Duration::from_secs(5),
            linger_bytes: 64 << 20,
        }
    }
}

/// Counters for /metrics.
#[derive(Debug, Default)]
pub struct ConnStats {
    pub open: AtomicU64,
    pub refused: AtomicU64,
    pub idle_closed: AtomicU64,
    pub accept_errors: AtomicU64,
    /// Refusals still being answered (each holds its socket for up to a second).
    refusing: AtomicUsize,
}

/// Past this many refusals being answered at once, a refused connection is
/// closed without an answer: answering must not itself use up descriptors.
const MAX_REFUSING: usize = 1024;

/// Accept connections until `stop` resolves; then let every connection
/// finish its request in flight (`Connection::graceful_shutdown`) and return.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    cfg: ConnConfig,
    bodies: BodyMemory,
    stats: Arc<ConnStats>,
    stop: impl Future<Output = ()>,
) {
    let (stop_tx, stop_rx) = watch::channel(false);
    // Every connection task holds a receiver; `closed()` is all of them gone.
    let (alive_tx, alive_rx) = watch::channel(());
    tokio::pin!(stop);
    let mut backoff = Duration::from_millis(10);
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = &mut stop => break,
        };
        let tcp = match accepted {
            Ok((tcp, _)) => {
                backoff = Duration::from_millis(10);
                tcp
            }
            // The peer gave up before we took it: nothing to do.
            Err(e) if matches!(e.kind(), io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset) => continue,
            Err(e) => {
                // EMFILE/ENFILE/ENOBUFS: connections close and free
                // descriptors; the listener itself is fine.
                stats.accept_errors.fetch_add(1, Relaxed);
                tracing::error!(error = %e, backoff_ms = backoff.as_millis() as u64, "HTTP accept failed; retrying");
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = &mut stop => break,
                }
                backoff = (backoff * 2).min(Duration::from_secs(1));
                continue;
            }
        };
        // Answers go out as soon as they are ready: Nagle's algorithm would
        // hold a small answer behind the client's delayed ACK.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
        if stats.open.load(Relaxed) >= cfg.max_connections as u64 {
            stats.refused.fetch_add(1, Relaxed);
            if stats.refusing.fetch_add(1, Relaxed) < MAX_REFUSING {
                tokio::spawn(refuse(tcp, cfg.max_connections, stats.clone()));
            } else {
                stats.refusing.fetch_sub(1, Relaxed);
            }
            continue;
        }
        stats.open.fetch_add(1, Relaxed);
        let open = Open(stats.clone());
        let conn =
            serve_conn(tcp, router.clone(), cfg.clone(), bodies.clone(), open, stop_rx.clone(), alive_rx.clone());
        tokio::spawn(conn);
    }
    // New connections are refused by the kernel from here, not left waiting.
    drop(listener);
    let _ = stop_tx.send(true);
    drop(alive_rx);
    alive_tx.closed().await;
}

/// Counts a connection open until dropped.
struct Open(Arc<ConnStats>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Relaxed);
    }
}

async fn refuse(mut tcp: TcpStream, max: usize, stats: Arc<ConnStats>) {
    let body = serde_json::json!({
        "error": format!("the server has its most HTTP connections open ({max}, --http-max-connections); try again later"),
        "code": "too_many_connections",
    })
    .to_string();
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        tcp.write_all(answer.as_bytes()).await?;
        tcp.shutdown().await?;
        // The request the client sends meanwhile, so the close is not a reset.
        discard(&mut tcp, 64 << 10).await
    })
    .await;
    stats.refusing.fetch_sub(1, Relaxed);
}

/// Read and throw away until EOF or `max` bytes. A small buffer: every
/// closing connection holds one while its client takes its time.
async fn discard<R: AsyncRead + Unpin>(r: &mut R, max: u64) -> io::Result<()> {
    let mut buf = vec![0u8; 4 << 10];
    let mut seen = 0u64;
    while seen < max {
        let n = r.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        seen += n as u64;
    }
    Ok(())
}

type BoxFuture = Pin<Box<dyn Future<Output = Result<axum::response::Response, Infallible>> + Send>>;

async fn serve_conn(
    tcp: TcpStream,
    router: Router,
    cfg: ConnConfig,
    bodies: BodyMemory,
    open: Open,
    stop: watch::Receiver<bool>,
    _alive: watch::Receiver<()>,
) {
    let act = Arc::new(Activity::default());
    act.touch();
    let io = TokioIo::new(Tracked { tcp, act: act.clone(), pending: Vec::new(), at: 0 });
    let svc_act = act.clone();
    let svc = hyper::service::service_fn(move |req: hyper::Request<Incoming>| -> BoxFuture {
        let busy = Busy::start(svc_act.clone());
        let mut router = router.clone();
        let (memory, claim) = (bodies.memory.clone(), bodies.claim(&req));
        Box::pin(async move {
            let mem = memory.hold(claim).await;
            let res = router.call(req.map(Body::new)).await;
            drop((mem, busy));
            res
        })
    });
    let mut conn = hyper::server::conn::http1::Builder::new().serve_connection(io, svc);
    let mut stop_rx = stop.clone();
    let mut stopping = Box::pin(async move {
        let _ = stop_rx.wait_for(|s| *s).await;
    });
    let mut stopped = false;
    let mut idle = Box::pin(tokio::time::sleep(cfg.idle_timeout));
    let done = std::future::poll_fn(|cx| {
        if !stopped && stopping.as_mut().poll(cx).is_ready() {
            stopped = true;
            Pin::new(&mut conn).graceful_shutdown();
        }
        if let Poll::Ready(r) = conn.poll_without_shutdown(cx) {
            return Poll::Ready(Some(r));
        }
        while idle.as_mut().poll(cx).is_ready() {
            match act.idle_left(cfg.idle_timeout) {
                None => return Poll::Ready(None),
                Some(left) => idle.as_mut().reset(tokio::time::Instant::now() + left),
            }
        }
        Poll::Pending
    })
    .await;
    match done {
        // Nothing in flight and nothing unread: dropping closes it cleanly.
        None => {
            open.0.idle_closed.fetch_add(1, Relaxed);
        }
        Some(r) => {
            if let Err(e) = r {
                tracing::debug!(error = %e, "HTTP connection ended with an error");
            }
            let mut io = conn.into_parts().io.into_inner();
            let mut stop = stop;
            if !*stop.borrow() {
                tokio::select! {
                    _ = linger(&mut io, &cfg) => {}
                    _ = stop.wait_for(|s| *s) => {}
                }
            }
        }
    }
}

/// Send what is left and a FIN, then read until the client closes (bounded):
/// closing a socket with unread bytes makes the kernel send a reset, and a
/// client still sending its body then loses the answer it has not read yet.
async fn linger(io: &mut Tracked, cfg: &ConnConfig) {
    let _ = tokio::time::timeout(cfg.linger, async {
        io.shutdown().await?;
        discard(io, cfg.linger_bytes).await
    })
    .await;
}

/// When this connection last moved a byte, and how many requests it has in
/// progress.
#[derive(Default)]
struct Activity {
    last_ms: AtomicU64,
    busy: AtomicUsize,
}

static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

fn now_ms() -> u64 {
    EPOCH.elapsed().as_millis() as u64
}

impl Activity {
    fn touch(&self) {
        self.last_ms.store(now_ms(), Relaxed);
    }

    /// `None` once idle for `timeout`; else how long until it may be.
    fn idle_left(&self, timeout: Duration) -> Option<Duration> {
        if self.busy.load(Relaxed) > 0 {
            return Some(timeout);
        }
        let quiet = Duration::from_millis(now_ms().saturating_sub(self.last_ms.load(Relaxed)));
        timeout.checked_sub(quiet).filter(|d| !d.is_zero())
    }
}

/// A request in progress; idle time counts from its end.
struct Busy(Arc<Activity>);

impl Busy {
    fn start(a: Arc<Activity>) -> Busy {
        a.busy.fetch_add(1, Relaxed);
        Busy(a)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.touch();
        self.0.busy.fetch_sub(1, Relaxed);
    }
}

/// The socket, noting activity, and replacing the empty body of hyper's own
/// error answers with the JSON shape.
struct Tracked {
    tcp: TcpStream,
    act: Arc<Activity>,
    /// A rewritten answer not yet fully written, from `at`.
    pending: Vec<u8>,
    at: usize,
}

impl Tracked {
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.at < self.pending.len() {
            let n = ready!(Pin::new(&mut self.tcp).poll_write(cx, &self.pending[self.at..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.at += n;
            self.act.touch();
        }
        self.pending.clear();
        self.at = 0;
        Poll::Ready(Ok(()))
    }

    /// Takes `buf` as written when it is one of hyper's error answers.
    fn take_rewrite(&mut self, buf: &[u8]) -> bool {
        match rewrite(buf) {
            Some((status, code, b)) => {
                crate::error::count(status, code);
                self.pending = b;
                self.at = 0;
                true
            }
            None => false,
        }
    }
}

impl AsyncRead for Tracked {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        ready!(Pin::new(&mut self.tcp).poll_read(cx, buf))?;
        if buf.filled().len() > before {
            self.act.touch();
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        ready!(self.poll_pending(cx))?;
        if self.take_rewrite(buf) {
            // Written by the next poll (flush or shutdown follow an answer).
            return Poll::Ready(Ok(buf.len()));
        }
        let n = ready!(Pin::new(&mut self.tcp).poll_write(cx, buf))?;
        self.act.touch();
        Poll::Ready(Ok(n))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        ready!(self.poll_pending(cx))?;
        let mut full = bufs.iter().filter(|b| !b.is_empty());
        if let (Some(only), None) = (full.next(), full.next()) {
            if self.take_rewrite(only) {
                return Poll::Ready(Ok(only.len()));
            }
        }
        let n = ready!(Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs))?;
        self.act.touch();
        Poll::Ready(Ok(n))
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}

/// hyper answers a request it cannot parse by itself, with a head and no
/// body: `HTTP/1.1 400 Bad Request`, `connection: close`, `content-length: 0`.
/// Every answer of the routes to an error has a JSON body, so an error head
/// with an empty body, written alone, is one of hyper's: give it the body.
fn rewrite(buf: &[u8]) -> Option<(u16, &'static str, Vec<u8>)> {
    if buf.len() > 1024 || !(buf.starts_with(b"HTTP/1.1 4") || buf.starts_with(b"HTTP/1.1 5")) {
        return None;
    }
    let head = std::str::from_utf8(buf).ok()?.strip_suffix("\r\n\r\n")?;
    if head.contains("\r\n\r\n") || !head.contains("\r\ncontent-length: 0") {
        return None;
    }
    let status: u16 = head.get(9..12)?.parse().ok()?;
    let (code, error) = match status {
        400 => ("bad_request", "the request line or a header is not valid HTTP/1.1"),
        431 => ("headers_too_large", "the request has more than 100 headers, or its head is too large"),
        414 => ("uri_too_long", "the request target is too long"),
        _ => ("http_error", "the HTTP layer refused the request"),
    };
    let body = serde_json::json!({ "error": error, "code": code }).to_string();
    let mut out = String::with_capacity(head.len() + body.len() + 64);
    for line in head.split("\r\n").filter(|l| !l.starts_with("content-length:")) {
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str(&format!("content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}", body.len()));
    Some((status, code, out.into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::rewrite;

    #[test]
    fn only_hypers_bodyless_error_heads_are_rewritten() {
        let hyper400 = b"HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        let (status, code, out) = rewrite(hyper400).unwrap();
        assert_eq!((status, code), (400, "bad_request"));
        let out = String::from_utf8(out).unwrap();
        assert!(out.starts_with("HTTP/1.1 400 Bad Request\r\nconnection: close\r\ndate: x\r\n"), "{out}");
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("content-length: {}", body.len())), "{out}");
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["code"], "bad_request");
        let h431 = b"HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\ncontent-length: 0\r\n\r\n";
        assert!(String::from_utf8(rewrite(h431).unwrap().2).unwrap().contains("headers_too_large"));
        // Answers of the routes: a body, or not an error, or more than a head.
        assert!(rewrite(b"HTTP/1.1 404 Not Found\r\ncontent-length: 10\r\n\r\n").is_none());
        assert!(rewrite(b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n").is_none());
        assert!(rewrite(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\nHTTP/1.1 200 OK\r\n\r\n").is_none());
        assert!(rewrite(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n").is_none(), "a partial head");
    }
}
