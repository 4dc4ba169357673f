//! The shapes of Baton's HTTP requests and answers (docs/api.md), as the
//! typed client sends and reads them.
//!
//! Owns only data: no I/O. Answers read with `#[serde(default)]` wherever the
//! server may leave a field out, so that a field added to an answer never
//! breaks an older client; must never reject an answer for a field it does
//! not know.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Queue mode's consumer group name as the server shows it.
pub const QUEUE_MODE: &str = "__QUEUE_MODE__";

/// One item of a push (or of a transaction's push operation).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PushItem {
    pub queue: String,
    /// `None`: the server's `Default` partition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// `None`: the server mints one (UUIDv7) and does no dedup.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transaction_id: Option<String>,
    pub payload: Value,
}

impl PushItem {
    pub fn new(queue: &str, partition: &str, transaction_id: &str, payload: Value) -> PushItem {
        PushItem {
            queue: queue.into(),
            partition: Some(partition.into()),
            transaction_id: Some(transaction_id.into()),
            payload,
        }
    }
}

/// One item's answer of a push: `queued`, `duplicate` or `failed` (with `error` and `code`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PushResult {
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transaction_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// What a pop asks for, beyond its queue.
#[derive(Debug, Clone, Default)]
pub struct PopOptions {
    /// Pop this partition only (else the server picks one).
    pub partition: Option<String>,
    /// Most messages (server default 100 when `None`).
    pub batch: Option<u32>,
    /// `Some(ms)`: long-poll up to that long (the server caps it at 60 s).
    pub wait_ms: Option<u64>,
    /// A consumer group (`None`: queue mode).
    pub group: Option<String>,
    /// Settle at delivery, no lease.
    pub auto_ack: bool,
    pub lease_seconds: Option<u64>,
    /// `all` or `new` (first pop of a group only).
    pub subscription_mode: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoppedMessage {
    pub transaction_id: String,
    #[serde(default)]
    pub data: Value,
    pub offset: u64,
    pub partition_id: String,
    #[serde(default)]
    pub partition: Option<String>,
    #[serde(default)]
    pub queue: Option<String>,
    #[serde(default)]
    pub lease_id: Option<String>,
    #[serde(default)]
    pub consumer_group: Option<String>,
    #[serde(default)]
    pub delivery_attempt: u32,
    #[serde(default)]
    pub retry_count: u32,
    #[serde(default)]
    pub created_at: Option<String>,
}

/// A pop's `200` answer: one partition's messages under one lease.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Popped {
    #[serde(default)]
    pub queue: Option<String>,
    pub partition: String,
    pub partition_id: String,
    #[serde(default)]
    pub lease_id: Option<String>,
    #[serde(default)]
    pub lease_expires_at: Option<String>,
    #[serde(default)]
    pub consumer_group: Option<String>,
    #[serde(default)]
    pub messages: Vec<PoppedMessage>,
}

/// An ack by transactionId (under a lease in queue mode).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ack {
    pub transaction_id: String,
    pub partition_id: String,
    pub lease_id: Option<String>,
    /// `completed`, `failed`, `retry` or `dlq`.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumer_group: Option<String>,
}

impl Ack {
    /// `completed` for a popped message, under `lease` (else the message's own).
    pub fn completed(m: &PoppedMessage, lease: Option<&str>) -> Ack {
        Ack {
            transaction_id: m.transaction_id.clone(),
            partition_id: m.partition_id.clone(),
            lease_id: lease.map(str::to_string).or_else(|| m.lease_id.clone()),
            status: "completed".into(),
            error: None,
            consumer_group: None,
        }
    }
}

/// One ack's answer: a refusal (`lease_not_live`, ...) is `success: false` with HTTP 200.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AckResult {
    #[serde(default)]
    pub index: usize,
    #[serde(default)]
    pub transaction_id: Option<String>,
    pub success: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// `POST /api/v1/lease/{id}/extend`'s answer.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Extended {
    #[serde(default)]
    pub lease_id: Option<String>,
    pub success: bool,
    #[serde(default)]
    pub new_expires_at: Option<String>,
}

/// What `POST /api/v1/transaction` said.
#[derive(Debug, Clone)]
pub enum TxnOutcome {
    /// 200 `success: true`: durable and applied.
    Committed { results: Vec<Value> },
    /// 200 `success: false`: rolled back, nothing changed.
    RolledBack { reason: String, failed_index: Option<usize>, error: String },
    /// 5xx, transport error or timeout: it may or may not have committed.
    Unknown(String),
    /// 4xx: refused before the engine saw it, nothing changed.
    Refused { code: u16, body: String },
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FetchEntry {
    pub queue: String,
    pub partition: String,
    pub offset: u64,
    pub max_bytes: u64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FetchedRecord {
    pub offset: u64,
    #[serde(default)]
    pub transaction_id: Option<String>,
    #[serde(default)]
    pub payload: Value,
    #[serde(default)]
    pub ts: Option<Value>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fetched {
    #[serde(default)]
    pub records: Vec<FetchedRecord>,
    #[serde(default)]
    pub high_watermark: u64,
    #[serde(default)]
    pub log_start_offset: u64,
    #[serde(default)]
    pub error: Option<String>,
}

/// A DLQ view's query (`None`s are left out).
#[derive(Debug, Clone, Default)]
pub struct DlqQuery {
    pub queue: Option<String>,
    pub consumer_group: Option<String>,
    pub partition: Option<String>,
    pub limit: Option<u64>,
    pub offset: Option<u64>,
}
