//! Bad input through the real binary: every malformed, mistyped, missing,
//! oversized or out-of-range request gets a 4xx with `{"error", "code"}` and
//! changes nothing. "Nothing" is checked against the queue and group views and
//! the count of log entries written, so a bad request that slipped one entry
//! into the WAL (say, an empty queue created as a side effect) fails here.

use crate::common;

use common::api::{read, Api};
use serde_json::{json, Value};

impl Api {
    /// POST raw bytes, with the given content type or none at all.
    async fn post_raw(&self, path: &str, body: impl Into<reqwest::Body>, ct: Option<&str>) -> (u16, Value) {
        let mut rb = self.c.post(self.s.url(path)).body(body);
        if let Some(ct) = ct {
            rb = rb.header("content-type", ct);
        }
        read(rb.send().await.expect("POST raw")).await
    }

    async fn push_count(&self, queue: &str, partition: &str, n: usize) -> Value {
        let items: Vec<Value> =
            (0..n).map(|i| json!({"queue": queue, "partition": partition, "payload": {"n": i}})).collect();
        let (st, v) = self.post("/api/v1/push", json!({ "items": items })).await;
        assert_eq!(st, 201, "{v}");
        v
    }

    /// Everything a bad request must leave alone: queues (with their
    /// partitions, offsets, depths and leases), groups, and entries written.
    async fn snapshot(&self) -> Value {
        let (st, queues) = self.get("/api/v1/resources/queues").await;
        assert_eq!(st, 200, "{queues}");
        let (st, groups) = self.get("/api/v1/consumer-groups").await;
        assert_eq!(st, 200, "{groups}");
        let entries = self.metric("baton_log_entries_total").await;
        json!({"queues": queues, "groups": groups, "entries": entries})
    }
}

#[track_caller]
fn assert_err(got: &(u16, Value), status: u16, code: &str) {
    let (st, body) = got;
    assert_eq!(*st, status, "status; body {body}");
    assert!(body["error"].as_str().is_some_and(|e| !e.is_empty()), "error must be a non-empty string: {body}");
    assert_eq!(body["code"], code, "code; body {body}");
}

/// A Baton partition id (a UUID with the partition tag) for a partition that does not exist.
fn partition_uuid(id: u32) -> String {
    format!("4241544f-4e50-0000-0000-{:012x}", id)
}

/// A well-formed Baton lease id that was never granted.
fn lease_uuid(id: u64) -> String {
    let lo = format!("{id:016x}");
    format!("4241544f-4e4c-0000-{}-{}", &lo[..4], &lo[4..])
}

/// A queue "q" with one message, popped (so the queue-mode group and a live
/// lease exist): the state every bad request below must leave as it is.
async fn seeded() -> (Api, Value) {
    let api = Api::start();
    api.push_count("q", "Default", 1).await;
    let (st, popped) = api.pop("q", "batch=1").await;
    assert_eq!(st, 200, "{popped}");
    (api, popped["messages"][0].clone())
}

/// The seeded message is still leased and its ack still works: nothing above moved it.
async fn seeded_message_intact(api: &Api, m: &Value) {
    let (st, v) = api.pop("q", "batch=1").await;
    assert_eq!(st, 204, "the lease must still hold the only message: {v}");
    let ack = json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                     "leaseId": m["leaseId"], "status": "completed"});
    let (st, v) = api.post("/api/v1/ack", ack).await;
    assert_eq!(st, 200);
    assert_eq!(v[0]["success"], true, "{v}");
}

#[tokio::test]
async fn malformed_json_is_400_and_changes_nothing() {
    let (api, m) = seeded().await;
    let before = api.snapshot().await;
    let lease = m["leaseId"].as_str().unwrap().to_string();
    let extend = format!("/api/v1/lease/{lease}/extend");
    for path in
        ["/api/v1/push", "/api/v1/ack", "/api/v1/ack/batch", "/api/v1/configure", "/api/v1/fetch", extend.as_str()]
    {
        for body in [r#"{"items": [{"queue": "q", "#, "not json", r#"{"queue": "q"} trailing"#] {
            let got = api.post_raw(path, body, Some("application/json")).await;
            assert_err(&got, 400, "invalid_json");
        }
    }
    assert_eq!(api.snapshot().await, before);
    seeded_message_intact(&api, &m).await;
}

