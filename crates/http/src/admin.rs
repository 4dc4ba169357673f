//! Configure, resources, consumer groups, dead letters and health: the
//! administrative routes. Read-only views come from the engine's queries.

use crate::body::{JsonBody, OptionalJson};
use crate::error::ApiError;
use crate::paging::Page;
use crate::payload::payload_json;
use crate::render::{iso_ms, iso_us, parse_iso, read_records};
use crate::{App, MembershipOp};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use baton_core::request_memory::MemoryHold;
use baton_core::{parse_partition_uuid, partition_uuid, ConfigureMode, OptionsPatch, QueryResult};
use serde::Deserialize;
use serde_json::json;

pub async fn cluster(State(app): State<App>) -> Response {
    match &app.cfg.cluster {
        Some(view) => Json((view.0)()).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            Json(json!({"code": "not_a_cluster", "error": "this node runs alone (no --node-id): there is no cluster to describe"})),
        )
            .into_response(),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AddMember {
    id: u64,
    raft_addr: String,
}

/// `POST /cluster/members` `{"id", "raftAddr"}` (D44): the new member joins as a learner,
/// catches up and becomes a voter; on a member that does not lead it is forwarded there.
pub async fn add_member(State(app): State<App>, JsonBody(b): JsonBody<AddMember>) -> Result<Response, ApiError> {
    membership(&app, MembershipOp::Add { id: b.id, raft_addr: b.raft_addr }).await
}

/// `DELETE /cluster/members/{id}` (D44): the member leaves the membership (it keeps running
/// until it is stopped; it is no longer asked to vote or to store entries).
pub async fn remove_member(State(app): State<App>, Path(id): Path<String>) -> Result<Response, ApiError> {
    let id = id.parse::<u64>().map_err(|_| ApiError::bad("bad_member_id", format!("{id:?} is not a member id")))?;
    membership(&app, MembershipOp::Remove { id }).await
}

async fn membership(app: &App, op: MembershipOp) -> Result<Response, ApiError> {
    let Some(admin) = &app.cfg.membership else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "not_a_cluster",
            "this node runs alone (no --node-id): it has no members to change",
        ));
    };
    match (admin.0)(op).await {
        Ok(v) => Ok(Json(v).into_response()),
        Err((status, code, message)) => {
            Err(ApiError::new(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), code, message))
        }
    }
}

pub async fn health(State(app): State<App>) -> Response {
    match app.engine.failure() {
        None if let Some((n, first)) = baton_core::damage::seen() => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "damaged", "error": first, "damagedReads": n, "code": "storage_damaged"})),
        )
            .into_response(),
        None => Json(json!({"status": "healthy", "database": "baton-wal", "version": env!("CARGO_PKG_VERSION")}))
            .into_response(),
        Some(reason) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "failed", "error": reason, "code": "storage_failed"})),
        )
            .into_response(),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigureBody {
    queue: String,
    #[serde(default)]
    options: Option<OptionsPatch>,
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    task: Option<String>,
}

pub async fn configure(State(app): State<App>, JsonBody(b): JsonBody<ConfigureBody>) -> Result<Response, ApiError> {
    let mode = match b.mode.as_deref() {
        None | Some("merge") => ConfigureMode::Merge,
        Some("replace") => ConfigureMode::Replace,
        Some(m) => return Err(ApiError::bad("invalid_mode", format!("mode is merge or replace, not {m:?}"))),
    };
    let patch = b.options.unwrap_or_default();
    for (name, v) in [
        ("leaseTime", patch.lease_time),
        ("retentionSeconds", patch.retention_seconds),
        ("delayedProcessing", patch.delayed_processing),
        ("dedupWindowSeconds", patch.dedup_window_seconds),
    ] {
        crate::check_seconds("invalid_option", name, v)?;
    }
    crate::namespaces::validate(&b.namespace, &b.task)?;
    let opts = app.engine.configure(b.queue.clone(), patch, mode).await?;
    // After the queue exists: a crash between the two leaves it untagged, and the client's
    // retried configure tags it (D57).
    let tags = crate::namespaces::Tags { namespace: b.namespace.clone(), task: b.task.clone() };
    crate::namespaces::record(&app, &b.queue, tags).await?;
    Ok(Json(json!({"configured": true, "queue": b.queue, "namespace": b.namespace, "task": b.task, "options": opts}))
        .into_response())
}

