//! Hostile use of the Queen surfaces added for issue 16, against the real `baton` binary:
//! what a client must not be able to write (a lock's permit rows through the general KV
//! API), and how much planner work one call may ask for (a locks call reading every slot of
//! many semaphores; a `changed_since` over a queue of many quiet partitions). Each refusal
//! changes nothing and names its code.

use crate::common;

use common::api::Api;
use serde_json::{json, Value};

async fn locks(api: &Api, ops: Value) -> (u16, Value) {
    api.post("/api/v1/locks", json!({ "operations": ops })).await
}

#[tokio::test]
async fn permit_rows_are_written_only_by_the_locks_route() {
    let api = Api::start();
    let (st, v) = locks(&api, json!([{"op": "acquire", "name": "job", "ttlSeconds": 30, "owner": "a"}])).await;
    assert_eq!(st, 200, "{v}");
    let token = v["results"][0]["token"].as_u64().unwrap();

    // A forged permit (taking the lock from its holder), a moved token, an incr and a delete:
    // each refused before anything is judged, in /kv and inside a transaction alike.
    let forged = [
        json!({"op": "put", "ns": "queen-locks", "key": "job#0", "value": {"owner": "b", "since": "x"}}),
        json!({"op": "put", "ns": "queen-locks", "key": "job#0", "value": 1, "expect": token}),
        json!({"op": "putIfAbsent", "ns": "queen-locks", "key": "job#1", "value": 1}),
        json!({"op": "delete", "ns": "queen-locks", "key": "job#0"}),
        json!({"op": "incr", "ns": "queen-traces", "key": "n"}),
    ];
    for op in &forged {
        let (st, v) = api.post("/api/v1/kv", json!({ "operations": [op] })).await;
        assert_eq!((st, v["code"].as_str()), (400, Some("reserved_namespace")), "{op}: {v}");
        let (st, v) = api
            .post(
                "/api/v1/transaction",
                json!({"operations": [{"type": "push", "items": [{"queue": "rq", "payload": 1}]}], "kv": [op]}),
            )
            .await;
        assert_eq!((st, v["code"].as_str()), (400, Some("reserved_namespace")), "{op}: {v}");
    }
    // Nothing moved: the holder and its token are as acquired, and nothing was pushed.
    let (_, v) = locks(&api, json!([{"op": "get", "name": "job"}])).await;
    let holders = v["results"][0]["holders"].as_array().unwrap().clone();
    assert_eq!(holders.len(), 1, "{v}");
    assert_eq!((holders[0]["owner"].as_str(), holders[0]["token"].as_u64()), (Some("a"), Some(token)));
    api.pop_none("rq", "batch=1").await;

    // A transaction of KV operations alone need not name `operations` (docs/api.md).
    let (st, v) =
        api.post("/api/v1/transaction", json!({"kv": [{"op": "put", "ns": "app", "key": "k", "value": 1}]})).await;
    assert_eq!((st, &v["success"]), (200, &json!(true)), "{v}");
    // Reading a permit and guarding a transaction with it stay open.
    let (st, v) =
        api.post("/api/v1/kv", json!({"operations": [{"op": "get", "ns": "queen-locks", "key": "job#0"}]})).await;
    assert_eq!((st, v["results"][0]["version"].as_u64()), (200, Some(token)), "{v}");
    let guard = json!({"op": "check", "ns": "queen-locks", "key": "job#0", "expect": token, "required": true});
    let (st, v) = api
        .post(
            "/api/v1/transaction",
            json!({"operations": [{"type": "push", "items": [{"queue": "rq", "payload": 2}]}], "kv": [guard]}),
        )
        .await;
    assert_eq!((st, &v["success"]), (200, &json!(true)), "{v}");
}