#[tokio::test]
async fn wrong_types_are_400_and_change_nothing() {
    let (api, m) = seeded().await;
    let before = api.snapshot().await;
    let pid = m["partitionId"].clone();
    let bodies = [
        ("/api/v1/push", json!({"items": [{"queue": 5, "payload": {"ok": true}}]})),
        ("/api/v1/push", json!({"items": [{"queue": "q", "partition": 7, "payload": 1}]})),
        ("/api/v1/push", json!({"items": [{"queue": "q", "payload": 1, "transactionId": 9}]})),
        ("/api/v1/push", json!({"items": {"queue": "q", "payload": 1}})),
        ("/api/v1/push", json!([{"queue": "q", "payload": 1}])),
        ("/api/v1/configure", json!({"queue": "q", "options": {"leaseTime": "x"}})),
        ("/api/v1/configure", json!({"queue": "q", "options": {"retryLimit": -1}})),
        ("/api/v1/configure", json!({"queue": "q", "options": {"leaseTime": 1.5}})),
        ("/api/v1/configure", json!({"queue": ["q"]})),
        ("/api/v1/ack", json!({"transactionId": "t", "partitionId": 5})),
        ("/api/v1/ack/batch", json!({"acknowledgments": "all"})),
        ("/api/v1/fetch", json!({"entries": [{"queue": "q", "offset": "0"}]})),
    ];
    for (path, body) in bodies {
        let got = api.post(path, body.clone()).await;
        assert_err(&got, 400, "invalid_request");
    }
    for query in ["batch=abc", "batch=-1", "wait=maybe", "timeout=soon", "autoAck=2"] {
        assert_err(&api.pop("q", query).await, 400, "invalid_query");
    }
    // Values of the right type but out of range.
    assert_err(&api.pop("q", "batch=0").await, 400, "invalid_batch");
    assert_err(&api.pop("q", "batch=10001").await, 400, "invalid_batch");
    assert_err(&api.pop("q", "subscriptionMode=sideways").await, 400, "invalid_subscription_mode");
    assert_err(&api.pop("q", "subscriptionFrom=yesterday").await, 400, "invalid_subscription_from");
    let long_group = "g".repeat(300);
    assert_err(&api.pop("q", &format!("consumerGroup={long_group}")).await, 400, "invalid_group");
    let got = api.post("/api/v1/ack", json!({"transactionId": "t", "partitionId": pid, "status": "maybe"})).await;
    assert_err(&got, 400, "invalid_status");
    assert_err(&api.post("/api/v1/configure", json!({"queue": "q", "mode": "sideways"})).await, 400, "invalid_mode");
    assert_eq!(api.snapshot().await, before);
    // The queue's options were not touched by the refused configures.
    let (_, q) = api.get("/api/v1/resources/queues/q").await;
    assert_eq!(q["options"]["leaseTime"], 300, "{q}");
    assert_eq!(q["options"]["retryLimit"], 3, "{q}");
    seeded_message_intact(&api, &m).await;
}

