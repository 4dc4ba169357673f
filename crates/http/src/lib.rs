//! The HTTP/JSON front door, compatible with Queen's data-plane API.
//!
//! Owns parsing and shaping JSON, status codes and long polls. Must never
//! decide anything about state: every change goes to the engine as a typed
//! command. Bad input is answered with a 4xx and a JSON body `{error, code}`
//! before the engine sees it, so it changes nothing.

mod admin;
mod body;
mod browse;
mod conflation;
mod consume;
mod ephemeral;
mod error;
mod fetch;
mod forward;
#[doc(hidden)]
pub mod fuzzing;
mod held;
mod kv;
mod listen;
mod locks;
mod metrics;
mod metrics_json;
mod namespaces;
mod paging;
mod payload;
mod push;
mod push_binary;
mod render;
mod status;
mod streams;
mod timing;
mod traces;
mod txn;

use axum::routing::{delete, get, post};
use axum::Router;
use baton_core::request_memory::{RequestMemory, DEFAULT_REQUEST_READ_TIMEOUT_SECS};
use baton_core::Engine;
use std::sync::Arc;
use std::time::Duration;

pub use error::ApiError;
pub use fetch::{DEFAULT_MAX_BYTES as DEFAULT_FETCH_MAX_BYTES, DEFAULT_MAX_ENTRIES as DEFAULT_FETCH_MAX_ENTRIES};
pub use forward::{Forward, FORWARDED_BY};
pub use listen::{ConnConfig, ConnStats};

/// Default of `--max-ack-error-bytes`.
pub const DEFAULT_MAX_ACK_ERROR_BYTES: usize = 4096;
pub use payload::{DEFAULT_MAX_DEPTH as DEFAULT_PAYLOAD_DEPTH, MAX_RENDER_DEPTH as MAX_PAYLOAD_DEPTH};

#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Largest request body accepted (413 past it).
    pub max_body_bytes: usize,
    /// Largest single message payload accepted (413 past it).
    pub max_payload_bytes: usize,
    /// Deepest nesting of arrays and objects in a stored JSON value (400
    /// `bad_payload` past it); at most [`MAX_PAYLOAD_DEPTH`].
    pub max_payload_depth: u32,
    /// Most stored bytes one `/api/v1/fetch` answer carries, all entries
    /// together (a larger `maxBytes` is clamped to it).
    pub fetch_max_bytes: u64,
    /// Most entries in one `/api/v1/fetch` (400 `invalid_entries` past it).
    pub fetch_max_entries: usize,
    /// Longest ack `error` text kept (for the DLQ view); longer is cut.
    pub max_ack_error_bytes: usize,
    /// Batch size when the client leaves it to the server (Queen's autopilot).
    pub default_batch: u32,
    /// Message lookups by transaction id (get and delete) reading the index at once; more
    /// are answered 429 `too_many_lookups`.
    pub max_message_lookups: usize,
    /// How long a trace event (`POST /api/v1/traces`) is kept, seconds.
    pub trace_retention_secs: u64,
    /// Longest long poll honoured, whatever the client asks.
    pub max_wait_ms: u64,
    /// Ephemeral queues (D56) held at once (429 `too_many_queues` past it).
    pub ephemeral_max_queues: usize,
    /// Payload bytes all ephemeral queues together may hold (429 `ephemeral_queue_full`).
    pub ephemeral_max_bytes: u64,
    /// Bounds of the listener's connections (idle timeout, cap, lingering close).
    pub conn: ConnConfig,
    /// The node's request memory, shared with the Kafka door (D87).
    pub request_memory: Arc<RequestMemory>,
    /// A request body must arrive whole within this, else 408 (D87).
    pub request_read_timeout: Duration,
    /// The listener's counters, shown by /metrics.
    pub conn_stats: Arc<ConnStats>,
    /// More Prometheus text for /metrics from outside this crate (the Kafka
    /// listener's counters), so neither crate depends on the other.
    pub extra_metrics: Option<ExtraMetrics>,
    /// What `GET /cluster` answers on a cluster member (D40): the server hands in a view of
    /// its Raft state; a single node has none and answers 404.
    pub cluster: Option<ClusterView>,
    /// On a cluster member: where requests go while another member leads (D42).
    pub forward: Option<Forward>,
    /// On a cluster member: how `/cluster/members` adds and removes members (D44).
    pub membership: Option<MembershipAdmin>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            max_body_bytes: 16 << 20,
            max_payload_bytes: 1 << 20,
            max_payload_depth: payload::DEFAULT_MAX_DEPTH,
            fetch_max_bytes: fetch::DEFAULT_MAX_BYTES,
            fetch_max_entries: fetch::DEFAULT_MAX_ENTRIES,
            max_ack_error_bytes: DEFAULT_MAX_ACK_ERROR_BYTES,
            default_batch: 100,
            max_message_lookups: DEFAULT_MAX_MESSAGE_LOOKUPS,
            trace_retention_secs: traces::DEFAULT_RETENTION_SECS,
            max_wait_ms: 60_000,
            ephemeral_max_queues: ephemeral::DEFAULT_MAX_QUEUES as usize,
            ephemeral_max_bytes: ephemeral::DEFAULT_MAX_MB << 20,
            conn: ConnConfig::default(),
            request_memory: Arc::default(),
            request_read_timeout: Duration::from_secs(DEFAULT_REQUEST_READ_TIMEOUT_SECS),
            conn_stats: Arc::default(),
            extra_metrics: None,
            cluster: None,
            forward: None,
            membership: None,
        }
    }
}