#[tokio::test]
async fn one_locks_call_reads_a_bounded_number_of_permits() {
    let api = Api::start();
    // 64 acquires of 1,024-slot semaphores: up to ~200,000 permit reads on the planner.
    let many: Vec<Value> =
        (0..64).map(|i| json!({"op": "acquire", "name": format!("s{i}"), "ttlSeconds": 30, "limit": 1024})).collect();
    let (st, v) = locks(&api, json!(many)).await;
    assert_eq!((st, v["code"].as_str()), (400, Some("too_many_permits")), "{v}");
    let big: Vec<Value> =
        (0..22).map(|i| json!({"op": "acquire", "name": format!("s{i}"), "ttlSeconds": 30, "limit": 1024})).collect();
    let (st, v) = locks(&api, json!(big)).await;
    assert_eq!((st, v["code"].as_str()), (400, Some("too_many_permits")), "{v}");
    // A full call of gets (a relay's look at its buckets) fits.
    let gets: Vec<Value> = (0..64).map(|i| json!({"op": "get", "name": format!("s{i}")})).collect();
    let (st, v) = locks(&api, json!(gets)).await;
    assert_eq!((st, v["results"].as_array().map(Vec::len)), (200, Some(64)), "{v}");
    // Nothing was acquired by the refused call.
    let (_, v) = locks(&api, json!([{"op": "get", "name": "s0"}])).await;
    assert_eq!(v["results"][0]["held"], false, "{v}");

    // Within the bound a full semaphore still works: 4 acquires of 1,024 slots, each takes
    // its own slot; then one of 3 slots fills and refuses the fourth.
    let four: Vec<Value> = (0..4)
        .map(|i| json!({"op": "acquire", "name": "big", "ttlSeconds": 30, "limit": 1024, "owner": format!("o{i}")}))
        .collect();
    let (st, v) = locks(&api, json!(four)).await;
    assert_eq!(st, 200, "{v}");
    let slots: Vec<u64> = v["results"].as_array().unwrap().iter().map(|r| r["slot"].as_u64().unwrap()).collect();
    assert_eq!(slots, [0, 1, 2, 3], "{v}");
    for i in 0..4 {
        let (_, v) = locks(
            &api,
            json!([{"op": "acquire", "name": "small", "ttlSeconds": 30, "limit": 3, "owner": format!("p{i}")}]),
        )
        .await;
        assert_eq!(v["results"][0]["acquired"], i < 3, "{i}: {v}");
    }
}

