//! The server side of Queen's streaming SDK (`/streams/v1/*`, D59) under hostile and
//! stale use, against the real `baton` binary: a cycle is whole or nothing (a dead lease
//! or a reset query leaves no state and no push behind), state rows are written only by
//! cycles, and every refusal names its code. The SDK itself is driven in
//! tests/compat/test_queen_streams.py.

use crate::common;

use common::api::Api;
use serde_json::{json, Value};

/// Raw rows of the streams' KV namespace under `prefix` (reads of it are open).
async fn rows(api: &Api, prefix: String) -> usize {
    let op = json!({"operations": [{"op": "getPrefix", "ns": "queen-streams", "prefix": prefix, "keysOnly": true}]});
    let (st, v) = api.post("/api/v1/kv", op).await;
    assert_eq!(st, 200, "{v}");
    v["results"][0]["rows"].as_array().map_or(0, Vec::len)
}

async fn register(api: &Api, name: &str, hash: &str, reset: bool) -> (u16, Value) {
    api.post("/streams/v1/queries", json!({"name": name, "source_queue": "src", "config_hash": hash, "reset": reset}))
        .await
}

async fn state(api: &Api, id: &str, part: &str, extra: Value) -> Vec<Value> {
    let mut body = json!({"query_id": id, "partition_id": part, "keys": []});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let (st, v) = api.post("/streams/v1/state/get", body).await;
    assert_eq!(st, 200, "{v}");
    v["rows"].as_array().unwrap().clone()
}