/// Appends Prometheus text (whole families: HELP, TYPE, samples) to /metrics.
#[derive(Clone)]
pub struct ExtraMetrics(pub Arc<dyn Fn(&mut String) + Send + Sync>);

impl std::fmt::Debug for ExtraMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ExtraMetrics")
    }
}

/// The member's Raft state as JSON, read at each `GET /cluster`.
#[derive(Clone)]
pub struct ClusterView(pub Arc<dyn Fn() -> serde_json::Value + Send + Sync>);

impl std::fmt::Debug for ClusterView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterView")
    }
}

/// A membership change asked for over HTTP (D44).
#[derive(Debug, Clone)]
pub enum MembershipOp {
    Add { id: u64, raft_addr: String },
    Remove { id: u64 },
}

/// What a membership change answers: the membership after it, or (status, code, message).
pub type MembershipAnswer = Result<serde_json::Value, (u16, &'static str, String)>;

/// Makes a membership change on the member that leads.
#[derive(Clone)]
#[allow(clippy::type_complexity)]
pub struct MembershipAdmin(
    pub  Arc<
        dyn Fn(MembershipOp) -> std::pin::Pin<Box<dyn std::future::Future<Output = MembershipAnswer> + Send>>
            + Send
            + Sync,
    >,
);

impl std::fmt::Debug for MembershipAdmin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MembershipAdmin")
    }
}

pub struct AppState {
    pub engine: Engine,
    pub cfg: HttpConfig,
    pub shutdown: Shutdown,
    pub(crate) times: timing::RequestTimes,
    pub(crate) forwarder: Option<forward::Forwarder>,
    /// Permits of [`HttpConfig::max_message_lookups`].
    pub(crate) lookups: tokio::sync::Semaphore,
    /// Ephemeral queues: in this process's memory only (D56).
    pub(crate) ephemeral: ephemeral::Ephemeral,
    /// The namespace and task tags, read at most once a second (D57).
    pub(crate) tags: namespaces::TagCache,
    /// Conflation policies per (group, queue), read once each (D61).
    pub(crate) conflation: conflation::Policies,
}

pub use ephemeral::{DEFAULT_MAX_MB as EPHEMERAL_DEFAULT_MAX_MB, DEFAULT_MAX_QUEUES as EPHEMERAL_DEFAULT_MAX_QUEUES};
pub use traces::DEFAULT_RETENTION_SECS as DEFAULT_TRACE_RETENTION_SECS;

/// Default of [`HttpConfig::max_message_lookups`]: each reads up to 64 MiB of index.
pub const DEFAULT_MAX_MESSAGE_LOOKUPS: usize = 2;

