//! Pop (with long poll), ack and lease extend.
//!
//! A long poll waits on the queue's notifier, which the engine fires after a
//! push to that queue is durable or a lease is released; it never spins on a
//! timer. Message bytes are read and decoded here, off the planner.

use crate::body::{JsonBody, OptionalJson};
use crate::error::ApiError;
use crate::payload::payload_json;
use crate::render::{iso_ms, iso_us, parse_iso, read_records};
use crate::App;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use baton_core::request_memory::MemoryHold;
use baton_core::{
    message_uuid, parse_lease_uuid, parse_partition_uuid, partition_uuid, AckItem, AckStatus, ErrorKind, PopRequest,
    PopResult, QUEUE_MODE,
};
use serde::Deserialize;
use serde_json::json;
use std::time::Duration;

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct PopParams {
    batch: Option<u32>,
    wait: Option<bool>,
    timeout: Option<u64>,
    consumer_group: Option<String>,
    subscription_mode: Option<String>,
    subscription_from: Option<String>,
    auto_ack: Option<bool>,
    lease_seconds: Option<u64>,
    /// Queen's multi-partition pop: up to this many partitions for one answer (D60).
    partitions: Option<u32>,
    /// Queen's conflation: this group's pops deliver a partition's newest message only (D61).
    conflation: Option<bool>,
}

/// Most partitions one pop claims (`partitions=`).
pub const MAX_POP_PARTITIONS: u32 = 64;

pub async fn pop_queue(
    State(app): State<App>,
    Path(queue): Path<String>,
    q: Result<Query<PopParams>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    pop(app, queue, None, q).await
}

pub async fn pop_partition(
    State(app): State<App>,
    Path((queue, partition)): Path<(String, String)>,
    q: Result<Query<PopParams>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    pop(app, queue, Some(partition), q).await
}

async fn pop(
    app: App,
    queue: String,
    partition: Option<String>,
    q: Result<Query<PopParams>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(q) = q.map_err(|e| ApiError::bad("invalid_query", e.body_text()))?;
    let (req, wait, deadline) = pop_request(&app, queue, partition, &q)?;
    let wide = q.width()?;
    q.check_conflation(&req)?;
    let conflating = match &req.group {
        Some(g) => crate::conflation::policy(&app, &req.queue, g, q.declares_conflation()).await?,
        None => false,
    };
    refuse_conflating_auto_ack(conflating, &req)?;
    let notify = app.engine.pop_notifier(&req.queue, req.group.as_deref().unwrap_or(QUEUE_MODE));
    loop {
        let woken = notify.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        if conflating {
            if let Some(body) = crate::conflation::pop(&app, &req, &[]).await? {
                return Ok(json_body(body));
            }
        } else if let Some(answer) = attempt_wide(&app, &req, &[], wide).await? {
            return Ok(answer);
        }
        if !wait || tokio::time::Instant::now() >= deadline {
            // Queen's client needs the policy's echo on an empty pop too.
            if conflating {
                return Ok(Json(json!({"success": true, "messages": [], "conflation": true})).into_response());
            }
            return Ok(StatusCode::NO_CONTENT.into_response());
        }
        tokio::select! {
            _ = woken => {}
            // One last look at the deadline: a lease may have expired without a wake-up reaching us.
            _ = tokio::time::sleep_until(deadline) => {}
            _ = app.shutdown.triggered() => return Ok(StatusCode::NO_CONTENT.into_response()),
        }
    }
}

impl PopParams {
    /// How many partitions one answer may claim (`partitions=`, D60).
    pub(crate) fn width(&self) -> Result<u32, ApiError> {
        match self.partitions {
            None => Ok(1),
            Some(n @ 1..=MAX_POP_PARTITIONS) => Ok(n),
            Some(n) => {
                Err(ApiError::bad("invalid_partitions", format!("partitions is 1 to {MAX_POP_PARTITIONS}, not {n}")))
            }
        }
    }

