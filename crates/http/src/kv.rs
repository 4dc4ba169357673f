//! `POST /api/v1/kv` and `/api/v1/timers`: Queen's KV and timer surfaces.
//! JSON op shapes are turned into typed ops here; the planner judges them.

use crate::body::JsonBody;
use crate::error::ApiError;
use crate::render::iso_us;
use crate::App;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use base64::Engine as _;
use baton_core::kv::{KvOp, KvResult, KvRow};
use baton_core::timers::{TimerOp, TimerResult};
use baton_core::QueryResult;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KvOpJson {
    op: String,
    ns: String,
    key: Option<String>,
    keys: Option<Vec<String>>,
    prefix: Option<String>,
    value: Option<Box<RawValue>>,
    ttl_seconds: Option<u64>,
    #[allow(dead_code)]
    forever: Option<bool>,
    expect: Option<u64>,
    #[serde(default)]
    required: bool,
    delta: Option<i64>,
    min: Option<i64>,
    max: Option<i64>,
    after: Option<String>,
    limit: Option<usize>,
    #[serde(default)]
    keys_only: bool,
}

#[derive(Deserialize)]
pub struct KvBody {
    pub(crate) operations: Vec<KvOpJson>,
}

/// Namespaces whose rows only Baton's own routes write: a lock's permit (`/api/v1/locks`)
/// a trace (`/api/v1/traces`), an ephemeral queue's declared options and a queue's
/// namespace and task, a Kafka group's configs. A client that could `put` a permit row could forge a
/// lock holder or move its fencing token; reads and `check` (a lock's guard) stay open.
pub const RESERVED_NAMESPACES: [&str; 7] = [
    baton_core::kv::KAFKA_GROUP_CONFIGS,
    crate::locks::NS,
    crate::traces::NS,
    crate::ephemeral::NS,
    crate::namespaces::NS,
    crate::streams::NS,
    crate::conflation::NS,
];

/// `max_depth` bounds a stored value's nesting (`--max-payload-depth`).
/// The one path from a client's JSON to a KV op: it refuses writes to a reserved namespace.
pub fn kv_op(i: usize, o: KvOpJson, max_depth: u32) -> Result<KvOp, ApiError> {
    let writes = matches!(o.op.as_str(), "put" | "putIfAbsent" | "delete" | "incr");
    if writes && RESERVED_NAMESPACES.contains(&o.ns.as_str()) {
        return Err(ApiError::bad(
            "reserved_namespace",
            format!("kv op {i}: namespace {:?} is written only by Baton's own routes", o.ns),
        ));
    }
    let need = |v: Option<String>, f: &str| {
        v.ok_or_else(|| ApiError::bad("missing_field", format!("kv op {i}: {f} is required")))
    };
    let ttl = o.ttl_seconds.filter(|t| *t > 0);
    let value = |v: Option<Box<RawValue>>| -> Result<String, ApiError> {
        let Some(r) = v else { return Ok("null".into()) };
        crate::payload::check(r.get(), max_depth)
            .map_err(|e| ApiError::bad("bad_payload", format!("kv op {i}: value: {e}")))?;
        Ok(r.get().to_string())
    };
    Ok(match o.op.as_str() {
        "get" => KvOp::Get { ns: o.ns, key: need(o.key, "key")? },
        "getMany" => KvOp::GetMany {
            ns: o.ns,
            keys: o.keys.ok_or_else(|| ApiError::bad("missing_field", format!("kv op {i}: keys is required")))?,
        },
        "getPrefix" => KvOp::GetPrefix {
            ns: o.ns,
            prefix: o.prefix.unwrap_or_default(),
            after: o.after,
            limit: o.limit.unwrap_or(100).clamp(1, 10_000),
            keys_only: o.keys_only,
        },
        "put" => KvOp::Put {
            ns: o.ns,
            key: need(o.key, "key")?,
            value: value(o.value)?,
            ttl_secs: ttl,
            expect: o.expect,
            required: o.required,
        },
        "putIfAbsent" => KvOp::PutIfAbsent {
            ns: o.ns,
            key: need(o.key, "key")?,
            value: value(o.value)?,
            ttl_secs: ttl,
            required: o.required,
        },
        "delete" => KvOp::Delete { ns: o.ns, key: need(o.key, "key")?, expect: o.expect, required: o.required },
        "incr" => KvOp::Incr {
            ns: o.ns,
            key: need(o.key, "key")?,
            delta: o.delta.unwrap_or(1),
            min: o.min,
            max: o.max,
            ttl_secs: ttl,
            required: o.required,
        },
        "check" => KvOp::Check {
            ns: o.ns,
            key: need(o.key, "key")?,
            expect: o.expect.ok_or_else(|| ApiError::bad("missing_field", format!("kv op {i}: check needs expect")))?,
            required: o.required,
        },
        other => return Err(ApiError::bad("invalid_op", format!("kv op {i}: unknown op {other:?}"))),
    })
}

