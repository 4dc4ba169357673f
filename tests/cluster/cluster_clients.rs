//! Issue 14, clients find the leader (D42), on three real `baton serve --node-id` members.
//! Over HTTP a member that does not lead forwards every data-plane request to the leader,
//! one hop only; over Kafka every member is a broker, Metadata and FindCoordinator name the
//! leader, and a member that does not lead refuses produce and group requests with the
//! errors Kafka clients move on from. Both keep working, on the same URLs, across a leader
//! SIGKILL.

use crate::common;
use crate::kafka_util;

use std::time::{Duration, Instant};

use common::cluster::{leader, wait_known, Cluster};
use kafka_protocol::messages::*;
use kafka_protocol::records::Compression;
use kafka_util::*;
use serde_json::{json, Value};

const NOT_LEADER_OR_FOLLOWER: i16 = 6;
const NOT_COORDINATOR: i16 = 16;
const LEADER_NOT_AVAILABLE: i16 = 5;

fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap()
}

async fn send(c: &reqwest::Client, req: reqwest::RequestBuilder) -> (u16, Value) {
    let _ = c;
    let r = req.send().await.expect("the member answers");
    let st = r.status().as_u16();
    (st, r.json().await.unwrap_or(Value::Null))
}

/// The index of a running member other than `not`.
fn other(c: &Cluster, not: &[usize]) -> usize {
    (0..c.members.len()).find(|i| !not.contains(i) && c.running(*i)).expect("another running member")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_that_does_not_lead_forwards_http_to_the_leader_one_hop_only() {
    let mut cluster = Cluster::start(&[]);
    let c = client();
    let l = leader(&c, &cluster, Duration::from_secs(20)).await;
    wait_known(&c, &cluster, l).await;
    let (f, g) = (other(&cluster, &[l]), other(&cluster, &[l, other(&cluster, &[l])]));

    // Push through one follower, pop through the other, ack through the first.
    let (st, v) = send(
        &c,
        c.post(cluster.members[f].url("/api/v1/push")).json(&json!({"items": [{"queue": "q", "payload": {"n": 1}}]})),
    )
    .await;
    assert_eq!((st, v[0]["status"].as_str()), (201, Some("queued")), "a push to a follower: {v}");
    let (st, v) = send(&c, c.get(cluster.members[g].url("/api/v1/pop/queue/q?batch=1&wait=false"))).await;
    assert_eq!(st, 200, "a pop through a follower: {v}");
    let m = &v["messages"][0];
    assert_eq!(m["data"]["n"], 1, "{v}");
    let ack = json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"], "leaseId": m["leaseId"], "status": "completed"});
    let (st, v) = send(&c, c.post(cluster.members[f].url("/api/v1/ack")).json(&ack)).await;
    assert_eq!(st, 200, "an ack through a follower: {v}");
    let (st, _) = send(&c, c.get(cluster.members[g].url("/api/v1/pop/queue/q?batch=1&wait=false"))).await;
    assert_eq!(st, 204, "the acked message is gone, seen from any member");

    // What a member answers about itself is its own.
    let (_, v) = send(&c, c.get(cluster.members[f].url("/cluster"))).await;
    assert_eq!((v["nodeId"].as_u64(), v["leading"].as_bool()), (Some(cluster.members[f].id), Some(false)), "{v}");
    let metrics = c.get(cluster.members[f].url("/metrics/prometheus")).send().await.unwrap().text().await.unwrap();
    let forwarded: f64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("baton_http_forwarded_total "))
        .and_then(|v| v.parse().ok())
        .expect("baton_http_forwarded_total in a follower's /metrics");
    assert!(forwarded >= 2.0, "{forwarded}");

    // One hop: a request that was already forwarded is answered here, not passed on.
    let (st, v) = send(
        &c,
        c.post(cluster.members[f].url("/api/v1/push"))
            .header("x-baton-forwarded-by", "99")
            .json(&json!({"items": [{"queue": "q", "payload": {"n": 2}}]})),
    )
    .await;
    assert_eq!((st, v["code"].as_str()), (503, Some("not_leader")), "{v}");

    // The leader dies; the same follower URL takes pushes again once a new leader is elected.
    cluster.kill(l);
    let killed = Instant::now();
    let f2 = other(&cluster, &[l]);
    let mut answered = None;
    for _ in 0..400 {
        let r = c
            .post(cluster.members[f2].url("/api/v1/push"))
            .json(&json!({"items": [{"queue": "q", "payload": {"n": 3}}]}))
            .send()
            .await;
        if let Ok(r) = r {
            let st = r.status().as_u16();
            let v: Value = r.json().await.unwrap_or(Value::Null);
            if st == 201 {
                answered = Some(killed.elapsed());
                break;
            }
            assert_eq!(st, 503, "while the leader is gone a push is refused as unavailable: {v}");
            let code = v["code"].as_str().unwrap_or("");
            assert!(["not_leader", "leader_unreachable", "outcome_unknown"].contains(&code), "{v}");
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let took = answered.expect("a push through a surviving member succeeded within 10 s of the leader's death");
    eprintln!("leader SIGKILL -> push answered through the same member: {took:?}");
    cluster.stop_all();
}

#[test]
fn kafka_metadata_names_the_leader_and_members_that_do_not_lead_refuse() {
    let cluster = Cluster::start(&[]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let c = client();
    let l = rt.block_on(leader(&c, &cluster, Duration::from_secs(20)));
    rt.block_on(wait_known(&c, &cluster, l));
    let lid = cluster.members[l].id as i32;
    let f = other(&cluster, &[l]);

    // Metadata through the leader creates the topic; through a follower it names the leader.
    let mut k = Kafka::connect(cluster.members[l].kafka);
    assert_eq!(k.metadata(&["t"]).topics[0].error_code, 0);
    let mut kf = Kafka::connect(cluster.members[f].kafka);
    // The follower answers from what it has applied: the topic appears there a moment later
    // (LEADER_NOT_AVAILABLE meanwhile, which clients retry).
    let deadline = Instant::now() + Duration::from_secs(5);
    let md = loop {
        let md = kf.metadata(&["t"]);
        if md.topics[0].error_code == 0 {
            break md;
        }
        assert_eq!(md.topics[0].error_code, LEADER_NOT_AVAILABLE, "{md:?}");
        assert!(Instant::now() < deadline, "the follower never showed the topic: {md:?}");
        std::thread::sleep(Duration::from_millis(20));
    };
    let ids: Vec<i32> = md.brokers.iter().map(|b| b.node_id.0).collect();
    assert_eq!(ids, vec![1, 2, 3], "every member is a broker: {:?}", md.brokers);
    let lb = md.brokers.iter().find(|b| b.node_id.0 == lid).unwrap();
    assert_eq!(lb.port, cluster.members[l].kafka as i32, "the leader's Kafka listener");
    assert_eq!(md.controller_id.0, lid);
    assert_eq!(md.topics[0].partitions[0].leader_id.0, lid, "the leader leads the partition");
    let fc: FindCoordinatorResponse =
        kf.call(ApiKey::FindCoordinator, 3, &FindCoordinatorRequest::default().with_key(name("g")));
    assert_eq!((fc.error_code, fc.node_id.0, fc.port), (0, lid, cluster.members[l].kafka as i32));

    // A follower refuses to store or coordinate, with the codes clients move on from.
    let b = batch(&[b"x"], Compression::None, None);
    assert_eq!(kf.produce("t", 0, b.clone(), -1).error_code, NOT_LEADER_OR_FOLLOWER);
    let jg: JoinGroupResponse = kf.call(
        ApiKey::JoinGroup,
        5,
        &JoinGroupRequest::default()
            .with_group_id(name("g").into())
            .with_session_timeout_ms(10_000)
            .with_rebalance_timeout_ms(10_000)
            .with_protocol_type(name("consumer")),
    );
    assert_eq!(jg.error_code, NOT_COORDINATOR);
    // The leader stores; what it stored is committed, and fetched from it.
    assert_eq!(k.produce("t", 0, b, -1).error_code, 0);
    assert_eq!(records(&k.fetch("t", 0, 0, 0).records.unwrap()).len(), 1);

    // A producer id asked of a follower comes from the leader (librdkafka asks any broker,
    // and kept asking a follower that refused): distinct ids, each one the leader knows.
    let init = |k: &mut Kafka| -> InitProducerIdResponse {
        k.call(ApiKey::InitProducerId, 4, &InitProducerIdRequest::default().with_transaction_timeout_ms(60_000))
    };
    let (a, b2) = (init(&mut kf), init(&mut kf));
    assert_eq!((a.error_code, b2.error_code), (0, 0), "{a:?} {b2:?}");
    assert!(a.producer_id.0 >= 0 && a.producer_id.0 != b2.producer_id.0, "{a:?} {b2:?}");
    let idem = batch(&[b"y"], Compression::None, Some((b2.producer_id.0, b2.producer_epoch, 0)));
    assert_eq!(k.produce("t", 0, idem.clone(), -1).error_code, 0, "the leader takes the follower's producer id");
    assert_eq!(k.produce("t", 0, idem, -1).error_code, 0, "a resend of the same sequence is a duplicate, answered ok");
    assert_eq!(records(&k.fetch("t", 0, 0, 0).records.unwrap()).len(), 2, "stored once");
    // A topic asked of a follower only is created by the leader, which the follower asks:
    // LEADER_NOT_AVAILABLE (retriable) until it has applied the creation, then there.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let md = kf.metadata(&["only-asked-of-a-follower"]);
        if md.topics[0].error_code == 0 {
            assert_eq!(md.topics[0].partitions[0].leader_id.0, lid);
            break;
        }
        assert_eq!(md.topics[0].error_code, LEADER_NOT_AVAILABLE, "{md:?}");
        assert!(Instant::now() < deadline, "a topic asked of a follower never appeared: {md:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The leader is the transaction coordinator (D48): a follower answers NOT_COORDINATOR,
    // the leader gives the transactional id its producer.
    let tx = |k: &mut Kafka| -> InitProducerIdResponse {
        let req = InitProducerIdRequest::default()
            .with_transactional_id(Some(TransactionalId(name("tx"))))
            .with_transaction_timeout_ms(60_000);
        k.call(ApiKey::InitProducerId, 4, &req)
    };
    assert_eq!(tx(&mut kf).error_code, NOT_COORDINATOR);
    let led = tx(&mut k);
    assert_eq!((led.error_code, led.producer_epoch), (0, 0), "{led:?}");
}

/// A member that stops does not hold its shutdown for a long poll it forwarded to the
/// leader (up to its 30 s wait): the poll is answered `503 outcome_unknown` at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_member_does_not_wait_for_a_long_poll_it_forwarded() {
    let mut cluster = Cluster::start(&[]);
    let c = reqwest::Client::builder().timeout(Duration::from_secs(40)).build().unwrap();
    let l = leader(&c, &cluster, Duration::from_secs(20)).await;
    wait_known(&c, &cluster, l).await;
    let f = other(&cluster, &[l]);
    let url = cluster.members[f].url("/api/v1/pop/queue/empty?wait=true&timeout=30000");
    let poll = tokio::spawn({
        let c = c.clone();
        async move {
            let r = c.get(url).send().await.expect("the stopping member answers the poll");
            (r.status().as_u16(), r.json::<Value>().await.unwrap_or(Value::Null))
        }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let took = tokio::task::block_in_place(|| cluster.terminate(f));
    let (st, v) = poll.await.unwrap();
    assert_eq!((st, v["code"].as_str()), (503, Some("outcome_unknown")), "{v}");
    assert!(took < Duration::from_secs(10), "the member took {took:?} to stop");
    cluster.stop_all();
}