#[tokio::test]
async fn missing_fields_are_400_and_change_nothing() {
    let (api, m) = seeded().await;
    let before = api.snapshot().await;
    let pid = m["partitionId"].clone();
    // serde reports a missing required field as invalid_request ...
    for (path, body) in [
        ("/api/v1/push", json!({})),
        ("/api/v1/push", json!({"item": [{"queue": "q", "payload": 1}]})),
        ("/api/v1/push", json!({"items": [{"payload": 1}]})),
        ("/api/v1/configure", json!({"options": {"leaseTime": 5}})),
        ("/api/v1/ack/batch", json!({"consumerGroup": "g"})),
        ("/api/v1/fetch", json!({"entries": [{"queue": "q"}]})),
    ] {
        assert_err(&api.post(path, body).await, 400, "invalid_request");
    }
    // ... the handlers' own checks as missing_field.
    for (path, body) in [
        // An item without payload after a good one: the good one must not be stored either.
        ("/api/v1/push", json!({"items": [{"queue": "q", "payload": 1}, {"queue": "q", "transactionId": "t"}]})),
        ("/api/v1/push", json!({"items": [{"queue": "", "payload": 1}]})),
        ("/api/v1/ack", json!({"transactionId": "t", "leaseId": m["leaseId"]})),
        ("/api/v1/ack", json!({"partitionId": pid, "leaseId": m["leaseId"]})),
        (
            "/api/v1/ack/batch",
            json!({"acknowledgments": [{"transactionId": m["transactionId"], "partitionId": pid}, {"transactionId": "t"}]}),
        ),
    ] {
        assert_err(&api.post(path, body).await, 400, "missing_field");
    }
    // An empty body where a JSON object is required.
    for path in ["/api/v1/push", "/api/v1/ack", "/api/v1/configure", "/api/v1/fetch"] {
        assert_err(&api.post_raw(path, "", Some("application/json")).await, 400, "empty_body");
    }
    assert_eq!(api.snapshot().await, before);
    seeded_message_intact(&api, &m).await;
}

#[tokio::test]
async fn empty_lists_are_400_and_change_nothing() {
    let (api, m) = seeded().await;
    let before = api.snapshot().await;
    assert_err(&api.post("/api/v1/push", json!({"items": []})).await, 400, "empty_items");
    assert_err(&api.post("/api/v1/ack/batch", json!({"acknowledgments": []})).await, 400, "empty_items");
    assert_err(&api.post("/api/v1/fetch", json!({"entries": []})).await, 400, "invalid_entries");
    let too_many: Vec<Value> = (0..1001).map(|_| json!({"queue": "q", "offset": 0})).collect();
    assert_err(&api.post("/api/v1/fetch", json!({"entries": too_many})).await, 400, "invalid_entries");
    assert_eq!(api.snapshot().await, before);
    seeded_message_intact(&api, &m).await;
}

#[tokio::test]
async fn oversized_body_is_413_and_changes_nothing() {
    let api = Api::with(&["--max-body-bytes", "1000"]);
    let before = api.snapshot().await;
    let big = json!({"items": [{"queue": "big", "payload": "x".repeat(2000)}]});
    assert_err(&api.post("/api/v1/push", big).await, 413, "body_too_large");
    // Many small items adding up past the limit are refused the same way.
    let items: Vec<Value> = (0..40).map(|i| json!({"queue": "big", "payload": i})).collect();
    assert_err(&api.post("/api/v1/push", json!({ "items": items })).await, 413, "body_too_large");
    let ack = json!({"transactionId": "t".repeat(1500), "partitionId": partition_uuid(1)});
    assert_err(&api.post("/api/v1/ack", ack).await, 413, "body_too_large");
    assert_eq!(api.snapshot().await, before);
    assert_err(&api.get("/api/v1/resources/queues/big").await, 404, "queue_not_found");
    // Under the limit the same route works: the size was the only fault.
    let (st, v) = api.post("/api/v1/push", json!({"items": [{"queue": "big", "payload": "x".repeat(500)}]})).await;
    assert_eq!(st, 201, "{v}");
    assert_eq!(v[0]["status"], "queued", "{v}");
}

