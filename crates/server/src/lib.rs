//! Wiring only: configuration, start-up, signals and shutdown. Owns no
//! behaviour of its own; everything it starts lives in a lower crate.

use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// Address of the HTTP API.
    #[arg(long, env = "BATON_HTTP_ADDR", default_value = "127.0.0.1:6632")]
    pub http_addr: SocketAddr,
    /// Directory holding the WAL, partition segments and checkpoints.
    /// Where other cluster members send this member's HTTP clients when it leads (D42):
    /// followers forward requests here. Default: --http-addr.
    #[arg(long, env = "BATON_HTTP_ADVERTISED_ADDR")]
    pub http_advertised_addr: Option<String>,
    #[arg(long, env = "BATON_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
    /// Seconds between checkpoints; recovery replays at most this much WAL.
    #[arg(long, env = "BATON_CHECKPOINT_INTERVAL_SECS", default_value_t = 30)]
    pub checkpoint_interval_secs: u64,
    /// Size at which a WAL segment is closed and a new one started, in MiB.
    #[arg(long, env = "BATON_WAL_SEGMENT_MB", default_value_t = 64)]
    pub wal_segment_mb: u64,
    /// Zero-fill each WAL segment before writing to it, so an fdatasync never has a file
    /// size to commit through the filesystem journal (ext4, XFS). Costs one segment of disk
    /// (two while the next is prepared). `false` on copy-on-write filesystems (btrfs, ZFS),
    /// where overwriting in place does not exist.
    #[arg(long, env = "BATON_WAL_PREALLOCATE", default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub wal_preallocate: bool,
    /// With preallocation: how many WAL segments a checkpoint retired are kept and
    /// zero-filled again as the next ones, instead of deleted (deleting a large file in the
    /// middle of a workload stalls the next fdatasyncs on ext4). Disk the WAL may keep after
    /// a checkpoint: this many segments.
    #[arg(long, env = "BATON_WAL_RECYCLE_SEGMENTS", default_value_t = baton_log::WalConfig::DEFAULT_RECYCLE)]
    pub wal_recycle_segments: usize,
    /// At start, cut a last WAL frame that is whole but fails its checksum, and everything
    /// after it, instead of refusing to start. Such a frame is damage, not a torn write, and
    /// may hold writes that were answered: use only after reading the refusal.
    #[arg(long, env = "BATON_WAL_TRUNCATE_DAMAGED_TAIL", default_value_t = false, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub wal_truncate_damaged_tail: bool,
    /// Size at which a partition segment file is closed, in MiB.
    #[arg(long, env = "BATON_PARTITION_SEGMENT_MB", default_value_t = 64)]
    pub partition_segment_mb: u64,
    /// Partition files (segments and their index files) kept open at once; the least
    /// recently used are closed beyond it and reopened when needed (never an error).
    #[arg(long, env = "BATON_MAX_OPEN_FILES", default_value_t = 4096)]
    pub max_open_files: usize,
    /// Spare partition directories (each holding a first segment's three empty files) the
    /// provisioner may keep ready, so a new partition costs the planner one rename, not a
    /// directory and three files. The pool grows to this with demand and is kept across
    /// restarts; 0 makes every partition's files where they are first needed (D81).
    #[arg(long, env = "BATON_SPARE_PARTITION_DIRS", default_value_t = baton_core::provision::DEFAULT_SPARE_DIRS)]
    pub spare_partition_dirs: usize,
    /// MiB of partition index blocks cached in memory for lookups by offset.
    #[arg(long, env = "BATON_INDEX_CACHE_MB", default_value_t = 64)]
    pub index_cache_mb: u64,
    /// Distinct keys one compaction pass of a `cleanup.policy=compact` topic tracks (about
    /// 40 bytes each); records of keys seen past it are kept until a later pass. 0 turns
    /// compaction off.
    #[arg(long, env = "BATON_COMPACTION_MAX_KEYS", default_value_t = baton_core::compact::DEFAULT_MAX_KEYS)]
    pub compaction_max_keys: usize,
    /// Largest HTTP request body accepted; larger bodies get 413.
    #[arg(long, env = "BATON_MAX_BODY_BYTES", default_value_t = 16 << 20)]
    pub max_body_bytes: usize,
    /// Largest single message payload accepted; larger payloads get 413.
    #[arg(long, env = "BATON_MAX_PAYLOAD_BYTES", default_value_t = 1 << 20)]
    pub max_payload_bytes: usize,
    /// Deepest nesting of arrays and objects in a JSON value the HTTP API stores (push
    /// payloads, KV values, timer payloads); deeper ones get 400 `bad_payload`. At most 127,
    /// the deepest a JSON value can be that serde_json turns into a tree again.
    #[arg(long, env = "BATON_MAX_PAYLOAD_DEPTH", default_value_t = baton_http::DEFAULT_PAYLOAD_DEPTH,
          value_parser = clap::value_parser!(u32).range(1..=baton_http::MAX_PAYLOAD_DEPTH as i64))]
    pub max_payload_depth: u32,
    /// Most stored bytes one HTTP `/api/v1/fetch` answer carries, all its entries together;
    /// a request's larger `maxBytes` is clamped to it (as Kafka's fetch.max.bytes), and the
    /// entries share it. Past it only the answer's first batch is given, so a reader always
    /// gets past a batch larger than this.
    #[arg(long, env = "BATON_HTTP_FETCH_MAX_BYTES", default_value_t = baton_http::DEFAULT_FETCH_MAX_BYTES)]
    pub http_fetch_max_bytes: u64,
    /// Most entries (partitions) in one HTTP `/api/v1/fetch`; more get 400 `invalid_entries`.
    #[arg(long, env = "BATON_HTTP_FETCH_MAX_ENTRIES", default_value_t = baton_http::DEFAULT_FETCH_MAX_ENTRIES)]
    pub http_fetch_max_entries: usize,
    /// Longest `error` text of an ack that is kept (shown by the DLQ view); a longer one is
    /// cut to this many bytes (at a character boundary), the ack itself still counts.
    #[arg(long, env = "BATON_MAX_ACK_ERROR_BYTES", default_value_t = baton_http::DEFAULT_MAX_ACK_ERROR_BYTES)]
    pub max_ack_error_bytes: usize,
    /// Messages per pop when the client does not say (Queen's autopilot).
    #[arg(long, env = "BATON_DEFAULT_BATCH", default_value_t = 100)]
    pub default_batch: u32,
    /// Message lookups by transaction id (`GET`/`DELETE /api/v1/messages/...`) reading a
    /// partition's index at once, each up to 64 MiB, off the planner; more are answered 429
    /// `too_many_lookups` (counted in baton_http_errors_total).
    #[arg(long, env = "BATON_MAX_MESSAGE_LOOKUPS", default_value_t = baton_http::DEFAULT_MAX_MESSAGE_LOOKUPS as u32,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub max_message_lookups: u32,
    /// How long a trace event (`POST /api/v1/traces`, Queen's `msg.trace()`) is kept; traces
    /// are KV rows, so they also count against --max-kv-mb.
    #[arg(long, env = "BATON_TRACE_RETENTION_SECS", default_value_t = baton_http::DEFAULT_TRACE_RETENTION_SECS,
          value_parser = clap::value_parser!(u64).range(1..=315_360_000))]
    pub trace_retention_secs: u64,
    /// Ephemeral queues (`/api/v1/ephemeral/*`, held in memory only, never in the log) at
    /// once; past it a push or pop naming a new one is 429 `too_many_queues`.
    #[arg(long, env = "BATON_EPHEMERAL_MAX_QUEUES", default_value_t = baton_http::EPHEMERAL_DEFAULT_MAX_QUEUES,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub ephemeral_max_queues: u64,
    /// Payload MiB all ephemeral queues together may hold; past it a push is 429
    /// `ephemeral_queue_full` (or drops the oldest, for a queue with that policy).
    #[arg(long, env = "BATON_EPHEMERAL_MAX_MB", default_value_t = baton_http::EPHEMERAL_DEFAULT_MAX_MB,
          value_parser = clap::value_parser!(u64).range(1..=1_048_576))]
    pub ephemeral_max_mb: u64,
    /// An HTTP connection with no request in progress (a long poll is one) and no byte read
    /// or written for this many seconds is closed.
    #[arg(long, env = "BATON_HTTP_IDLE_TIMEOUT_SECS", default_value_t = 60)]
    pub http_idle_timeout_secs: u64,
    /// Most HTTP connections open at once; past it a new connection is answered 503
    /// `too_many_connections` and closed.
    #[arg(long, env = "BATON_HTTP_MAX_CONNECTIONS", default_value_t = 10_000)]
    pub http_max_connections: usize,
    /// Before an HTTP connection closes, what the client still sends (the rest of a body the
    /// server refused) is read and thrown away for up to this many seconds, so the client
    /// reads the answer instead of a reset.
    #[arg(long, env = "BATON_HTTP_LINGER_SECS", default_value_t = 5)]
    pub http_linger_secs: u64,
    /// Most bytes read that way before the connection closes anyway.
    #[arg(long, env = "BATON_HTTP_LINGER_BYTES", default_value_t = 64 << 20)]
    pub http_linger_bytes: u64,
    /// Address of the Kafka wire-protocol listener [default: 127.0.0.1:9092].
    /// Given explicitly, failing to bind it stops start-up; left to the
    /// default, a busy 9092 only logs a warning and HTTP serves alone.
    #[arg(long, env = "BATON_KAFKA_ADDR")]
    pub kafka_addr: Option<SocketAddr>,
    /// host:port Kafka clients are told to connect to (Metadata,
    /// FindCoordinator) [default: the Kafka listen address].
    #[arg(long, env = "BATON_KAFKA_ADVERTISED_ADDR")]
    pub kafka_advertised_addr: Option<String>,
    /// Create unknown topics that Kafka clients name (Metadata, Produce).
    #[arg(long, env = "BATON_KAFKA_AUTO_CREATE", default_value_t = true, action = clap::ArgAction::Set)]
    pub kafka_auto_create: bool,
    /// Partitions of an auto-created topic (and of CreateTopics asking for -1).
    #[arg(long, env = "BATON_KAFKA_DEFAULT_PARTITIONS", default_value_t = 1)]
    pub kafka_default_partitions: u32,
    /// Largest Kafka request frame; a larger length prefix closes the connection.
    #[arg(long, env = "BATON_KAFKA_MAX_FRAME_BYTES", default_value_t = 100 << 20)]
    pub kafka_max_frame_bytes: usize,
    /// Kafka's max.message.bytes: a produced record batch larger than this is refused with
    /// MESSAGE_TOO_LARGE (Kafka's default, 1 MiB + 12).
    #[arg(long, env = "BATON_KAFKA_MAX_MESSAGE_BYTES", default_value_t = baton_kafka::DEFAULT_MAX_MESSAGE_BYTES)]
    pub kafka_max_message_bytes: usize,
    /// The most bytes one produced compressed record batch may expand to; a batch past it
    /// is refused with MESSAGE_TOO_LARGE. Its records are counted as it decompresses (never
    /// held whole), so this bounds the time one batch costs. At most 256 MiB, what readers decode.
    #[arg(long, env = "BATON_KAFKA_MAX_UNCOMPRESSED_BATCH_BYTES",
        default_value_t = baton_kafka::DEFAULT_MAX_UNCOMPRESSED_BATCH_BYTES)]
    pub kafka_max_uncompressed_batch_bytes: u64,
    /// Kafka's fetch.max.bytes: the most record bytes one Fetch answer carries, whatever
    /// the client asks (a client's max_bytes <= 0 means this). The first batch of the
    /// answer always goes, so a batch larger than this still reaches its consumer (KIP-74).
    #[arg(long, env = "BATON_KAFKA_FETCH_MAX_BYTES", default_value_t = baton_kafka::DEFAULT_FETCH_MAX_BYTES)]
    pub kafka_fetch_max_bytes: u64,
    /// Kafka's producer.id.expiration.ms: an idempotent producer that has not written to a
    /// partition for this long has its sequence state there dropped (swept when another
    /// producer first writes to that partition), so producer state cannot grow without bound.
    #[arg(long, env = "BATON_KAFKA_PRODUCER_ID_EXPIRATION_MS",
        default_value_t = baton_kafka::DEFAULT_PRODUCER_ID_EXPIRATION_MS)]
    pub kafka_producer_id_expiration_ms: u64,
    /// Consumer groups the Kafka coordinator holds at once; a JoinGroup that would make
    /// one more gets GROUP_MAX_SIZE_REACHED.
    #[arg(long, env = "BATON_KAFKA_MAX_GROUPS", default_value_t = baton_kafka::DEFAULT_MAX_GROUPS)]
    pub kafka_max_groups: usize,
    /// Kafka's group.max.size: members (and ids handed out to join) per consumer group; a
    /// JoinGroup past it gets GROUP_MAX_SIZE_REACHED.
    #[arg(long, env = "BATON_KAFKA_GROUP_MAX_SIZE", default_value_t = baton_kafka::DEFAULT_GROUP_MAX_SIZE)]
    pub kafka_group_max_size: usize,
    /// Kafka's group.share.record.lock.duration.ms: how long a share consumer holds the
    /// records it acquired (the Baton lease they are acquired under) before they are
    /// delivered again (D49).
    #[arg(long, env = "BATON_KAFKA_SHARE_RECORD_LOCK_MS", default_value_t = baton_kafka::DEFAULT_SHARE_RECORD_LOCK_MS)]
    pub kafka_share_record_lock_ms: u64,
    /// Kafka's group.share.max.share.sessions: share sessions held at once; a ShareFetch
    /// opening one more gets SHARE_SESSION_LIMIT_REACHED.
    #[arg(long, env = "BATON_KAFKA_MAX_SHARE_SESSIONS", default_value_t = baton_kafka::DEFAULT_MAX_SHARE_SESSIONS)]
    pub kafka_max_share_sessions: usize,
    /// Kafka transactional ids that may exist at once (one idle for seven days is
    /// forgotten); an InitProducerId for one more gets POLICY_VIOLATION.
    #[arg(long, env = "BATON_KAFKA_MAX_TRANSACTIONAL_IDS", default_value_t = 100_000)]
    pub kafka_max_transactional_ids: usize,
    /// Aborted Kafka transactions one partition remembers until retention drops them;
    /// AddPartitionsToTxn of a partition at the bound gets POLICY_VIOLATION.
    #[arg(long, env = "BATON_KAFKA_MAX_ABORTED_TRANSACTIONS", default_value_t = 100_000)]
    pub kafka_max_aborted_transactions: usize,
    /// Partitions one Kafka transaction may write to (its end marks each one in a single
    /// entry); AddPartitionsToTxn past it gets POLICY_VIOLATION, a transactional produce
    /// INVALID_TXN_STATE.
    #[arg(long, env = "BATON_KAFKA_MAX_TRANSACTION_PARTITIONS", default_value_t = baton_core::limits::DEFAULT_MAX_TXN_PARTITIONS)]
    pub kafka_max_transaction_partitions: usize,
    /// Partitions one HTTP transaction may push to (it is one entry, and a partition's first
    /// write makes its files on the planner): past it `too_many_transaction_partitions` (413).
    #[arg(long, env = "BATON_MAX_TRANSACTION_PARTITIONS", default_value_t = baton_core::limits::DEFAULT_MAX_TXN_PARTITIONS)]
    pub max_transaction_partitions: usize,
    /// How far behind its consumer group's cursor (in messages) a dead letter may be and
    /// still be retried (`POST /api/v1/messages/{p}/{tx}/retry`); past it 409
    /// `retry_too_far_behind`.
    #[arg(long, env = "BATON_MAX_RETRY_DISTANCE", default_value_t = 100_000)]
    pub max_retry_distance: u64,
    /// Planner time (ms) one step of a push may take: past it the push's remaining item
    /// groups are planned after the requests queued behind it, and the push is answered
    /// once its last step is durable. Kafka produces that make new partition files get a
    /// budget of the same size in each planner pass; past it they wait, in order, for later passes (D80).
    #[arg(long, env = "BATON_PUSH_STEP_MS", default_value_t = baton_core::limits::DEFAULT_PUSH_STEP.as_millis() as u64)]
    pub push_step_ms: u64,
    /// Kafka's connections.max.idle.ms: a Kafka connection with nothing read and no answer
    /// pending for this long is closed.
    #[arg(long, env = "BATON_KAFKA_CONNECTIONS_MAX_IDLE_MS",
        default_value_t = baton_kafka::DEFAULT_CONNECTIONS_MAX_IDLE_MS)]
    pub kafka_connections_max_idle_ms: u64,
    /// Kafka connections open at once; one more is closed as soon as it is accepted
    /// (counted as baton_kafka_connections_closed_total{reason="connection_limit"}).
    #[arg(long, env = "BATON_KAFKA_MAX_CONNECTIONS", default_value_t = baton_kafka::DEFAULT_MAX_CONNECTIONS)]
    pub kafka_max_connections: u64,
    /// Kafka's group.initial.rebalance.delay.ms: a new group's first
    /// rebalance waits this long for more members.
    #[arg(long, env = "BATON_KAFKA_INITIAL_REBALANCE_DELAY_MS", default_value_t = 3000)]
    pub kafka_initial_rebalance_delay_ms: u64,
    /// Require SASL/PLAIN on the Kafka listener, with the accounts in this
    /// file: one `user:password` per line (split at the first colon; `#`
    /// starts a comment line). Unset: no authentication.
    #[arg(long, env = "BATON_KAFKA_SASL_USERS")]
    pub kafka_sasl_users: Option<PathBuf>,
    /// Largest log entry one request may make (its messages and metadata), in MiB; a
    /// larger push or transaction is refused `entry_too_large` (413) before it is planned.
    /// With --max-frame-mb at most 256 MiB together (the log's frame cap).
    #[arg(long, env = "BATON_MAX_ENTRY_MB", default_value_t = 128)]
    pub max_entry_mb: usize,
    /// A planner batch goes to the log once its entries reach this many MiB.
    #[arg(long, env = "BATON_MAX_FRAME_MB", default_value_t = 64)]
    pub max_frame_mb: usize,
    /// Consumer groups that may exist at once; one more is refused `too_many_groups` (429).
    #[arg(long, env = "BATON_MAX_GROUPS", default_value_t = 100_000)]
    pub max_groups: usize,
    /// Queues (Kafka topics) that may exist at once; one more is refused `too_many_queues` (429).
    #[arg(long, env = "BATON_MAX_QUEUES", default_value_t = baton_core::limits::DEFAULT_MAX_QUEUES)]
    pub max_queues: usize,
    /// Partitions that may exist at once over all queues; one more is refused
    /// `too_many_partitions` (429; Kafka: THROTTLING_QUOTA_EXCEEDED).
    #[arg(long, env = "BATON_MAX_PARTITIONS", default_value_t = baton_core::limits::DEFAULT_MAX_PARTITIONS)]
    pub max_partitions: usize,
    /// MiB of KV entries (namespace, key, value) the state may hold; a write growing them
    /// past it is refused `kv_full` (429).
    #[arg(long, env = "BATON_MAX_KV_MB", default_value_t = 1024)]
    pub max_kv_mb: u64,
    /// MiB of pending timers the state may hold; a schedule growing them past it is refused
    /// `timers_full` (429).
    #[arg(long, env = "BATON_MAX_TIMERS_MB", default_value_t = 1024)]
    pub max_timers_mb: u64,
    /// A pop leases at most as many messages as fit in this many MiB of stored batches (at
    /// least one), so one pop cannot build an answer of any size.
    #[arg(long, env = "BATON_MAX_POP_MB", default_value_t = 64)]
    pub max_pop_mb: u64,
    /// Requests that may wait for the planner; one more is answered `overloaded` (429).
    #[arg(long, env = "BATON_MAX_QUEUED_REQUESTS", default_value_t = 65_536)]
    pub max_queued_requests: usize,
    /// This node's id in a cluster (D40). Unset: a single node, as always. Set: a member of
    /// the cluster `--peers` names, replicating through Raft; "ok" then means committed on
    /// a majority of the members' disks.
    #[arg(long, env = "BATON_NODE_ID", requires = "peers")]
    pub node_id: Option<u64>,
    /// Every member of the cluster, this one included: `ID=HOST:PORT` (the Raft address,
    /// where members talk to each other; keep it on a private network), comma-separated,
    /// e.g. `1=127.0.0.1:7101,2=127.0.0.1:7102,3=127.0.0.1:7103`. The lowest id forms the
    /// cluster the first time.
    #[arg(long, env = "BATON_PEERS", requires = "node_id")]
    pub peers: Option<String>,
    /// Where this member dials others instead of the Raft address the membership gives them:
    /// `ID=HOST:PORT`, comma-separated (another interface, a NAT, or a proxy in a fault test).
    #[arg(long, env = "BATON_RAFT_ROUTES", requires = "node_id")]
    pub raft_routes: Option<String>,
    /// How often a Raft leader tells its followers it is there, in ms.
    #[arg(long, env = "BATON_RAFT_HEARTBEAT_MS", default_value_t = 100)]
    pub raft_heartbeat_ms: u64,
    /// A follower that hears no leader for a random time between this and
    /// --raft-election-max-ms stands for election, in ms.
    #[arg(long, env = "BATON_RAFT_ELECTION_MIN_MS", default_value_t = 400)]
    pub raft_election_min_ms: u64,
    #[arg(long, env = "BATON_RAFT_ELECTION_MAX_MS", default_value_t = 800)]
    pub raft_election_max_ms: u64,
    /// Whether this member stands for election. `false`: it votes, replicates and serves
    /// (forwarding to the leader) but never leads: a member on a slower machine, or a fixed
    /// entry point that a fault test never kills.
    #[arg(long, env = "BATON_RAFT_STAND_FOR_ELECTION", default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub raft_stand_for_election: bool,
    /// A leader's write that no majority has committed within this many ms is answered
    /// 503 (outcome unknown) instead of waiting for ever, and the leader rebuilds.
    #[arg(long, env = "BATON_RAFT_COMMIT_TIMEOUT_MS", default_value_t = 5000)]
    pub raft_commit_timeout_ms: u64,
    /// On SIGTERM a leader stops proposing, lets what is in flight commit, and asks a
    /// caught-up voter to stand (D45); this many ms at most, then it exits as it would
    /// have anyway. 0: no hand-over (the others elect after their timeout).
    #[arg(long, env = "BATON_RAFT_HANDOVER_MS", default_value_t = 3000, value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub raft_handover_ms: u64,
    /// A member whose clock is further than this many ms from its leader's takes the
    /// leader's (D72), so a failover never moves state time by the gap between two wall
    /// clocks. 0: each member keeps the clock its start anchored (D46's rules only).
    #[arg(long, env = "BATON_CLOCK_FOLLOW_MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(0..=3_600_000))]
    pub clock_follow_ms: u64,
    /// Raft entries a member keeps behind its snapshot (its last checkpoint), so a follower a
    /// little behind catches up from the log rather than from a whole snapshot (D43).
    #[arg(long, env = "BATON_RAFT_KEEP_ENTRIES", default_value_t = 10_000)]
    pub raft_keep_entries: u64,
    /// How long a membership change may take (D44): a member added through
    /// `POST /cluster/members` that has not caught up within this many seconds is taken out
    /// again, and each membership entry must commit within it.
    #[arg(long, env = "BATON_RAFT_JOIN_TIMEOUT_SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub raft_join_timeout_secs: u64,
    /// Log filter (tracing env-filter syntax).
    #[arg(long, env = "BATON_LOG", default_value = "info")]
    pub log: String,
}

