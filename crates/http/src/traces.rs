//! Traces (Queen's `msg.trace()` and the admin trace queries, issue 16 item 2):
//! `POST /api/v1/traces`, `GET /api/v1/traces/{partitionId}/{transactionId}`,
//! `GET /api/v1/traces/by-name/{name}`, `GET /api/v1/traces/names`.
//!
//! A trace event is KV rows in the namespace `queen-traces`, written in one KV request
//! (one log entry, durable before the answer): one row under the message, one under each
//! of its names, and the name in the list of names, each with `--trace-retention-secs` as
//! its expiry. So traces are replicated, survive a restart, are bounded by the KV bound
//! (`--max-kv-mb`: past it a trace is refused like any KV write) and go away by
//! themselves. Keys put `\x1f` (a control character no name or id may hold) between their
//! parts, so one name's prefix never covers another's, and a time in fixed-width hex, so
//! key order is time order.
//!
//! Owns that layout; must never store a trace it could not show again (its data passes the
//! check every stored JSON value passes) and never answer an unbounded page.

use crate::body::JsonBody;
use crate::error::ApiError;
use crate::render::iso_us;
use crate::App;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use baton_core::kv::{KvOp, KvResult, KvRow};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

pub const NS: &str = "queen-traces";
const SEP: char = '\x1f';
/// Most names one trace event may carry.
pub const MAX_NAMES: usize = 16;
/// Longest name, event type, consumer group or transaction id, in bytes.
pub const MAX_TEXT: usize = 256;
/// Most events one query answers (a larger `limit` is cut to it) and most it skips.
pub const MAX_PAGE: usize = 1000;
pub const MAX_SKIP: usize = 10_000;
/// Default of `--trace-retention-secs`: a week.
pub const DEFAULT_RETENTION_SECS: u64 = 7 * 24 * 3600;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TraceBody {
    transaction_id: String,
    partition_id: String,
    consumer_group: Option<String>,
    trace_names: Option<Vec<String>>,
    event_type: Option<String>,
    data: Box<RawValue>,
}

fn text_ok(s: &str) -> bool {
    !s.is_empty() && s.len() <= MAX_TEXT && !s.chars().any(char::is_control)
}

fn need(ok: bool, code: &'static str, what: &str) -> Result<(), ApiError> {
    if ok {
        Ok(())
    } else {
        Err(ApiError::bad(code, format!("{what}: 1 to {MAX_TEXT} bytes, no control characters")))
    }
}

fn msg_prefix(pid: &str, txid: &str) -> String {
    format!("m{SEP}{pid}{SEP}{txid}{SEP}")
}

fn name_prefix(name: &str) -> String {
    format!("n{SEP}{name}{SEP}")
}

const NAMES: &str = "names\x1f";

