//! The Kafka wire-protocol front door: Kafka producers, consumers and consumer
//! groups work against Baton unchanged. A Kafka topic is a Baton queue, Kafka
//! partition `n` is partition `"n"`, offsets are partition offsets, and a
//! Kafka consumer group's committed offsets are the Baton group's cursors.
//!
//! Owns the listener, framing and protocol shapes (`frame`, `conn`,
//! `versions`), the per-API handlers, and two pieces of state that live only
//! in memory and that a restart loses cleanly: the group coordinator
//! (membership and generations; clients rejoin) and fetch sessions (clients
//! get FETCH_SESSION_ID_NOT_FOUND and start over). Everything durable goes to
//! the engine as typed commands; this crate never decides what is stored.

mod admin;
mod cluster;
mod conn;
mod coordinator;
mod errors;
mod fetch;
mod frame;
mod group_configs;
mod groups;
mod handler;
mod metrics;
mod produce;
mod records;
mod sasl;
mod sessions;
mod share;
mod share_ack;
mod share_admin;
mod share_fetch;
mod share_groups;
mod topics;
mod txn;
mod versions;

pub use cluster::{Answer, ClusterTopology, LeaderAsk, Topology};
pub use coordinator::{Limits as GroupLimits, DEFAULT_GROUP_MAX_SIZE, DEFAULT_MAX_GROUPS};
pub use frame::{next_frame, parse, FrameError, ParseError, Parsed};
pub use metrics::{CloseReason, KafkaStats};
pub use sasl::SaslUsers;
pub use share_groups::{ShareLimits, DEFAULT_MAX_SHARE_SESSIONS};
pub use versions::{render_table, SUPPORTED};

use baton_core::request_memory::{RequestMemory, DEFAULT_REQUEST_READ_TIMEOUT_SECS};
use baton_core::Engine;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// Kafka's default max.message.bytes (1 MiB plus a batch header's 12 bytes of overhead).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 1_048_588;
/// Kafka's fetch.max.bytes default (55 MiB).
pub const DEFAULT_FETCH_MAX_BYTES: u64 = 57_671_680;
/// Kafka's producer.id.expiration.ms default (one day).
pub const DEFAULT_PRODUCER_ID_EXPIRATION_MS: u64 = 86_400_000;
/// Kafka's connections.max.idle.ms default (10 minutes).
pub const DEFAULT_CONNECTIONS_MAX_IDLE_MS: u64 = 600_000;
/// Default of `--kafka-max-connections`.
pub const DEFAULT_MAX_CONNECTIONS: u64 = 10_000;
/// Default bound on what one produced compressed batch may expand to (64 MiB).
pub const DEFAULT_MAX_UNCOMPRESSED_BATCH_BYTES: u64 = 64 << 20;
/// Readers decode stored batches with kafka-protocol, which refuses past this
/// (vendor patch, D9); a batch must never be accepted that cannot be read back.
pub const MAX_UNCOMPRESSED_BATCH_BYTES: u64 = kafka_protocol::compression::MAX_DECOMPRESSED_BYTES;
/// Kafka's group.share.record.lock.duration.ms: how long a share consumer holds what it
/// acquired (the Baton lease it is acquired under) before it is delivered again.
pub const DEFAULT_SHARE_RECORD_LOCK_MS: u64 = 30_000;
/// The most topics one share group member may subscribe to (each heartbeat resolves them).
pub const MAX_SUBSCRIBED_TOPICS: usize = 1_000;
/// The most partitions one ShareFetch or ShareAcknowledge may name.
pub const MAX_SHARE_PARTITIONS: usize = 10_000;

