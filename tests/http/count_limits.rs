//! How many queues and partitions may exist (`--max-queues`, `--max-partitions`), through the
//! real binary and both doors. Before these bounds a client could create partitions without
//! end (a push per name, a Kafka CreateTopics, the topic route at 10,000 a request), each
//! costing state and files. A refusal plans nothing: no queue, no partition, no message, and
//! in a transaction no ack; the counts stay in force after a restart.

use crate::common;
use crate::kafka_util;

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

async fn kv(api: &Api, ops: Value) -> (u16, Value) {
    api.post("/api/v1/kv", json!({ "operations": ops })).await
}

fn put(key: &str, bytes: usize) -> Value {
    json!({"op": "put", "ns": "n", "key": key, "value": "v".repeat(bytes)})
}

/// KV entries and timers live in memory and in every checkpoint: `--max-kv-mb` and
/// `--max-timers-mb` bound their bytes. A write past the bound is refused whole (in a
/// transaction, with its ack and push); a write that shrinks what is held always goes in;
/// the count is rebuilt after a restart.
#[tokio::test]
async fn kv_and_timer_bytes_past_their_bounds_are_refused_and_plan_nothing() {
    let s = Server::start_with(&["--max-kv-mb", "1", "--max-timers-mb", "1"]);
    let mut api = Api { s, c: client() };
    let (st, v) = kv(&api, json!([put("a", 600_000)])).await;
    assert_eq!(st, 200, "{v}");
    // Two ops where the second passes the bound: neither is applied.
    let (st, v) = kv(&api, json!([put("b", 100), put("c", 600_000)])).await;
    assert_eq!((st, v["code"].as_str()), (429, Some("kv_full")), "{v}");
    assert!(v["error"].as_str().unwrap().contains("max KV MB"), "{v}");
    let (_, v) = kv(&api, json!([{"op": "get", "ns": "n", "key": "b"}])).await;
    assert_eq!(v["results"][0]["found"], false, "{v}");
    // Replacing "a" by a larger value that still fits, then by a smaller one, then more keys.
    let (st, v) = kv(&api, json!([put("a", 1_000_000)])).await;
    assert_eq!(st, 200, "{v}");
    let (st, v) = kv(&api, json!([put("b", 60_000)])).await;
    assert_eq!((st, v["code"].as_str()), (429, Some("kv_full")), "{v}");
    let (st, v) = kv(&api, json!([put("a", 10), put("b", 500_000)])).await;
    assert_eq!(st, 200, "a shrink makes room in the same request: {v}");
    assert!(api.metric("baton_kv_bytes").await > 500_000.0);

    // A transaction with an ack, a push and a KV write past the bound: nothing of it.
    api.push_n("q", "p", "m", 0..1).await;
    let got = api.pop_some("q", "batch=1").await;
    let m = &got[0];
    let (st, v) = api
        .post(
            "/api/v1/transaction",
            json!({"operations": [
                {"type": "ack", "transactionId": m["transactionId"], "partitionId": m["partitionId"], "leaseId": m["leaseId"]},
                {"type": "push", "items": [{"queue": "out", "payload": {"x": 1}}]}
            ], "kv": [put("c", 600_000)]}),
        )
        .await;
    assert_eq!((st, v["code"].as_str()), (429, Some("kv_full")), "{v}");
    let (st, _) = api.get("/api/v1/resources/queues/out").await;
    assert_eq!(st, 404, "the transaction's push made nothing");
    let r = api.ack(m, "completed", None).await;
    assert_eq!(r["success"], true, "the refused transaction did not take the ack: {r}");

    // Timers: one of 700 KB fits, a second does not, in its own request or in a transaction
    // (whose push is then not stored either); a cancel makes room again.
    let timer = |key: &str, bytes: usize| {
        use base64::Engine;
        let payload = base64::engine::general_purpose::STANDARD.encode(format!("\"{}\"", "t".repeat(bytes)));
        json!({"op": "schedule", "queue": "tq", "timerKey": key, "payload": payload, "delayMs": 600_000})
    };
    let (st, v) = api.post("/api/v1/timers", json!({"operations": [timer("t1", 700_000)]})).await;
    assert_eq!(st, 200, "{v}");
    let (st, v) = api.post("/api/v1/timers", json!({"operations": [timer("t2", 700_000)]})).await;
    assert_eq!((st, v["code"].as_str()), (429, Some("timers_full")), "{v}");
    let (st, v) = api
        .post(
            "/api/v1/transaction",
            json!({"operations": [{"type": "push", "items": [{"queue": "out2", "payload": {"x": 1}}]}],
                   "timers": [timer("t2", 700_000)]}),
        )
        .await;
    assert_eq!((st, v["code"].as_str()), (429, Some("timers_full")), "{v}");
    let (st, _) = api.get("/api/v1/resources/queues/out2").await;
    assert_eq!(st, 404, "the transaction's push made nothing");
    assert!(api.metric("baton_http_errors_total{status=\"429\",code=\"timers_full\"}").await >= 2.0);

    // The counts are rebuilt after a restart: still full, and a cancel makes room.
    api.s.terminate();
    api.s.restart();
    api.c = client();
    let (st, v) = kv(&api, json!([put("c", 600_000)])).await;
    assert_eq!((st, v["code"].as_str()), (429, Some("kv_full")), "{v}");
    let (st, v) = api.post("/api/v1/timers", json!({"operations": [timer("t2", 700_000)]})).await;
    assert_eq!((st, v["code"].as_str()), (429, Some("timers_full")), "{v}");
    let (st, v) = api
        .post(
            "/api/v1/timers",
            json!({"operations": [{"op": "cancel", "queue": "tq", "timerKey": "t1"}, timer("t2", 700_000)]}),
        )
        .await;
    assert_eq!(st, 200, "{v}");
    let (st, v) = kv(&api, json!([{"op": "delete", "ns": "n", "key": "b"}, put("c", 600_000)])).await;
    assert_eq!(st, 200, "{v}");
}

