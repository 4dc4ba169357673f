//! Consumer-group administration routes that Queen's client calls:
//! subscription timestamp updates and the lagging list.

use crate::common;

use serde_json::{json, Value};

#[tokio::test]
async fn subscription_timestamp_rewinds_a_group_and_lagging_lists_it() {
    let s = common::Server::start();
    let c = reqwest::Client::new();
    let push = |n: u32| {
        let c = c.clone();
        let url = s.url("/api/v1/push");
        async move {
            let r = c.post(url).json(&json!({"items": [{"queue": "gq", "payload": {"n": n}}]})).send().await.unwrap();
            assert_eq!(r.status(), 201);
        }
    };
    push(1).await;
    push(2).await;
    let pop = |c: reqwest::Client, url: String| async move {
        let r = c.get(url).send().await.unwrap();
        if r.status() == 204 {
            return Vec::new();
        }
        let v: Value = r.json().await.unwrap();
        v["messages"].as_array().unwrap().iter().map(|m| m["data"]["n"].as_u64().unwrap()).collect::<Vec<_>>()
    };
    let url = s.url("/api/v1/pop/queue/gq?consumerGroup=g1&batch=10&autoAck=true");
    assert_eq!(pop(c.clone(), url.clone()).await, vec![1, 2]);
    assert!(pop(c.clone(), url.clone()).await.is_empty());

    // Nothing unsettled: not lagging. One more message: lagging with lag 1 (at a threshold
    // of 0 s: by default only a backlog at least 60 s old is lagging, as Queen's).
    let lag: Value =
        c.get(s.url("/api/v1/consumer-groups/lagging?minLagSeconds=0")).send().await.unwrap().json().await.unwrap();
    assert_eq!(lag, json!([]));
    push(3).await;
    let lag: Value =
        c.get(s.url("/api/v1/consumer-groups/lagging?minLagSeconds=0")).send().await.unwrap().json().await.unwrap();
    assert_eq!(lag[0]["name"], "g1");
    assert_eq!(lag[0]["totalLag"], 1);

    // Rewind to the epoch: everything is delivered again.
    let r = c
        .post(s.url("/api/v1/consumer-groups/g1/subscription"))
        .json(&json!({"subscriptionTimestamp": "1970-01-01T00:00:00Z"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(pop(c.clone(), url.clone()).await, vec![1, 2, 3]);

    // Unknown group and a bad timestamp are refused.
    let r = c
        .post(s.url("/api/v1/consumer-groups/nope/subscription"))
        .json(&json!({"subscriptionTimestamp": "1970-01-01T00:00:00Z"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let r = c
        .post(s.url("/api/v1/consumer-groups/g1/subscription"))
        .json(&json!({"subscriptionTimestamp": "yesterday"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
}