fn raw(v: &str) -> Box<RawValue> {
    crate::payload::text_json(v)
}

/// A row of a `keysOnly` read has no value, and shows none: `"value": null` would read as
/// a stored null.
fn row_json(r: &KvRow) -> Value {
    let mut v = json!({"key": r.key, "version": r.version, "expiresAt": r.expires.map(iso_us)});
    if let Some(value) = r.value.as_deref() {
        v["value"] = json!(raw(value));
    }
    v
}

pub fn kv_result_json(r: &KvResult) -> Value {
    match r {
        KvResult::Found(Some(row)) => {
            let mut v = row_json(row);
            v["found"] = true.into();
            v
        }
        KvResult::Found(None) => json!({"found": false}),
        KvResult::Many { rows, missing } => {
            json!({"rows": rows.iter().map(row_json).collect::<Vec<_>>(), "missing": missing})
        }
        KvResult::Prefix { rows, next_after } => json!({
            "rows": rows.iter().map(row_json).collect::<Vec<_>>(),
            "truncated": next_after.is_some(),
            "nextAfter": next_after,
        }),
        KvResult::Write { applied, reason, version, current } => json!({
            "applied": applied,
            "reason": reason,
            "version": version,
            "value": current.as_ref().and_then(|c| c.value.as_deref()).map(raw),
        }),
    }
}