#[tokio::test]
async fn oversized_payload_is_413_and_stores_nothing_of_the_request() {
    let api = Api::with(&["--max-payload-bytes", "100"]);
    api.push_count("p", "Default", 1).await;
    let before = api.snapshot().await;
    // 98 x's in quotes is exactly 100 bytes of JSON; 99 is one too many.
    let ok = "x".repeat(98);
    let over = "x".repeat(99);
    let items = json!({"items": [
        {"queue": "p", "payload": "small-1", "transactionId": "s1"},
        {"queue": "p", "payload": over, "transactionId": "big"},
        {"queue": "p", "payload": "small-2", "transactionId": "s2"},
    ]});
    assert_err(&api.post("/api/v1/push", items).await, 413, "payload_too_large");
    let nested = json!({"items": [{"queue": "fresh", "payload": {"k": "y".repeat(200)}}]});
    assert_err(&api.post("/api/v1/push", nested).await, 413, "payload_too_large");
    assert_eq!(api.snapshot().await, before);
    assert_err(&api.get("/api/v1/resources/queues/fresh").await, 404, "queue_not_found");
    // The boundary itself is accepted, and the small items could have been pushed alone.
    let (st, v) = api
        .post("/api/v1/push", json!({"items": [{"queue": "p", "payload": ok}, {"queue": "p", "payload": "small-1", "transactionId": "s1"}]}))
        .await;
    assert_eq!(st, 201, "{v}");
    assert_eq!(v[0]["status"], "queued", "{v}");
    assert_eq!(v[1]["status"], "queued", "s1 was never stored, so it is no duplicate: {v}");
    let (_, q) = api.get("/api/v1/resources/queues/p").await;
    assert_eq!(q["messages"]["total"], 3, "{q}");
}

/// Partition (and queue) names with a slash, empty, or longer than 200 bytes
/// are refused with 400 before the engine sees them: no queue is created as a
/// side effect, and no other item of the request is stored.
#[tokio::test]
async fn bad_partition_and_queue_names_are_400_and_store_nothing() {
    let api = Api::start();
    api.push_count("named", "Default", 1).await;
    let before = api.snapshot().await;
    let long = "p".repeat(300);
    for (queue, partition) in [
        ("fresh", "a/b"),
        ("fresh", ""),
        ("fresh", long.as_str()),
        ("fresh", "tab\there"),
        ("named", "a/b"),
        ("named", "back\\slash"),
    ] {
        let body = json!({"items": [
            {"queue": "named", "partition": "good", "payload": 1},
            {"queue": queue, "partition": partition, "payload": 2},
        ]});
        assert_err(&api.post("/api/v1/push", body).await, 400, "invalid_partition");
    }
    let long_queue = "q".repeat(300);
    for queue in ["a/b", long_queue.as_str()] {
        let body = json!({"items": [{"queue": queue, "payload": 1}]});
        assert_err(&api.post("/api/v1/push", body).await, 400, "invalid_queue");
        let body = json!({"queue": queue, "options": {"leaseTime": 5}});
        assert_err(&api.post("/api/v1/configure", body).await, 400, "invalid_queue");
    }
    assert_eq!(api.snapshot().await, before);
    assert_err(&api.get("/api/v1/resources/queues/fresh").await, 404, "queue_not_found");
    let (_, q) = api.get("/api/v1/resources/queues/named").await;
    assert_eq!(q["partitions"], 1, "no partition 'good' was created: {q}");
    assert_eq!(q["messages"]["total"], 1, "{q}");
}

