//! Read-only pages of the admin client (issue 16): `GET /api/v1/resources/partitions`
//! (Queen's `admin.get_partitions`) and `GET /api/v1/messages` (`admin.list_messages`).
//!
//! Owns paging over what the planner's views and the partition files hold. Must never
//! answer an unbounded page (`limit` is capped at [`MAX_PAGE`]; a message page reads at
//! most [`PAGE_BYTES`] of stored batches) and never show what no HTTP reader is shown
//! (open or aborted Kafka transactions, control records, deleted messages: D48).

use crate::admin::{all_queues, one_queue};
use crate::error::ApiError;
use crate::payload::payload_json;
use crate::render::{iso_ms, read_records};
use crate::App;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use baton_core::request_memory::MemoryHold;
use baton_core::{message_uuid, FetchRequest};
use serde::Deserialize;
use serde_json::json;

/// Most rows in one page; a larger `limit` is cut to it.
pub const MAX_PAGE: usize = 1000;
/// Most stored bytes one message page reads.
pub const PAGE_BYTES: u64 = 4 << 20;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageParams {
    queue: Option<String>,
    partition: Option<String>,
    limit: Option<usize>,
    offset: Option<usize>,
}

fn params(q: Result<Query<PageParams>, axum::extract::rejection::QueryRejection>) -> Result<PageParams, ApiError> {
    let Query(p) = q.map_err(|e| ApiError::bad("invalid_query", e.body_text()))?;
    Ok(p)
}

/// Every partition (of `queue`, or of all queues), by queue and name.
pub async fn partitions(
    State(app): State<App>,
    q: Result<Query<PageParams>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let p = params(q)?;
    let queues = match p.queue.as_deref().filter(|q| !q.is_empty()) {
        Some(name) => vec![one_queue(&app, name).await?],
        None => all_queues(&app).await?,
    };
    let limit = p.limit.unwrap_or(100).min(MAX_PAGE);
    let skip = p.offset.unwrap_or(0);
    let all = queues.iter().flat_map(|q| q.partitions.iter().map(move |pv| (q, pv)));
    let total = queues.iter().map(|q| q.partitions.len()).sum::<usize>();
    let rows: Vec<_> = all
        .skip(skip)
        .take(limit)
        .map(|(q, pv)| {
            json!({
                "id": pv.id, "name": pv.name, "queue": q.name, "queueName": q.name,
                "messages": pv.end - pv.start, "pending": pv.depth, "leased": pv.leased,
                "firstOffset": pv.start, "nextOffset": pv.durable_end,
            })
        })
        .collect();
    Ok(Json(json!({"partitions": rows, "total": total, "limit": limit, "offset": skip})).into_response())
}

/// A queue's messages in partition order, then offset order, `offset` of them skipped.
/// `total` counts stored offsets, control records and deleted messages among them.
pub async fn messages(
    State(app): State<App>,
    q: Result<Query<PageParams>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let p = params(q)?;
    let name = p.queue.filter(|q| !q.is_empty()).ok_or_else(|| ApiError::bad("missing_queue", "queue is required"))?;
    let queue = one_queue(&app, &name).await?;
    let limit = p.limit.unwrap_or(100).min(MAX_PAGE);
    let mut skip = p.offset.unwrap_or(0) as u64;
    let parts: Vec<_> =
        queue.partitions.iter().filter(|pv| p.partition.as_ref().is_none_or(|n| *n == pv.name)).collect();
    if let Some(n) = p.partition.as_ref().filter(|_| parts.is_empty()) {
        return Err(ApiError::new(StatusCode::NOT_FOUND, "partition_not_found", format!("{name}/{n} does not exist")));
    }
    let total: u64 = parts.iter().map(|pv| pv.durable_end - pv.start).sum();
    let mut out = Vec::new();
    let mut budget = PAGE_BYTES;
    // What the page reads, held while it is read and sent (D88).
    let mut mem = MemoryHold::none();
    for pv in parts {
        let n = pv.durable_end - pv.start;
        if skip >= n {
            skip -= n;
            continue;
        }
        let mut from = pv.start + std::mem::take(&mut skip);
        while out.len() < limit && from < pv.durable_end && budget > 0 {
            let req = FetchRequest {
                queue: name.clone(),
                partition: pv.name.clone(),
                offset: from,
                max_bytes: budget,
                committed: true,
            };
            let Some(r) = app.engine.fetch(vec![req]).await?.pop() else { break };
            if r.spans.is_empty() {
                break;
            }
            let len = r.spans.iter().map(|s| s.len as u64).sum();
            budget = budget.saturating_sub(len);
            mem.absorb(crate::held::before_read(&app, len).await);
            let recs = read_records(&r.spans, |o| o >= from)
                .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "read_failed", e))?;
            // Past every record read, shown or not; never past the last stable offset.
            let Some(next) = recs.last().map(|m| m.offset + 1) else { break };
            let part = baton_core::parse_partition_uuid(&pv.id);
            for rec in recs.into_iter().filter(|m| m.offset < r.last_stable && !r.hides(m.offset)) {
                if out.len() == limit {
                    break;
                }
                out.push(json!({
                    "id": part.map(|p| message_uuid(p, rec.offset).to_string()),
                    "transactionId": rec.txid, "traceId": rec.trace,
                    "queue": name, "partition": pv.name, "partitionId": pv.id,
                    "offset": rec.offset, "createdAt": iso_ms(rec.timestamp_ms),
                    "data": payload_json(rec.value.as_deref()),
                }));
            }
            if next <= from || next > r.last_stable {
                break;
            }
            from = next;
        }
        if out.len() >= limit || budget == 0 {
            break;
        }
    }
    let body = json!({"messages": out, "total": total, "limit": limit, "offset": p.offset.unwrap_or(0)}).to_string();
    Ok(crate::held::json(&app, body.into_bytes(), mem))
}