#[tokio::test]
async fn changed_since_examines_a_bounded_number_of_partitions() {
    let api = Api::start();
    // 5,000 partitions, then one more written later: a `since` past the 5,000 finds only
    // the last, and must page through the quiet ones to reach it.
    let items: Vec<Value> =
        (0..5000).map(|i| json!({"queue": "wide", "partition": format!("p{i}"), "payload": i})).collect();
    let (st, v) = api.post("/api/v1/push", json!({ "items": items })).await;
    assert_eq!(st, 201, "{v}");
    let (_, v) = api.post("/api/v1/partitions/changed", json!({"entries": [{"queue": "wide"}]})).await;
    let since = v["safeTime"].as_str().unwrap().to_string();
    api.push("wide", "late", &[("late-1", json!(1))]).await;

    let mut after: Option<String> = None;
    let mut pages = 0;
    let mut found = Vec::new();
    loop {
        pages += 1;
        assert!(pages < 20, "no end to the pages");
        let mut e = json!({"queue": "wide", "since": since});
        if let Some(a) = &after {
            e["after"] = json!(a);
        }
        let (st, v) = api.post("/api/v1/partitions/changed", json!({ "entries": [e] })).await;
        assert_eq!(st, 200, "{v}");
        let entry = &v["entries"][0];
        found.extend(entry["partitions"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap().to_string()));
        match entry["next"].as_str() {
            Some(n) => after = Some(n.to_string()),
            None => break,
        }
    }
    assert_eq!(found, ["late"]);
    assert!(pages >= 2, "5,001 partitions were examined in one page ({pages})");

    // A queue's view is put together from planner steps of at most 4,096 partitions: all
    // 5,001 are there once, in creation order, with their depths, a page at a time (one
    // answer lists at most 10,000; a queue of 200,000 partitions was one 24 MB body).
    let (st, v) = api.get("/api/v1/resources/queues/wide").await;
    assert_eq!(st, 200, "{v}");
    let parts = v["partitionList"].as_array().expect("partitionList");
    assert_eq!((parts.len(), v["partitions"].as_u64()), (1000, Some(5001)), "the first page is 1,000");
    assert_eq!(v["partitionPage"], json!({"total": 5001, "limit": 1000, "offset": 0, "next": 1000}));
    let (_, v) = api.get("/api/v1/resources/queues/wide?limit=10000").await;
    let parts = v["partitionList"].as_array().expect("partitionList");
    assert_eq!(parts.len(), 5001);
    assert_eq!((parts[0]["name"].as_str(), parts[5000]["name"].as_str()), (Some("p0"), Some("late")));
    let (_, v) = api.get("/api/v1/status/queues/wide?offset=5000").await;
    assert_eq!(v["partitionList"][0]["name"].as_str(), Some("late"), "{v}");
    assert_eq!((v["partitionList"].as_array().map(Vec::len), &v["partitionPage"]["next"]), (Some(1), &Value::Null));
    for path in ["/api/v1/resources/queues/wide", "/api/v1/status/queues", "/api/v1/resources/queues/wide/depth"] {
        for bad in ["limit=10001", "limit=0", "limit=x"] {
            let (st, v) = api.get(&format!("{path}?{bad}")).await;
            assert_eq!(st, 400, "{path}?{bad}: {v}");
        }
    }
    let (_, d) = api.get("/api/v1/resources/queues/wide/depth?limit=2&offset=4999").await;
    assert_eq!((d["pending"].as_u64(), d["partitionsPending"].as_u64()), (Some(5001), Some(5001)), "{d}");
    assert_eq!(
        d["partitions"].as_array().map(|p| p.iter().map(|p| p["partition"].clone()).collect::<Vec<_>>()),
        Some(vec![json!("p4999"), json!("late")]),
        "{d}"
    );
    // The list of queues carries counts, never the partitions.
    let (_, l) = api.get("/api/v1/resources/queues").await;
    assert_eq!((l["queues"][0]["partitions"].as_u64(), l["queues"][0].get("partitionList")), (Some(5001), None), "{l}");
}