/// Raises the soft limit on open files to the hard one, as a server expects to: the default
/// soft limit (often 1,024) is far below what the connection caps allow (issue 12 item 11),
/// and running out of descriptors fails accepts and partition files alike. Returns the
/// soft limit now in force (`None` if it cannot be read).
fn raise_fd_limit() -> Option<u64> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return None;
        }
        if lim.rlim_cur < lim.rlim_max {
            let want = libc::rlimit { rlim_cur: lim.rlim_max, rlim_max: lim.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &want) == 0 {
                lim.rlim_cur = lim.rlim_max;
            }
        }
    }
    tracing::info!(open_files = lim.rlim_cur, "file descriptor limit");
    Some(lim.rlim_cur)
}

/// Run one node until SIGTERM or SIGINT; then finish the group commit in flight, checkpoint, return.
pub fn serve(a: ServeArgs) -> Result<(), String> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(&a.log))
        .with_writer(std::io::stderr)
        .init();
    #[cfg(feature = "mutants")]
    tracing::warn!(mutant = ?baton_log::mutant::picked(), "this build has deliberate bugs (feature mutants): for testing the checkers only");
    let fd_limit = raise_fd_limit();
    let mut cfg = baton_core::EngineConfig::new(a.data_dir.clone());
    cfg.checkpoint_interval = Duration::from_secs(a.checkpoint_interval_secs.max(1));
    cfg.wal_segment_bytes = a.wal_segment_mb.max(1) << 20;
    cfg.wal_preallocate = a.wal_preallocate;
    cfg.wal_recycle = a.wal_recycle_segments;
    cfg.wal_truncate_damaged_tail = a.wal_truncate_damaged_tail;
    cfg.partition_segment_bytes = a.partition_segment_mb.max(1) << 20;
    cfg.max_open_files = match fd_limit {
        Some(limit) => {
            let budget = baton_core::files::budget_for_fd_limit(a.max_open_files, limit);
            if budget < a.max_open_files {
                tracing::warn!(
                    max_open_files = a.max_open_files,
                    fd_limit = limit,
                    budget,
                    "--max-open-files lowered to fit the file descriptor limit"
                );
            }
            budget
        }
        None => a.max_open_files,
    };
    cfg.index_cache_bytes = a.index_cache_mb.max(1) << 20;
    if a.spare_partition_dirs > baton_core::provision::MAX_SPARE_DIRS {
        return Err(format!(
            "--spare-partition-dirs ({}) must be at most {}",
            a.spare_partition_dirs,
            baton_core::provision::MAX_SPARE_DIRS
        ));
    }
    cfg.spare_partition_dirs = a.spare_partition_dirs;
    cfg.compaction_max_keys = a.compaction_max_keys;
    cfg.limits = baton_core::limits::Limits {
        max_frame_bytes: a.max_frame_mb.saturating_mul(1 << 20),
        max_entry_bytes: a.max_entry_mb.saturating_mul(1 << 20),
        max_groups: a.max_groups,
        max_pop_bytes: a.max_pop_mb.saturating_mul(1 << 20),
        max_queues: a.max_queues,
        max_partitions: a.max_partitions,
        max_kv_bytes: a.max_kv_mb.saturating_mul(1 << 20),
        max_timer_bytes: a.max_timers_mb.saturating_mul(1 << 20),
        max_kafka_txn_ids: a.kafka_max_transactional_ids,
        max_aborted_txns: a.kafka_max_aborted_transactions,
        max_txn_partitions: a.kafka_max_transaction_partitions,
        max_http_txn_partitions: a.max_transaction_partitions,
        max_retry_distance: a.max_retry_distance,
        push_step: std::time::Duration::from_millis(a.push_step_ms),
    };
    cfg.limits.validate().map_err(|e| {
        format!(
            "--max-frame-mb/--max-entry-mb/--max-groups/--max-queues/--max-partitions/--max-kv-mb/--max-timers-mb/--push-step-ms: {e}"
        )
    })?;
    if a.kafka_max_frame_bytes > cfg.limits.max_entry_bytes {
        return Err(format!(
            "--kafka-max-frame-bytes ({}) must not exceed --max-entry-mb ({} bytes): one produce is one entry",
            a.kafka_max_frame_bytes, cfg.limits.max_entry_bytes
        ));
    }
    cfg.max_queued_requests = a.max_queued_requests.max(1);
    // Before the engine starts, so a bad file changes nothing on disk.
    let sasl_users = match &a.kafka_sasl_users {
        Some(path) => {
            let users = baton_kafka::SaslUsers::load(path).map_err(|e| format!("--kafka-sasl-users {e}"))?;
            tracing::info!(path = %path.display(), users = users.len(), "Kafka listener requires SASL/PLAIN");
            Some(Arc::new(users))
        }
        None => None,
    };
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string())?;
    let member = match (a.node_id, &a.peers) {
        (Some(id), Some(peers)) => Some(rt.block_on(start_member(&a, id, peers, cfg.clone()))?),
        _ => None,
    };
    let engine = match &member {
        Some(m) => m.engine.clone(),
        None => baton_core::Engine::start(cfg).map_err(|e| format!("start-up failed: {e}"))?,
    };
    let mut http = baton_http::HttpConfig {
        max_body_bytes: a.max_body_bytes,
        max_payload_bytes: a.max_payload_bytes,
        max_payload_depth: a.max_payload_depth,
        fetch_max_bytes: a.http_fetch_max_bytes.max(1),
        fetch_max_entries: a.http_fetch_max_entries.max(1),
        max_ack_error_bytes: a.max_ack_error_bytes,
        max_message_lookups: a.max_message_lookups as usize,
        trace_retention_secs: a.trace_retention_secs,
        ephemeral_max_queues: a.ephemeral_max_queues as usize,
        ephemeral_max_bytes: a.ephemeral_max_mb << 20,
        conn: baton_http::ConnConfig {
            idle_timeout: Duration::from_secs(a.http_idle_timeout_secs.max(1)),
            max_connections: a.http_max_connections.max(1),
            linger: Duration::from_secs(a.http_linger_secs),
            linger_bytes: a.http_linger_bytes,
        },
        default_batch: a.default_batch.max(1),
        ..Default::default()
    };
    let mut topology = None;
    let mut raft_metrics = None;
    if let Some(m) = &member {
        use baton_cluster::member::Member;
        let (node, engine) = (m.node.clone(), m.engine.clone());
        http.cluster = Some(baton_http::ClusterView(Arc::new(move || Member::view(&node, &engine))));
        let node = m.node.clone();
        http.forward = Some(baton_http::Forward {
            me: m.id,
            leader: Arc::new(move || Member::leader_addr(&node, "http")),
            connect_timeout: Duration::from_secs(1),
            answer_timeout: Duration::from_millis(
                http.max_wait_ms.max(a.raft_join_timeout_secs.saturating_mul(3000)) + a.raft_commit_timeout_ms,
            ) + Duration::from_secs(5),
        });
        let (node, log, changes) = (m.node.clone(), m.log.clone(), m.changes.clone());
        let within = Duration::from_secs(a.raft_join_timeout_secs);
        http.membership = Some(baton_http::MembershipAdmin(Arc::new(move |op| {
            let (node, log, changes) = (node.clone(), log.clone(), changes.clone());
            Box::pin(async move { change_membership(&node, &log, &changes, op, within).await })
        })));
        let node = m.node.clone();
        let (asks, creates) = (m.node.clone(), m.node.clone());
        let me = m.id;
        topology = Some((
            baton_kafka::ClusterTopology(Arc::new(move || kafka_topology(&node))),
            baton_kafka::LeaderAsk {
                producer_id: Arc::new(move || Box::pin(leader_producer_id(me, Member::leader_addr(&asks, "http")))),
                create_topic: Arc::new(move |name, partitions| {
                    Box::pin(leader_create_topic(me, Member::leader_addr(&creates, "http"), name, partitions))
                }),
            },
        ));
        let (node, engine) = (m.node.clone(), m.engine.clone());
        raft_metrics = Some(move |out: &mut String| Member::render_metrics(&node, &engine, out));
    }
    let eng = engine.clone();
    let kafka_engine = engine.clone();
    let leaving = member.as_ref().map(|m| m.leaving()).filter(|_| a.raft_handover_ms > 0);
    let handover = Duration::from_millis(a.raft_handover_ms);
    // HTTP and Kafka go on serving while the leader hands over: once another member leads,
    // what arrives here is forwarded to it.
    let stop = async move {
        shutdown_signal().await;
        if let Some(l) = leaving {
            let t0 = std::time::Instant::now();
            match l.run(handover).await {
                Ok(to) => tracing::info!(to, ms = t0.elapsed().as_millis() as u64, "leadership handed over"),
                Err(e) => tracing::info!(reason = %e, "no hand-over of leadership"),
            }
        }
    };
    rt.block_on(async move {
        let kafka = start_kafka(&a, kafka_engine, sasl_users, topology).await?;
        let kafka_stats = kafka.as_ref().map(|(_, stats)| stats.clone());
        if kafka_stats.is_some() || raft_metrics.is_some() {
            http.extra_metrics = Some(baton_http::ExtraMetrics(Arc::new(move |out| {
                if let Some(s) = &kafka_stats {
                    s.render(out);
                }
                if let Some(r) = &raft_metrics {
                    r(out);
                }
            })));
        }
        let listener =
            tokio::net::TcpListener::bind(a.http_addr).await.map_err(|e| format!("bind {}: {e}", a.http_addr))?;
        tracing::info!(addr = %a.http_addr, data = %a.data_dir.display(), "baton serving HTTP");
        // Open long polls answer 204 at the stop signal instead of holding shutdown for their timeout.
        baton_http::serve(listener, eng, http, baton_http::Shutdown::default(), stop).await;
        let res: Result<(), String> = Ok(());
        // Stop taking Kafka connections; requests in flight finish or fail
        // with the engine, as HTTP's do.
        if let Some((k, _)) = kafka {
            k.abort();
        }
        res
    })?;
    // Answers already planned finish with the group commit in flight; then checkpoint.
    tracing::info!("shutting down: finishing the group commit in flight and checkpointing");
    match member {
        Some(m) => rt.block_on(m.shutdown()),
        None => engine.shutdown(),
    }
    rt.shutdown_timeout(Duration::from_secs(5));
    Ok(())
}