    pub(crate) fn declares_conflation(&self) -> bool {
        self.conflation == Some(true)
    }

    /// A pop that declares conflation names a group and does not settle at delivery.
    pub(crate) fn check_conflation(&self, req: &PopRequest) -> Result<(), ApiError> {
        if self.declares_conflation() && req.group.is_none() {
            return Err(ApiError::bad(
                "conflation_needs_group",
                "conflation is a consumer group's policy: name consumerGroup",
            ));
        }
        refuse_conflating_auto_ack(self.declares_conflation(), req)
    }
}

/// A conflating group (declared now or registered before) cannot pop with autoAck.
pub(crate) fn refuse_conflating_auto_ack(conflating: bool, req: &PopRequest) -> Result<(), ApiError> {
    if conflating && req.auto_ack {
        return Err(ApiError::bad(
            "conflation_auto_ack",
            "a conflating group cannot settle messages at delivery (autoAck)",
        ));
    }
    Ok(())
}

/// The pop a query asks for, whether it waits, and until when.
pub(crate) fn pop_request(
    app: &App,
    queue: String,
    partition: Option<String>,
    q: &PopParams,
) -> Result<(PopRequest, bool, tokio::time::Instant), ApiError> {
    crate::check_seconds("invalid_lease_seconds", "leaseSeconds", q.lease_seconds)?;
    let batch = q.batch.unwrap_or(app.cfg.default_batch);
    if batch == 0 || batch > 10_000 {
        return Err(ApiError::bad("invalid_batch", "batch must be between 1 and 10000"));
    }
    let from_ts = match (q.subscription_from.as_deref(), q.subscription_mode.as_deref()) {
        (Some("now"), _) | (None, Some("new" | "new-only")) => Some(baton_core::wall_micros()),
        (Some(ts), _) => Some(parse_subscription_from(ts).ok_or_else(|| {
            ApiError::bad(
                "invalid_subscription_from",
                "subscriptionFrom is 'now' or an ISO-8601 time (RFC 3339; without an offset, UTC)",
            )
        })?),
        (None, None | Some("all" | "from_beginning" | "")) => None,
        (None, Some(m)) => {
            return Err(ApiError::bad("invalid_subscription_mode", format!("unknown subscriptionMode {m}")))
        }
    };
    let req = PopRequest {
        queue,
        partition,
        group: q.consumer_group.clone().filter(|g| !g.is_empty() && g != QUEUE_MODE),
        batch,
        lease_secs: q.lease_seconds,
        from_ts,
        auto_ack: q.auto_ack.unwrap_or(false),
        conflate: false,
    };
    let timeout = Duration::from_millis(q.timeout.unwrap_or(30_000).min(app.cfg.max_wait_ms));
    Ok((req, q.wait.unwrap_or(false), tokio::time::Instant::now() + timeout))
}

/// `subscriptionFrom`'s time: RFC 3339, or an ISO-8601 date or date-time without an offset
/// (Python's `datetime.utcnow().isoformat()`, a date alone) read as UTC, as the client's
/// own `changed_since` reads a naive time; refused, the client's pop would silently answer
/// nothing. Microseconds since the epoch.
fn parse_subscription_from(ts: &str) -> Option<u64> {
    if let Some(us) = parse_iso(ts) {
        return Some(us);
    }
    let ts = ts.trim();
    let naive = match ts.len() {
        10 => format!("{ts}T00:00:00Z"),
        19.. if matches!(ts.as_bytes()[10], b'T' | b't' | b' ') => format!("{}T{}Z", &ts[..10], &ts[11..]),
        _ => return None,
    };
    parse_iso(&naive)
}

