//! The transport between nodes: openraft's three RPCs as HTTP POSTs with bincode bodies,
//! `/raft/append`, `/raft/vote`, `/raft/snapshot`, on the node's Raft address; and
//! `/raft/elect` and `/raft/release`, a leader's hand-over (`handover`).
//!
//! Owns the bounds of what crosses the wire: a request the sender would make over
//! `max_rpc_bytes` is never sent (openraft hears `PayloadTooLarge` and sends fewer entries),
//! and the receiver refuses a body over the same bound with 413 before it decodes anything.
//! A body that does not decode is 400 and changes nothing. Must never panic on what a peer
//! sends, and never wait past openraft's deadline for an answer.
//! Every append carries the sender's clock (`x-baton-clock`, µs); a follower that accepts it
//! hands it to the engine, which follows its leader's clock (D72).
//! The Raft port trusts whoever reaches it (no authentication yet): bind it to a private
//! network, as docs/cluster.md says.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use bincode::Options;
use openraft::error::{
    InstallSnapshotError, NetworkError, PayloadTooLarge, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse, VoteRequest,
    VoteResponse,
};
use openraft::BasicNode;
use parking_lot::RwLock;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::{NodeId, Raft, TypeConfig};

/// The bound on one RPC body: above the planner's largest frame (`max_frame_bytes`, 64 MiB,
/// plus the entry that crossed it) with room for its header.
pub const DEFAULT_MAX_RPC_BYTES: usize = 256 << 20;

fn codec(limit: usize) -> impl Options {
    bincode::options().with_limit(limit as u64).with_fixint_encoding()
}

/// The engine's clock as Raft carries it (D72): `now` is read as each append is sent;
/// `heard` takes the leader's time when this member accepted an append from it and says
/// whether this member's clock moved, then `save` (blocking: it syncs a file) records it.
#[derive(Debug, Clone, Copy)]
pub struct Timekeeper {
    pub now: fn() -> u64,
    pub heard: fn(u64) -> bool,
    pub save: fn(),
}

/// Appends to the other members, held back while a leader hands over (D73): followers that
/// still heard their leader would renew the lease that makes them refuse its successor.
#[derive(Debug, Default)]
pub struct AppendGate {
    held: AtomicBool,
    in_flight: AtomicUsize,
}

impl AppendGate {
    /// Holds every append not yet sent, then waits (at most until `deadline`) for those
    /// already sent to be answered; whether they were.
    pub async fn hold(&self, deadline: tokio::time::Instant) -> bool {
        self.held.store(true, SeqCst);
        while self.in_flight.load(SeqCst) > 0 {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        true
    }

    pub fn release(&self) {
        self.held.store(false, SeqCst);
    }

    /// Counts an append in flight until the guard drops; `None` while held. Counted before
    /// the check, so a `hold` that saw none in flight sees every later append held.
    fn pass(&self) -> Option<InFlight<'_>> {
        self.in_flight.fetch_add(1, SeqCst);
        let guard = InFlight(self);
        (!self.held.load(SeqCst)).then_some(guard)
    }
}

struct InFlight<'a>(&'a AppendGate);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, SeqCst);
    }
}

/// The header an append carries its sender's clock in.
const CLOCK_HEADER: &str = "x-baton-clock";

/// Where to dial a member instead of the address its membership entry gives (a proxy in a
/// fault test; a different interface in a deployment), looked up at every call.
pub type Routes = Arc<RwLock<BTreeMap<NodeId, String>>>;

/// Makes one [`Peer`] per target; shares one connection pool.
#[derive(Clone)]
pub struct Network {
    client: reqwest::Client,
    max_rpc_bytes: usize,
    routes: Routes,
    clock: Option<Timekeeper>,
    gate: Arc<AppendGate>,
}