/// A membership change asked for over HTTP, made by the cluster crate (D44), its refusal
/// as the HTTP answer.
async fn change_membership(
    node: &baton_replicate::node::Node<baton_cluster::applier::EngineApplier>,
    log: &baton_cluster::raft_log::RaftLog,
    changes: &baton_cluster::membership::Changes,
    op: baton_http::MembershipOp,
    within: Duration,
) -> baton_http::MembershipAnswer {
    use baton_cluster::membership::{self as ms, Refused};
    let r = match op {
        baton_http::MembershipOp::Add { id, raft_addr } => ms::add(node, log, changes, id, &raft_addr, within).await,
        baton_http::MembershipOp::Remove { id } => ms::remove(node, log, changes, id, within).await,
    };
    r.map_err(|e| match e {
        Refused::Bad(code, m) => (400, code, m),
        Refused::NotLeader(m) => (503, "not_leader", m),
        Refused::Conflict(code, m) => (409, code, m),
        Refused::NotFound(m) => (404, "member_not_found", m),
        Refused::Timeout(code, m) => (504, code, m),
        Refused::Unknown(m) => (503, "outcome_unknown", m),
    })
}

/// `ID=HOST:PORT,...` into ids and addresses; every id once.
fn parse_addrs(flag: &str, list: &str) -> Result<std::collections::BTreeMap<u64, String>, String> {
    let mut out = std::collections::BTreeMap::new();
    for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (id, addr) = part.split_once('=').ok_or_else(|| format!("{flag} {part}: expected ID=HOST:PORT"))?;
        let id: u64 = id.trim().parse().map_err(|_| format!("{flag} {part}: {id} is not a node id"))?;
        addr.trim().parse::<SocketAddr>().map_err(|e| format!("{flag} {part}: {addr}: {e}"))?;
        if out.insert(id, addr.trim().to_string()).is_some() {
            return Err(format!("{flag} names node {id} twice"));
        }
    }
    Ok(out)
}

