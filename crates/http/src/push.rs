//! `POST /api/v1/push`: many items, one entry per request, a status per item.
//! Items are grouped per (queue, partition) and encoded as RecordBatch v2 here,
//! on the connection task, so the planner only patches an offset.

use crate::body::{parse, RawBody};
use crate::error::ApiError;
use crate::{App, HttpConfig};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use baton_core::{message_uuid, partition_uuid, PushGroup, PushRecord, PushStatus, DEFAULT_PARTITION};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::HashMap;

pub const MAX_ITEMS: usize = 100_000;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushBody<'a> {
    #[serde(borrow)]
    items: Vec<PushItem<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
/// Strings borrow from the request body (they own only when JSON escapes
/// force it): at 100 items a request, per-item allocations dominated.
pub struct PushItem<'a> {
    #[serde(borrow)]
    queue: Cow<'a, str>,
    #[serde(default, borrow)]
    partition: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    transaction_id: Option<Cow<'a, str>>,
    /// Queen's tracing id, kept with the record and shown by pops.
    #[serde(default, borrow)]
    trace_id: Option<Cow<'a, str>>,
    /// The payload's JSON text, the one field every source fills: `payload` (or its alias
    /// `data`, never both: serde refuses a duplicate) of a JSON body, not parsed here
    /// (`build_groups` checks it once), or a binary body's item. `"payload": null` is a
    /// message whose payload is JSON null (Queen sends it for `{"data": None}`); only a
    /// missing payload is an error.
    #[serde(default, borrow, alias = "data", deserialize_with = "present")]
    payload: Option<&'a str>,
}

impl<'a> PushItem<'a> {
    /// One item of a binary push body (crate::push_binary): no trace id travels there.
    pub(crate) fn binary(queue: &'a str, partition: &'a str, txid: Option<&'a str>, payload: &'a str) -> Self {
        PushItem {
            queue: Cow::Borrowed(queue),
            partition: Some(Cow::Borrowed(partition)),
            transaction_id: txid.map(Cow::Borrowed),
            trace_id: None,
            payload: Some(payload),
        }
    }

    #[cfg(test)]
    pub(crate) fn parts(&self) -> (String, String, Option<String>, String) {
        (
            self.queue.to_string(),
            self.partition.as_deref().unwrap_or_default().to_string(),
            self.transaction_id.as_deref().map(str::to_string),
            self.payload.map(str::to_string).unwrap_or_default(),
        )
    }
}

/// A field that is present, null included (plain `Option` would read null as absent), as
/// its JSON text.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de str>, D::Error> {
    <&'de RawValue>::deserialize(d).map(|v| Some(v.get()))
}

pub async fn push(State(app): State<App>, RawBody(raw): RawBody) -> Result<Response, ApiError> {
    if raw.starts_with(crate::push_binary::PUSH_MAGIC) {
        return push_binary(app, &raw).await;
    }
    let groups = push_request(&raw, &app.cfg)?;
    let results = app.engine.push(groups).await?;
    let out: Vec<PushAnswer> = results.iter().map(PushAnswer::from).collect();
    Ok((StatusCode::CREATED, Json(out)).into_response())
}

/// A binary push body (crate::push_binary): the same items, the same path, the same
/// answer, or only its counts when the body asks for them.
async fn push_binary(app: App, raw: &[u8]) -> Result<Response, ApiError> {
    let inflated = crate::push_binary::inflate(raw, app.cfg.max_body_bytes, MAX_ITEMS)?;
    let decoded = crate::push_binary::items(raw, &inflated, MAX_ITEMS)?;
    let counts = decoded.counts;
    let groups = build_groups(&app.cfg, decoded.items)?;
    let results = app.engine.push(groups).await?;
    if counts {
        let n = |f: fn(&PushStatus) -> bool| results.iter().filter(|r| f(&r.status)).count();
        let body = serde_json::json!({
            "count": results.len(),
            "queued": n(|s| matches!(s, PushStatus::Queued { .. })),
            "duplicate": n(|s| matches!(s, PushStatus::Duplicate { .. })),
            "error": n(|s| matches!(s, PushStatus::Failed(_))),
        });
        return Ok((StatusCode::CREATED, Json(body)).into_response());
    }
    let out: Vec<PushAnswer> = results.iter().map(PushAnswer::from).collect();
    Ok((StatusCode::CREATED, Json(out)).into_response())
}

