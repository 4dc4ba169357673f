//! Leases, retries and dead letters through the real binary: expiry
//! redelivers, failures are charged, past retryLimit a message is
//! dead-lettered, extend keeps a lease, and a fenced ack changes nothing.

use crate::common;

use common::api::{ns, read, txids, Api};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

#[tokio::test]
async fn lease_expiry_redelivers_with_delivery_attempt_2() {
    let api = Api::start();
    api.configure("exp", json!({"leaseTime": 1})).await;
    api.push_n("exp", "Default", "e", 0..1).await;
    let first = api.pop_some("exp", "batch=1").await;
    assert_eq!(first[0]["deliveryAttempt"], 1);
    assert_eq!(first[0]["retryCount"], 0);
    api.pop_none("exp", "batch=1").await;
    // A long poll is woken by the expiry itself, about a second later.
    let t = Instant::now();
    let (st, v) = api.get("/api/v1/pop/queue/exp?wait=true&timeout=5000&batch=1").await;
    let waited = t.elapsed();
    assert_eq!(st, 200, "{v}");
    assert!(waited > Duration::from_millis(600) && waited < Duration::from_secs(3), "{waited:?}");
    let m = &v["messages"][0];
    assert_eq!(m["transactionId"], first[0]["transactionId"]);
    assert_eq!(m["deliveryAttempt"], 2, "{m}");
    assert_eq!(m["retryCount"], 1, "{m}");
    assert_ne!(m["leaseId"], first[0]["leaseId"], "a new lease");
    api.ack_ok(std::slice::from_ref(m)).await;
    api.pop_none("exp", "batch=1").await;
}

/// The engine wakes long polls when a lease expires, from a heap of expiry
/// times filled at pop; an extended lease's new expiry is never added, so a
/// consumer waiting behind it is not woken when it finally expires.
#[tokio::test]
async fn a_long_poll_is_woken_when_an_extended_lease_expires() {
    let api = Api::start();
    api.configure("extexp", json!({"leaseTime": 1})).await;
    api.push_n("extexp", "Default", "e", 0..1).await;
    let held = api.pop_some("extexp", "batch=1").await;
    let path = format!("/api/v1/lease/{}/extend", held[0]["leaseId"].as_str().unwrap());
    let (st, v) = api.post(&path, json!({"seconds": 2})).await;
    assert_eq!((st, &v["success"]), (200, &json!(true)), "{v}");
    let t = Instant::now();
    let (st, v) = api.get("/api/v1/pop/queue/extexp?wait=true&timeout=6000&batch=1").await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["messages"][0]["deliveryAttempt"], 2, "{v}");
    assert!(t.elapsed() < Duration::from_millis(3500), "woken {:?} after the poll began", t.elapsed());
}

#[tokio::test]
async fn lease_expiry_past_retry_limit_dead_letters() {
    let api = Api::start();
    api.configure("expdlq", json!({"leaseTime": 1, "retryLimit": 1})).await;
    api.push("expdlq", "Default", &[("x", json!("poison"))]).await;
    for attempt in 1..=2 {
        let (st, v) = api.get("/api/v1/pop/queue/expdlq?wait=true&timeout=5000&batch=1").await;
        assert_eq!(st, 200, "{v}");
        assert_eq!(v["messages"][0]["deliveryAttempt"], attempt, "{v}");
    }
    // The second lease expires too: past retryLimit 1, the next pop dead-letters it.
    let (st, v) = api.get("/api/v1/pop/queue/expdlq?wait=true&timeout=2500&batch=1").await;
    assert_eq!(st, 204, "{v}");
    let d = api.dlq("expdlq").await;
    assert_eq!(d["total"], 1, "{d}");
    assert_eq!(d["messages"][0]["transactionId"], "x", "{d}");
    assert_eq!(d["messages"][0]["data"], "poison", "{d}");
    assert!(d["messages"][0]["errorMessage"].as_str().is_some_and(|e| !e.is_empty()), "{d}");
}