/// Tells open long polls that the server is stopping, so they answer 204 at
/// once. A graceful shutdown waits for every request in flight, and a long
/// poll may otherwise hold it for up to `max_wait_ms` (60 s): past most
/// deployments' grace period, so the process would be SIGKILLed instead.
/// The server triggers it when its stop signal arrives.
#[derive(Clone)]
pub struct Shutdown(Arc<tokio::sync::watch::Sender<bool>>);

impl Default for Shutdown {
    fn default() -> Self {
        Shutdown(Arc::new(tokio::sync::watch::Sender::new(false)))
    }
}

impl Shutdown {
    pub fn trigger(&self) {
        self.0.send_replace(true);
    }

    /// Resolves once triggered (the sender lives as long as `self`, so this never errs early).
    pub(crate) async fn triggered(&self) {
        let _ = self.0.subscribe().wait_for(|stop| *stop).await;
    }
}

pub type App = Arc<AppState>;

/// The longest duration (10 years) a request may name in seconds. The state
/// machine multiplies seconds into microseconds unchecked, so a huge value
/// would overflow there: a panic that stops the planner (in a debug build,
/// again after every restart, since the value is in the log) or a wrapped,
/// meaningless time. Refusing it here keeps it out of the log.
pub const MAX_SECONDS: u64 = 10 * 365 * 24 * 3600;

pub(crate) fn check_seconds(code: &'static str, what: &str, v: Option<u64>) -> Result<(), ApiError> {
    match v {
        Some(s) if s > MAX_SECONDS => {
            Err(ApiError::bad(code, format!("{what} is {s} seconds; the most is {MAX_SECONDS}")))
        }
        _ => Ok(()),
    }
}

/// Serve the API on `listener` until `stop` resolves, then trigger
/// `shutdown` (open long polls answer at once) and wait for the requests in
/// flight.
pub async fn serve(
    listener: tokio::net::TcpListener,
    engine: Engine,
    cfg: HttpConfig,
    shutdown: Shutdown,
    stop: impl std::future::Future<Output = ()>,
) {
    let (conn, stats) = (cfg.conn.clone(), cfg.conn_stats.clone());
    let bodies = listen::BodyMemory { memory: cfg.request_memory.clone(), max_body: cfg.max_body_bytes };
    let router = router_with_shutdown(engine, cfg, shutdown.clone());
    listen::serve(listener, router, conn, bodies, stats, async move {
        stop.await;
        shutdown.trigger();
    })
    .await
}

pub fn router(engine: Engine, cfg: HttpConfig) -> Router {
    router_with_shutdown(engine, cfg, Shutdown::default())
}