pub(crate) async fn all_queues(app: &App) -> Result<Vec<baton_core::QueueView>, ApiError> {
    Ok(app.engine.queue_views(None, None).await?)
}

/// A queue as the list shows it: counts, no partitions (a queue may have 200,000).
fn queue_json(q: &baton_core::QueueView) -> serde_json::Value {
    json!({
        "name": q.name,
        "createdAt": iso_us(q.created_at),
        "options": q.options,
        "partitions": q.partitions.len(),
        "leasedPartitions": q.partitions.iter().filter(|p| p.leased).count(),
        "messages": {"total": q.total, "pending": q.depth, "deadLetter": q.dead_letters},
        "depth": q.depth,
    })
}

/// One queue's view: the list's fields and one page of its partitions.
fn queue_page_json(q: baton_core::QueueView, page: Page) -> serde_json::Value {
    let mut v = queue_json(&q);
    let (parts, about) = page.cut(q.partitions);
    v["partitionList"] = json!(parts);
    v["partitionPage"] = about;
    v
}

/// Queues, partitions and messages summed over `qs`, and the request counters: the
/// overview's fields (the status view adds its own).
pub(crate) fn totals(app: &App, qs: &[baton_core::QueueView]) -> serde_json::Value {
    let c = app.engine.counters();
    use std::sync::atomic::Ordering::Relaxed;
    json!({
        "queues": qs.len(),
        "partitions": qs.iter().map(|q| q.partitions.len()).sum::<usize>(),
        "messages": {
            "total": qs.iter().map(|q| q.total).sum::<u64>(),
            "pending": qs.iter().map(|q| q.depth).sum::<u64>(),
            "deadLetter": qs.iter().map(|q| q.dead_letters).sum::<u64>(),
        },
        "counters": {"pushed": c.pushed.load(Relaxed), "popped": c.popped.load(Relaxed), "acked": c.acked.load(Relaxed)},
    })
}

pub async fn overview(State(app): State<App>) -> Result<Response, ApiError> {
    let qs = all_queues(&app).await?;
    Ok(Json(totals(&app, &qs)).into_response())
}

#[derive(serde::Deserialize)]
pub struct QueuesParams {
    namespace: Option<String>,
    task: Option<String>,
}

/// Every queue, or those of a namespace and/or task (`list_queues(namespace=, task=)`),
/// each with its tags.
pub async fn queues(
    State(app): State<App>,
    q: Result<axum::extract::Query<QueuesParams>, axum::extract::rejection::QueryRejection>,
    page: Result<axum::extract::Query<Page>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let axum::extract::Query(f) = q.map_err(|e| ApiError::bad("invalid_query", e.body_text()))?;
    let page = Page::from_query(page)?;
    let tagged = crate::namespaces::tagged(&app).await?;
    let tags: std::collections::HashMap<&str, &crate::namespaces::Tags> =
        tagged.rows.iter().map(|(q, t)| (q.as_str(), t)).collect();
    let none = crate::namespaces::Tags::default();
    let list: Vec<_> = all_queues(&app)
        .await?
        .iter()
        .filter_map(|q| {
            let t = tags.get(q.name.as_str()).copied().unwrap_or(&none);
            crate::namespaces::matches(t, f.namespace.as_deref(), f.task.as_deref()).then(|| {
                let mut v = queue_json(q);
                v["namespace"] = json!(t.namespace);
                v["task"] = json!(t.task);
                v
            })
        })
        .collect();
    let (list, mut about) = page.cut(list);
    about["queues"] = json!(list);
    Ok(Json(about).into_response())
}

pub(crate) async fn one_queue(app: &App, name: &str) -> Result<baton_core::QueueView, ApiError> {
    one_queue_as(app, name, None).await
}

/// The queue as `group` sees it (`None`: queue mode).
async fn one_queue_as(app: &App, name: &str, group: Option<String>) -> Result<baton_core::QueueView, ApiError> {
    app.engine
        .queue_view(name, group.as_deref())
        .await?
        .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, "queue_not_found", format!("queue {name} does not exist")))
}

