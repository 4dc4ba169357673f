//! `POST /api/v1/transaction`: acks with their leases and pushes, committed as
//! one entry or not at all. Results are flat, as Queen's client reads them:
//! every pushed item and every ack in request order. A rollback is HTTP 200
//! with `success: false` and a reason; a 503 means the outcome is unknown.

use crate::body::{parse, RawBody};
use crate::consume::{ack_item, AckBody};
use crate::error::ApiError;
use crate::kv::{kv_op, kv_result_json, timer_op, timer_result_json, KvOpJson, TimerOpJson};
use crate::push::{build_groups, PushItem};
use crate::{App, HttpConfig};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;
use baton_core::{message_uuid, parse_lease_uuid, partition_uuid, TxnAck, TxnItem, TxnOutcome, TxnRequest};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::borrow::Cow;

/// One operation, read in the same pass as the body; `type` says which of
/// its fields count. Not a serde tagged enum: that buffers the content and
/// loses the raw payload bytes we store as they came. The ack fields are
/// flattened (buffered, a few short strings); `items`, with the payloads, is
/// read in place.
#[derive(Deserialize)]
struct OpJson<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    items: Option<Vec<PushItem<'a>>>,
    #[serde(flatten)]
    ack: AckBody,
}

/// The committed answer, serialized from borrowed fields: a JSON tree per
/// result was a tenth of a ten-message transaction's HTTP cost.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Committed<'a> {
    transaction_id: &'a str,
    success: bool,
    results: Vec<ResultJson<'a>>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum ResultJson<'a> {
    Ack {
        #[serde(rename = "type")]
        kind: &'static str,
        success: bool,
    },
    #[serde(rename_all = "camelCase")]
    Push {
        #[serde(rename = "type")]
        kind: &'static str,
        success: bool,
        status: &'static str,
        transaction_id: &'a str,
        message_id: uuid::Uuid,
        partition_id: uuid::Uuid,
        offset: u64,
    },
    /// KV and timer results keep the shapes their own endpoints answer with.
    Other(Value),
}