/// A push body judged and encoded, with no engine: what the planner is handed. Every refusal
/// of bad input happens here (the fuzz target drives it, crates/http/fuzz).
pub fn push_request(raw: &[u8], cfg: &HttpConfig) -> Result<Vec<PushGroup>, ApiError> {
    let body: PushBody = parse(raw)?;
    if body.items.is_empty() {
        return Err(ApiError::bad("empty_items", "items must hold at least one item"));
    }
    build_groups(cfg, body.items)
}

/// One item's answer, serialized straight from borrowed fields: at 100 items
/// a request, building a JSON tree per item was most of the push path's cost.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct PushAnswer<'a> {
    index: usize,
    transaction_id: &'a str,
    queue_name: &'a str,
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    message_id: Option<uuid::Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    partition_id: Option<uuid::Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    offset: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<&'static str>,
}

impl<'a> From<&'a baton_core::PushResult> for PushAnswer<'a> {
    fn from(r: &'a baton_core::PushResult) -> Self {
        let mut a = PushAnswer {
            index: r.index,
            transaction_id: &r.txid,
            queue_name: &r.queue,
            status: "queued",
            message_id: None,
            partition_id: None,
            offset: None,
            error: None,
            code: None,
        };
        match &r.status {
            PushStatus::Queued { part, offset } => {
                a.message_id = Some(message_uuid(*part, *offset));
                a.partition_id = Some(partition_uuid(*part));
                a.offset = Some(*offset);
            }
            PushStatus::Duplicate { part } => {
                a.status = "duplicate";
                a.partition_id = Some(partition_uuid(*part));
            }
            PushStatus::Failed(e) => {
                // A refused item answers inside a 201; it is counted as the error it is, so a
                // bound it hit (queue_full, entry_too_large) shows in /metrics.
                crate::error::count(crate::error::status_of(e.kind).as_u16(), e.code);
                a.status = "failed";
                a.error = Some(&e.message);
                a.code = Some(e.code);
            }
        }
        a
    }
}

/// The items of one (queue, partition): their request indexes and records.
type Slot = (Vec<usize>, Vec<PushRecord>);