/// One queue, as the list shows it (with its namespace and task).
pub async fn queue(
    State(app): State<App>,
    Path(name): Path<String>,
    page: Result<axum::extract::Query<Page>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let page = Page::from_query(page)?;
    let mut v = queue_page_json(one_queue(&app, &name).await?, page);
    let t = crate::namespaces::tags_of(&app, &name).await?;
    v["namespace"] = json!(t.namespace);
    v["task"] = json!(t.task);
    Ok(Json(v).into_response())
}

#[derive(serde::Deserialize)]
pub struct DepthParams {
    group: Option<String>,
}

/// Queen's depth report (`admin.get_queue_depth`): the backlog as one group sees it, or as
/// queue mode does; for a conflating group (D61) `effectivePending` counts the partitions
/// that owe anything (each hands over one message), otherwise it is `pending`.
pub async fn depth(
    State(app): State<App>,
    Path(name): Path<String>,
    q: Result<axum::extract::Query<DepthParams>, axum::extract::rejection::QueryRejection>,
    page: Result<axum::extract::Query<Page>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let axum::extract::Query(params) = q.map_err(|e| ApiError::bad("invalid_query", e.body_text()))?;
    let page = Page::from_query(page)?;
    let group = params.group.filter(|g| !g.is_empty());
    let q = one_queue_as(&app, &name, group.clone()).await?;
    let owing = q.partitions.iter().filter(|p| p.depth > 0).count();
    // A conflating group is handed one message per partition that owes any (D61).
    let conflating = match &group {
        Some(g) => crate::conflation::policy(&app, &name, g, false).await?,
        None => false,
    };
    let (parts, about) = page.cut(q.partitions);
    let parts: Vec<_> =
        parts.iter().map(|p| json!({"partition": p.name, "pending": p.depth, "depth": p.depth})).collect();
    Ok(Json(json!({
        "queue": q.name,
        "group": group,
        "pending": q.depth,
        "partitionsPending": owing,
        "conflation": conflating,
        "effectivePending": if conflating { owing as u64 } else { q.depth },
        "depth": q.depth,
        "partitions": parts,
        "partitionPage": about,
    }))
    .into_response())
}

pub async fn delete_queue(State(app): State<App>, Path(name): Path<String>) -> Result<Response, ApiError> {
    match app.engine.delete_queue(name.clone()).await {
        Ok(()) => {
            crate::namespaces::forget(&app, &name).await?;
            Ok(Json(json!({"deleted": true, "queue": name})).into_response())
        }
        Err(e) if e.kind == baton_core::ErrorKind::NotFound => {
            Ok(Json(json!({"deleted": false, "queue": name})).into_response())
        }
        Err(e) => Err(e.into()),
    }
}

async fn all_groups(app: &App) -> Result<Vec<baton_core::GroupView>, ApiError> {
    match app.engine.query(baton_core::Query::Groups).await? {
        QueryResult::Groups(v) => Ok(v),
        _ => unreachable!("Groups answers Groups"),
    }
}

fn groups_json(gs: &[baton_core::GroupView]) -> Vec<serde_json::Value> {
    let mut names: Vec<&str> = gs.iter().map(|g| g.name.as_str()).collect();
    names.dedup();
    names
        .into_iter()
        .map(|n| {
            let parts: Vec<_> = gs.iter().filter(|g| g.name == n).collect();
            json!({
                "name": n,
                "totalLag": parts.iter().map(|g| g.lag).sum::<u64>(),
                "partitions": parts,
            })
        })
        .collect()
}

pub async fn groups(State(app): State<App>) -> Result<Response, ApiError> {
    Ok(Json(groups_json(&all_groups(&app).await?)).into_response())
}

pub async fn group(State(app): State<App>, Path(name): Path<String>) -> Result<Response, ApiError> {
    let gs: Vec<_> = all_groups(&app).await?.into_iter().filter(|g| g.name == name).collect();
    match groups_json(&gs).pop() {
        Some(g) => Ok(Json(g).into_response()),
        None => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "group_not_found",
            format!("consumer group {name} does not exist"),
        )),
    }
}

pub async fn delete_group(State(app): State<App>, Path(name): Path<String>) -> Result<Response, ApiError> {
    app.engine.delete_group(name.clone()).await?;
    crate::conflation::forget(&app, &name, None).await?;
    Ok(Json(json!({"success": true, "deleted": name})).into_response())
}