#[tokio::test]
async fn failed_ack_charges_and_redelivers() {
    let api = Api::start();
    api.push_n("nack", "Default", "f", 0..2).await;
    let first = api.pop_some("nack", "batch=2").await;
    assert_eq!(ns(&first), [0, 1]);
    let r = api.ack(&first[0], "failed", Some("boom")).await;
    assert_eq!(r["success"], true, "{r}");
    // The nack released the lease: both come again, from the failed one, and
    // only the failed one was charged.
    let again = api.pop_some("nack", "batch=2").await;
    assert_eq!(ns(&again), [0, 1]);
    assert_eq!(again[0]["deliveryAttempt"], 2, "{}", again[0]);
    assert_eq!(again[0]["retryCount"], 1);
    assert_eq!(again[1]["deliveryAttempt"], 1, "{}", again[1]);
    api.ack_ok(&again).await;
    api.pop_none("nack", "batch=2").await;
    assert_eq!(api.dlq("nack").await["total"], 0);
}

#[tokio::test]
async fn past_retry_limit_a_message_is_dead_lettered_and_not_delivered_again() {
    let api = Api::start();
    api.configure("rl", json!({"retryLimit": 1})).await;
    api.push("rl", "Default", &[("bad", json!({"k": "v"})), ("good", json!(2))]).await;
    let m = api.pop_some("rl", "batch=1").await;
    assert_eq!(api.ack(&m[0], "failed", Some("first")).await["success"], true);
    let m = api.pop_some("rl", "batch=1").await;
    assert_eq!(m[0]["transactionId"], "bad");
    assert_eq!(m[0]["deliveryAttempt"], 2);
    assert_eq!(api.ack(&m[0], "failed", Some("second")).await["success"], true);
    assert_eq!(api.dlq("rl").await["total"], 1);
    // Next comes the message behind it; "bad" never comes back.
    let m = api.pop_some("rl", "batch=10").await;
    assert_eq!(txids(&m), ["good"]);
    api.ack_ok(&m).await;
    api.pop_none("rl", "batch=10").await;
    let d = api.dlq("rl").await;
    assert_eq!(d["total"], 1, "{d}");
    let row = &d["messages"][0];
    assert_eq!(row["transactionId"], "bad", "{d}");
    assert_eq!(row["errorMessage"], "second", "{d}");
    assert_eq!(row["data"], json!({"k": "v"}), "{d}");
    assert_eq!(row["queueName"], "rl", "{d}");
    assert_eq!(row["partitionName"], "Default", "{d}");
    let q = api.ok("/api/v1/resources/queues/rl").await;
    assert_eq!(q["messages"]["deadLetter"], 1, "{q}");
    assert_eq!(q["depth"], 0, "{q}");
    // The DLQ of another queue is empty.
    assert_eq!(api.dlq("other").await["total"], 0);
}

#[tokio::test]
async fn status_dlq_moves_at_once_and_retry_redelivers_free() {
    let api = Api::start();
    // retryLimit 0: any charged failure would dead-letter, so "retry" must not charge.
    api.configure("st", json!({"retryLimit": 0})).await;
    api.push("st", "Default", &[("a", json!(1)), ("b", json!(2))]).await;
    let m = api.pop_some("st", "batch=1").await;
    let r = api.ack(&m[0], "dlq", Some("poison")).await;
    assert_eq!(r["success"], true, "{r}");
    let d = api.dlq("st").await;
    assert_eq!(d["total"], 1, "{d}");
    assert_eq!(d["messages"][0]["transactionId"], "a");
    assert_eq!(d["messages"][0]["errorMessage"], "poison");
    for _ in 0..3 {
        let m = api.pop_some("st", "batch=1").await;
        assert_eq!(m[0]["transactionId"], "b");
        assert_eq!(m[0]["retryCount"], 0, "retry does not charge: {}", m[0]);
        assert_eq!(api.ack(&m[0], "retry", None).await["success"], true);
    }
    assert_eq!(api.dlq("st").await["total"], 1, "retries never dead-letter");
    let m = api.pop_some("st", "batch=1").await;
    assert_eq!(m[0]["transactionId"], "b");
    // With retryLimit 0 a charged failure is dead-lettered at once.
    assert_eq!(api.ack(&m[0], "failed", Some("no")).await["success"], true);
    assert_eq!(api.dlq("st").await["total"], 2);
    api.pop_none("st", "batch=1").await;
}