/// `ID=HOST:PORT,...` into ids and Raft addresses; every id once, this node's among them.
pub fn parse_peers(peers: &str, me: u64) -> Result<std::collections::BTreeMap<u64, String>, String> {
    let out = parse_addrs("--peers", peers)?;
    if !out.contains_key(&me) {
        return Err(format!("--peers does not name this node (--node-id {me})"));
    }
    Ok(out)
}

async fn start_member(
    a: &ServeArgs,
    id: u64,
    peers: &str,
    cfg: baton_core::EngineConfig,
) -> Result<baton_cluster::member::Member, String> {
    let peers = parse_peers(peers, id)?;
    let listen: SocketAddr = peers[&id].parse().map_err(|e| format!("--peers: {e}"))?;
    let mut node = baton_replicate::node::NodeConfig::new(id, a.data_dir.join("raft"), listen);
    node.heartbeat = Duration::from_millis(a.raft_heartbeat_ms.max(1));
    node.election = (Duration::from_millis(a.raft_election_min_ms), Duration::from_millis(a.raft_election_max_ms));
    // A member's snapshot is its engine's checkpoint, asked for after each one (D43).
    node.snapshot_every = None;
    node.keep_behind_snapshot = a.raft_keep_entries;
    if let Some(r) = &a.raft_routes {
        node.routes = parse_addrs("--raft-routes", r)?;
    }
    let (_, kafka_host, kafka_port) = kafka_addrs(a)?;
    if kafka_port == 0 {
        return Err("a cluster member's Kafka port must be fixed (--kafka-addr or --kafka-advertised-addr): the other members name it".into());
    }
    let http = a.http_advertised_addr.clone().unwrap_or_else(|| a.http_addr.to_string());
    node.about = [("http".to_string(), http), ("kafka".to_string(), format!("{kafka_host}:{kafka_port}"))].into();
    node.log.wal.segment_bytes = cfg.wal_segment_bytes;
    node.log.wal.preallocate = cfg.wal_preallocate;
    node.stands = a.raft_stand_for_election;
    baton_core::clock::follow_beyond(a.clock_follow_ms);
    node.clock = Some(baton_replicate::network::Timekeeper {
        now: baton_core::clock::now,
        heard: baton_core::clock::heard_leader,
        save: baton_core::clock::save,
    });
    tracing::info!(node = id, raft = %listen, members = peers.len(), "starting as a cluster member");
    let commit_timeout = Duration::from_millis(a.raft_commit_timeout_ms.max(1));
    let member = baton_cluster::member::Member::start(cfg, node, peers, commit_timeout)
        .await
        .map_err(|e| format!("start-up failed: {e}"))?;
    if !a.raft_stand_for_election {
        tracing::info!("this member never stands for election (--raft-stand-for-election false)");
    }
    Ok(member)
}

