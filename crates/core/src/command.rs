//! The typed requests the front doors hand the planner, and its answers.
//! Front doors parse and validate shape (JSON, Kafka frames) and build these;
//! the planner never sees JSON.

use crate::model::{AckStatus, LeaseId, Micros, PartId, QueueOptions};
use crate::store::ReadSpan;
use bytes::Bytes;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    BadRequest,
    NotFound,
    Conflict,
    TooLarge,
    Unavailable,
    /// A named bound on how many of something may exist or wait was hit (429).
    Overloaded,
}

/// An error with a stable machine code (`{error, code}` over HTTP).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoreError {
    pub kind: ErrorKind,
    pub code: &'static str,
    pub message: String,
}

impl CoreError {
    pub fn new(kind: ErrorKind, code: &'static str, message: impl Into<String>) -> Self {
        CoreError { kind, code, message: message.into() }
    }
    pub fn bad(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::BadRequest, code, message)
    }
    pub fn not_found(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, code, message)
    }
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unavailable, "unavailable", message)
    }

    /// The request was planned and handed to the log, and then the log failed, timed out or
    /// lost its term: it may or may not be carried out (on a single node it may be in the WAL
    /// a restart replays; on a cluster it may yet commit). Never "ok", never a silent drop.
    pub fn outcome_unknown(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unavailable, "outcome_unknown", message)
    }
}

impl std::fmt::Display for CoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

/// Records for one (queue, partition), already encoded as a batch with base offset 0.
#[derive(Debug, Clone)]
pub struct PushGroup {
    pub queue: String,
    pub partition: String,
    /// Index of each record in the caller's request, for the per-item answer.
    pub indexes: Vec<usize>,
    pub records: Vec<PushRecord>,
    pub batch: Vec<u8>,
}