pub async fn record(State(app): State<App>, JsonBody(b): JsonBody<TraceBody>) -> Result<Response, ApiError> {
    need(text_ok(&b.transaction_id), "invalid_transaction_id", "transactionId")?;
    baton_core::parse_partition_uuid(&b.partition_id).ok_or_else(|| {
        ApiError::bad("invalid_partition_id", format!("{:?} is not a Baton partition id", b.partition_id))
    })?;
    let names = b.trace_names.unwrap_or_default();
    if names.len() > MAX_NAMES {
        return Err(ApiError::bad("too_many_names", format!("at most {MAX_NAMES} traceNames")));
    }
    for n in &names {
        need(text_ok(n), "invalid_trace_name", "each traceName")?;
    }
    let event = b.event_type.unwrap_or_else(|| "info".into());
    need(text_ok(&event), "invalid_event_type", "eventType")?;
    if let Some(g) = &b.consumer_group {
        need(text_ok(g), "invalid_consumer_group", "consumerGroup")?;
    }
    if b.data.get().len() > app.cfg.max_payload_bytes {
        return Err(ApiError::new(
            axum::http::StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("data is over {} bytes", app.cfg.max_payload_bytes),
        ));
    }
    crate::payload::check(b.data.get(), app.cfg.max_payload_depth)
        .map_err(|e| ApiError::bad("bad_payload", format!("data: {e}")))?;
    let now = baton_core::wall_micros();
    let id = uuid::Uuid::now_v7().to_string();
    let value = json!({
        "id": id, "transactionId": b.transaction_id, "partitionId": b.partition_id,
        "consumerGroup": b.consumer_group, "traceNames": names, "eventType": event,
        "data": b.data, "createdAt": iso_us(now),
    })
    .to_string();
    let ttl = Some(app.cfg.trace_retention_secs);
    let stamp = format!("{now:016x}{SEP}{id}");
    let put = |key: String, value: String| KvOp::Put {
        ns: NS.into(),
        key,
        value,
        ttl_secs: ttl,
        expect: None,
        required: true,
    };
    let mut ops = vec![put(format!("{}{stamp}", msg_prefix(&b.partition_id, &b.transaction_id)), value.clone())];
    for n in &names {
        ops.push(put(format!("{}{stamp}", name_prefix(n)), value.clone()));
        ops.push(put(format!("{NAMES}{n}"), json!({"name": n, "lastSeen": iso_us(now)}).to_string()));
    }
    match app.engine.kv(ops).await? {
        Ok(_) => Ok(Json(json!({"success": true, "id": id})).into_response()),
        Err(rb) => Err(ApiError::new(
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            "trace_not_written",
            format!("trace row {} was not written", rb.index),
        )),
    }
}

#[derive(Deserialize)]
pub struct PageParams {
    limit: Option<usize>,
    offset: Option<usize>,
}

fn page(q: Result<Query<PageParams>, axum::extract::rejection::QueryRejection>) -> Result<(usize, usize), ApiError> {
    let Query(p) = q.map_err(|e| ApiError::bad("invalid_query", e.body_text()))?;
    Ok((p.limit.unwrap_or(100).min(MAX_PAGE), p.offset.unwrap_or(0).min(MAX_SKIP)))
}

/// Rows under `prefix`, oldest first, `skip` of them skipped, at most `limit`.
async fn rows(app: &App, prefix: String, skip: usize, limit: usize) -> Result<Vec<KvRow>, ApiError> {
    let op = KvOp::GetPrefix { ns: NS.into(), prefix, after: None, limit: skip + limit, keys_only: false };
    match app.engine.kv(vec![op]).await?.map_err(|_| ApiError::bad("kv", "a read rolled back"))?.pop() {
        Some(KvResult::Prefix { rows, .. }) => Ok(rows.into_iter().skip(skip).collect()),
        _ => Ok(Vec::new()),
    }
}

fn events(rows: &[KvRow]) -> Vec<Value> {
    rows.iter().filter_map(|r| serde_json::from_str(r.value.as_deref()?).ok()).collect()
}

pub async fn for_message(
    State(app): State<App>,
    Path((pid, txid)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    need(text_ok(&txid), "invalid_transaction_id", "transactionId")?;
    let found = rows(&app, msg_prefix(&pid, &txid), 0, MAX_PAGE).await?;
    Ok(Json(json!({"transactionId": txid, "partitionId": pid, "traces": events(&found)})).into_response())
}

pub async fn by_name(
    State(app): State<App>,
    Path(name): Path<String>,
    q: Result<Query<PageParams>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    need(text_ok(&name), "invalid_trace_name", "the trace name")?;
    let (limit, skip) = page(q)?;
    let found = rows(&app, name_prefix(&name), skip, limit).await?;
    Ok(Json(json!({"traceName": name, "traces": events(&found), "limit": limit, "offset": skip})).into_response())
}

pub async fn names(
    State(app): State<App>,
    q: Result<Query<PageParams>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let (limit, skip) = page(q)?;
    let found = rows(&app, NAMES.into(), skip, limit).await?;
    Ok(Json(json!({"names": events(&found), "limit": limit, "offset": skip})).into_response())
}
