//! Queen's streaming SDK's server side (issue 16 item 3, D59): `POST /streams/v1/queries`
//! (register a query; a changed definition is 409 unless `reset`), `/streams/v1/cycle`
//! (one cycle: the new state, the sink pushes and the source acks) and
//! `/streams/v1/state/get`. The SDK computes (map, windows, reduce, gate) in the client;
//! the broker keeps the state and makes each cycle ONE transaction, so a stream is exactly
//! once across a broker kill: a cycle is in the log whole or not at all.
//!
//! State rows and query rows live in the reserved KV namespace [`NS`]: `q\u{1e}<name>` (the
//! query), `i\u{1e}<id>` (the id is live), `s\u{1e}<id>\u{1e}<partition id>\u{1e}<key>` (a
//! state row). A reset gives the query a new id, so its old state is unreachable at once
//! and a runner still cycling under the old id is refused (every cycle checks its id row
//! in the same entry). Owns these routes and rows; must never let a cycle commit part of
//! itself, read more than [`MAX_STATE_ROWS`] rows for one call, or take more than
//! [`MAX_STATE_OPS`] state operations in one cycle.

use crate::body::{parse, JsonBody, RawBody};
use crate::error::ApiError;
use crate::push::{build_groups, PushItem};
use crate::App;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use baton_core::kv::{KvOp, KvResult, KvRow};
use baton_core::{
    parse_lease_uuid, parse_partition_uuid, AckItem, AckStatus, Query, QueryResult, TxnAck, TxnOutcome, TxnRequest,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

/// The KV namespace of streams' queries and state (written only by these routes).
pub const NS: &str = "queen-streams";
/// Most state rows one `state/get` answers (413 `too_many_state_rows` past it).
pub const MAX_STATE_ROWS: usize = 50_000;
/// Most state operations one cycle carries, and keys one `state/get` names.
pub const MAX_STATE_OPS: usize = 10_000;
/// Rows read a planner step while paging state.
const PAGE: usize = 1_000;
/// Longest query name or state key, bytes (a state row's key also holds two ids).
const MAX_NAME: usize = 256;
const MAX_KEY: usize = 900;
const SEP: char = '\u{1e}';

fn bad(code: &'static str, m: impl Into<String>) -> ApiError {
    ApiError::bad(code, m)
}

fn query_key(name: &str) -> String {
    format!("q{SEP}{name}")
}
fn id_key(id: &str) -> String {
    format!("i{SEP}{id}")
}
/// A reset query's old id whose state rows are still to be deleted: written in the reset's
/// own entry, deleted once the rows are, so a deletion cut short (the client hung up, the
/// broker died) is finished by the next sweep instead of leaving rows nothing can reach.
fn gone_key(id: &str) -> String {
    format!("d{SEP}{id}")
}
fn state_prefix(id: &str, partition: &str) -> String {
    format!("s{SEP}{id}{SEP}{partition}{SEP}")
}

async fn kv(app: &App, ops: Vec<KvOp>) -> Result<Result<Vec<KvResult>, String>, ApiError> {
    Ok(app.engine.kv(ops).await?.map_err(|r| format!("{r:?}")))
}

async fn get(app: &App, key: String) -> Result<Option<KvRow>, ApiError> {
    match kv(app, vec![KvOp::Get { ns: NS.into(), key }]).await?.ok().and_then(|mut r| r.pop()) {
        Some(KvResult::Found(row)) => Ok(row),
        _ => Ok(None),
    }
}

fn check_name(what: &str, s: &str, max: usize) -> Result<(), ApiError> {
    if s.is_empty() || s.len() > max || s.chars().any(char::is_control) {
        return Err(bad("invalid_name", format!("{what} is 1 to {max} bytes without control characters")));
    }
    Ok(())
}

/// A query id: the UUID this module minted (anything else names nothing).
fn check_id(id: &str) -> Result<(), ApiError> {
    uuid::Uuid::parse_str(id).map(|_| ()).map_err(|_| bad("invalid_query_id", format!("{id:?} is not a query id")))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegisterBody {
    name: String,
    source_queue: String,
    config_hash: String,
    #[serde(default)]
    reset: bool,
    #[serde(default)]
    sink_queue: Option<String>,
}

/// `POST /streams/v1/queries`: the query's id, minted on first sight. The same name with
/// another `config_hash` is 409 unless `reset`, which gives it a new id (empty state).
pub async fn register(State(app): State<App>, JsonBody(b): JsonBody<RegisterBody>) -> Result<Response, ApiError> {
    check_name("name", &b.name, MAX_NAME)?;
    check_name("source_queue", &b.source_queue, MAX_NAME)?;
    check_name("config_hash", &b.config_hash, MAX_NAME)?;
    if let Some(s) = &b.sink_queue {
        check_name("sink_queue", s, MAX_NAME)?;
    }
    // Two tries: a concurrent first registration of the same name wins the first.
    for _ in 0..2 {
        let row = get(&app, query_key(&b.name)).await?;
        let current: Option<Value> = row.as_ref().and_then(|r| serde_json::from_str(r.value.as_deref()?).ok());
        let old_id = current.as_ref().and_then(|c| c["id"].as_str().map(str::to_string));
        if let (Some(c), Some(id)) = (&current, &old_id) {
            if !b.reset {
                if c["configHash"].as_str() != Some(b.config_hash.as_str()) {
                    let error = format!(
                        "config_hash mismatch for query {:?}: registered {}, given {}",
                        b.name, c["configHash"], b.config_hash
                    );
                    return Ok((StatusCode::CONFLICT, Json(json!({"success": false, "error": error}))).into_response());
                }
                return Ok(Json(
                    json!({"success": true, "query_id": id, "name": b.name, "fresh": false, "reset": false}),
                )
                .into_response());
            }
        }
        let id = uuid::Uuid::now_v7().to_string();
        let value = json!({"id": id, "name": b.name, "sourceQueue": b.source_queue, "sinkQueue": b.sink_queue,
            "configHash": b.config_hash, "createdAt": crate::render::iso_us(baton_core::wall_micros())})
        .to_string();
        let key = query_key(&b.name);
        let mut ops = vec![match &row {
            Some(r) => KvOp::Put { ns: NS.into(), key, value, ttl_secs: None, expect: Some(r.version), required: true },
            None => KvOp::PutIfAbsent { ns: NS.into(), key, value, ttl_secs: None, required: true },
        }];
        ops.push(KvOp::Put {
            ns: NS.into(),
            key: id_key(&id),
            value: json!(b.name).to_string(),
            ttl_secs: None,
            expect: None,
            required: false,
        });
        if let Some(old) = &old_id {
            ops.push(KvOp::Delete { ns: NS.into(), key: id_key(old), expect: None, required: false });
            ops.push(KvOp::Put {
                ns: NS.into(),
                key: gone_key(old),
                value: "true".into(),
                ttl_secs: None,
                expect: None,
                required: false,
            });
        }
        if kv(&app, ops).await?.is_err() {
            continue;
        }
        // Off the request: a client that hangs up does not cut the deletion short.
        tokio::spawn(sweep(app.clone()));
        return Ok(Json(
            json!({"success": true, "query_id": id, "name": b.name, "fresh": true, "reset": old_id.is_some()}),
        )
        .into_response());
    }
    Err(ApiError::new(StatusCode::CONFLICT, "concurrent_register", "the query was registered concurrently; try again"))
}

/// One sweep at a time per process.
static SWEEPING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Deletes the state of every reset query's old id still marked [`gone_key`] (a page a
/// step), then the mark. Run after each registration, so one cut short by a crash is
/// finished by the next registration after the restart.
async fn sweep(app: App) {
    use std::sync::atomic::Ordering;
    if SWEEPING.swap(true, Ordering::AcqRel) {
        return;
    }
    let prefix = gone_key("");
    let result: Result<(), ApiError> = async {
        loop {
            let page =
                KvOp::GetPrefix { ns: NS.into(), prefix: prefix.clone(), after: None, limit: PAGE, keys_only: true };
            let rows = match kv(&app, vec![page]).await?.ok().and_then(|mut r| r.pop()) {
                Some(KvResult::Prefix { rows, .. }) if !rows.is_empty() => rows,
                _ => return Ok(()),
            };
            for r in rows {
                forget_state(&app, &r.key[prefix.len()..]).await?;
                kv(&app, vec![KvOp::Delete { ns: NS.into(), key: r.key, expect: None, required: false }]).await?.ok();
            }
        }
    }
    .await;
    if let Err(e) = result {
        tracing::warn!(error = ?e, "deleting a reset stream query's old state stopped; the next registration resumes it");
    }
    SWEEPING.store(false, Ordering::Release);
}

/// Deletes a reset query's old state, a page a step (unreachable already: its id is gone).
async fn forget_state(app: &App, id: &str) -> Result<(), ApiError> {
    let prefix = format!("s{SEP}{id}{SEP}");
    loop {
        let page = KvOp::GetPrefix { ns: NS.into(), prefix: prefix.clone(), after: None, limit: PAGE, keys_only: true };
        let rows = match kv(app, vec![page]).await?.ok().and_then(|mut r| r.pop()) {
            Some(KvResult::Prefix { rows, .. }) if !rows.is_empty() => rows,
            _ => return Ok(()),
        };
        let deletes = rows
            .into_iter()
            .map(|r| KvOp::Delete { ns: NS.into(), key: r.key, expect: None, required: false })
            .collect();
        kv(app, deletes).await?.map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e))?;
    }
}