type KafkaHandle = (tokio::task::JoinHandle<()>, std::sync::Arc<baton_kafka::KafkaStats>);

/// Bind and spawn the Kafka listener on this runtime, on the same engine.
/// Returns the accept loop's task and the listener's counters (for /metrics).
/// The Kafka listener's address, and the host and port it advertises.
fn kafka_addrs(a: &ServeArgs) -> Result<(SocketAddr, String, u16), String> {
    let addr = a.kafka_addr.unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 9092)));
    let (host, port) = match &a.kafka_advertised_addr {
        Some(adv) => {
            let (h, p) =
                adv.rsplit_once(':').ok_or_else(|| format!("--kafka-advertised-addr {adv}: expected host:port"))?;
            let p: u16 = p.parse().map_err(|_| format!("--kafka-advertised-addr {adv}: bad port"))?;
            (h.trim_start_matches('[').trim_end_matches(']').to_string(), p)
        }
        // Port 0 means "the port the listener gets", filled in after binding.
        None => (addr.ip().to_string(), addr.port()),
    };
    Ok((addr, host, port))
}

/// What a member that does not lead asks its leader for, over the leader's HTTP listener
/// (D42): `path` posted with `body`, marked as forwarded so that a member that does not
/// lead either answers `not_leader` instead of passing it on.
async fn ask_leader(
    me: u64,
    leader: Option<(u64, String)>,
    path: &str,
    body: serde_json::Value,
) -> Result<serde_json::Value, String> {
    let (_, addr) = leader.ok_or("no leader is known")?;
    let c = reqwest::Client::builder().timeout(Duration::from_secs(5)).build().map_err(|e| e.to_string())?;
    let r = c
        .post(format!("http://{addr}{path}"))
        .header("x-baton-forwarded-by", me.to_string())
        .json(&body)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let status = r.status();
    let v: serde_json::Value = r.json().await.map_err(|e| e.to_string())?;
    if !status.is_success() {
        return Err(format!("the leader answered {status}: {v}"));
    }
    Ok(v)
}