#[tokio::test]
async fn garbage_lease_ids_are_400_invalid_lease_id() {
    let (api, m) = seeded().await;
    let before = api.snapshot().await;
    let pid = m["partitionId"].clone();
    let foreign = pid.as_str().unwrap().to_string(); // a UUID, but a partition's
    for lease in ["garbage", "12345", foreign.as_str(), "00000000-0000-0000-0000-000000000000"] {
        let ack =
            json!({"transactionId": m["transactionId"], "partitionId": pid, "leaseId": lease, "status": "completed"});
        assert_err(&api.post("/api/v1/ack", ack.clone()).await, 400, "invalid_lease_id");
        let batch = json!({"acknowledgments": [ack]});
        assert_err(&api.post("/api/v1/ack/batch", batch).await, 400, "invalid_lease_id");
        let path = format!("/api/v1/lease/{lease}/extend");
        assert_err(&api.post_raw(&path, "", None).await, 400, "invalid_lease_id");
    }
    assert_eq!(api.snapshot().await, before);
    // A well-formed lease id that was never granted is a refusal (200, success
    // false), as Queen's client expects, and changes nothing either.
    let never = lease_uuid(987_654);
    let (st, v) = api.post_raw(&format!("/api/v1/lease/{never}/extend"), "", None).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["success"], false, "{v}");
    assert_eq!(v["code"], "lease_not_found", "{v}");
    let ack = json!({"transactionId": m["transactionId"], "partitionId": pid, "leaseId": never, "status": "completed"});
    let (st, v) = api.post("/api/v1/ack", ack).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v[0]["success"], false, "{v}");
    assert_eq!(v[0]["code"], "lease_not_live", "{v}");
    assert_eq!(api.snapshot().await, before);
    seeded_message_intact(&api, &m).await;
}

#[tokio::test]
async fn unknown_partition_id_in_an_ack_is_refused_and_changes_nothing() {
    let (api, m) = seeded().await;
    let before = api.snapshot().await;
    let ack = json!({"transactionId": m["transactionId"], "partitionId": partition_uuid(424_242),
                     "leaseId": m["leaseId"], "status": "completed"});
    let (st, v) = api.post("/api/v1/ack", ack.clone()).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v[0]["success"], false, "{v}");
    assert_eq!(v[0]["code"], "partition_not_found", "{v}");
    // In a batch, only that item is refused; the good ack of the same batch applies.
    let good = json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                      "leaseId": m["leaseId"], "status": "completed"});
    // A partition id that is not a Baton id at all is malformed: 400 for the whole batch.
    let bad_batch = json!({"acknowledgments": [good, {"transactionId": "t", "partitionId": "not-a-uuid"}]});
    assert_err(&api.post("/api/v1/ack/batch", bad_batch).await, 400, "invalid_partition_id");
    assert_eq!(api.snapshot().await, before);
    let (st, v) = api.post("/api/v1/ack/batch", json!({"acknowledgments": [ack, good]})).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v[0]["success"], false, "{v}");
    assert_eq!(v[1]["success"], true, "{v}");
    let (st, v) = api.pop("q", "batch=1").await;
    assert_eq!(st, 204, "the good ack settled the message: {v}");
}

#[tokio::test]
async fn long_transaction_id_is_400_and_stores_nothing() {
    let api = Api::start();
    let before = api.snapshot().await;
    let body = json!({"items": [
        {"queue": "tx", "payload": 1, "transactionId": "ok"},
        {"queue": "tx", "payload": 2, "transactionId": "t".repeat(257)},
    ]});
    assert_err(&api.post("/api/v1/push", body).await, 400, "invalid_transaction_id");
    assert_eq!(api.snapshot().await, before);
    assert_err(&api.get("/api/v1/resources/queues/tx").await, 404, "queue_not_found");
    // 256 bytes is the limit, inclusive.
    let body = json!({"items": [{"queue": "tx", "payload": 2, "transactionId": "t".repeat(256)}]});
    let (st, v) = api.post("/api/v1/push", body).await;
    assert_eq!(st, 201, "{v}");
    assert_eq!(v[0]["status"], "queued", "{v}");
}