/// `DELETE /api/v1/consumer-groups/{group}/queues/{queue}` (Queen's
/// `delete_consumer_group_for_queue`): the group's cursors and leases on that queue only
/// are forgotten, so its next pop there starts as a new subscription. `deleteMetadata` is
/// accepted either way: the cursors are all the subscription Baton keeps.
pub async fn delete_group_on_queue(
    State(app): State<App>,
    Path((group, queue)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let partitions = app.engine.delete_group_on_queue(group.clone(), queue.clone()).await?;
    crate::conflation::forget(&app, &group, Some(&queue)).await?;
    Ok(Json(json!({"success": true, "consumerGroup": group, "queue": queue, "partitions": partitions})).into_response())
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct SeekBody {
    #[serde(default)]
    timestamp: Option<String>,
    #[serde(default)]
    to_end: Option<bool>,
    #[serde(default)]
    partition: Option<String>,
}

pub async fn seek(
    State(app): State<App>,
    Path((group, queue)): Path<(String, String)>,
    OptionalJson(b): OptionalJson<SeekBody>,
) -> Result<Response, ApiError> {
    // Queen's client sends no body for a seek without options: back to the start.
    let b = b.unwrap_or_default();
    let to_ts = match b.timestamp.as_deref() {
        None => None,
        Some(t) => Some(parse_iso(t).ok_or_else(|| ApiError::bad("invalid_timestamp", "timestamp must be RFC 3339"))?),
    };
    let n = app.engine.seek(group.clone(), queue.clone(), b.partition, to_ts, b.to_end.unwrap_or(false)).await?;
    Ok(Json(json!({"success": true, "consumerGroup": group, "queue": queue, "partitions": n})).into_response())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DlqParams {
    queue: Option<String>,
    limit: Option<usize>,
    offset: Option<usize>,
    consumer_group: Option<String>,
    partition: Option<String>,
}

pub async fn dlq(
    State(app): State<App>,
    q: Result<Query<DlqParams>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(q) = q.map_err(|e| ApiError::bad("invalid_query", e.body_text()))?;
    let limit = q.limit.unwrap_or(100).min(10_000);
    let skip = q.offset.unwrap_or(0);
    let rows = match app.engine.query(baton_core::Query::Dlq { queue: q.queue.clone(), limit: usize::MAX }).await? {
        QueryResult::Dlq(v) => v,
        _ => unreachable!("Dlq answers Dlq"),
    };
    let rows: Vec<_> = rows
        .into_iter()
        .filter(|d| q.consumer_group.as_ref().is_none_or(|g| *g == d.group))
        .filter(|d| q.partition.as_ref().is_none_or(|p| *p == d.partition))
        .collect();
    let total = rows.len();
    let mut messages = Vec::new();
    // A page reads at most a browse page's bytes (the first row always): 10,000 rows of
    // large dead messages were one answer of gigabytes. Held while read and sent (D88).
    let (mut mem, mut read) = (MemoryHold::none(), 0u64);
    for d in rows.into_iter().skip(skip).take(limit) {
        let len = d.span.as_ref().map_or(0, |s| s.len as u64);
        if !messages.is_empty() && read + len > crate::browse::PAGE_BYTES {
            break;
        }
        read += len;
        mem.absorb(crate::held::before_read(&app, len).await);
        let rec = d
            .span
            .as_ref()
            .and_then(|s| read_records(std::slice::from_ref(s), |o| o == d.offset).ok())
            .and_then(|mut v| v.pop());
        messages.push(json!({
            "id": baton_core::message_uuid(d.part, d.offset).to_string(),
            "messageId": baton_core::message_uuid(d.part, d.offset).to_string(),
            "partitionId": partition_uuid(d.part).to_string(),
            "transactionId": rec.as_ref().and_then(|r| r.txid.clone()),
            "traceId": rec.as_ref().and_then(|r| r.trace.clone()),
            "consumerGroup": d.group,
            "errorMessage": d.error,
            "originalCreatedAt": rec.as_ref().map(|r| iso_ms(r.timestamp_ms)),
            "movedToDlqAt": iso_us(d.ts),
            "queueName": d.queue,
            "partitionName": d.partition,
            "offset": d.offset,
            "data": payload_json(rec.as_ref().and_then(|r| r.value.as_deref())),
        }));
    }
    let body = json!({"messages": messages, "total": total, "limit": limit, "offset": skip}).to_string();
    Ok(crate::held::json(&app, body.into_bytes(), mem))
}

/// The offset of the newest message `txid` of `part`: the planner names what to read, a
/// blocking thread reads it (at most `max_message_lookups` at once), so a lookup never
/// stalls the planner however large the partition; the caller's next step checks it again.
async fn locate(app: &App, part: baton_core::PartId, txid: &str) -> Result<u64, ApiError> {
    let _permit = app.lookups.try_acquire().map_err(|_| {
        ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_lookups",
            format!("{} message lookups are running (--max-message-lookups); try again", app.cfg.max_message_lookups),
        )
    })?;
    let q = baton_core::Query::MessageScan { part, txid: txid.to_string() };
    let (scan, h) = match app.engine.query(q).await? {
        QueryResult::MessageScan(s) => s,
        _ => unreachable!("MessageScan answers MessageScan"),
    }
    .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, "partition_not_found", "no such partition"))?;
    tokio::task::spawn_blocking(move || scan.find(h))
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "read_failed", e.to_string()))?
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "read_failed", e.to_string()))?
        .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, "message_not_found", "no such message"))
}

