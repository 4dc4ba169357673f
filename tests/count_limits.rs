//! How many queues and partitions may exist (`--max-queues`, `--max-partitions`), through the
//! real binary and both doors. Before these bounds a client could create partitions without
//! end (a push per name, a Kafka CreateTopics, the topic route at 10,000 a request), each
//! costing state and files. A refusal plans nothing: no queue, no partition, no message, and
//! in a transaction no ack; the counts stay in force after a restart.

mod common;
mod kafka_util;

use common::api::{client, Api};
use common::Server;
use kafka_protocol::messages::*;
use kafka_protocol::records::Compression;
use kafka_util::*;
use serde_json::{json, Value};

const TOPIC_ALREADY_EXISTS: i16 = 36;
const THROTTLING_QUOTA_EXCEEDED: i16 = 89;

fn item(q: &str, p: &str, n: u64) -> Value {
    json!({"queue": q, "partition": p, "payload": {"n": n}})
}

async fn push(api: &Api, items: Vec<Value>) -> Vec<Value> {
    let (st, v) = api.post("/api/v1/push", json!({ "items": items })).await;
    assert_eq!(st, 201, "{v}");
    v.as_array().unwrap().clone()
}

async fn sizes(api: &Api) -> (f64, f64) {
    (api.metric("baton_queues").await, api.metric("baton_partitions").await)
}

#[tokio::test]
async fn partitions_and_queues_past_their_bounds_are_refused_and_plan_nothing() {
    let (s, kport) = Server::start_kafka(&["--max-queues", "4", "--max-partitions", "6"]);
    let mut api = Api { s, c: client() };
    // Four partitions of "a".
    let r = push(&api, (0..4).map(|i| item("a", &format!("p{i}"), i)).collect()).await;
    assert!(r.iter().all(|x| x["status"] == "queued"), "{r:?}");

    // A transaction that acks one message and pushes to three new partitions where two fit:
    // rolled back whole, the ack undone with it.
    let got = api.pop_some("a", "batch=1").await;
    let m = &got[0];
    let acked = m["data"]["n"].as_u64().unwrap();
    let (st, v) = api
        .post(
            "/api/v1/transaction",
            json!({"operations": [
                {"type": "ack", "transactionId": m["transactionId"], "partitionId": m["partitionId"], "leaseId": m["leaseId"]},
                {"type": "push", "items": [item("a", "t0", 20), item("a", "t1", 21), item("a", "t2", 22)]}
            ]}),
        )
        .await;
    assert_eq!(v["success"], false, "{st} {v}");
    assert!(v.to_string().contains("too_many_partitions"), "{v}");
    assert_eq!(sizes(&api).await, (1.0, 4.0));
    let r = api.ack(m, "completed", None).await;
    assert_eq!(r["success"], true, "the rolled-back transaction did not take the lease's ack: {r}");

    // One push to three new partitions where two fit: those two are queued, the third is
    // refused, and one to an existing partition in the same request still goes in.
    let r = push(&api, vec![item("a", "p4", 10), item("b", "p0", 11), item("b", "p1", 13), item("a", "p0", 12)]).await;
    let st: Vec<&str> = r.iter().map(|x| x["status"].as_str().unwrap()).collect();
    assert_eq!(st, ["queued", "queued", "failed", "queued"], "{r:?}");
    assert!(r[2]["error"].as_str().unwrap().contains("max partitions"), "{r:?}");
    assert_eq!(sizes(&api).await, (2.0, 6.0));
    assert!(api.metric("baton_http_errors_total{status=\"429\",code=\"too_many_partitions\"}").await >= 1.0);

    // The Kafka door: CreateTopics past the bound (its queue is not made either), and a
    // produce that would auto-create 2,000,000,001 partitions of "c" (a partition index is
    // all a produce names).
    api.configure("c", json!({"leaseTime": 30})).await;
    let mut k = Kafka::connect(kport);
    let create = CreateTopicsRequest::default().with_timeout_ms(5000).with_topics(vec![
        create_topics_request::CreatableTopic::default()
            .with_name(topic("c"))
            .with_num_partitions(1)
            .with_replication_factor(1),
        create_topics_request::CreatableTopic::default()
            .with_name(topic("e"))
            .with_num_partitions(2)
            .with_replication_factor(1),
    ]);
    let r: CreateTopicsResponse = k.call(ApiKey::CreateTopics, 5, &create);
    let codes: Vec<i16> = r.topics.iter().map(|t| t.error_code).collect();
    assert_eq!(codes, [TOPIC_ALREADY_EXISTS, THROTTLING_QUOTA_EXCEEDED], "{r:?}");
    assert!(format!("{:?}", r.topics[1].error_message).contains("max partitions"), "{r:?}");
    let p = k.produce("c", 2_000_000_000, batch(&[b"x"], Compression::None, None), -1);
    assert_ne!(p.error_code, 0, "{p:?}");
    assert_eq!(sizes(&api).await, (3.0, 6.0), "nothing was made through the Kafka door");

    // The route a cluster member asks the leader to create a Kafka topic by.
    let (st, v) = api.post("/api/v1/kafka/topics/c", json!({"partitions": 10000})).await;
    assert_eq!((st, v["code"].as_str()), (429, Some("too_many_partitions")), "{v}");

    // Configuring new queues: one more fits, the next is refused.
    api.configure("d", json!({"leaseTime": 30})).await;
    let (st, v) = api.post("/api/v1/configure", json!({"queue": "x", "options": {"leaseTime": 30}})).await;
    assert_eq!((st, v["code"].as_str()), (429, Some("too_many_queues")), "{v}");
    assert!(api.metric("baton_http_errors_total{status=\"429\",code=\"too_many_queues\"}").await >= 1.0);
    assert_eq!(sizes(&api).await, (4.0, 6.0));

    // Still in force after a restart.
    api.s.terminate();
    api.s.restart();
    api.c = client();
    assert_eq!(sizes(&api).await, (4.0, 6.0));
    let r = push(&api, vec![item("c", "p0", 30)]).await;
    assert_eq!(r[0]["status"], "failed", "{r:?}");
    // Nothing refused was stored: a, then c, hold exactly the messages queued.
    let mut ns: Vec<u64> = Vec::new();
    for q in ["a", "b"] {
        for _ in 0..20 {
            let (st, v) = api.pop(q, "batch=100&autoAck=true").await;
            if st == 204 {
                break;
            }
            assert_eq!(st, 200, "{v}");
            ns.extend(v["messages"].as_array().unwrap().iter().map(|m| m["data"]["n"].as_u64().unwrap()));
        }
    }
    ns.sort();
    let want: Vec<u64> = [0, 1, 2, 3, 10, 11, 12].into_iter().filter(|n| *n != acked).collect();
    assert_eq!(ns, want, "the one acked above is gone; the refused ones are nowhere");
}
