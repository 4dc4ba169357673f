//! `POST /api/v1/transaction`: acks with their leases and pushes, committed as
//! one entry or not at all. Results are flat, as Queen's client reads them:
//! every pushed item and every ack in request order. A rollback is HTTP 200
//! with `success: false` and a reason; a 503 means the outcome is unknown.

use crate::body::JsonBody;
use crate::consume::{ack_item, AckBody};
use crate::error::ApiError;
use crate::kv::{kv_op, kv_result_json, timer_op, timer_result_json, KvOpJson, TimerOpJson};
use crate::push::{build_groups, PushItem};
use crate::App;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;
use baton_core::{message_uuid, parse_lease_uuid, partition_uuid, TxnAck, TxnItem, TxnOutcome, TxnRequest};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

/// Operations are dispatched on `type` by hand: serde's tagged enums buffer
/// their content, which loses the raw payload bytes we store as they came.
#[derive(Deserialize)]
struct OpType {
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct PushOp<'a> {
    #[serde(borrow)]
    items: Vec<PushItem<'a>>,
}

enum Operation<'a> {
    Ack(Box<AckBody>),
    Push { items: Vec<PushItem<'a>> },
}

fn parse_op(i: usize, raw: &RawValue) -> Result<Operation<'_>, ApiError> {
    let bad = |e: serde_json::Error| ApiError::bad("invalid_request", format!("operations[{i}]: {e}"));
    let t: OpType = serde_json::from_str(raw.get()).map_err(bad)?;
    match t.kind.as_str() {
        "ack" => Ok(Operation::Ack(Box::new(serde_json::from_str(raw.get()).map_err(bad)?))),
        "push" => Ok(Operation::Push { items: serde_json::from_str::<PushOp>(raw.get()).map_err(bad)?.items }),
        other => Err(ApiError::bad("invalid_operation", format!("operations[{i}].type {other:?} is not ack or push"))),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TxnBody {
    operations: Vec<Box<RawValue>>,
    #[serde(default)]
    required_leases: Vec<String>,
    #[serde(default)]
    kv: Option<Vec<KvOpJson>>,
    #[serde(default)]
    timers: Option<Vec<TimerOpJson>>,
}

pub async fn transaction(State(app): State<App>, JsonBody(body): JsonBody<TxnBody>) -> Result<Response, ApiError> {
    let txid = uuid::Uuid::now_v7().to_string();
    if body.operations.is_empty() {
        return Err(ApiError::bad("empty_transaction", "operations must hold at least one operation"));
    }
    let mut req = TxnRequest::default();
    let mut push_items = Vec::new();
    let mut push_index = Vec::new();
    let mut flat = 0usize;
    for (i, raw) in body.operations.iter().enumerate() {
        match parse_op(i, raw)? {
            Operation::Ack(a) => {
                let item = ack_item(i, &a)?;
                req.acks.push(TxnAck { index: flat, group: a.consumer_group.clone(), item });
                flat += 1;
            }
            Operation::Push { items } => {
                if items.is_empty() {
                    return Err(ApiError::bad("empty_items", format!("operations[{i}] pushes no items")));
                }
                for it in items {
                    push_items.push(it);
                    push_index.push(flat);
                    flat += 1;
                }
            }
        }
    }
    for l in &body.required_leases {
        let id = parse_lease_uuid(l).ok_or_else(|| {
            ApiError::bad("invalid_lease_id", format!("requiredLeases: {l:?} is not a Baton lease id"))
        })?;
        req.required_leases.push(id);
    }
    if !push_items.is_empty() {
        let mut groups = build_groups(&app, push_items)?;
        for g in &mut groups {
            for ix in &mut g.indexes {
                *ix = push_index[*ix];
            }
        }
        req.pushes = groups;
    }
    req.flat_len = flat;
    req.kv = body.kv.unwrap_or_default().into_iter().enumerate().map(|(i, o)| kv_op(i, o)).collect::<Result<_, _>>()?;
    req.timers = body
        .timers
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, o)| timer_op(i, o))
        .collect::<Result<_, _>>()?;
    baton_core::kv::validate(&req.kv)?;
    baton_core::timers::validate(&req.timers)?;
    match app.engine.transaction(req).await? {
        TxnOutcome::Committed(items) => {
            let results: Vec<Value> = items
                .into_iter()
                .map(|it| match it {
                    TxnItem::Kv(r) => kv_result_json(&r),
                    TxnItem::Timer(r) => timer_result_json(&r),
                    TxnItem::Acked => json!({"type": "ack", "success": true}),
                    TxnItem::Pushed { part, offset, txid } => json!({
                        "type": "push", "success": true, "status": "queued", "transactionId": txid,
                        "messageId": message_uuid(part, offset).to_string(),
                        "partitionId": partition_uuid(part).to_string(), "offset": offset,
                    }),
                })
                .collect();
            Ok(Json(json!({"transactionId": txid, "success": true, "results": results})).into_response())
        }
        TxnOutcome::RolledBack { reason, failed_index, message, kv } => {
            let mut v = json!({"success": false, "reason": reason, "failedIndex": failed_index, "error": message});
            if let Some(k) = kv.as_ref().map(kv_result_json) {
                v["kvReason"] = k["reason"].clone();
                v["version"] = k["version"].clone();
                v["value"] = k["value"].clone();
            }
            Ok(Json(v).into_response())
        }
    }
}