#[tokio::test]
async fn a_namespace_pop_over_many_queues_costs_a_few_planner_steps() {
    // 1,500 tagged queues. A namespace pop used to read every tag row and then pop each
    // queue in turn: 1,501 planner commands for one empty pop.
    let api = Api::start();
    const N: usize = 1500;
    for i in 0..N {
        let (st, v) = api.post("/api/v1/configure", json!({"queue": format!("nq{i}"), "namespace": "wide"})).await;
        assert_eq!(st, 200, "{i}: {v}");
    }
    let before = api.metric("baton_planner_commands_total").await;
    for _ in 0..10 {
        let (st, v) = api.get("/api/v1/pop?namespace=wide&batch=1").await;
        assert_eq!(st, 204, "{v}");
    }
    let spent = api.metric("baton_planner_commands_total").await - before;
    // Each look is ceil(1,500 / 1,024) = 2 steps; the tags are read at most once a second.
    assert!(spent <= 40.0, "10 empty namespace pops over {N} queues took {spent} planner commands");

    // The last queue's message is found, and a long poll past the watched bound (the
    // namespace has more than 1,024 queues) still sees a push that lands while it waits.
    let (st, v) = api.post("/api/v1/push", json!({"items": [{"queue": format!("nq{}", N - 1), "payload": 1}]})).await;
    assert_eq!(st, 201, "{v}");
    let (st, v) = api.get("/api/v1/pop?namespace=wide&batch=1").await;
    assert_eq!((st, v["messages"][0]["queue"].as_str()), (200, Some("nq1499")), "{v}");
    let waiter = {
        let (c, url) = (api.c.clone(), api.s.url("/api/v1/pop?namespace=wide&batch=1&wait=true&timeout=5000"));
        tokio::spawn(async move { common::api::read(c.get(url).send().await.expect("GET")).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let (st, v) = api.post("/api/v1/push", json!({"items": [{"queue": "nq7", "payload": 2}]})).await;
    assert_eq!(st, 201, "{v}");
    let (st, v) = waiter.await.unwrap();
    assert_eq!((st, v["messages"][0]["queue"].as_str()), (200, Some("nq7")), "{v}");
}

#[tokio::test]
async fn ephemeral_queues_stay_out_of_the_log_and_within_their_bounds() {
    let api = Api::with(&["--ephemeral-max-queues", "2", "--ephemeral-max-mb", "1"]);
    let wal = api.metric("baton_wal_bytes_total").await;
    let push = |q: &str, n: usize, size: usize| {
        let msgs: Vec<Value> = (0..n).map(|_| json!({"payload": "x".repeat(size)})).collect();
        json!({"queue": q, "messages": msgs})
    };
    let (st, v) = api.post("/api/v1/ephemeral/push", push("e1", 100, 1000)).await;
    assert_eq!((st, v["pushed"].as_u64(), &v["durable"]), (200, Some(100), &json!(false)), "{v}");
    let (st, v) = api.get("/api/v1/ephemeral/pop?queue=e1&batch=100&group=g").await;
    assert_eq!((st, v["messages"].as_array().map(Vec::len)), (200, Some(100)), "{v}");
    // 100 payloads of 1,000 bytes: in the log they would be over 100,000 bytes. What the log
    // may take meanwhile is the node's own small entries (a KV read of the queue's declared
    // options, time passing), tens of bytes.
    let grew = api.metric("baton_wal_bytes_total").await - wal;
    assert!(grew < 4096.0, "an ephemeral message reached the log: the WAL grew by {grew} bytes");
    assert_eq!(api.metric("baton_ephemeral_messages").await, 100.0);

    // The process budget (1 MiB) refuses a push that would pass it, whole; the queue count
    // refuses a third queue.
    let (st, v) = api.post("/api/v1/ephemeral/push", push("e2", 1100, 1000)).await;
    assert_eq!((st, v["code"].as_str()), (429, Some("ephemeral_queue_full")), "{v}");
    let (st, v) = api.post("/api/v1/ephemeral/push", push("e3", 1, 1)).await;
    assert_eq!((st, v["code"].as_str()), (429, Some("too_many_queues")), "{v}");
    assert_eq!(api.metric("baton_ephemeral_messages").await, 100.0, "a refused push adds nothing");

    // Hostile input: each a precise 400, nothing stored.
    let deep: Value = serde_json::from_str(&format!("{}1{}", "[".repeat(70), "]".repeat(70))).unwrap();
    let cases = [
        (json!({"queue": "", "messages": [{"payload": 1}]}), "invalid_name"),
        (json!({"queue": "e1", "partition": "a\u{1}", "messages": [{"payload": 1}]}), "invalid_name"),
        (json!({"queue": "e1", "messages": [{"data": 1}]}), "invalid_request"),
        (json!({"queue": "e1", "messages": [{"payload": deep}]}), "bad_payload"),
    ];
    for (body, code) in cases {
        let (st, v) = api.post("/api/v1/ephemeral/push", body).await;
        assert_eq!((st, v["code"].as_str()), (400, Some(code)), "{v}");
    }
    let (st, v) =
        api.post("/api/v1/ephemeral/ack", json!({"queue": "e1", "acks": [{"id": "x", "status": "maybe"}]})).await;
    assert_eq!((st, v["code"].as_str()), (400, Some("invalid_status")), "{v}");
    // A forged id acks nothing: stale.
    let (st, v) = api
        .post("/api/v1/ephemeral/ack", json!({"queue": "e1", "group": "g", "acks": [{"id": "0-1:0:Default"}]}))
        .await;
    assert_eq!((st, v["results"][0]["outcome"].as_str()), (200, Some("stale")), "{v}");
    assert_eq!(api.metric("baton_ephemeral_messages").await, 100.0);
    let grew = api.metric("baton_wal_bytes_total").await - wal;
    assert!(grew < 4096.0, "the WAL grew by {grew} bytes");
    // The gauges are kept as rings change (a scrape locks no ring): a reset empties them.
    let (st, v) = api.post("/api/v1/ephemeral/reset", json!({"queue": "e1"})).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(api.metric("baton_ephemeral_messages").await, 0.0);
    assert_eq!(api.metric("baton_ephemeral_bytes").await, 0.0);
}

#[tokio::test]
async fn namespace_tags_refuse_bad_names_and_are_written_only_by_configure() {
    let api = Api::start();
    for (ns, task) in [(json!(""), json!(null)), (json!("ok"), json!("t\u{7}")), (json!("x".repeat(257)), json!(null))]
    {
        let (st, v) = api.post("/api/v1/configure", json!({"queue": "tq", "namespace": ns, "task": task})).await;
        assert_eq!((st, v["code"].as_str()), (400, Some("invalid_name")), "{v}");
    }
    let (st, v) = api.get("/api/v1/resources/queues/tq").await;
    assert_eq!(st, 404, "a refused configure made the queue: {v}");
    let (st, v) = api.get("/api/v1/pop?batch=1").await;
    assert_eq!((st, v["code"].as_str()), (400, Some("missing_queue")), "{v}");
    let forged =
        json!({"operations": [{"op": "put", "ns": "queen-namespaces", "key": "tq", "value": {"namespace": "n"}}]});
    let (st, v) = api.post("/api/v1/kv", forged).await;
    assert_eq!((st, v["code"].as_str()), (400, Some("reserved_namespace")), "{v}");
    let (_, v) = api.get("/api/v1/resources/namespaces").await;
    assert_eq!(v["namespaces"], json!([]), "{v}");
}

#[tokio::test]
async fn an_ephemeral_queue_bounds_its_partitions_and_groups() {
    // Partitions × groups are the cursors every pop's expiry pass walks under the ring's
    // lock: 10,000 × 1,000 of them made one pop cost ten million steps.
    let api = Api::start();
    for i in 0..1024 {
        let (st, v) = api
            .post(
                "/api/v1/ephemeral/push",
                json!({"queue": "wide", "partition": format!("p{i}"), "messages": [{"payload": i}]}),
            )
            .await;
        assert_eq!(st, 200, "{i}: {v}");
    }
    let (st, v) = api
        .post("/api/v1/ephemeral/push", json!({"queue": "wide", "partition": "one-more", "messages": [{"payload": 0}]}))
        .await;
    assert_eq!((st, v["code"].as_str()), (429, Some("too_many_partitions")), "{v}");
    for g in 0..64 {
        let (st, v) = api.get(&format!("/api/v1/ephemeral/pop?queue=wide&group=g{g}&batch=1")).await;
        assert_eq!(st, 200, "{g}: {v}");
    }
    let (st, v) = api.get("/api/v1/ephemeral/pop?queue=wide&group=one-more&batch=1").await;
    assert_eq!((st, v["code"].as_str()), (429, Some("too_many_groups")), "{v}");
    let (_, d) = api.get("/api/v1/ephemeral/queues/wide/depth").await;
    assert_eq!((d["length"].as_u64(), d["partitions"].as_u64()), (Some(1024), Some(1024)), "{d}");
}

#[tokio::test]
async fn a_multi_partition_pop_claims_a_bounded_number_of_partitions() {
    let api = Api::start();
    for p in 0..70 {
        api.push_n("mp", &format!("p{p}"), &format!("t{p}"), 0..1).await;
    }
    for bad in ["partitions=0", "partitions=65", "partitions=x"] {
        let (st, v) = api.get(&format!("/api/v1/pop/queue/mp?batch=100&{bad}")).await;
        assert_eq!(st, 400, "{bad}: {v}");
    }
    let (st, v) = api.get("/api/v1/pop/queue/mp?batch=100&partitions=64").await;
    assert_eq!((st, v["partitionsClaimed"].as_u64()), (200, Some(64)), "{v}");
    assert_eq!(v["messages"].as_array().map(Vec::len), Some(64));
    let (_, v) = api.get("/api/v1/pop/queue/mp?batch=100&partitions=64").await;
    assert_eq!(v["messages"].as_array().map(Vec::len), Some(6), "the leased 64 are not given again: {v}");
}

#[tokio::test]
async fn conflation_is_a_groups_registered_policy_and_refuses_what_it_cannot_do() {
    let api = Api::start();
    api.push_n("cf", "p", "t", 0..5).await;
    for (q, code) in [
        ("conflation=true", "conflation_needs_group"),
        ("conflation=true&consumerGroup=g&autoAck=true", "conflation_auto_ack"),
    ] {
        let (st, v) = api.get(&format!("/api/v1/pop/queue/cf?batch=10&{q}")).await;
        assert_eq!((st, v["code"].as_str()), (400, Some(code)), "{v}");
    }
    // Only the pop that declares it writes the policy row.
    let forged = json!({"operations": [{"op": "put", "ns": "queen-conflation", "key": "x\u{1e}cf", "value": true}]});
    let (st, v) = api.post("/api/v1/kv", forged).await;
    assert_eq!((st, v["code"].as_str()), (400, Some("reserved_namespace")), "{v}");
    let (st, v) = api.get("/api/v1/pop/queue/cf?batch=10&consumerGroup=g&conflation=true").await;
    assert_eq!((st, v["messages"].as_array().map(Vec::len)), (200, Some(1)), "{v}");
    assert_eq!(v["messages"][0]["transactionId"], "t-4", "the newest: {v}");
    let d = api.ok("/api/v1/resources/queues/cf/depth?group=g").await;
    assert_eq!(d["pending"], 1, "the older four were retired by the pop itself: {d}");
    api.ack_ok(v["messages"].as_array().unwrap()).await;
    // An empty pop of a conflating group still says so (Queen's client checks the echo).
    let (st, v) = api.get("/api/v1/pop/queue/cf?batch=10&consumerGroup=g").await;
    assert_eq!((st, &v["conflation"], v["messages"].as_array().map(Vec::len)), (200, &json!(true), Some(0)), "{v}");
    // Deleting the group forgets its policy: it starts again as a plain group.
    let (st, _) =
        api.c.delete(api.s.url("/api/v1/consumer-groups/g")).send().await.map(|r| (r.status().as_u16(), ())).unwrap();
    assert_eq!(st, 200);
    let (st, v) = api.get("/api/v1/pop/queue/cf?batch=10&consumerGroup=g").await;
    assert_eq!((st, v["messages"].as_array().map(Vec::len), v.get("conflation")), (200, Some(5), None), "{v}");
}

#[tokio::test]
async fn one_locks_call_of_many_renewals_shares_its_fsyncs() {
    // A relay renews its buckets' leases 64 to a call. The operations are independent, so
    // they go to the log together and share group commits; one after another they cost
    // one fdatasync each, and a relay's deliveries waited ~100 ms behind every renewal.
    let api = Api::start();
    let acquire: Vec<Value> =
        (0..64).map(|i| json!({"op": "acquire", "name": format!("b{i}"), "ttlSeconds": 30, "owner": "r"})).collect();
    let (st, v) = locks(&api, json!(acquire)).await;
    assert_eq!(st, 200, "{v}");
    let renew: Vec<Value> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, r)| {
            assert_eq!(r["acquired"], true, "{r}");
            json!({"op": "renew", "name": format!("b{i}"), "token": r["token"], "slot": r["slot"], "ttlSeconds": 30})
        })
        .collect();
    let before = api.metric("baton_wal_batches_total").await;
    let (st, v) = locks(&api, json!(renew)).await;
    assert_eq!(st, 200, "{v}");
    let renewed = v["results"].as_array().unwrap();
    assert!(renewed.iter().all(|r| r["renewed"] == true), "{v}");
    // The answers stay in the call's order: each names its own new token.
    for (i, r) in renewed.iter().enumerate() {
        assert_eq!(r["guard"]["key"].as_str().map(|k| k.starts_with(&format!("b{i}#"))), Some(true), "{r}");
    }
    let syncs = api.metric("baton_wal_batches_total").await - before;
    assert!(syncs <= 16.0, "64 renewals in one call took {syncs} group commits");
}