/// A new Kafka producer id, from the leader (the answer to InitProducerId on a follower).
async fn leader_producer_id(me: u64, leader: Option<(u64, String)>) -> Result<i64, String> {
    let v = ask_leader(me, leader, "/api/v1/kafka/producer-id", serde_json::json!({})).await?;
    v["producerId"].as_i64().ok_or_else(|| format!("the leader answered {v}"))
}

/// The leader creates Kafka topic `name` (a follower was asked about it).
async fn leader_create_topic(
    me: u64,
    leader: Option<(u64, String)>,
    name: String,
    partitions: u32,
) -> Result<(), String> {
    let path = format!("/api/v1/kafka/topics/{name}");
    ask_leader(me, leader, &path, serde_json::json!({"partitions": partitions})).await.map(|_| ())
}

/// The Kafka view of the cluster (D42): members are brokers by node id, at the Kafka
/// addresses they told.
fn kafka_topology(node: &baton_replicate::node::Node<baton_cluster::applier::EngineApplier>) -> baton_kafka::Topology {
    let (me, leader, all) = baton_cluster::member::Member::addresses(node, "kafka");
    let brokers = all
        .into_iter()
        .filter_map(|(id, addr)| {
            let (h, p) = addr.rsplit_once(':')?;
            Some((
                i32::try_from(id).ok()?,
                h.trim_start_matches('[').trim_end_matches(']').to_string(),
                p.parse().ok()?,
            ))
        })
        .collect();
    let id = |n: u64| i32::try_from(n).unwrap_or(-1);
    let voters = baton_cluster::member::Member::voter_count(node);
    baton_kafka::Topology { me: id(me), leader: leader.map(id), brokers, voters }
}