/// Most entries in one `POST /api/v1/partitions/changed`, and most partitions one entry
/// answers (Queen's page).
pub const CHANGED_MAX_ENTRIES: usize = 100;
pub const CHANGED_PAGE: usize = 1000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChangedBody {
    entries: Vec<ChangedEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChangedEntry {
    queue: String,
    since: Option<String>,
    after: Option<String>,
    limit: Option<usize>,
}

/// `POST /api/v1/partitions/changed` (Queen's `changed_since`): per entry, the queue's
/// partitions written at or after `since`, in creation order, paged by `after` (the last
/// partition id of the page before), and the `safeTime` to pass as the next `since`.
pub async fn changed(
    State(app): State<App>,
    crate::body::JsonBody(b): crate::body::JsonBody<ChangedBody>,
) -> Result<Response, ApiError> {
    if b.entries.is_empty() || b.entries.len() > CHANGED_MAX_ENTRIES {
        return Err(ApiError::bad("invalid_entries", format!("1 to {CHANGED_MAX_ENTRIES} entries")));
    }
    let mut safe: Option<u64> = None;
    let mut out = Vec::with_capacity(b.entries.len());
    for (i, e) in b.entries.into_iter().enumerate() {
        let since =
            match e.since.as_deref() {
                None => None,
                Some(t) => Some(crate::render::parse_iso(t).ok_or_else(|| {
                    ApiError::bad("invalid_timestamp", format!("entries[{i}].since must be RFC 3339"))
                })?),
            };
        let after = match e.after.as_deref() {
            None => None,
            Some(a) => Some(baton_core::parse_partition_uuid(a).ok_or_else(|| {
                ApiError::bad("invalid_partition_id", format!("entries[{i}].after: {a:?} is not a Baton partition id"))
            })?),
        };
        let limit = e.limit.unwrap_or(CHANGED_PAGE).clamp(1, CHANGED_PAGE);
        let q = baton_core::Query::ChangedPartitions { queue: e.queue.clone(), since, after, limit };
        let page = match app.engine.query(q).await? {
            baton_core::QueryResult::Changed(p) => p,
            _ => unreachable!("ChangedPartitions answers Changed"),
        };
        let Some(page) = page else {
            out.push(json!({"queue": e.queue, "partitions": [], "next": null, "error": "UNKNOWN_TOPIC_OR_PARTITION"}));
            continue;
        };
        safe = Some(safe.map_or(page.safe_time, |s| s.min(page.safe_time)));
        let parts: Vec<_> = page
            .parts
            .iter()
            .map(|p| {
                json!({
                    "name": p.name, "id": baton_core::partition_uuid(p.id).to_string(),
                    "lastOffset": p.durable_end.checked_sub(1).filter(|o| *o >= p.start),
                    "logStart": p.start, "lastWriteAt": crate::render::iso_micros(p.last_write),
                })
            })
            .collect();
        let next = page.next.map(|n| baton_core::partition_uuid(n).to_string());
        out.push(json!({"queue": e.queue, "partitions": parts, "next": next}));
    }
    Ok(Json(json!({"safeTime": safe.map(crate::render::iso_micros), "entries": out})).into_response())
}