#[derive(Debug, Clone)]
pub struct KafkaConfig {
    /// Host and port clients are told to connect to (Metadata, FindCoordinator).
    pub advertised_host: String,
    pub advertised_port: i32,
    /// Create unknown topics named in Metadata (and on Produce) with `default_partitions`.
    pub auto_create: bool,
    pub default_partitions: u32,
    /// Largest request frame; a larger length prefix closes the connection.
    pub max_frame_bytes: usize,
    /// Kafka's max.message.bytes: the largest record batch a Produce may store.
    pub max_message_bytes: usize,
    /// The most bytes a produced compressed batch may expand to; the records
    /// are counted as it decompresses, so this bounds time, not memory.
    pub max_uncompressed_batch_bytes: u64,
    /// Kafka's group.initial.rebalance.delay.ms: how long a new group waits
    /// for more members before its first generation.
    pub initial_rebalance_delay: Duration,
    /// Kafka's fetch.max.bytes: the most record bytes one Fetch answer
    /// carries (past its first batch), whatever the client asks.
    pub fetch_max_bytes: u64,
    /// Kafka's producer.id.expiration.ms: an idempotent producer that has not
    /// written to a partition for this long has its state there dropped.
    pub producer_id_expiration: Duration,
    /// Groups the coordinator holds at once, and members per group.
    pub group_limits: GroupLimits,
    /// Kafka's connections.max.idle.ms: a connection with nothing read and no
    /// answer pending for this long is closed.
    pub connections_max_idle: Duration,
    /// Connections open at once; one more is closed as it is accepted.
    pub max_connections: u64,
    /// Longest Fetch max_wait_ms honoured, whatever the client asks.
    pub max_fetch_wait: Duration,
    /// SASL/PLAIN accounts. When set, a connection must authenticate before
    /// any request but ApiVersions and the SASL ones; `None` serves everyone.
    pub sasl_users: Option<Arc<SaslUsers>>,
    /// On a cluster member: who leads and where every member's Kafka listener is (D42).
    /// `None`: a single node, broker 0, which always leads.
    pub cluster: Option<ClusterTopology>,
    /// On a cluster member: what a member that does not lead asks the leader for.
    pub leader_ask: Option<LeaderAsk>,
    /// How long a share consumer holds what it acquired (D49).
    pub share_record_lock: Duration,
    /// Share groups, members and sessions held at once, and their timeouts (D49).
    pub share_limits: ShareLimits,
    /// The node's request memory, shared with the HTTP door (D87).
    pub request_memory: Arc<RequestMemory>,
    /// A frame whose length prefix is read must be whole within this (D87).
    pub request_read_timeout: Duration,
}

impl KafkaConfig {
    pub(crate) fn producer_expiry_micros(&self) -> u64 {
        self.producer_id_expiration.as_micros().min(u64::MAX as u128) as u64
    }
}

impl Default for KafkaConfig {
    fn default() -> Self {
        KafkaConfig {
            advertised_host: "127.0.0.1".into(),
            advertised_port: 9092,
            auto_create: true,
            default_partitions: 1,
            max_frame_bytes: 100 << 20,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            max_uncompressed_batch_bytes: DEFAULT_MAX_UNCOMPRESSED_BATCH_BYTES,
            initial_rebalance_delay: Duration::from_millis(3000),
            fetch_max_bytes: DEFAULT_FETCH_MAX_BYTES,
            max_fetch_wait: Duration::from_secs(30),
            connections_max_idle: Duration::from_millis(DEFAULT_CONNECTIONS_MAX_IDLE_MS),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            group_limits: GroupLimits::default(),
            producer_id_expiration: Duration::from_millis(DEFAULT_PRODUCER_ID_EXPIRATION_MS),
            sasl_users: None,
            cluster: None,
            leader_ask: None,
            share_record_lock: Duration::from_millis(DEFAULT_SHARE_RECORD_LOCK_MS),
            share_limits: ShareLimits::default(),
            request_memory: Arc::default(),
            request_read_timeout: Duration::from_secs(DEFAULT_REQUEST_READ_TIMEOUT_SECS),
        }
    }
}

/// Everything a connection needs, shared by all of them.
pub(crate) struct Ctx {
    pub engine: Engine,
    pub cfg: KafkaConfig,
    pub stats: Arc<KafkaStats>,
    pub groups: coordinator::Coordinator,
    pub sessions: sessions::FetchSessions,
    pub shares: share_groups::Shares,
    /// Group configs read recently (D67).
    pub group_configs: group_configs::GroupConfigCache,
}

/// A bound listener, ready to serve.
pub struct KafkaServer {
    listener: TcpListener,
    ctx: Arc<Ctx>,
}