/// [`locate`] of a message addressed as the routes name it: the partition's id as text.
async fn locate_by_name(app: &App, pid: &str, txid: &str) -> Result<(baton_core::PartId, u64), ApiError> {
    let part = parse_partition_uuid(pid)
        .ok_or_else(|| ApiError::bad("invalid_partition_id", format!("{pid:?} is not a Baton partition id")))?;
    Ok((part, locate(app, part, txid).await?))
}

/// `DELETE /api/v1/messages/{partitionId}/{transactionId}` (Queen's `delete_message`): no
/// consumer over HTTP is given the message afterwards (crates/core/src/remove.rs). Durable
/// before it is answered; deleting it again answers the same.
pub async fn delete_message(
    State(app): State<App>,
    Path((pid, txid)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let (part, offset) = locate_by_name(&app, &pid, &txid).await?;
    let offset = app.engine.delete_message(part, txid.clone(), offset).await?;
    Ok(Json(json!({"success": true, "deleted": true, "partitionId": pid, "transactionId": txid, "offset": offset}))
        .into_response())
}

/// Queen's `admin.retry_message`: every group that dead-lettered the message gets it again
/// (D66). The client posts no body.
pub async fn retry_message(
    State(app): State<App>,
    Path((pid, txid)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let (part, offset) = locate_by_name(&app, &pid, &txid).await?;
    let groups = app.engine.retry_message(part, txid.clone(), offset).await?;
    Ok(Json(json!({"success": true, "retried": true, "partitionId": pid, "transactionId": txid, "offset": offset,
        "consumerGroups": groups}))
    .into_response())
}

pub async fn message(State(app): State<App>, Path((pid, txid)): Path<(String, String)>) -> Result<Response, ApiError> {
    let (part, offset) = locate_by_name(&app, &pid, &txid).await?;
    let found = match app.engine.query(baton_core::Query::Message { part, txid: txid.clone(), offset }).await? {
        QueryResult::Message(m) => m,
        _ => unreachable!("Message answers Message"),
    };
    let not_found = || ApiError::new(StatusCode::NOT_FOUND, "message_not_found", "no such message");
    let (queue, partition, span, groups) = found.ok_or_else(not_found)?;
    let span = span.ok_or_else(not_found)?;
    let rec = read_records(std::slice::from_ref(&span), |_| true)
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "read_failed", e))?
        .into_iter()
        // A record without a transaction id (a Kafka producer's) is named
        // `<partition>-<offset>`, as a pop shows it and the index hashed it.
        .find(|r| match &r.txid {
            Some(t) => *t == txid,
            None => txid == format!("{partition}-{}", r.offset),
        })
        .ok_or_else(not_found)?;
    Ok(Json(json!({
        "id": baton_core::message_uuid(part, rec.offset).to_string(),
        "transactionId": txid, "traceId": rec.trace, "queue": queue, "partition": partition, "partitionId": pid,
        "offset": rec.offset, "createdAt": iso_ms(rec.timestamp_ms), "data": payload_json(rec.value.as_deref()),
        "consumerGroups": groups.iter().map(|g| {
            let mut v = serde_json::to_value(g).unwrap_or_default();
            v["leaseExpiresAt"] = g.lease_expires.map(iso_us).into();
            v
        }).collect::<Vec<_>>(),
    }))
    .into_response())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionBody {
    subscription_timestamp: String,
}

/// Move a group to a time on every queue it reads (Queen's update of a subscription timestamp).
pub async fn subscription(
    State(app): State<App>,
    Path(group): Path<String>,
    JsonBody(b): JsonBody<SubscriptionBody>,
) -> Result<Response, ApiError> {
    let ts = parse_iso(&b.subscription_timestamp)
        .ok_or_else(|| ApiError::bad("invalid_timestamp", "subscriptionTimestamp must be RFC 3339"))?;
    let mut queues: Vec<String> =
        all_groups(&app).await?.into_iter().filter(|g| g.name == group).map(|g| g.queue).collect();
    queues.sort();
    queues.dedup();
    if queues.is_empty() {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "group_not_found",
            format!("consumer group {group} does not exist"),
        ));
    }
    let mut partitions = 0;
    for q in &queues {
        partitions += app.engine.seek(group.clone(), q.clone(), None, Some(ts), false).await?;
    }
    Ok(Json(json!({"success": true, "consumerGroup": group, "queues": queues, "partitions": partitions}))
        .into_response())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LaggingParams {
    min_lag_seconds: Option<u64>,
}