#[tokio::test]
async fn unknown_queue_route_and_method_answer_json() {
    let api = Api::start();
    let before = api.snapshot().await;
    assert_err(&api.get("/api/v1/resources/queues/nope").await, 404, "queue_not_found");
    assert_err(&api.get("/api/v1/resources/queues/nope/depth").await, 404, "queue_not_found");
    assert_err(&api.get("/api/v1/consumer-groups/nope").await, 404, "group_not_found");
    assert_err(&api.get("/api/v1/nope").await, 404, "route_not_found");
    assert_err(&api.post("/no/such/route", json!({})).await, 404, "route_not_found");
    assert_err(&api.get("/api/v1/ephemeral/queues/nope/depth").await, 404, "ephemeral_queue_not_found");
    // A known route with the wrong method: 405, still with the JSON envelope.
    assert_err(&api.get("/api/v1/push").await, 405, "method_not_allowed");
    assert_err(&api.post("/api/v1/pop/queue/q", json!({})).await, 405, "method_not_allowed");
    // Deleting a queue that does not exist is not an error for Queen's client.
    let r = api.c.delete(api.s.url("/api/v1/resources/queues/nope")).send().await.unwrap();
    let (st, v) = read(r).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["deleted"], false, "{v}");
    // Popping a queue that does not exist is "nothing yet" (204), with or without a wait.
    let (st, v) = api.pop("nope", "batch=1").await;
    assert_eq!(st, 204, "{v}");
    let (st, v) = api.get("/api/v1/pop/queue/nope/partition/p?wait=true&timeout=100").await;
    assert_eq!(st, 204, "{v}");
    let (st, v) = api.pop("nope", "batch=1&consumerGroup=g&subscriptionMode=new").await;
    assert_eq!(st, 204, "{v}");
    assert_eq!(api.snapshot().await, before);
    assert_err(&api.get("/api/v1/resources/queues/nope").await, 404, "queue_not_found");
}

/// Durations are bounded at the door: a huge number of seconds would overflow
/// the microsecond arithmetic of the state machine (and a panic there stops
/// the planner thread for good).
#[tokio::test]
async fn huge_durations_are_400_and_the_engine_survives() {
    let (api, m) = seeded().await;
    let before = api.snapshot().await;
    let huge = u64::MAX / 2;
    for key in ["leaseTime", "retentionSeconds", "delayedProcessing", "dedupWindowSeconds"] {
        let body = json!({"queue": "q", "options": { key: huge }});
        assert_err(&api.post("/api/v1/configure", body).await, 400, "invalid_option");
    }
    assert_err(&api.pop("q", &format!("batch=1&leaseSeconds={huge}")).await, 400, "invalid_lease_seconds");
    let path = format!("/api/v1/lease/{}/extend", m["leaseId"].as_str().unwrap());
    assert_err(&api.post(&path, json!({ "seconds": huge })).await, 400, "invalid_lease_seconds");
    assert_eq!(api.snapshot().await, before);
    // The engine still plans: a push and the pending ack both work.
    api.push_count("q", "Default", 1).await;
    seeded_message_intact(&api, &m).await;
}

/// curl users send JSON without a content type, or with a wrong one; the body
/// decides, not the header.
#[tokio::test]
async fn push_without_content_type_works() {
    let api = Api::start();
    let body = r#"{"items":[{"queue":"ct","payload":{"n":1},"transactionId":"a"}]}"#;
    let (st, v) = api.post_raw("/api/v1/push", body, None).await;
    assert_eq!(st, 201, "{v}");
    assert_eq!(v[0]["status"], "queued", "{v}");
    let body = r#"{"items":[{"queue":"ct","payload":{"n":2},"transactionId":"b"}]}"#;
    let (st, v) = api.post_raw("/api/v1/push", body, Some("text/plain")).await;
    assert_eq!(st, 201, "{v}");
    assert_eq!(v[0]["status"], "queued", "{v}");
    let (st, v) = api.pop("ct", "batch=10").await;
    assert_eq!(st, 200, "{v}");
    let data: Vec<&Value> = v["messages"].as_array().unwrap().iter().map(|m| &m["data"]).collect();
    assert_eq!(data, [&json!({"n": 1}), &json!({"n": 2})]);
    // The ack and the configure take a body without content type too.
    let m = &v["messages"][0];
    let ack = json!({"transactionId": "a", "partitionId": m["partitionId"], "leaseId": m["leaseId"]}).to_string();
    let (st, v) = api.post_raw("/api/v1/ack", ack, None).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v[0]["success"], true, "{v}");
    let (st, v) = api.post_raw("/api/v1/configure", r#"{"queue":"ct","options":{"leaseTime":9}}"#, None).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["configured"], true, "{v}");
    assert_eq!(v["options"]["leaseTime"], 9, "{v}");
}

