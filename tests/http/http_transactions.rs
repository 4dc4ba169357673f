//! `POST /api/v1/transaction` through the real binary: the answer's exact shape
//! (one result per operation in request order, then KV, then timers, as
//! Queen's client reads it), what a rollback answers and that it changes
//! nothing, and the operation errors that are refused before the engine.

use crate::common;

use common::api::Api;
use serde_json::{json, Value};

fn ack(m: &Value) -> Value {
    json!({"type": "ack", "transactionId": m["transactionId"], "partitionId": m["partitionId"], "leaseId": m["leaseId"]})
}

#[tokio::test]
async fn a_commit_answers_every_operation_in_order_with_its_shape() {
    let api = Api::start();
    api.push_n("qi", "p0", "in", 0..2).await;
    let msgs = api.pop_some("qi", "batch=2").await;
    assert_eq!(msgs.len(), 2);
    let body = json!({
        "operations": [
            ack(&msgs[0]),
            {"type": "push", "items": [{"queue": "qo", "partition": "p7", "transactionId": "out-0", "payload": {"n": 0}}]},
            ack(&msgs[1]),
        ],
        "kv": [{"op": "put", "ns": "n", "key": "k", "value": {"v": 1}}],
        // base64 of {"t":1}
        "timers": [{"op": "schedule", "queue": "tq", "timerKey": "t1", "payload": "eyJ0IjoxfQ==", "delayMs": 600000}],
    });
    let (st, v) = api.post("/api/v1/transaction", body).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["success"], true, "{v}");
    assert!(v["transactionId"].as_str().is_some_and(|t| t.len() == 36), "{v}");
    let r = v["results"].as_array().expect("results");
    assert_eq!(r.len(), 5, "{v}");
    assert_eq!(r[0], json!({"type": "ack", "success": true}));
    assert_eq!(r[2], json!({"type": "ack", "success": true}));

    // The push result names the stored message exactly as a pop of it does.
    let out = api.pop_some("qo", "batch=10").await;
    assert_eq!(out.len(), 1);
    assert_eq!(
        r[1],
        json!({"type": "push", "success": true, "status": "queued", "transactionId": "out-0",
               "messageId": out[0]["id"], "partitionId": out[0]["partitionId"], "offset": 0}),
        "{v}"
    );
    assert_eq!(r[3]["applied"], true, "{v}");
    assert!(r[3]["version"].as_u64().is_some(), "{v}");
    assert_eq!(r[4]["ok"], true, "{v}");
    assert_eq!(r[4]["status"], "scheduled", "{v}");
    assert_eq!((r[4]["queue"].as_str(), r[4]["timerKey"].as_str()), (Some("tq"), Some("t1")), "{v}");
    // The inputs are acked: nothing is left to deliver.
    api.pop_none("qi", "batch=10").await;
}

#[tokio::test]
async fn a_rollback_says_why_and_changes_nothing() {
    let api = Api::start();
    api.push_n("qi", "p0", "in", 0..1).await;
    let m = api.pop_some("qi", "batch=1").await.remove(0);
    let mut stale = ack(&m);
    // A lease id of the right form that is not this message's lease (I4).
    stale["leaseId"] = json!(uuid_like_lease(&m["leaseId"]));
    let body = json!({"operations": [
        {"type": "push", "items": [{"queue": "qo", "partition": "p0", "transactionId": "o", "payload": 1}]},
        stale,
    ]});
    let (st, v) = api.post("/api/v1/transaction", body).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["success"], false, "{v}");
    assert_eq!(v["reason"], "rejected_ack", "{v}");
    assert_eq!(v["failedIndex"], 1, "{v}");
    assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "{v}");
    api.pop_none("qo", "batch=10").await;
    // The real lease still holds the message: acking with it succeeds.
    let (st, v) = api.post("/api/v1/transaction", json!({"operations": [ack(&m)]})).await;
    assert_eq!((st, &v["success"]), (200, &json!(true)), "{v}");
}

/// The lease id with its last hex digit changed: still well formed, never issued.
fn uuid_like_lease(l: &Value) -> String {
    let mut s = l.as_str().expect("leaseId").to_string();
    let last = s.pop().expect("non-empty");
    s.push(if last == '0' { '1' } else { '0' });
    s
}

#[tokio::test]
async fn malformed_operations_are_refused_before_the_engine() {
    let api = Api::start();
    let cases = [
        (json!({"operations": []}), "empty_transaction"),
        (json!({}), "empty_transaction"),
        (json!({"operations": [{"type": "nack"}]}), "invalid_operation"),
        (json!({"operations": [{"items": []}]}), "invalid_request"),
        (json!({"operations": [{"type": "push", "items": []}]}), "empty_items"),
        (json!({"operations": [{"type": "push"}]}), "missing_field"),
        (json!({"operations": [{"type": "push", "items": "x"}]}), "invalid_request"),
        (json!({"operations": [{"type": "ack", "transactionId": "t"}]}), "missing_field"),
    ];
    for (body, code) in cases {
        let (st, v) = api.post("/api/v1/transaction", body.clone()).await;
        assert_eq!((st, v["code"].as_str()), (400, Some(code)), "{body} -> {v}");
    }
    api.pop_none("qo", "batch=10").await;
}

/// Every route that pushes holds the push's item bound (it lives in the one path from items
/// to push groups): a transaction of 100,001 pushed items is 413 and stores nothing, as a
/// push of that many is. The JSON transaction route had no bound at all.
#[tokio::test]
async fn a_transaction_holds_the_pushs_item_bound() {
    let api = Api::start();
    let items: Vec<Value> = (0..100_001).map(|i| json!({"queue": "big", "payload": i})).collect();
    let (st, v) = api.post("/api/v1/transaction", json!({"operations": [{"type": "push", "items": items}]})).await;
    assert_eq!((st, v["code"].as_str()), (413, Some("too_many_items")), "{v}");
    let (st, v) = api.post("/api/v1/push", json!({ "items": items })).await;
    assert_eq!((st, v["code"].as_str()), (413, Some("too_many_items")), "{v}");
    let (st, _) = api.get("/api/v1/resources/queues/big").await;
    assert_eq!(st, 404, "nothing was stored");
}