/// The id row's version: a cycle commits only while it is still there (not reset).
async fn live_id(app: &App, id: &str) -> Result<u64, ApiError> {
    check_id(id)?;
    get(app, id_key(id))
        .await?
        .map(|r| r.version)
        .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, "query_not_found", format!("no live query with id {id}")))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateGetBody {
    query_id: String,
    partition_id: String,
    #[serde(default)]
    keys: Vec<String>,
    #[serde(default)]
    key_prefix: Option<String>,
    /// Only window rows whose `windowEnd` is at or before this (ms).
    #[serde(default)]
    ripe_at_or_before: Option<f64>,
}

/// `POST /streams/v1/state/get`: the named keys, or every row of the partition (under
/// `key_prefix`, ripe ones only with `ripe_at_or_before`).
pub async fn state_get(State(app): State<App>, JsonBody(b): JsonBody<StateGetBody>) -> Result<Response, ApiError> {
    live_id(&app, &b.query_id).await?;
    check_name("partition_id", &b.partition_id, MAX_NAME)?;
    if b.keys.len() > MAX_STATE_OPS {
        return Err(bad("too_many_keys", format!("at most {MAX_STATE_OPS} keys a call")));
    }
    let base = state_prefix(&b.query_id, &b.partition_id);
    let mut rows: Vec<KvRow> = Vec::new();
    if !b.keys.is_empty() {
        let keys = b.keys.iter().map(|k| format!("{base}{k}")).collect();
        if let Some(KvResult::Many { rows: r, .. }) =
            kv(&app, vec![KvOp::GetMany { ns: NS.into(), keys }]).await?.ok().and_then(|mut r| r.pop())
        {
            rows = r;
        }
    } else {
        let prefix = format!("{base}{}", b.key_prefix.as_deref().unwrap_or(""));
        let mut after = None;
        loop {
            let op = KvOp::GetPrefix { ns: NS.into(), prefix: prefix.clone(), after, limit: PAGE, keys_only: false };
            let Some(KvResult::Prefix { rows: page, next_after }) =
                kv(&app, vec![op]).await?.ok().and_then(|mut r| r.pop())
            else {
                break;
            };
            rows.extend(page);
            if rows.len() > MAX_STATE_ROWS {
                return Err(ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "too_many_state_rows",
                    format!("the partition's state has more than {MAX_STATE_ROWS} rows; name keys or a key_prefix"),
                ));
            }
            match next_after {
                Some(n) => after = Some(n),
                None => break,
            }
        }
    }
    let out: Vec<Value> = rows
        .into_iter()
        .filter_map(|r| {
            let value: Value = serde_json::from_str(r.value.as_deref()?).ok()?;
            if let Some(ripe) = b.ripe_at_or_before {
                value.get("windowEnd").and_then(Value::as_f64).filter(|end| *end <= ripe)?;
            }
            Some(json!({"key": r.key.strip_prefix(base.as_str())?, "value": value}))
        })
        .collect();
    Ok(Json(json!({"success": true, "rows": out})).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StateOp<'a> {
    #[serde(rename = "type")]
    kind: String,
    key: String,
    #[serde(default, borrow)]
    value: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CycleAck {
    transaction_id: String,
    lease_id: String,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    count: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CycleBody<'a> {
    query_id: String,
    partition_id: String,
    consumer_group: String,
    #[serde(default, borrow)]
    state_ops: Vec<StateOp<'a>>,
    #[serde(default, borrow)]
    push_items: Vec<PushItem<'a>>,
    #[serde(default)]
    ack: Option<CycleAck>,
    /// Whether what the ack leaves unsettled may go back: Baton's lease ends when its last
    /// message settles, and what is left is redelivered when the lease expires either way.
    #[serde(default)]
    #[allow(dead_code)]
    release_lease: Option<bool>,
}

/// `POST /streams/v1/cycle`: the state writes, the sink pushes and the acks of the source
/// batch up to its last message, as one transaction, only while the query id is live.
pub async fn cycle(State(app): State<App>, RawBody(raw): RawBody) -> Result<Response, ApiError> {
    let b: CycleBody = parse(&raw)?;
    let id_version = live_id(&app, &b.query_id).await?;
    check_name("partition_id", &b.partition_id, MAX_NAME)?;
    check_name("consumer_group", &b.consumer_group, MAX_NAME)?;
    if b.state_ops.len() > MAX_STATE_OPS {
        return Err(bad("too_many_state_ops", format!("at most {MAX_STATE_OPS} state operations a cycle")));
    }
    let base = state_prefix(&b.query_id, &b.partition_id);
    let mut req = TxnRequest::default();
    req.kv.push(KvOp::Check { ns: NS.into(), key: id_key(&b.query_id), expect: id_version, required: true });
    for (i, op) in b.state_ops.iter().enumerate() {
        if op.key.is_empty() || op.key.len() > MAX_KEY {
            return Err(bad("invalid_key", format!("state_ops[{i}].key is 1 to {MAX_KEY} bytes")));
        }
        let key = format!("{base}{}", op.key);
        req.kv.push(match op.kind.as_str() {
            "upsert" => {
                let v = op.value.map_or("null", RawValue::get);
                crate::payload::check(v, app.cfg.max_payload_depth)
                    .map_err(|e| bad("bad_payload", format!("state_ops[{i}].value: {e}")))?;
                KvOp::Put { ns: NS.into(), key, value: v.to_string(), ttl_secs: None, expect: None, required: false }
            }
            "delete" => KvOp::Delete { ns: NS.into(), key, expect: None, required: false },
            other => {
                return Err(bad("invalid_operation", format!("state_ops[{i}].type {other:?} is not upsert or delete")))
            }
        });
    }
    if let Some(a) = &b.ack {
        if a.status.as_deref().is_some_and(|s| s != "completed") {
            return Err(bad("invalid_status", "a cycle acks its batch as completed"));
        }
        let lease = parse_lease_uuid(&a.lease_id)
            .ok_or_else(|| bad("invalid_lease_id", format!("ack.leaseId {:?} is not a Baton lease id", a.lease_id)))?;
        let found = match app.engine.query(Query::LeasePrefix { lease, txid: a.transaction_id.clone() }).await? {
            QueryResult::LeasePrefix(f) => f,
            _ => unreachable!("LeasePrefix answers LeasePrefix"),
        };
        let Some((part, offsets)) = found.filter(|(p, _)| parse_partition_uuid(&b.partition_id) == Some(*p)) else {
            return Ok(rolled_back("lease_not_live", "the batch's lease is expired, released or not this partition's"));
        };
        let _ = a.count;
        for offset in offsets {
            let item = AckItem {
                part,
                txid: None,
                offset: Some(offset),
                lease: Some(lease),
                status: AckStatus::Completed,
                error: None,
            };
            req.acks.push(TxnAck { index: req.acks.len(), group: Some(b.consumer_group.clone()), item });
        }
    }
    let acks = req.acks.len();
    let pushes = b.push_items.len();
    if pushes > 0 {
        req.pushes = build_groups(&app.cfg, b.push_items)?;
        for g in &mut req.pushes {
            for ix in &mut g.indexes {
                *ix += acks;
            }
        }
    }
    req.flat_len = acks + pushes;
    baton_core::kv::validate(&req.kv)?;
    match app.engine.transaction(req).await? {
        TxnOutcome::Committed(_) => Ok(Json(json!({"success": true, "acked": acks, "pushed": pushes,
            "stateOps": b.state_ops.len()}))
        .into_response()),
        TxnOutcome::RolledBack { reason: "kv_precondition", message, .. } => {
            Ok(rolled_back("query_reset", &format!("the query was reset or removed: {message}")))
        }
        TxnOutcome::RolledBack { reason, message, .. } => Ok(rolled_back(reason, &message)),
    }
}

fn rolled_back(reason: &str, error: &str) -> Response {
    Json(json!({"success": false, "reason": reason, "error": error})).into_response()
}
