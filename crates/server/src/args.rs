//! `baton serve`'s flags: every setting a node starts with, its `BATON_*`
//! variable and its default. Checked and wired by `crate::serve`.

use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;

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
    /// MiB of client requests being read or handled at once, both doors together (D87): a
    /// Kafka frame holds its length from the moment its length prefix is read, an HTTP
    /// request its body's length (`--max-body-bytes` when chunked), until answered. Past it
    /// a connection is read no further until memory is given back. Must hold the largest
    /// Kafka frame and HTTP body.
    #[arg(long, env = "BATON_MAX_REQUEST_MEMORY_MB", default_value_t = baton_core::request_memory::DEFAULT_MAX_REQUEST_MEMORY_MB,
          value_parser = clap::value_parser!(u64).range(1..=1 << 30))]
    pub max_request_memory_mb: u64,
    /// Seconds a request's bytes have to arrive whole once they have begun (D87): a Kafka
    /// frame once its length prefix is read (else the connection closes), an HTTP body once
    /// its head is read (else 408 `request_timeout`). Bounds how long a slow or hostile
    /// client holds request memory.
    #[arg(long, env = "BATON_REQUEST_READ_TIMEOUT_SECS", default_value_t = baton_core::request_memory::DEFAULT_REQUEST_READ_TIMEOUT_SECS,
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub request_read_timeout_secs: u64,
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