/// The router, with a handle the server triggers on its stop signal to end long polls.
pub fn router_with_shutdown(engine: Engine, cfg: HttpConfig, shutdown: Shutdown) -> Router {
    let forwarder = cfg.forward.clone().map(forward::Forwarder::new);
    status::mark_start();
    let lookups = tokio::sync::Semaphore::new(cfg.max_message_lookups.max(1));
    let ephemeral = ephemeral::Ephemeral::new(cfg.ephemeral_max_queues, cfg.ephemeral_max_bytes);
    let state = Arc::new(AppState {
        engine,
        cfg,
        shutdown,
        times: timing::RequestTimes::default(),
        forwarder,
        lookups,
        ephemeral,
        tags: namespaces::TagCache::default(),
        conflation: conflation::Policies::default(),
    });
    Router::new()
        .route("/health", get(admin::health))
        .route("/cluster", get(admin::cluster))
        .route("/cluster/members", post(admin::add_member))
        .route("/cluster/members/{id}", delete(admin::remove_member))
        .route("/metrics", get(metrics::negotiated))
        .route("/metrics/prometheus", get(metrics::prometheus))
        .route("/api/v1/configure", post(admin::configure))
        .route("/api/v1/push", post(push::push))
        .route("/api/v1/kafka/producer-id", post(push::producer_id))
        .route("/api/v1/kafka/topics/{topic}", post(push::create_topic))
        .route("/api/v1/pop", get(namespaces::pop))
        .route("/api/v1/resources/namespaces", get(namespaces::namespaces))
        .route("/api/v1/resources/tasks", get(namespaces::tasks))
        .route("/api/v1/pop/queue/{queue}", get(consume::pop_queue))
        .route("/api/v1/pop/queue/{queue}/partition/{partition}", get(consume::pop_partition))
        .route("/api/v1/ack", post(consume::ack_one))
        .route("/api/v1/ack/batch", post(consume::ack_batch))
        .route("/api/v1/lease/{lease}/extend", post(consume::extend))
        .route("/api/v1/fetch", post(fetch::fetch))
        .route("/api/v1/transaction", post(txn::transaction))
        .route("/api/v1/kv", post(kv::kv))
        .route("/api/v1/locks", post(locks::locks))
        .route("/api/v1/traces", post(traces::record))
        .route("/api/v1/traces/names", get(traces::names))
        .route("/api/v1/traces/by-name/{name}", get(traces::by_name))
        .route("/api/v1/traces/{partition}/{txid}", get(traces::for_message))
        .route("/api/v1/timers", post(kv::timers))
        .route("/api/v1/timers/{queue}", get(kv::list_timers))
        .route("/api/v1/timers/{queue}/{key}", get(kv::peek_timer).delete(kv::cancel_timer))
        .route("/api/v1/resources/overview", get(admin::overview))
        .route("/api/v1/resources/queues", get(admin::queues))
        .route("/api/v1/resources/partitions", get(browse::partitions))
        .route("/api/v1/messages", get(browse::messages))
        .route("/api/v1/partitions/changed", post(browse::changed))
        .route("/api/v1/status", get(status::status))
        .route("/api/v1/status/queues", get(status::queues))
        .route("/api/v1/status/queues/{queue}", get(status::queue))
        .route("/api/v1/status/analytics", get(status::analytics))
        .route("/api/v1/stats/refresh", post(status::refresh))
        .route("/api/v1/analytics/system-metrics", get(status::system_metrics))
        .route("/api/v1/analytics/worker-metrics", get(status::worker_metrics))
        .route("/api/v1/resources/queues/{queue}", get(admin::queue).delete(admin::delete_queue))
        .route("/api/v1/resources/queues/{queue}/depth", get(admin::depth))
        .route("/api/v1/consumer-groups", get(admin::groups))
        .route("/api/v1/consumer-groups/{group}", get(admin::group).delete(admin::delete_group))
        .route("/api/v1/consumer-groups/{group}/queues/{queue}", delete(admin::delete_group_on_queue))
        .route("/api/v1/consumer-groups/{group}/queues/{queue}/seek", post(admin::seek))
        .route("/api/v1/consumer-groups/lagging", get(admin::lagging))
        .route("/api/v1/consumer-groups/{group}/subscription", post(admin::subscription))
        .route("/api/v1/dlq", get(admin::dlq))
        .route("/api/v1/messages/{partition}/{txid}", get(admin::message).delete(admin::delete_message))
        .route("/api/v1/messages/{partition}/{txid}/retry", post(admin::retry_message))
        .route("/streams/v1/queries", post(streams::register))
        .route("/streams/v1/cycle", post(streams::cycle))
        .route("/streams/v1/state/get", post(streams::state_get))
        .route("/api/v1/ephemeral/configure", post(ephemeral::configure))
        .route("/api/v1/ephemeral/reset", post(ephemeral::reset))
        .route("/api/v1/ephemeral/queue/{queue}", delete(ephemeral::delete))
        .route("/api/v1/ephemeral/push", post(ephemeral::push))
        .route("/api/v1/ephemeral/pop", get(ephemeral::pop))
        .route("/api/v1/ephemeral/ack", post(ephemeral::ack))
        .route("/api/v1/ephemeral/queues", get(ephemeral::queues))
        .route("/api/v1/ephemeral/queues/{queue}/depth", get(ephemeral::depth))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), timing::time_request))
        .fallback(error::not_found)
        // axum's own 405 has an empty body; clients read `{error, code}`.
        .method_not_allowed_fallback(error::method_not_allowed)
        // Outermost but for the error shape: a forwarded request is the leader's to judge,
        // routes and timing included (D42).
        .layer(axum::middleware::from_fn_with_state(state.clone(), forward::forward))
        .layer(axum::middleware::from_fn(error::json_errors))
        .with_state(state)
}
