//! A first end-to-end check through the real binary: push, pop, ack, and the
//! acked message is not delivered again.

use crate::common;

use serde_json::{json, Value};

#[tokio::test]
async fn push_pop_ack_round_trip() {
    let s = common::Server::start();
    let c = reqwest::Client::new();
    let r = c
        .post(s.url("/api/v1/push"))
        .json(&json!({"items": [{"queue": "smoke", "payload": {"n": 1}, "transactionId": "a"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let r = c.get(s.url("/api/v1/pop/queue/smoke?batch=5&wait=false")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    let m = &v["messages"][0];
    assert_eq!(m["data"], json!({"n": 1}));
    let ack =
        json!({"transactionId": "a", "partitionId": m["partitionId"], "leaseId": m["leaseId"], "status": "completed"});
    let r: Value = c.post(s.url("/api/v1/ack")).json(&ack).send().await.unwrap().json().await.unwrap();
    assert_eq!(r[0]["success"], true, "{r}");
    let r = c.get(s.url("/api/v1/pop/queue/smoke?batch=5&wait=false")).send().await.unwrap();
    assert_eq!(r.status(), 204);
}