/// An explicit `"payload": null` is a message whose payload is JSON null (a
/// Queen user pushing `{"data": None}` sends that); only a missing payload is bad input.
#[tokio::test]
async fn null_payload_is_a_payload() {
    let api = Api::start();
    let (st, v) = api.post("/api/v1/push", json!({"items": [{"queue": "nul", "payload": null}]})).await;
    assert_eq!(st, 201, "{v}");
    assert_eq!(v[0]["status"], "queued", "{v}");
    let (st, v) = api.pop("nul", "batch=1").await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["messages"][0]["data"], Value::Null, "{v}");
    assert!(v["messages"][0].as_object().unwrap().contains_key("data"), "{v}");

    // `data` is another name for the one payload field: alone it is the payload; next to
    // `payload` the item is ambiguous and the whole request is refused, nothing stored.
    let (st, v) = api.post("/api/v1/push", json!({"items": [{"queue": "dat", "data": {"n": 1}}]})).await;
    assert_eq!((st, v[0]["status"].as_str()), (201, Some("queued")), "{v}");
    let both = json!({"items": [{"queue": "dat", "payload": 1}, {"queue": "dat", "payload": 2, "data": 3}]});
    let (st, v) = api.post("/api/v1/push", both).await;
    assert_eq!(st, 400, "{v}");
    assert!(v["error"].as_str().unwrap_or_default().contains("duplicate field `payload`"), "{v}");
    let (st, v) = api.pop("dat", "batch=10").await;
    assert_eq!(st, 200, "{v}");
    let got: Vec<&Value> = v["messages"].as_array().unwrap().iter().map(|m| &m["data"]).collect();
    assert_eq!(got, [&json!({"n": 1})], "only the data-only push was stored: {v}");
}

/// The Kafka topic route a follower asks the leader through: a partition count outside
/// 1..=10,000, a body that is not `{"partitions": n}` or a name Kafka would refuse is a 400
/// that creates nothing; a good one creates the topic, and asking again changes nothing.
#[tokio::test]
async fn kafka_topic_creation_refuses_bad_counts_and_names_and_creates_nothing() {
    let (api, m) = seeded().await;
    let before = api.snapshot().await;
    let path = "/api/v1/kafka/topics/t";
    for (body, code) in [
        (r#"{"partitions":0}"#, "bad_partitions"),
        (r#"{"partitions":10001}"#, "bad_partitions"),
        (r#"{"partitions":-1}"#, "invalid_request"),
        (r#"{"partitions":4294967296}"#, "invalid_request"),
        (r#"{"partitions":"3"}"#, "invalid_request"),
        (r#"{"partitions":3,"replication":3}"#, "invalid_request"),
        (r#"{}"#, "invalid_request"),
        (r#"{"partitions":"#, "invalid_json"),
    ] {
        assert_err(&api.post_raw(path, body, Some("application/json")).await, 400, code);
    }
    let long = "t".repeat(300);
    for name in [long.as_str(), "a%2Fb"] {
        let path = format!("/api/v1/kafka/topics/{name}");
        assert_err(&api.post_raw(&path, r#"{"partitions":1}"#, None).await, 400, "invalid_topic");
    }
    assert_eq!(api.snapshot().await, before);
    seeded_message_intact(&api, &m).await;
    for _ in 0..2 {
        let (st, v) = api.post_raw(path, r#"{"partitions":3}"#, None).await;
        assert_eq!(st, 201, "{v}");
    }
    let (st, q) = api.get("/api/v1/resources/queues/t").await;
    assert_eq!(st, 200, "{q}");
    assert_eq!(q["partitions"], 3, "{q}");
}