#[tokio::test]
async fn ack_batch_with_mixed_statuses() {
    let api = Api::start();
    api.push_n("mix", "Default", "x", 0..4).await;
    let m = api.pop_some("mix", "batch=4").await;
    assert_eq!(ns(&m), [0, 1, 2, 3]);
    let item = |m: &Value, status: &str| {
        json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"],
               "leaseId": m["leaseId"], "status": status, "error": format!("{status} it")})
    };
    let body = json!({"acknowledgments": [item(&m[0], "completed"), item(&m[1], "failed"),
                                          item(&m[2], "dlq"), item(&m[3], "completed")],
                      "consumerGroup": null});
    let (st, v) = api.post("/api/v1/ack/batch", body).await;
    assert_eq!(st, 200, "{v}");
    let results = v.as_array().unwrap();
    assert_eq!(results.len(), 4);
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r["success"], true, "item {i}: {v}");
        assert_eq!(r["transactionId"], m[i]["transactionId"], "{v}");
    }
    // Only the failed one comes back, charged; the others are settled.
    let again = api.pop_some("mix", "batch=4").await;
    assert_eq!(ns(&again), [1]);
    assert_eq!(again[0]["deliveryAttempt"], 2);
    let d = api.dlq("mix").await;
    assert_eq!(d["total"], 1, "{d}");
    assert_eq!(d["messages"][0]["transactionId"], "x-2");
    assert_eq!(d["messages"][0]["errorMessage"], "dlq it");
    api.ack_ok(&again).await;
    api.pop_none("mix", "batch=4").await;
    assert_eq!(api.ok("/api/v1/resources/queues/mix").await["depth"], 0);
}

#[tokio::test]
async fn lease_extend_keeps_a_lease_past_its_original_expiry() {
    let api = Api::start();
    api.configure("ext", json!({"leaseTime": 1})).await;
    api.push_n("ext", "Default", "e", 0..1).await;
    let (st, v) = api.pop("ext", "batch=1").await;
    assert_eq!(st, 200, "{v}");
    let m = v["messages"][0].clone();
    let lease = m["leaseId"].as_str().unwrap().to_string();
    let original = v["leaseExpiresAt"].as_str().unwrap().to_string();
    let path = format!("/api/v1/lease/{lease}/extend");
    // Queen's client sends no body: the queue's lease time from now.
    let r = api.c.post(api.s.url(&path)).send().await.unwrap();
    let (st, v) = read(r).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["success"], true, "{v}");
    assert_eq!(v["leaseId"], lease.as_str());
    let (st, v) = api.post(&path, json!({"seconds": 4})).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["success"], true, "{v}");
    let extended = v["newExpiresAt"].as_str().unwrap().to_string();
    assert!(extended > original, "{extended} must be after {original}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // Past the original expiry: still exclusive, still ackable.
    api.pop_none("ext", "batch=1").await;
    let r = api.ack(&m, "completed", None).await;
    assert_eq!(r["success"], true, "{r}");
    api.pop_none("ext", "batch=1").await;
    // Once released, the lease cannot be extended.
    let (st, v) = api.post(&path, json!({"seconds": 4})).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["success"], false, "{v}");
}

#[tokio::test]
async fn an_ack_after_lease_expiry_is_refused_and_changes_nothing() {
    let api = Api::start();
    api.configure("late", json!({"leaseTime": 1})).await;
    api.push_n("late", "Default", "l", 0..1).await;
    let m = api.pop_some("late", "batch=1").await;
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let entries = api.metric("baton_log_entries_total").await;
    let r = api.ack(&m[0], "completed", None).await;
    assert_eq!(r["success"], false, "{r}");
    assert_eq!(r["code"], "lease_not_live", "{r}");
    assert!(r["error"].as_str().is_some_and(|e| !e.is_empty()), "{r}");
    let path = format!("/api/v1/lease/{}/extend", m[0]["leaseId"].as_str().unwrap());
    let (st, v) = api.post(&path, json!({"seconds": 10})).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["success"], false, "an expired lease cannot be revived: {v}");
    assert_eq!(api.metric("baton_log_entries_total").await, entries, "nothing was written");
    // The message was not settled by the late ack: it comes again.
    let again = api.pop_some("late", "batch=1").await;
    assert_eq!(again[0]["transactionId"], m[0]["transactionId"]);
    assert_eq!(again[0]["deliveryAttempt"], 2);
    api.ack_ok(&again).await;
    api.pop_none("late", "batch=1").await;
}