#[tokio::test]
async fn a_cycle_is_whole_or_nothing_and_state_is_written_only_by_cycles() {
    let api = Api::start();
    for (body, code) in [
        (json!({"name": "", "source_queue": "s", "config_hash": "h"}), "invalid_name"),
        (json!({"name": "q", "source_queue": "s", "config_hash": "h", "extra": 1}), "invalid_request"),
        (json!({"name": "q\u{1}", "source_queue": "s", "config_hash": "h"}), "invalid_name"),
    ] {
        let (st, v) = api.post("/streams/v1/queries", body).await;
        assert_eq!((st, v["code"].as_str()), (400, Some(code)), "{v}");
    }
    let (st, v) = register(&api, "q", "h1", false).await;
    assert_eq!((st, &v["fresh"]), (200, &json!(true)), "{v}");
    let id = v["query_id"].as_str().unwrap().to_string();
    let (_, v) = register(&api, "q", "h1", false).await;
    assert_eq!((v["query_id"].as_str(), &v["fresh"]), (Some(id.as_str()), &json!(false)), "{v}");
    let (st, v) = register(&api, "q", "h2", false).await;
    assert_eq!((st, &v["success"]), (409, &json!(false)), "a changed definition: {v}");

    // A source message under a live lease, to ack in a cycle.
    let (st, v) = api
        .post(
            "/api/v1/push",
            json!({"items": [{"queue": "src", "partition": "p", "payload": 1},
        {"queue": "src", "partition": "p", "payload": 2}, {"queue": "src", "partition": "p", "payload": 3}]}),
        )
        .await;
    assert_eq!(st, 201, "{v}");
    let msgs = api.pop_some("src", "batch=3&consumerGroup=streams.q").await;
    let part = msgs[0]["partitionId"].as_str().unwrap().to_string();
    let lease = msgs[0]["leaseId"].as_str().unwrap().to_string();
    let upsert = |k: &str, v: Value| json!({"type": "upsert", "key": k, "value": v});
    let cycle = |state_ops: Value, ack: Value| {
        json!({"query_id": id, "partition_id": part, "consumer_group": "streams.q", "state_ops": state_ops,
            "push_items": [{"queue": "sink", "partition": "p", "payload": {"out": 1}}], "ack": ack})
    };

    // Bad input: each a precise 400, nothing written.
    let many: Vec<Value> = (0..10_001).map(|i| upsert(&format!("k{i}"), json!(i))).collect();
    let bad = [
        (cycle(json!([{"type": "merge", "key": "k"}]), Value::Null), "invalid_operation"),
        (cycle(json!([upsert("", json!(1))]), Value::Null), "invalid_key"),
        (cycle(json!(many), Value::Null), "too_many_state_ops"),
        (cycle(json!([]), json!({"transactionId": "x", "leaseId": "nope"})), "invalid_lease_id"),
        (cycle(json!([]), json!({"transactionId": "x", "leaseId": lease, "status": "failed"})), "invalid_status"),
    ];
    for (body, code) in bad {
        let (st, v) = api.post("/streams/v1/cycle", body).await;
        assert_eq!((st, v["code"].as_str()), (400, Some(code)), "{v}");
    }
    // The sink pushes hold the push's item bound.
    let mut wide = cycle(json!([]), Value::Null);
    wide["push_items"] = json!((0..100_001).map(|i| json!({"queue": "sink", "payload": i})).collect::<Vec<_>>());
    let (st, v) = api.post("/streams/v1/cycle", wide).await;
    assert_eq!((st, v["code"].as_str()), (413, Some("too_many_items")), "{v}");
    let mut unknown = cycle(json!([]), Value::Null);
    unknown["query_id"] = json!(uuid::Uuid::now_v7().to_string());
    let (st, v) = api.post("/streams/v1/cycle", unknown).await;
    assert_eq!((st, v["code"].as_str()), (404, Some("query_not_found")), "{v}");
    // The state namespace is not writable through the KV API.
    let forged = json!({"operations": [{"op": "put", "ns": "queen-streams", "key": "x", "value": 1}]});
    let (st, v) = api.post("/api/v1/kv", forged).await;
    assert_eq!((st, v["code"].as_str()), (400, Some("reserved_namespace")), "{v}");

    // A cycle acking a message this lease does not hold rolls back whole: no state, no push.
    let (st, v) = api
        .post(
            "/streams/v1/cycle",
            cycle(json!([upsert("k", json!(1))]), json!({"transactionId": "none", "leaseId": lease})),
        )
        .await;
    assert_eq!((st, &v["success"], v["reason"].as_str()), (200, &json!(false), Some("lease_not_live")), "{v}");
    assert!(state(&api, &id, &part, json!({})).await.is_empty());
    api.pop_none("sink", "batch=10").await;

    // Acking the batch by its second message settles the first two, not the third, in the
    // same entry as the state and the push.
    let second = msgs[1]["transactionId"].clone();
    let ack = json!({"transactionId": second, "leaseId": lease, "status": "completed", "count": 2});
    let ops = json!([
        upsert("win:1\u{1f}a", json!({"acc": 3, "windowEnd": 1000})),
        upsert("win:1\u{1f}b", json!({"acc": 4, "windowEnd": 2000}))
    ]);
    let (st, v) = api.post("/streams/v1/cycle", cycle(ops, ack)).await;
    assert_eq!((st, &v["success"], &v["acked"]), (200, &json!(true), &json!(2)), "{v}");
    let d = api.ok("/api/v1/resources/queues/src/depth?group=streams.q").await;
    assert_eq!(d["pending"], 1, "two of three settled: {d}");
    assert_eq!(state(&api, &id, &part, json!({})).await.len(), 2);
    let ripe = state(&api, &id, &part, json!({"key_prefix": "win:1\u{1f}", "ripe_at_or_before": 1500})).await;
    assert_eq!(ripe, [json!({"key": "win:1\u{1f}a", "value": {"acc": 3, "windowEnd": 1000}})]);
    let named = state(&api, &id, &part, json!({"keys": ["win:1\u{1f}b", "missing"]})).await;
    assert_eq!(named.len(), 1, "{named:?}");
    assert_eq!(api.pop_some("sink", "batch=10").await.len(), 1);

    assert_eq!(rows(&api, format!("s\u{1e}{id}\u{1e}")).await, 2, "the state rows, read as raw KV rows");

    // A reset gives the query a new id with no state; the old id cycles no more.
    let (st, v) = register(&api, "q", "h2", true).await;
    assert_eq!((st, &v["reset"]), (200, &json!(true)), "{v}");
    let new_id = v["query_id"].as_str().unwrap().to_string();
    assert_ne!(new_id, id);
    assert!(state(&api, &new_id, &part, json!({})).await.is_empty());
    let (st, v) = api.post("/streams/v1/cycle", cycle(json!([upsert("late", json!(1))]), Value::Null)).await;
    assert_eq!((st, v["code"].as_str()), (404, Some("query_not_found")), "{v}");
    let (st, v) = api.post("/streams/v1/state/get", json!({"query_id": id, "partition_id": part})).await;
    assert_eq!(st, 404, "the old id's state is gone: {v}");
    // Its rows are deleted off the request (a client hanging up cannot leave them behind),
    // and so is the mark that keeps the deletion until it is done.
    let mut left = (usize::MAX, usize::MAX);
    for _ in 0..100 {
        left = (rows(&api, format!("s\u{1e}{id}\u{1e}")).await, rows(&api, "d\u{1e}".to_string()).await);
        if left == (0, 0) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(left, (0, 0), "the reset query's old state rows and its deletion mark");
}