fn json_body(body: Vec<u8>) -> Response {
    ([(axum::http::header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// Queen's `partitions=N` (D60): up to `n` partitions for one answer, sharing the batch
/// budget. Baton's leases are per partition, so each partition's messages carry their own
/// `leaseId` (Queen's client acks and renews by the messages' lease ids); the answer's
/// top-level lease is the first partition's, and `partitionsClaimed` says how many. The
/// first partition comes from the first of `queues` that has something (one planner step,
/// a namespace or task pop), or from `req.queue` when `queues` is empty; the others from
/// the same queue. `None`: nothing (a queue that does not exist yet has nothing: a
/// consumer may start before it).
pub(crate) async fn attempt_wide(
    app: &App,
    req: &PopRequest,
    queues: &[String],
    n: u32,
) -> Result<Option<Response>, ApiError> {
    let Some((first, queue, mut mem)) = attempt_body(app, req, queues).await? else { return Ok(None) };
    if n <= 1 || req.partition.is_some() {
        return Ok(Some(crate::held::json(app, first, mem)));
    }
    let bad = |e: serde_json::Error| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "render_failed", e.to_string());
    let mut answer: serde_json::Value = serde_json::from_slice(&first).map_err(bad)?;
    let mut claimed = 1u32;
    let mut taken = answer["messages"].as_array().map_or(0, Vec::len) as u32;
    let mut more = req.clone();
    more.queue = queue;
    while claimed < n && taken < req.batch {
        more.batch = req.batch - taken;
        let Some((next, _, held)) = attempt_body(app, &more, &[]).await? else { break };
        mem.absorb(held);
        let next: serde_json::Value = serde_json::from_slice(&next).map_err(bad)?;
        let msgs = next["messages"].as_array().cloned().unwrap_or_default();
        taken += msgs.len() as u32;
        claimed += 1;
        if let Some(all) = answer["messages"].as_array_mut() {
            all.extend(msgs);
        }
    }
    answer["partitionsClaimed"] = claimed.into();
    let body = serde_json::to_vec(&answer).map_err(bad)?;
    Ok(Some(crate::held::json(app, body, mem)))
}

/// One pop without waiting, as the JSON body bytes, the queue it came from, and the
/// request memory held for it (D88).
async fn attempt_body(
    app: &App,
    req: &PopRequest,
    queues: &[String],
) -> Result<Option<(Vec<u8>, String, MemoryHold)>, ApiError> {
    // Pops that leased only records compaction had dropped, settled and tried again (D50).
    let mut compacted_away = 0;
    loop {
        let popped = match queues {
            [] => app.engine.pop(req.clone()).await,
            _ => app.engine.pop_any(req.clone(), queues.to_vec()).await,
        };
        match popped {
            Ok(Some(r)) => {
                let lease = r.lease.map(|l| (l, r.part, r.group.clone(), r.messages.first().map(|m| m.0)));
                let (group, queue) = (r.group.clone(), r.queue.clone());
                let mem = crate::held::before_read(app, r.spans.iter().map(|s| s.len as u64).sum()).await;
                match (render_pop(r), lease) {
                    (Err(e), Some(lease)) => {
                        release(app, lease, &e).await;
                        return Err(e);
                    }
                    (Ok((answer, gone, shown)), Some((l, part, ..))) if !gone.is_empty() => {
                        settle_compacted(app, group, l, part, gone).await;
                        compacted_away += 1;
                        if shown == 0 && compacted_away < MAX_COMPACTED_POPS {
                            continue;
                        }
                        return Ok(Some((answer, queue, mem)));
                    }
                    (answer, _) => return answer.map(|(a, ..)| Some((a, queue, mem))),
                }
            }
            Ok(None) => return Ok(None),
            Err(e) if e.kind == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        }
    }
}

/// Pops in a row that may find only records compaction dropped before one answers (empty).
const MAX_COMPACTED_POPS: u32 = 16;

/// Leased offsets whose records compaction dropped (an older record of a key that has a newer
/// one, D50): nobody can be given them, so they are settled as done under the lease now,
/// instead of expiring and being retried into the dead-letter queue. Best effort: a failure
/// leaves them to the lease's expiry, as before.
async fn settle_compacted(
    app: &App,
    group: String,
    lease: baton_core::LeaseId,
    part: baton_core::PartId,
    gone: Vec<u64>,
) {
    let items = gone
        .into_iter()
        .map(|o| AckItem {
            part,
            txid: None,
            offset: Some(o),
            lease: Some(lease),
            status: AckStatus::Completed,
            error: None,
        })
        .collect();
    let group = (group != QUEUE_MODE).then_some(group);
    if let Err(e) = app.engine.ack(group, items).await {
        tracing::debug!(error = %e, "could not settle offsets compaction dropped; they expire with their lease");
    }
}

/// The planner leased messages this answer could not show (their stored
/// bytes could not be read): release the lease, so they are delivered again
/// now rather than when it expires, and without charging their retry budget
/// (`retry`): the failure is the server's, not the consumer's. An autoAck pop
/// has no lease; its messages stay settled.
async fn release(app: &App, lease: (baton_core::LeaseId, baton_core::PartId, String, Option<u64>), why: &ApiError) {
    let (lease, part, group, Some(offset)) = lease else { return };
    let item = AckItem {
        part,
        txid: None,
        offset: Some(offset),
        lease: Some(lease),
        status: AckStatus::Retry,
        error: Some(truncate(&why.message, app.cfg.max_ack_error_bytes).to_string()),
    };
    let group = Some(group).filter(|g| g != QUEUE_MODE);
    match app.engine.ack(group, vec![item]).await {
        Ok(r) if r.iter().all(|x| x.is_ok()) => {
            tracing::warn!(error = %why.message, "a pop could not read its messages; its lease is released")
        }
        other => {
            tracing::warn!(error = %why.message, release = ?other, "a pop could not read its messages nor release its lease")
        }
    }
}

/// A delivered message as Queen's client reads it; serialized from borrowed
/// fields (a JSON tree per message was the pop path's main cost).
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct PopMessage<'a> {
    id: uuid::Uuid,
    transaction_id: std::borrow::Cow<'a, str>,
    trace_id: Option<&'a str>,
    data: Box<serde_json::value::RawValue>,
    created_at: String,
    partition_id: uuid::Uuid,
    partition: &'a str,
    queue: &'a str,
    lease_id: Option<uuid::Uuid>,
    consumer_group: &'a str,
    retry_count: u32,
    delivery_attempt: u32,
    offset: u64,
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct PopAnswer<'a> {
    success: bool,
    queue: &'a str,
    partition: &'a str,
    partition_id: uuid::Uuid,
    lease_id: Option<uuid::Uuid>,
    lease_expires_at: Option<String>,
    consumer_group: &'a str,
    partitions_claimed: u32,
    messages: Vec<PopMessage<'a>>,
}

/// The answer, the leased offsets with no record (compaction dropped them, D50), and how
/// many messages it shows.
pub(crate) fn render_pop(r: PopResult) -> Result<(Vec<u8>, Vec<u64>, usize), ApiError> {
    let want: std::collections::HashMap<u64, u32> = r.messages.iter().copied().collect();
    let recs = read_records(&r.spans, |o| want.contains_key(&o))
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "read_failed", e))?;
    let gone: Vec<u64> = if recs.len() < want.len() {
        let shown: std::collections::HashSet<u64> = recs.iter().map(|m| m.offset).collect();
        let mut g: Vec<u64> = want.keys().copied().filter(|o| !shown.contains(o)).collect();
        g.sort_unstable();
        g
    } else {
        Vec::new()
    };
    let shown = recs.len();
    let pid = partition_uuid(r.part);
    let lease = r.lease.map(baton_core::lease_uuid);
    // Records of one batch share a timestamp: format it once.
    let mut last_ts: Option<(i64, String)> = None;
    let messages: Vec<PopMessage> = recs
        .iter()
        .map(|m| {
            let attempt = want.get(&m.offset).copied().unwrap_or(1);
            let created_at = match &last_ts {
                Some((t, s)) if *t == m.timestamp_ms => s.clone(),
                _ => {
                    let s = iso_ms(m.timestamp_ms);
                    last_ts = Some((m.timestamp_ms, s.clone()));
                    s
                }
            };
            PopMessage {
                id: message_uuid(r.part, m.offset),
                transaction_id: match &m.txid {
                    Some(t) => std::borrow::Cow::Borrowed(t.as_str()),
                    None => std::borrow::Cow::Owned(format!("{}-{}", r.partition, m.offset)),
                },
                trace_id: m.trace.as_deref(),
                data: payload_json(m.value.as_deref()),
                created_at,
                partition_id: pid,
                partition: &r.partition,
                queue: &r.queue,
                lease_id: lease,
                consumer_group: &r.group,
                retry_count: attempt - 1,
                delivery_attempt: attempt,
                offset: m.offset,
            }
        })
        .collect();
    let body = serde_json::to_vec(&PopAnswer {
        success: true,
        queue: &r.queue,
        partition: &r.partition,
        partition_id: pid,
        lease_id: lease,
        lease_expires_at: r.lease.map(|_| iso_us(r.lease_expires)),
        consumer_group: &r.group,
        partitions_claimed: 1,
        messages,
    })
    .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "render_failed", e.to_string()))?;
    Ok((body, gone, shown))
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct AckBody {
    pub(crate) transaction_id: Option<String>,
    partition_id: Option<String>,
    offset: Option<u64>,
    lease_id: Option<String>,
    status: Option<String>,
    error: Option<String>,
    pub(crate) consumer_group: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AckBatchBody {
    pub(crate) acknowledgments: Vec<AckBody>,
    consumer_group: Option<String>,
}

/// `max_error` bounds the kept `error` text (`--max-ack-error-bytes`).
pub(crate) fn ack_item(i: usize, a: &AckBody, max_error: usize) -> Result<AckItem, ApiError> {
    let pid = a
        .partition_id
        .as_deref()
        .ok_or_else(|| ApiError::bad("missing_field", format!("ack {i}: partitionId is required")))?;
    let part = parse_partition_uuid(pid).ok_or_else(|| {
        ApiError::bad("invalid_partition_id", format!("ack {i}: partitionId {pid:?} is not a Baton partition id"))
    })?;
    let lease = match a.lease_id.as_deref() {
        None | Some("") => None,
        Some(l) => Some(parse_lease_uuid(l).ok_or_else(|| {
            ApiError::bad("invalid_lease_id", format!("ack {i}: leaseId {l:?} is not a Baton lease id"))
        })?),
    };
    if a.transaction_id.is_none() && a.offset.is_none() {
        return Err(ApiError::bad("missing_field", format!("ack {i}: transactionId (or offset) is required")));
    }
    let status = match a.status.as_deref() {
        None => AckStatus::Completed,
        Some(s) => AckStatus::parse(s)
            .ok_or_else(|| ApiError::bad("invalid_status", format!("ack {i}: unknown status {s:?}")))?,
    };
    let error = a.error.as_deref().map(|e| truncate(e, max_error).to_string());
    Ok(AckItem { part, txid: a.transaction_id.clone(), offset: a.offset, lease, status, error })
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character
/// boundary. An ack's error text is kept (DLQ view) only to explain a failure:
/// cutting it is better than refusing the ack, which would leave the message
/// leased and redelivered because its consumer's exception text was long.
pub(crate) fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    crate::metrics::ACK_ERROR_CUT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// One ack's answer (Queen reads `success` and `error`).
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AckAnswer {
    index: usize,
    transaction_id: Option<String>,
    success: bool,
    error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<&'static str>,
}

async fn do_ack(app: &App, group: Option<String>, acks: &[AckBody]) -> Result<Vec<AckAnswer>, ApiError> {
    if acks.is_empty() {
        return Err(ApiError::bad("empty_items", "acknowledgments must hold at least one item"));
    }
    let max_error = app.cfg.max_ack_error_bytes;
    let items = acks.iter().enumerate().map(|(i, a)| ack_item(i, a, max_error)).collect::<Result<Vec<_>, _>>()?;
    let group = group.filter(|g| !g.is_empty() && g != QUEUE_MODE);
    let res = app.engine.ack(group, items).await?;
    Ok(res
        .into_iter()
        .zip(acks)
        .enumerate()
        .map(|(index, (r, a))| {
            let transaction_id = a.transaction_id.clone();
            match r {
                Ok(()) => AckAnswer { index, transaction_id, success: true, error: None, code: None },
                Err(e) => {
                    AckAnswer { index, transaction_id, success: false, error: Some(e.message), code: Some(e.code) }
                }
            }
        })
        .collect())
}

pub async fn ack_one(State(app): State<App>, JsonBody(body): JsonBody<AckBody>) -> Result<Response, ApiError> {
    let group = body.consumer_group.clone();
    let out = do_ack(&app, group, std::slice::from_ref(&body)).await?;
    Ok(Json(out).into_response())
}

pub async fn ack_batch(State(app): State<App>, JsonBody(body): JsonBody<AckBatchBody>) -> Result<Response, ApiError> {
    let group =
        body.consumer_group.clone().or_else(|| body.acknowledgments.first().and_then(|a| a.consumer_group.clone()));
    let out = do_ack(&app, group, &body.acknowledgments).await?;
    Ok(Json(out).into_response())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtendBody {
    seconds: Option<u64>,
    lease_seconds: Option<u64>,
}

pub async fn extend(
    State(app): State<App>,
    Path(lease): Path<String>,
    OptionalJson(body): OptionalJson<ExtendBody>,
) -> Result<Response, ApiError> {
    let id = parse_lease_uuid(&lease)
        .ok_or_else(|| ApiError::bad("invalid_lease_id", format!("{lease:?} is not a Baton lease id")))?;
    let secs = body.and_then(|b| b.seconds.or(b.lease_seconds));
    crate::check_seconds("invalid_lease_seconds", "seconds", secs)?;
    match app.engine.extend(id, secs).await {
        Ok(exp) => {
            Ok(Json(json!({"leaseId": lease, "success": true, "renewed": 1, "newExpiresAt": iso_us(exp)}))
                .into_response())
        }
        Err(e) if e.kind == ErrorKind::Unavailable => Err(e.into()),
        Err(e) => {
            Ok(Json(json!({"leaseId": lease, "success": false, "error": e.message, "code": e.code})).into_response())
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn truncate_keeps_whole_characters() {
        assert_eq!(super::truncate("abc", 3), "abc");
        assert_eq!(super::truncate("abcd", 3), "abc");
        assert_eq!(super::truncate("aé", 2), "a", "é is two bytes: not cut in half");
        assert_eq!(super::truncate("", 0), "");
    }

    #[test]
    fn subscription_from_takes_iso_times_without_an_offset_as_utc() {
        let at = |s| super::parse_subscription_from(s);
        let utc = at("2026-01-02T03:04:05.5Z").unwrap();
        assert_eq!(at("2026-01-02T03:04:05.500000"), Some(utc));
        assert_eq!(at("2026-01-02 03:04:05.5"), Some(utc));
        assert_eq!(at("2026-01-02T05:04:05.5+02:00"), Some(utc));
        assert_eq!(at("2026-01-02"), at("2026-01-02T00:00:00Z"));
        for bad in ["", "now!", "2026-01-02T", "2026-13-02", "1700000000000", "2026-01-02T03:04:05+", "2026-01-02Té"] {
            assert_eq!(at(bad), None, "{bad:?}");
        }
    }
}