impl Network {
    pub fn new(max_rpc_bytes: usize, routes: Routes, clock: Option<Timekeeper>, gate: Arc<AppendGate>) -> Network {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(1))
            .pool_idle_timeout(Duration::from_secs(30))
            .build()
            .expect("a plain HTTP client builds");
        Network { client, max_rpc_bytes, routes, clock, gate }
    }
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = Peer;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> Peer {
        Peer {
            client: self.client.clone(),
            addr: node.addr.clone(),
            routes: Arc::clone(&self.routes),
            target,
            max: self.max_rpc_bytes,
            clock: self.clock,
            gate: Arc::clone(&self.gate),
        }
    }
}

pub struct Peer {
    client: reqwest::Client,
    addr: String,
    routes: Routes,
    target: NodeId,
    max: usize,
    clock: Option<Timekeeper>,
    gate: Arc<AppendGate>,
}

type Rpc<E> = RPCError<NodeId, BasicNode, RaftError<NodeId, E>>;

impl Peer {
    async fn call<Req, Resp, E>(
        &self,
        path: &str,
        req: &Req,
        entries: Option<u64>,
        option: &RPCOption,
    ) -> Result<Resp, Rpc<E>>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        let body = match codec(self.max).serialize(req) {
            Ok(b) => b,
            Err(e) => {
                return Err(match entries {
                    // Over the bound: openraft retries with about half as many entries.
                    Some(n) if n > 1 => RPCError::PayloadTooLarge(PayloadTooLarge::new_entries_hint(n / 2)),
                    _ => RPCError::Network(NetworkError::new(&std::io::Error::other(format!(
                        "a {path} request does not fit in {} bytes: {e}",
                        self.max
                    )))),
                });
            }
        };
        let mut post = self
            .client
            .post(format!("http://{}{path}", self.routes.read().get(&self.target).unwrap_or(&self.addr)))
            .timeout(option.hard_ttl())
            .header("content-type", "application/octet-stream");
        if let Some(clock) = self.clock.filter(|_| entries.is_some()) {
            post = post.header(CLOCK_HEADER, (clock.now)());
        }
        let sent = post.body(body).send().await.map_err(|e| RPCError::Unreachable(Unreachable::new(&e)))?;
        let status = sent.status();
        let bytes = sent.bytes().await.map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        if !status.is_success() {
            let text = String::from_utf8_lossy(&bytes[..bytes.len().min(512)]).into_owned();
            return Err(RPCError::Network(NetworkError::new(&std::io::Error::other(format!(
                "{path} on node {}: {status}: {text}",
                self.target
            )))));
        }
        let answer: Result<Resp, RaftError<NodeId, E>> =
            codec(self.max).deserialize(&bytes).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        answer.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

impl RaftNetwork<TypeConfig> for Peer {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, Rpc<openraft::error::Infallible>> {
        let n = rpc.entries.len() as u64;
        let gate = Arc::clone(&self.gate);
        let Some(_counted) = gate.pass() else {
            return Err(RPCError::Network(NetworkError::new(&std::io::Error::other(
                "appends are held while this leader hands over (D73)",
            ))));
        };
        self.call("/raft/append", &rpc, Some(n), &option).await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<InstallSnapshotResponse<NodeId>, Rpc<InstallSnapshotError>> {
        self.call("/raft/snapshot", &rpc, None, &option).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, Rpc<openraft::error::Infallible>> {
        self.call("/raft/vote", &rpc, None, &option).await
    }
}

#[derive(Clone)]
struct Served {
    raft: Raft,
    max: usize,
    /// Whether this member may lead (`NodeConfig::stands`).
    stands: bool,
    clock: Option<Timekeeper>,
    /// The lease this member gives its leader (openraft's `election_timeout_max`).
    lease: Duration,
    released: Arc<crate::handover::Released>,
}

/// The receiving side: the routes a node serves on its Raft address, `/raft/about` (this
/// member's own addresses, `directory`) among them.
pub fn router(
    raft: Raft,
    max_rpc_bytes: usize,
    about: crate::directory::About,
    stands: bool,
    clock: Option<Timekeeper>,
    lease: Duration,
    released: Arc<crate::handover::Released>,
) -> Router {
    let about = Arc::new(about);
    Router::new()
        .route("/raft/about", axum::routing::get(move || async move { axum::Json((*about).clone()) }))
        .route("/raft/append", post(append))
        .route("/raft/vote", post(vote))
        .route("/raft/snapshot", post(snapshot))
        .route("/raft/elect", post(elect))
        .route("/raft/release", post(release))
        .layer(DefaultBodyLimit::max(max_rpc_bytes))
        .layer(axum::middleware::from_fn_with_state(max_rpc_bytes, refuse_declared_oversize))
        .with_state(Served { raft, max: max_rpc_bytes, stands, clock, lease, released })
}

/// A body whose declared length is over the bound is refused from its headers, before a byte
/// of it is read: the peer learns at once (and reads the 413 rather than a reset halfway
/// through writing), and nothing is buffered for it. Undeclared (chunked) bodies meet the same
/// bound in `DefaultBodyLimit` while they are read.
async fn refuse_declared_oversize(
    State(max): State<usize>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let declared = req
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    match declared {
        Some(n) if n > max as u64 => (
            StatusCode::PAYLOAD_TOO_LARGE,
            [(axum::http::header::CONNECTION, "close")],
            format!("the request declares {n} bytes, over max_rpc_bytes {max}"),
        )
            .into_response(),
        _ => next.run(req).await,
    }
}

fn decode<T: DeserializeOwned>(max: usize, body: &[u8]) -> Result<T, Response> {
    codec(max)
        .deserialize(body)
        .map_err(|e| (StatusCode::BAD_REQUEST, format!("the request does not decode: {e}")).into_response())
}

fn encode<T: Serialize>(max: usize, answer: &T) -> Response {
    match codec(max).serialize(answer) {
        Ok(b) => (StatusCode::OK, b).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, format!("the answer does not encode: {e}")).into_response(),
    }
}

async fn append(State(s): State<Served>, headers: axum::http::HeaderMap, body: Bytes) -> Response {
    let arrived = std::time::Instant::now();
    let req: AppendEntriesRequest<TypeConfig> = match decode(s.max, &body) {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    let answer = s.raft.append_entries(req).await;
    s.released.heard();
    // Only an append this member accepted comes from its leader in the current term (a
    // higher vote means a deposed sender, whose clock no one follows).
    let accepted = matches!(
        answer,
        Ok(AppendEntriesResponse::Success | AppendEntriesResponse::PartialSuccess(_) | AppendEntriesResponse::Conflict)
    );
    let sent_at = headers.get(CLOCK_HEADER).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if let (Some(clock), Some(t), true) = (s.clock, sent_at, accepted) {
        if (clock.heard)(t.saturating_add(arrived.elapsed().as_micros() as u64)) {
            tokio::task::spawn_blocking(clock.save);
        }
    }
    encode(s.max, &answer)
}

async fn vote(State(s): State<Served>, body: Bytes) -> Response {
    let req: VoteRequest<NodeId> = match decode(s.max, &body) {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    let answer = s.raft.vote(req).await;
    s.released.heard();
    encode(s.max, &answer)
}

async fn elect(State(s): State<Served>, body: Bytes) -> Response {
    crate::handover::elect(&s.raft, s.stands, body).await
}

async fn release(State(s): State<Served>, body: Bytes) -> Response {
    crate::handover::release(&s.raft, s.stands, s.lease, &s.released, body).await
}

async fn snapshot(State(s): State<Served>, body: Bytes) -> Response {
    let req: InstallSnapshotRequest<TypeConfig> = match decode(s.max, &body) {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    let answer = s.raft.install_snapshot(req).await;
    s.released.heard();
    encode(s.max, &answer)
}