#[derive(Debug, Clone)]
pub struct PushRecord {
    pub txid: String,
    /// Only transaction ids the producer chose are deduplicated; minted ones cannot collide.
    pub client_txid: bool,
    pub value: Bytes,
    /// The `traceId` the pushed item named, stored with the record (issue 16).
    pub trace: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushStatus {
    Queued { part: PartId, offset: u64 },
    Duplicate { part: PartId },
    Failed(CoreError),
}

#[derive(Debug, Clone)]
pub struct PushResult {
    pub index: usize,
    pub txid: String,
    /// Shared by every result of the group: a copy per message was an allocation made on
    /// the planner and freed on another thread.
    pub queue: std::sync::Arc<str>,
    pub status: PushStatus,
}

#[derive(Debug, Clone)]
pub struct PopRequest {
    pub queue: String,
    pub partition: Option<String>,
    pub group: Option<String>,
    pub batch: u32,
    pub lease_secs: Option<u64>,
    /// For a group seen for the first time: start at the first message written at or after this time.
    pub from_ts: Option<Micros>,
    pub auto_ack: bool,
    /// Conflation (D61): the lease's entry also settles all but the newest leased message,
    /// and only the newest is answered (and read).
    pub conflate: bool,
}

#[derive(Debug, Clone)]
pub struct PopResult {
    pub queue: String,
    pub part: PartId,
    pub partition: String,
    pub group: String,
    pub lease: Option<LeaseId>,
    pub lease_expires: Micros,
    /// (offset, delivery attempt starting at 1)
    pub messages: Vec<(u64, u32)>,
    pub spans: Vec<ReadSpan>,
}

/// One ack: names the message by partition and transaction id (Queen) or offset.
#[derive(Debug, Clone)]
pub struct AckItem {
    pub part: PartId,
    pub txid: Option<String>,
    pub offset: Option<u64>,
    pub lease: Option<LeaseId>,
    pub status: AckStatus,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigureMode {
    Merge,
    Replace,
}

#[derive(Debug, Clone)]
pub struct FetchRequest {
    pub queue: String,
    pub partition: String,
    pub offset: u64,
    pub max_bytes: u64,
    /// Kafka's read_committed: stop at the last stable offset and list the aborted
    /// transactions the read covers (D48).
    pub committed: bool,
}

#[derive(Debug, Clone)]
pub struct FetchResult {
    pub queue: String,
    pub partition: String,
    pub high_watermark: u64,
    pub log_start: u64,
    pub spans: Vec<ReadSpan>,
    pub from_offset: u64,
    pub error: Option<CoreError>,
    /// The last stable offset (durable): every record below it is committed or aborted.
    pub last_stable: u64,
    /// For a committed read: (producer id, first offset) of each aborted transaction it covers.
    pub aborted: Vec<(i64, u64)>,
    /// For a committed read: the `[start, end)` spans it covers that hold control records or
    /// aborted transactions' records, for a reader that filters by offset (HTTP fetch).
    pub hidden: Vec<(u64, u64)>,
}

impl FetchResult {
    /// Whether an HTTP reader must not be shown the record at `o`: it lies in one of the
    /// sorted, disjoint [`FetchResult::hidden`] spans (a control record or an aborted one).
    pub fn hides(&self, o: u64) -> bool {
        let i = self.hidden.partition_point(|(s, _)| *s <= o);
        i > 0 && o < self.hidden[i - 1].1
    }
}

/// Read-only views for the resources API.
#[derive(Debug, Clone)]
pub enum Query {
    /// How many queues, partitions and consumer groups exist, and the bytes of KV entries and
    /// timers held (the bounded counts).
    Sizes,
    /// Every queue (or the one named) without its partitions' views, in name order: a step
    /// in the number of queues. Partition views come apart ([`Query::PartViews`]) in steps
    /// of at most [`crate::query::VIEW_CHUNK`]: listing a queue of a million partitions
    /// never holds the planner for the whole list. [`crate::Engine::queue_views`] puts them
    /// together; it is the one way to a [`QueueView`].
    QueueHeads(Option<String>),
    /// The views of these partitions, each with its depth as `group` sees it (`None`: queue
    /// mode's); at most [`crate::query::VIEW_CHUNK`] are answered.
    PartViews {
        ids: Vec<PartId>,
        group: Option<String>,
    },
    Groups,
    Dlq {
        queue: Option<String>,
        limit: usize,
    },
    /// Kafka ListOffsets by time: first offset written at or after `ts_ms` (None if none).
    OffsetForTime {
        topic: String,
        partition: String,
        ts_ms: i64,
    },
    /// A group's next offset per partition of a topic (Kafka OffsetFetch).
    GroupOffsets {
        group: String,
        topic: String,
    },
    /// One timer, or a page of a queue's timers after a key.
    Timers {
        queue: String,
        key: Option<String>,
        after: Option<String>,
        limit: usize,
    },
    /// What to read to find a message by transaction id (the newest with that id), off the
    /// planner: the newest [`crate::query::MESSAGE_SCAN`] messages of the partition.
    MessageScan {
        part: PartId,
        txid: String,
    },
    /// The message at `offset`, which a [`Query::MessageScan`] found for `txid`.
    Message {
        part: PartId,
        txid: String,
        offset: u64,
    },
    /// Kafka transactional ids: the named ones, or every one (D48).
    KafkaTxns(Option<Vec<String>>),
    /// The partitions of `queue` written at or after `since`, in creation order, after the
    /// partition `after`, at most `limit` (Queen's `changed_since`).
    ChangedPartitions {
        queue: String,
        since: Option<Micros>,
        after: Option<PartId>,
        limit: usize,
    },
    /// A Kafka topic's configs as set (None: no such topic).
    TopicConfigs(String),
    /// The partition of a lease and the offsets of its messages not yet settled, up to and
    /// including the one with `txid` (a streams cycle acks a batch by its last message).
    /// None: no such lease, or that message is not in it.
    LeasePrefix {
        lease: LeaseId,
        txid: String,
    },
}

/// One page of [`Query::ChangedPartitions`].
#[derive(Debug, Clone)]
pub struct ChangedPage {
    pub parts: Vec<ChangedPart>,
    /// Where the next page starts, when this one was cut at its limit or at the scan bound
    /// ([`crate::query::CHANGED_SCAN`] partitions examined: a page may then be short or empty).
    pub next: Option<PartId>,
    /// Every entry at or before this time is counted in the page: the next `since`.
    pub safe_time: Micros,
}

#[derive(Debug, Clone)]
pub struct ChangedPart {
    pub id: PartId,
    pub name: String,
    pub start: u64,
    pub durable_end: u64,
    pub last_write: Micros,
}

/// One Kafka transactional id as DescribeTransactions and ListTransactions show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnView {
    pub tid: String,
    pub producer: i64,
    pub epoch: i16,
    pub timeout_ms: i32,
    /// Kafka's names: Ongoing, Empty, CompleteCommit, CompleteAbort.
    pub state: &'static str,
    /// When the open transaction began (ms), or -1.
    pub start_ms: i64,
    /// (topic, partition) of the open transaction.
    pub parts: Vec<(String, String)>,
}

#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PartitionView {
    #[serde(skip)]
    pub part: PartId,
    pub id: String,
    pub name: String,
    pub start: u64,
    pub end: u64,
    /// Offsets below are durable: what Kafka calls the high watermark.
    pub durable_end: u64,
    /// Kafka's last stable offset (D48): below it, no transaction is open.
    #[serde(skip)]
    pub stable_end: u64,
    pub depth: u64,
    pub leased: bool,
}