/// Partitions read at once for their oldest unsettled message's time.
const LAG_FETCH_CHUNK: usize = 256;

/// Queen's lagging view (`admin.get_lagging_consumers(n)`): the groups with a partition
/// whose oldest message the group has not settled is at least `minLagSeconds` old (60 by
/// default, as the client's), most behind first. Each group lists only such partitions,
/// with `timeLagSeconds` and `oldestUnconsumedAt`; `totalLag` counts their messages and
/// `maxTimeLag` is the largest age. The age is read from the stored record at the group's
/// cursor: one batch per partition that owes anything.
pub async fn lagging(
    State(app): State<App>,
    q: Result<Query<LaggingParams>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(p) = q.map_err(|e| ApiError::bad("invalid_query", e.body_text()))?;
    let min = p.min_lag_seconds.unwrap_or(60);
    let owing: Vec<_> = all_groups(&app).await?.into_iter().filter(|g| g.lag > 0).collect();
    let mut oldest: Vec<Option<i64>> = Vec::with_capacity(owing.len());
    for chunk in owing.chunks(LAG_FETCH_CHUNK) {
        let reqs = chunk
            .iter()
            .map(|g| baton_core::FetchRequest {
                queue: g.queue.clone(),
                partition: g.partition.clone(),
                offset: g.offset,
                // The first batch at the cursor is always given, whatever the limit.
                max_bytes: 1,
                committed: true,
            })
            .collect();
        for (g, r) in chunk.iter().zip(app.engine.fetch(reqs).await?) {
            let recs = read_records(&r.spans, |o| o >= g.offset && o < r.last_stable)
                .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "read_failed", e))?;
            oldest.push(recs.iter().map(|m| m.timestamp_ms).min());
        }
    }
    let now_ms = (baton_core::wall_micros() / 1000) as i64;
    // Per group: its lagging partitions, their messages, the largest age.
    let mut by_group: std::collections::BTreeMap<&str, (Vec<serde_json::Value>, u64, u64)> = Default::default();
    for (g, ts) in owing.iter().zip(oldest) {
        let age = ts.map(|t| (now_ms - t).max(0) as u64 / 1000).unwrap_or(0);
        if age < min {
            continue;
        }
        let mut v = json!(g);
        v["timeLagSeconds"] = age.into();
        v["oldestUnconsumedAt"] = ts.map(iso_ms).into();
        let (parts, lag, max) = by_group.entry(g.name.as_str()).or_default();
        parts.push(v);
        *lag += g.lag;
        *max = (*max).max(age);
    }
    let mut out: Vec<_> = by_group.into_iter().collect();
    out.sort_by_key(|(_, (_, lag, max))| std::cmp::Reverse((*max, *lag)));
    let out: Vec<_> = out
        .into_iter()
        .map(|(name, (parts, lag, max))| json!({"name": name, "totalLag": lag, "maxTimeLag": max, "partitions": parts}))
        .collect();
    Ok(Json(out).into_response())
}