pub async fn kv(State(app): State<App>, JsonBody(body): JsonBody<KvBody>) -> Result<Response, ApiError> {
    if body.operations.is_empty() {
        return Err(ApiError::bad("empty_operations", "operations must hold at least one op"));
    }
    let depth = app.cfg.max_payload_depth;
    let ops =
        body.operations.into_iter().enumerate().map(|(i, o)| kv_op(i, o, depth)).collect::<Result<Vec<_>, _>>()?;
    let n = ops.len();
    match app.engine.kv(ops).await? {
        Ok(results) => {
            Ok(Json(json!({"results": results.iter().map(kv_result_json).collect::<Vec<_>>()})).into_response())
        }
        Err(rb) => {
            let results: Vec<Value> = (0..n)
                .map(|i| {
                    if i == rb.index {
                        kv_result_json(&rb.result)
                    } else {
                        json!({"applied": false, "reason": "rolled_back"})
                    }
                })
                .collect();
            Ok(Json(
                json!({"results": results, "success": false, "reason": "kv_precondition", "failedIndex": rb.index}),
            )
            .into_response())
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimerOpJson {
    op: String,
    queue: String,
    timer_key: String,
    payload: Option<String>,
    delay_ms: Option<u64>,
    txn: Option<String>,
    partition: Option<String>,
    #[serde(default)]
    payload_zstd: bool,
}

#[derive(Deserialize)]
pub struct TimersBody {
    pub(crate) operations: Vec<TimerOpJson>,
}

/// `max_depth` bounds the payload's nesting (`--max-payload-depth`).
pub fn timer_op(i: usize, o: TimerOpJson, max_depth: u32) -> Result<TimerOp, ApiError> {
    if o.payload_zstd {
        return Err(ApiError::bad("unsupported", format!("timer op {i}: payloadZstd is not supported")));
    }
    Ok(match o.op.as_str() {
        "schedule" | "reschedule" => {
            let b64 = o
                .payload
                .ok_or_else(|| ApiError::bad("missing_field", format!("timer op {i}: payload is required")))?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b64.as_bytes())
                .map_err(|e| ApiError::bad("invalid_payload", format!("timer op {i}: payload is not base64: {e}")))?;
            let payload =
                String::from_utf8(bytes).ok().filter(|s| serde_json::from_str::<&RawValue>(s).is_ok()).ok_or_else(
                    || ApiError::bad("invalid_payload", format!("timer op {i}: payload must be base64 of JSON")),
                )?;
            // Fired, the payload is pushed: it passes the push's check now, not when it fires.
            crate::payload::check(&payload, max_depth)
                .map_err(|e| ApiError::bad("bad_payload", format!("timer op {i}: payload: {e}")))?;
            TimerOp::Schedule {
                queue: o.queue,
                key: o.timer_key,
                payload,
                delay_ms: o
                    .delay_ms
                    .ok_or_else(|| ApiError::bad("missing_field", format!("timer op {i}: delayMs is required")))?,
                partition: o.partition,
                txn: o.txn.unwrap_or_else(|| uuid::Uuid::now_v7().to_string()),
            }
        }
        "cancel" => TimerOp::Cancel { queue: o.queue, key: o.timer_key },
        other => return Err(ApiError::bad("invalid_op", format!("timer op {i}: unknown op {other:?}"))),
    })
}

/// `ok` is the verdict Queen's client reads as the result's truth: false for `absent` (no
/// such timer: never scheduled, cancelled, or already fired).
pub fn timer_result_json(r: &TimerResult) -> Value {
    json!({"ok": r.status != "absent", "status": r.status, "queue": r.queue, "timerKey": r.key,
        "deliverAt": r.fire_at.map(iso_us)})
}

/// [`timer_result_json`] with the timer's `txn` carried back (the one given or minted for a
/// schedule, the one a cancel names): the message a timer became is found by it in the queue.
fn with_txn(r: &TimerResult, txn: Option<&str>) -> Value {
    let mut v = timer_result_json(r);
    if let Some(t) = txn {
        v["txn"] = t.into();
    }
    v
}

fn op_txn(op: &TimerOp) -> Option<&str> {
    match op {
        TimerOp::Schedule { txn, .. } => Some(txn),
        _ => None,
    }
}

pub async fn timers(State(app): State<App>, JsonBody(body): JsonBody<TimersBody>) -> Result<Response, ApiError> {
    if body.operations.is_empty() {
        return Err(ApiError::bad("empty_operations", "operations must hold at least one op"));
    }
    let depth = app.cfg.max_payload_depth;
    let mut txns = Vec::with_capacity(body.operations.len());
    let mut ops = Vec::with_capacity(body.operations.len());
    for (i, o) in body.operations.into_iter().enumerate() {
        let named = o.txn.clone();
        let op = timer_op(i, o, depth)?;
        txns.push(op_txn(&op).map(str::to_owned).or(named));
        ops.push(op);
    }
    let res = app.engine.timers(ops).await?;
    let results: Vec<_> = res.iter().zip(&txns).map(|(r, t)| with_txn(r, t.as_deref())).collect();
    Ok(Json(json!({"results": results})).into_response())
}

#[derive(Deserialize)]
pub struct CancelParams {
    txn: Option<String>,
}

/// `DELETE /api/v1/timers/{queue}/{key}[?txn=]`: the `txn` is carried back, so an `absent`
/// answer can be followed by a look for that transaction id in the queue.
pub async fn cancel_timer(
    State(app): State<App>,
    Path((queue, key)): Path<(String, String)>,
    q: Result<Query<CancelParams>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(p) = q.map_err(|e| ApiError::bad("invalid_query", e.body_text()))?;
    let res = app.engine.timers(vec![TimerOp::Cancel { queue, key }]).await?;
    Ok(Json(with_txn(&res[0], p.txn.as_deref())).into_response())
}

#[derive(Deserialize)]
pub struct ListParams {
    after: Option<String>,
    limit: Option<usize>,
}

fn timer_row(q: &str, r: &(String, u64, String, String, String)) -> Value {
    json!({
        "queue": q, "timerKey": r.0, "deliverAt": iso_us(r.1), "partition": r.3, "txn": r.4,
        "payload": base64::engine::general_purpose::STANDARD.encode(r.2.as_bytes()),
    })
}

async fn timer_rows(
    app: &App,
    queue: &str,
    key: Option<String>,
    after: Option<String>,
    limit: usize,
) -> Result<Vec<(String, u64, String, String, String)>, ApiError> {
    match app.engine.query(baton_core::Query::Timers { queue: queue.to_string(), key, after, limit }).await? {
        QueryResult::Timers(rows) => Ok(rows),
        _ => unreachable!("Timers answers Timers"),
    }
}

pub async fn peek_timer(
    State(app): State<App>,
    Path((queue, key)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let rows = timer_rows(&app, &queue, Some(key.clone()), None, 1).await?;
    Ok(match rows.first() {
        Some(r) => {
            let mut v = timer_row(&queue, r);
            v["found"] = true.into();
            Json(v)
        }
        None => Json(json!({"found": false, "queue": queue, "timerKey": key})),
    }
    .into_response())
}

pub async fn list_timers(
    State(app): State<App>,
    Path(queue): Path<String>,
    Query(p): Query<ListParams>,
) -> Result<Response, ApiError> {
    let limit = p.limit.unwrap_or(100).clamp(1, 10_000);
    let mut rows = timer_rows(&app, &queue, None, p.after, limit + 1).await?;
    let truncated = rows.len() > limit;
    rows.truncate(limit);
    let next = truncated.then(|| rows.last().map(|r| r.0.clone())).flatten();
    Ok(Json(json!({"rows": rows.iter().map(|r| timer_row(&queue, r)).collect::<Vec<_>>(), "truncated": truncated, "nextAfter": next}))
        .into_response())
}
