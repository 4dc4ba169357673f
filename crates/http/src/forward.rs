//! Forwarding on a cluster member that does not lead (D42): every data-plane request is
//! passed to the leader's HTTP address and the leader's answer passed back, so a client may
//! talk to any member.
//!
//! Owns the hop: which requests go (everything but what a member answers about itself:
//! `/health`, `/cluster`, `/metrics`), the one-hop rule (a forwarded request carries
//! `x-baton-forwarded-by` and is never forwarded again: a member that receives one and does
//! not lead answers `503 not_leader` itself, so two members that each think the other leads
//! cannot bounce a request between them), the bounds (connect timeout, the longest a
//! forwarded request may take) and what a failed hop answers. Must never buffer a body (both
//! directions are streamed; the leader applies its own body limit), never hold a stopping
//! member's shutdown for a forwarded long poll, and never turn a failure
//! after the request may have reached the leader into anything but "outcome unknown".

use crate::error::ApiError;
use crate::App;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderName, HeaderValue, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

/// The header a forwarded request carries: the id of the member that forwarded it.
pub const FORWARDED_BY: HeaderName = HeaderName::from_static("x-baton-forwarded-by");

/// Where this member's requests go: the leader's id and HTTP address while another member
/// leads and its address is known; `None` while this member leads, or no leader (or no
/// address for it) is known, and the request is answered here.
#[derive(Clone)]
pub struct Forward {
    pub me: u64,
    pub leader: Arc<dyn Fn() -> Option<(u64, String)> + Send + Sync>,
    /// How long connecting to the leader may take before the hop fails (nothing was sent).
    pub connect_timeout: Duration,
    /// The longest a forwarded request waits for the leader's answer to begin, past the
    /// longest long poll (`max_wait_ms`) plus the commit timeout.
    pub answer_timeout: Duration,
}

impl std::fmt::Debug for Forward {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Forward(me {})", self.me)
    }
}

/// Counters for /metrics.
#[derive(Debug, Default)]
pub struct ForwardStats {
    pub forwarded: AtomicU64,
    pub connect_failed: AtomicU64,
    pub unknown: AtomicU64,
}

pub(crate) struct Forwarder {
    cfg: Forward,
    client: Client<HttpConnector, Body>,
    pub(crate) stats: ForwardStats,
}

impl Forwarder {
    pub(crate) fn new(cfg: Forward) -> Forwarder {
        let mut conn = HttpConnector::new();
        conn.set_connect_timeout(Some(cfg.connect_timeout));
        conn.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new()).build(conn);
        Forwarder { cfg, client, stats: ForwardStats::default() }
    }
}

/// Requests a member answers about itself, never forwarded.
fn local(path: &str) -> bool {
    matches!(path, "/health" | "/cluster" | "/metrics" | "/metrics/prometheus")
}

/// Headers that belong to one connection, not to the request (RFC 9110 7.6.1), and `host`,
/// which names this member.
fn hop_by_hop(name: &HeaderName) -> bool {
    name == header::CONNECTION
        || name == header::HOST
        || name == header::TE
        || name == header::TRAILER
        || name == header::TRANSFER_ENCODING
        || name == header::UPGRADE
        || name == header::PROXY_AUTHORIZATION
        || name.as_str() == "keep-alive"
        || name.as_str() == "proxy-connection"
}

fn strip_hop_by_hop(h: &mut axum::http::HeaderMap) {
    let names: Vec<HeaderName> = h.keys().filter(|n| hop_by_hop(n)).cloned().collect();
    for n in names {
        h.remove(n);
    }
}

pub(crate) async fn forward(State(app): State<App>, req: Request, next: Next) -> Response {
    let Some(fw) = app.forwarder.as_ref() else { return next.run(req).await };
    if local(req.uri().path()) || req.headers().contains_key(&FORWARDED_BY) {
        return next.run(req).await;
    }
    let Some((leader, addr)) = (fw.cfg.leader)() else { return next.run(req).await };
    let (mut parts, body) = req.into_parts();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let uri: Uri = match format!("http://{addr}{path}").parse() {
        Ok(u) => u,
        Err(e) => return unreachable(fw, leader, &addr, format!("the leader's address does not make a URI: {e}")),
    };
    parts.uri = uri;
    parts.version = axum::http::Version::HTTP_11;
    strip_hop_by_hop(&mut parts.headers);
    parts.headers.insert(FORWARDED_BY, HeaderValue::from(fw.cfg.me));
    fw.stats.forwarded.fetch_add(1, Relaxed);
    let sent = fw.client.request(Request::from_parts(parts, body));
    let deadline = tokio::time::sleep(fw.cfg.answer_timeout);
    tokio::pin!(sent, deadline);
    // A leader that lost its term (stopped, cut off) may never answer: once another member
    // leads, what was sent to it is given up as unknown rather than held to the deadline.
    let mut look = tokio::time::interval(LEADER_CHECK);
    loop {
        tokio::select! {
            res = &mut sent => return match res {
                Ok(res) => {
                    let (mut parts, body) = res.into_parts();
                    strip_hop_by_hop(&mut parts.headers);
                    Response::from_parts(parts, Body::new(body))
                }
                Err(e) if e.is_connect() => unreachable(fw, leader, &addr, e.to_string()),
                Err(e) => unknown(fw, leader, &addr, format!("the connection to it failed: {e}")),
            },
            // A member that is stopping does not hold its shutdown for a long poll it
            // forwarded (up to `max_wait_ms`): what the leader did with it is unknown.
            _ = app.shutdown.triggered() => {
                return unknown(fw, leader, &addr, "this member is stopping".to_string())
            }
            _ = &mut deadline => {
                return unknown(fw, leader, &addr, format!("it did not answer within {:?}", fw.cfg.answer_timeout))
            }
            _ = look.tick() => {
                if (fw.cfg.leader)().is_some_and(|(now, _)| now != leader) {
                    return unknown(fw, leader, &addr, "another member leads now".to_string());
                }
            }
        }
    }
}

/// How often a forwarded request in flight checks that its target still leads.
const LEADER_CHECK: Duration = Duration::from_millis(100);

/// Nothing reached the leader: safe to retry anywhere.
fn unreachable(fw: &Forwarder, leader: u64, addr: &str, why: String) -> Response {
    fw.stats.connect_failed.fetch_add(1, Relaxed);
    let msg = format!("this member does not lead; forwarding to the leader, node {leader} at {addr}, failed before anything was sent ({why}); retry");
    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "leader_unreachable", msg).into_response()
}

/// The request may have reached the leader and been carried out.
fn unknown(fw: &Forwarder, leader: u64, addr: &str, why: String) -> Response {
    fw.stats.unknown.fetch_add(1, Relaxed);
    let msg = format!("the request was forwarded to the leader, node {leader} at {addr}, and {why}: the outcome of this request is unknown");
    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "outcome_unknown", msg).into_response()
}