async fn start_kafka(
    a: &ServeArgs,
    engine: baton_core::Engine,
    sasl_users: Option<Arc<baton_kafka::SaslUsers>>,
    cluster: Option<(baton_kafka::ClusterTopology, baton_kafka::LeaderAsk)>,
) -> Result<Option<KafkaHandle>, String> {
    let explicit = a.kafka_addr.is_some();
    if a.kafka_max_uncompressed_batch_bytes > baton_kafka::MAX_UNCOMPRESSED_BATCH_BYTES {
        return Err(format!(
            "--kafka-max-uncompressed-batch-bytes {} is past {}, the most a stored batch may be read back at",
            a.kafka_max_uncompressed_batch_bytes,
            baton_kafka::MAX_UNCOMPRESSED_BATCH_BYTES
        ));
    }
    let (addr, host, port) = kafka_addrs(a)?;
    let cfg = baton_kafka::KafkaConfig {
        advertised_host: host,
        advertised_port: port as i32,
        auto_create: a.kafka_auto_create,
        default_partitions: a.kafka_default_partitions.max(1),
        max_frame_bytes: a.kafka_max_frame_bytes,
        max_message_bytes: a.kafka_max_message_bytes,
        max_uncompressed_batch_bytes: a.kafka_max_uncompressed_batch_bytes,
        fetch_max_bytes: a.kafka_fetch_max_bytes.max(1),
        producer_id_expiration: Duration::from_millis(a.kafka_producer_id_expiration_ms),
        connections_max_idle: Duration::from_millis(a.kafka_connections_max_idle_ms.max(1)),
        max_connections: a.kafka_max_connections,
        group_limits: baton_kafka::GroupLimits { max_groups: a.kafka_max_groups, max_members: a.kafka_group_max_size },
        // Leases are whole seconds: the lock is rounded up to one.
        share_record_lock: Duration::from_secs(a.kafka_share_record_lock_ms.div_ceil(1000).max(1)),
        share_limits: baton_kafka::ShareLimits {
            max_groups: a.kafka_max_groups,
            max_members: a.kafka_group_max_size,
            max_sessions: a.kafka_max_share_sessions,
            ..Default::default()
        },
        initial_rebalance_delay: Duration::from_millis(a.kafka_initial_rebalance_delay_ms),
        sasl_users,
        leader_ask: cluster.as_ref().map(|c| c.1.clone()),
        cluster: cluster.map(|c| c.0),
        ..Default::default()
    };
    let server = match baton_kafka::KafkaServer::bind(addr, engine, cfg).await {
        Ok(s) => s,
        Err(e) if !explicit => {
            tracing::warn!(%addr, error = %e, "Kafka listener not started (default address busy); pass --kafka-addr");
            return Ok(None);
        }
        Err(e) => return Err(format!("bind Kafka listener {addr}: {e}")),
    };
    let bound = server.local_addr().map_err(|e| e.to_string())?;
    tracing::info!(addr = %bound, advertised = %server.advertised(), "baton serving Kafka");
    let stats = server.stats();
    Ok(Some((tokio::spawn(server.run()), stats)))
}

async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("install SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("install SIGINT handler");
    tokio::select! {
        _ = term.recv() => {},
        _ = int.recv() => {},
    }
}