impl KafkaServer {
    /// Bind `addr`. A zero advertised port means "the port we got" (for `:0`).
    pub async fn bind(addr: SocketAddr, engine: Engine, mut cfg: KafkaConfig) -> std::io::Result<KafkaServer> {
        let listener = TcpListener::bind(addr).await?;
        if cfg.advertised_port == 0 {
            cfg.advertised_port = listener.local_addr()?.port() as i32;
        }
        let ctx = Arc::new(Ctx {
            engine,
            groups: coordinator::Coordinator::with_limits(cfg.initial_rebalance_delay, cfg.group_limits),
            sessions: sessions::FetchSessions::new(),
            shares: share_groups::Shares::new(cfg.share_limits),
            group_configs: Default::default(),
            cfg,
            stats: Arc::new(KafkaStats::default()),
        });
        Ok(KafkaServer { listener, ctx })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The host:port clients are told to use.
    pub fn advertised(&self) -> String {
        format!("{}:{}", self.ctx.cfg.advertised_host, self.ctx.cfg.advertised_port)
    }

    pub fn stats(&self) -> Arc<KafkaStats> {
        self.ctx.stats.clone()
    }

    /// Accept connections until the task is dropped or aborted. Never ends
    /// on its own: an accept failure (out of descriptors: EMFILE, ENFILE) is
    /// logged and retried after a back-off that grows to a second, so the
    /// listener outlives the shortage.
    pub async fn run(self) {
        let _ticker = AbortOnDrop(tokio::spawn(tick_loop(self.ctx.clone())));
        let mut backoff = Duration::from_millis(10);
        loop {
            match self.listener.accept().await {
                Ok((stream, peer)) => {
                    backoff = Duration::from_millis(10);
                    let stats = &self.ctx.stats;
                    let open = stats.open();
                    KafkaStats::bump(&stats.connections);
                    if open >= self.ctx.cfg.max_connections {
                        stats.close(CloseReason::OverLimit);
                        let n = stats.closed(CloseReason::OverLimit);
                        // One line per 100 refusals: a flood must not flood the log too.
                        if n % 100 == 1 {
                            tracing::warn!(%peer, max = self.ctx.cfg.max_connections, refused_total = n,
                                "kafka: connection refused, --kafka-max-connections are open");
                        }
                        drop(stream);
                        continue;
                    }
                    let _ = stream.set_nodelay(true);
                    tokio::spawn(conn::serve(stream, peer, self.ctx.clone()));
                }
                Err(e) => {
                    tracing::warn!(error = %e, retry_in_ms = backoff.as_millis() as u64, "kafka: accept failed");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                }
            }
        }
    }
}

/// Stops the clock task when the accept loop is dropped (server shutdown).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Session timeouts, rebalance deadlines and idle fetch sessions are driven
/// by one coarse clock rather than a timer per member.
async fn tick_loop(ctx: Arc<Ctx>) {
    let mut iv = tokio::time::interval(Duration::from_millis(100));
    iv.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for n in 0u64.. {
        iv.tick().await;
        let now = std::time::Instant::now();
        ctx.groups.tick(now);
        ctx.sessions.expire(now);
        // Transaction timeouts are milliseconds to minutes: once a second is close enough.
        if n % 10 == 0 {
            txn::expire(&ctx).await;
            share::expire(&ctx).await;
        }
    }
}

/// The fuzz harness's entry (crates/kafka/fuzz): everything a hostile client
/// can reach without the engine. Cut frames from `data`, decode each, check
/// Produce batches as the produce path would (and the whole input as record
/// batches, so the record walk and the decompressors see every byte without
/// a request around them), collect a Fetch's partitions as a session would,
/// and encode the error answer the connection would send. Must never panic.
#[doc(hidden)]
pub fn fuzz_request(data: &[u8]) {
    use kafka_protocol::messages::RequestKind;
    let _ = records::split_batches(data, 1 << 20);
    let sessions = sessions::FetchSessions::new();
    let mut buf = bytes::BytesMut::from(data);
    let mut frames = Vec::new();
    while let Ok(Some(f)) = frame::next_frame(&mut buf, 1 << 20) {
        frames.push(f);
    }
    // Also the whole input as one frame body, so the decoder sees every byte.
    frames.push(bytes::Bytes::copy_from_slice(data));
    for f in frames {
        let req = match frame::parse(f) {
            Ok(Parsed::Request(r)) | Ok(Parsed::Unsupported(r)) => r,
            _ => continue,
        };
        if let RequestKind::Produce(p) = &req.body {
            for t in &p.topic_data {
                for part in &t.partition_data {
                    let _ = records::split_batches(part.records.as_deref().unwrap_or_default(), 1 << 20);
                }
            }
        }
        if let RequestKind::Fetch(f) = &req.body {
            let _ = sessions.open(f, req.version, std::time::Instant::now());
        }
        if let Some(body) = errors::error_response(&req.body, req.version, errors::UNSUPPORTED_VERSION) {
            let _ = frame::encode_response(req.header.correlation_id, req.api, req.version, &body);
        }
    }
}