#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueView {
    pub name: String,
    pub options: QueueOptions,
    pub partitions: Vec<PartitionView>,
    pub depth: u64,
    pub total: u64,
    pub dead_letters: u64,
    pub created_at: Micros,
}

/// A queue without its partitions' views ([`Query::QueueHeads`]).
#[derive(Debug, Clone)]
pub struct QueueHead {
    pub name: String,
    pub options: QueueOptions,
    pub parts: Vec<PartId>,
    pub dead_letters: u64,
    pub created_at: Micros,
}

#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupView {
    pub name: String,
    pub queue: String,
    pub partition: String,
    pub offset: u64,
    pub end: u64,
    pub lag: u64,
    pub leased: bool,
}

/// One consumer group's state of one message (Queen's `get_message` `consumerGroups`).
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageGroup {
    pub name: String,
    /// Settled for the group (acked, dead-lettered, or passed).
    pub consumed: bool,
    /// Held by a live lease of the group, until `lease_expires` (µs).
    pub leased: bool,
    #[serde(skip)]
    pub lease_expires: Option<Micros>,
    /// Failures charged to it so far.
    pub retry_count: u32,
}

#[derive(Debug, Clone)]
pub struct DlqView {
    pub queue: String,
    pub partition: String,
    pub part: PartId,
    pub offset: u64,
    pub group: String,
    pub error: Option<String>,
    pub ts: Micros,
    pub span: Option<ReadSpan>,
}

#[derive(Debug, Clone)]
pub enum QueryResult {
    Sizes {
        queues: usize,
        partitions: usize,
        groups: usize,
        kv_bytes: u64,
        timer_bytes: u64,
        /// Kafka transactional ids, those with a transaction open, and the most aborted
        /// transactions any one partition remembers (D48).
        kafka_txn_ids: usize,
        kafka_txns_open: usize,
        kafka_aborted_max: usize,
    },
    QueueHeads(Vec<QueueHead>),
    PartViews(Vec<PartitionView>),
    Groups(Vec<GroupView>),
    Dlq(Vec<DlqView>),
    /// (queue, partition, where its bytes are, each group's progress on it).
    Message(Option<(String, String, Option<ReadSpan>, Vec<MessageGroup>)>),
    /// None for an unknown queue.
    Changed(Option<ChangedPage>),
    /// The search and the hash it looks for; None for an unknown partition.
    MessageScan(Option<(crate::store::TxidScan, u64)>),
    Offset(Result<Option<u64>, CoreError>),
    GroupOffsets(Vec<(String, u64)>),
    /// Known ids only; an id asked for that does not exist is left out.
    KafkaTxns(Vec<TxnView>),
    TopicConfigs(Option<std::collections::BTreeMap<String, String>>),
    LeasePrefix(Option<(PartId, Vec<u64>)>),
    /// (key, fire time, payload JSON, partition, txn)
    Timers(Vec<(String, Micros, String, String, String)>),
}