impl<'a> From<&'a TxnItem> for ResultJson<'a> {
    fn from(it: &'a TxnItem) -> Self {
        match it {
            TxnItem::Acked => ResultJson::Ack { kind: "ack", success: true },
            TxnItem::Pushed { part, offset, txid } => ResultJson::Push {
                kind: "push",
                success: true,
                status: "queued",
                transaction_id: txid,
                message_id: message_uuid(*part, *offset),
                partition_id: partition_uuid(*part),
                offset: *offset,
            },
            TxnItem::Kv(r) => ResultJson::Other(kv_result_json(r)),
            TxnItem::Timer(r) => ResultJson::Other(timer_result_json(r)),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TxnBody<'a> {
    /// Absent is none: a transaction of KV operations or timers alone need not name it.
    #[serde(borrow, default)]
    operations: Vec<OpJson<'a>>,
    #[serde(default)]
    required_leases: Vec<String>,
    #[serde(default)]
    kv: Option<Vec<KvOpJson>>,
    #[serde(default)]
    timers: Option<Vec<TimerOpJson>>,
}

pub async fn transaction(State(app): State<App>, RawBody(raw): RawBody) -> Result<Response, ApiError> {
    let mut counts = false;
    let req = if raw.starts_with(crate::push_binary::TXN_MAGIC) {
        // Queen's binary transaction body (crate::push_binary): the JSON head, then the
        // pushes as framed groups, answered head operations first, then the pushes.
        let inflated = crate::push_binary::inflate(&raw, app.cfg.max_body_bytes, crate::push::MAX_ITEMS)?;
        let decoded = crate::push_binary::items(&raw, &inflated, crate::push::MAX_ITEMS)?;
        counts = decoded.counts;
        let mut body: TxnBody = match decoded.head {
            Some(h) if !h.is_empty() => parse(h)?,
            _ => parse(b"{\"operations\": []}")?,
        };
        if body.operations.iter().any(|o| o.kind == "push") {
            return Err(ApiError::bad("bad_binary_body", "the head of a binary transaction holds no push"));
        }
        if !decoded.items.is_empty() {
            body.operations.push(OpJson {
                kind: Cow::Borrowed("push"),
                items: Some(decoded.items),
                ack: AckBody::default(),
            });
        }
        txn_body_request(body, &app.cfg)?
    } else {
        txn_request(&raw, &app.cfg)?
    };
    let txid = uuid::Uuid::now_v7().to_string();
    match app.engine.transaction(req).await? {
        TxnOutcome::Committed(items) => {
            if counts {
                // The binary body's flag 2: the pushes and acks counted, the riders' results kept.
                let pushed = items.iter().filter(|i| matches!(i, TxnItem::Pushed { .. })).count();
                let acked = items.iter().filter(|i| matches!(i, TxnItem::Acked)).count();
                let riders: Vec<_> = items
                    .iter()
                    .filter(|i| matches!(i, TxnItem::Kv(_) | TxnItem::Timer(_)))
                    .map(ResultJson::from)
                    .collect();
                return Ok(Json(json!({"transactionId": txid, "success": true, "pushed": pushed, "duplicate": 0,
                    "acked": acked, "results": riders}))
                .into_response());
            }
            let results = items.iter().map(ResultJson::from).collect();
            Ok(Json(Committed { transaction_id: &txid, success: true, results }).into_response())
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

/// A transaction body judged and converted, with no engine: what the planner is handed.
/// Every refusal of bad input happens here (the fuzz target drives it, crates/http/fuzz).
pub fn txn_request(raw: &[u8], cfg: &HttpConfig) -> Result<TxnRequest, ApiError> {
    txn_body_request(parse(raw)?, cfg)
}

fn txn_body_request(body: TxnBody<'_>, cfg: &HttpConfig) -> Result<TxnRequest, ApiError> {
    // A transaction of KV or timer operations alone is one entry like any other (Queen's
    // client sends them beside an empty `operations`).
    let kv = body.kv.as_ref().map_or(0, Vec::len);
    let timers = body.timers.as_ref().map_or(0, Vec::len);
    if body.operations.is_empty() && kv == 0 && timers == 0 {
        return Err(ApiError::bad(
            "empty_transaction",
            "a transaction holds at least one operation, KV write or timer",
        ));
    }
    let mut req = TxnRequest::default();
    let mut push_items = Vec::new();
    let mut push_index = Vec::new();
    let mut flat = 0usize;
    for (i, op) in body.operations.into_iter().enumerate() {
        match op.kind.as_ref() {
            "ack" => {
                let item = ack_item(i, &op.ack, cfg.max_ack_error_bytes)?;
                req.acks.push(TxnAck { index: flat, group: op.ack.consumer_group, item });
                flat += 1;
            }
            "push" => {
                let items = op.items.ok_or_else(|| {
                    ApiError::bad("missing_field", format!("operations[{i}] is a push without items"))
                })?;
                if items.is_empty() {
                    return Err(ApiError::bad("empty_items", format!("operations[{i}] pushes no items")));
                }
                for it in items {
                    push_items.push(it);
                    push_index.push(flat);
                    flat += 1;
                }
            }
            other => {
                return Err(ApiError::bad(
                    "invalid_operation",
                    format!("operations[{i}].type {other:?} is not ack or push"),
                ))
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
        let mut groups = build_groups(cfg, push_items)?;
        for g in &mut groups {
            for ix in &mut g.indexes {
                *ix = push_index[*ix];
            }
        }
        req.pushes = groups;
    }
    req.flat_len = flat;
    req.kv = body
        .kv
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, o)| kv_op(i, o, cfg.max_payload_depth))
        .collect::<Result<_, _>>()?;
    req.timers = body
        .timers
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, o)| timer_op(i, o, cfg.max_payload_depth))
        .collect::<Result<_, _>>()?;
    baton_core::kv::validate(&req.kv)?;
    baton_core::timers::validate(&req.timers)?;
    Ok(req)
}