/// One HTTP transaction is one entry planned at once, and a partition's first write makes its
/// files on the planner: before `--max-transaction-partitions`, one transaction pushing to
/// 20,000 new partitions held every other request back for 5.8 s (D81). Past the bound the
/// transaction is refused whole (413, nothing planned, its ack not taken); the same partition
/// named by several push operations counts once.
#[tokio::test]
async fn a_transaction_pushing_to_more_partitions_than_the_bound_is_refused_whole() {
    let s = Server::start_with(&["--max-transaction-partitions", "3"]);
    let api = Api { s, c: client() };
    api.push_n("q", "p", "m", 0..1).await;
    let got = api.pop_some("q", "batch=1").await;
    let m = &got[0];
    let ack = json!({"type": "ack", "transactionId": m["transactionId"], "partitionId": m["partitionId"], "leaseId": m["leaseId"]});
    let (st, v) = api
        .post(
            "/api/v1/transaction",
            json!({"operations": [ack.clone(),
                {"type": "push", "items": [item("w", "p0", 0), item("w", "p1", 1)]},
                {"type": "push", "items": [item("w", "p1", 2), item("w", "p2", 3), item("w", "p3", 4)]}
            ]}),
        )
        .await;
    assert_eq!((st, v["code"].as_str()), (413, Some("too_many_transaction_partitions")), "{v}");
    assert!(v["error"].as_str().unwrap().contains("max transaction partitions"), "{v}");
    let (st, _) = api.get("/api/v1/resources/queues/w").await;
    assert_eq!(st, 404, "the refused transaction made nothing");
    assert_eq!(
        api.metric("baton_http_errors_total{status=\"413\",code=\"too_many_transaction_partitions\"}").await,
        1.0
    );
    // Three partitions named five times: within the bound, committed whole with the ack.
    let (st, v) = api
        .post(
            "/api/v1/transaction",
            json!({"operations": [ack,
                {"type": "push", "items": [item("w", "p0", 0), item("w", "p1", 1)]},
                {"type": "push", "items": [item("w", "p1", 2), item("w", "p2", 3), item("w", "p0", 4)]}
            ]}),
        )
        .await;
    assert_eq!((st, &v["success"]), (200, &json!(true)), "{v}");
    assert_eq!(api.metric("baton_partitions").await, 4.0, "q/p and w's three");
    let (st, v) = api.pop("w", "batch=10&autoAck=true").await;
    assert_eq!(st, 200, "{v}");
}