/// The one path from pushed items to push groups (a push, binary or JSON, a transaction's
/// pushes, a stream cycle's sink pushes): it holds the bound on items a request, so no
/// route can forget it.
pub(crate) fn build_groups(cfg: &HttpConfig, items: Vec<PushItem<'_>>) -> Result<Vec<PushGroup>, ApiError> {
    if items.len() > MAX_ITEMS {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_many_items",
            format!("at most {MAX_ITEMS} items a request, not {}", items.len()),
        ));
    }
    let max = cfg.max_payload_bytes;
    let mut order: Vec<(&str, &str)> = Vec::new();
    let mut by_key: HashMap<(&str, &str), Slot> = HashMap::new();
    for (i, it) in items.iter().enumerate() {
        if it.queue.is_empty() {
            return Err(ApiError::bad("missing_field", format!("items[{i}].queue is empty")));
        }
        // Names are checked here, not left to the planner: it would create the
        // queue before refusing the partition, and one bad item must not let
        // the others of its request be stored.
        baton_core::valid_name(&it.queue)
            .map_err(|m| ApiError::bad("invalid_queue", format!("items[{i}].queue: {m}")))?;
        let payload = it.payload.ok_or_else(|| ApiError::bad("missing_field", format!("items[{i}] has no payload")))?;
        crate::payload::check(payload, cfg.max_payload_depth)
            .map_err(|e| ApiError::bad("bad_payload", format!("items[{i}].payload: {e}")))?;
        let bytes = payload.as_bytes();
        if bytes.len() > max {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                format!("items[{i}].payload is {} bytes; the limit is {max}", bytes.len()),
            ));
        }
        let (txid, client_txid) = match it.transaction_id.as_deref() {
            Some(t) if !t.is_empty() => {
                if t.len() > 256 {
                    return Err(ApiError::bad(
                        "invalid_transaction_id",
                        format!("items[{i}].transactionId is longer than 256 bytes"),
                    ));
                }
                (t.to_string(), true)
            }
            _ => (uuid::Uuid::now_v7().to_string(), false),
        };
        let trace = match it.trace_id.as_deref() {
            Some(t) if t.len() > 256 => {
                return Err(ApiError::bad("invalid_trace_id", format!("items[{i}].traceId is longer than 256 bytes")))
            }
            Some(t) if !t.is_empty() => Some(t.to_string()),
            _ => None,
        };
        let partition = it.partition.as_deref().unwrap_or(DEFAULT_PARTITION);
        baton_core::valid_name(partition)
            .map_err(|m| ApiError::bad("invalid_partition", format!("items[{i}].partition: {m}")))?;
        let key = (it.queue.as_ref(), partition);
        let slot = by_key.entry(key).or_insert_with(|| {
            order.push(key);
            (Vec::new(), Vec::new())
        });
        slot.0.push(i);
        slot.1.push(PushRecord { txid, client_txid, value: bytes::Bytes::copy_from_slice(bytes), trace });
    }
    let now_ms = (baton_core::wall_micros() / 1000) as i64;
    let mut groups = Vec::with_capacity(order.len());
    for key in order {
        let (indexes, records) = by_key.remove(&key).expect("every key in order is in the map");
        let recs: Vec<_> = records
            .iter()
            .map(|r| baton_wire::NewRecord {
                key: None,
                value: &r.value,
                txid: Some(&r.txid),
                trace: r.trace.as_deref(),
            })
            .collect();
        let batch = baton_wire::encode_batch(&recs, now_ms).map_err(|e| ApiError::bad("bad_payload", e.to_string()))?;
        groups.push(PushGroup { queue: key.0.to_string(), partition: key.1.to_string(), indexes, records, batch });
    }
    Ok(groups)
}

/// `POST /api/v1/kafka/producer-id`: a new idempotent-producer id, as Kafka's InitProducerId
/// gives one (epoch 0). A cluster member that does not lead forwards this to the leader like
/// every data-plane request, which is how its Kafka listener answers InitProducerId (D43's
/// follow-up to D42): the id is planned, and replicated, by the leader only.
pub async fn producer_id(State(app): State<App>) -> Result<Response, ApiError> {
    let id = app.engine.init_producer().await?;
    Ok(Json(serde_json::json!({"producerId": id, "producerEpoch": 0})).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopicBody {
    partitions: u32,
}

/// `POST /api/v1/kafka/topics/{topic}` `{"partitions": n}`: creates a Kafka topic (a queue
/// with `n` partitions), as a Kafka broker's auto-creation does; one that exists is left as
/// it is. A cluster member that does not lead asks the leader this way when a Kafka client
/// asks it about a topic it does not have.
pub async fn create_topic(
    State(app): State<App>,
    axum::extract::Path(topic): axum::extract::Path<String>,
    body: RawBody,
) -> Result<Response, ApiError> {
    let body: TopicBody = parse(&body.0)?;
    if body.partitions == 0 || body.partitions > baton_core::limits::MAX_KAFKA_PARTITIONS {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_partitions",
            format!("partitions must be 1 to {}", baton_core::limits::MAX_KAFKA_PARTITIONS),
        ));
    }
    app.engine.create_topic(topic.clone(), body.partitions).await?;
    Ok((StatusCode::CREATED, Json(serde_json::json!({"topic": topic, "partitions": body.partitions}))).into_response())
}
