//! Kafka transactions at the wire (D48), against the real `baton` binary: the raw
//! requests a transactional client sends, what read_committed and read_uncommitted
//! fetches see, what an HTTP consumer of the same partition sees, hostile requests, and
//! an open transaction across a kill -9. The client-library view (librdkafka) is in
//! tests/kafka-compat/test_transactions.py.

use crate::common;
use crate::kafka_util;

use bytes::Bytes;
use common::api::{client, read};
use common::Server;
use kafka_protocol::messages::*;
use kafka_protocol::records::Compression;
use kafka_util::txn::*;
use kafka_util::*;
use serde_json::json;

const INVALID_RECORD: i16 = 87;
const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;
const INVALID_PRODUCER_EPOCH: i16 = 47;
const INVALID_TRANSACTION_TIMEOUT: i16 = 50;
const INVALID_PRODUCER_ID_MAPPING: i16 = 49;

#[test]
fn read_committed_sees_a_transaction_only_once_committed_and_never_an_aborted_one() {
    let (_s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    k.metadata(&["rc"]);
    assert_eq!(k.produce("rc", 0, batch(&[b"plain"], Compression::None, None), -1).error_code, 0);
    let i = init(&mut k, "tx-rc", 60_000);
    assert_eq!((i.error_code, i.producer_epoch), (0, 0));
    let mut t = Txn { k: &mut k, tid: "tx-rc", pid: i.producer_id.0, epoch: 0 };
    assert_eq!(t.add("rc", &[0]), 0);
    assert_eq!(t.produce("rc", 0, &[b"a1", b"a2"], 0).base_offset, 1);
    // Open: read_committed stops at the last stable offset (1); read_uncommitted sees it.
    let rc = fetch_at(t.k, "rc", true);
    assert_eq!((rc.high_watermark, rc.last_stable_offset), (3, 1));
    assert_eq!(data_values(&rc), vec![Bytes::from("plain")]);
    assert_eq!(data_values(&fetch_at(t.k, "rc", false)).len(), 3);
    assert_eq!(t.end(false), 0, "abort");
    let rc = fetch_at(t.k, "rc", true);
    assert_eq!((rc.high_watermark, rc.last_stable_offset), (4, 4), "the abort marker took offset 3");
    let aborted = rc.aborted_transactions.clone().expect("read_committed gets the aborted list");
    assert_eq!(aborted.len(), 1);
    assert_eq!((aborted[0].producer_id.0, aborted[0].first_offset), (i.producer_id.0, 1));
    let marker = fetched(&rc).into_iter().find(|r| r.2).expect("the control record is fetched");
    assert_eq!(marker.0, 3);
    assert_eq!(t.add("rc", &[0]), 0);
    assert_eq!(t.produce("rc", 0, &[b"c1"], 2).base_offset, 4);
    assert_eq!(t.end(true), 0, "commit");
    let rc = fetch_at(t.k, "rc", true);
    assert_eq!((rc.high_watermark, rc.last_stable_offset), (6, 6));
    assert_eq!(t.end(true), 0, "a retried EndTxn is answered as the first");
    assert_eq!(t.end(false), INVALID_TXN_STATE, "an abort of what was committed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_consumer_sees_only_committed_records() {
    let (s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    k.metadata(&["mix"]);
    let i = init(&mut k, "tx-mix", 60_000);
    let mut t = Txn { k: &mut k, tid: "tx-mix", pid: i.producer_id.0, epoch: 0 };
    t.add("mix", &[0]);
    t.produce("mix", 0, &[b"\"gone\""], 0);
    t.end(false);
    t.add("mix", &[0]);
    t.produce("mix", 0, &[b"\"kept\""], 1);
    let c = client();
    let pop = |c: &reqwest::Client| {
        let url = s.url("/api/v1/pop/queue/mix?batch=10");
        let c = c.clone();
        async move { read(c.get(url).send().await.unwrap()).await }
    };
    let (st, _) = pop(&c).await;
    assert_eq!(st, 204, "nothing is committed yet");
    let metric = |c: &reqwest::Client, name: &'static str| {
        let url = s.url("/metrics/prometheus");
        let c = c.clone();
        async move {
            let text = c.get(url).send().await.unwrap().text().await.unwrap();
            let line = text.lines().find(|l| l.starts_with(&format!("{name} "))).expect(name).to_string();
            line.rsplit(' ').next().unwrap().parse::<u64>().unwrap()
        }
    };
    assert_eq!(metric(&c, "baton_kafka_transactions_open").await, 1);
    assert_eq!(metric(&c, "baton_kafka_aborted_transactions_max").await, 1);
    t.end(true);
    assert_eq!(metric(&c, "baton_kafka_transactions_open").await, 0);
    assert_eq!(metric(&c, "baton_kafka_transactional_ids").await, 1);
    let (st, v) = pop(&c).await;
    assert_eq!(st, 200, "{v}");
    let msgs = v["messages"].as_array().unwrap();
    let payloads: Vec<_> = msgs.iter().map(|m| m["data"].clone()).collect();
    assert_eq!(payloads, vec![json!("kept")], "{v}");
    let fetch = json!({"entries": [{"queue": "mix", "partition": "0", "offset": 0, "maxBytes": 65536}]});
    let (st, v) = read(c.post(s.url("/api/v1/fetch")).json(&fetch).send().await.unwrap()).await;
    assert_eq!(st, 200, "{v}");
    let recs: Vec<_> = v["entries"][0]["records"].as_array().unwrap().iter().map(|r| r["payload"].clone()).collect();
    assert_eq!(recs, vec![json!("kept")], "aborted records and markers are never shown: {v}");
}

#[test]
fn a_newer_epoch_fences_the_old_producer_everywhere() {
    let (_s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    k.metadata(&["fence"]);
    let old = init(&mut k, "tx-f", 60_000);
    let pid = old.producer_id.0;
    let mut t = Txn { k: &mut k, tid: "tx-f", pid, epoch: 0 };
    t.add("fence", &[0]);
    t.produce("fence", 0, &[b"zombie"], 0);
    let new = init(t.k, "tx-f", 60_000);
    assert_eq!((new.error_code, new.producer_id.0, new.producer_epoch), (0, pid, 1));
    assert_eq!(t.add("fence", &[0]), PRODUCER_FENCED);
    assert_eq!(t.produce("fence", 0, &[b"zombie2"], 1).error_code, INVALID_PRODUCER_EPOCH);
    assert_eq!(t.end(true), PRODUCER_FENCED);
    let rc = fetch_at(t.k, "fence", true);
    assert!(data_values(&rc).is_empty(), "the zombie's record was aborted by the new epoch");
    // An old client version that does not know PRODUCER_FENCED gets INVALID_PRODUCER_EPOCH.
    let req = EndTxnRequest::default()
        .with_transactional_id(TransactionalId(name("tx-f")))
        .with_producer_id(pid.into())
        .with_producer_epoch(0)
        .with_committed(true);
    let r: EndTxnResponse = t.k.call(ApiKey::EndTxn, 1, &req);
    assert_eq!(r.error_code, INVALID_PRODUCER_EPOCH);
}

#[test]
fn hostile_transaction_requests_are_refused_and_store_nothing() {
    let (_s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    k.metadata(&["hx"]);
    assert_eq!(init(&mut k, "tx-h", 0).error_code, INVALID_TRANSACTION_TIMEOUT);
    assert_eq!(init(&mut k, "tx-h", i32::MAX).error_code, INVALID_TRANSACTION_TIMEOUT);
    let i = init(&mut k, "tx-h", 60_000);
    let pid = i.producer_id.0;
    // A control batch from a client: refused, nothing stored.
    let mut ctl = txn_batch(&[b"x"], pid, 0, 0).to_vec();
    ctl[21..23].copy_from_slice(&0x30i16.to_be_bytes());
    let crc = crc32c(&ctl[21..]);
    ctl[17..21].copy_from_slice(&crc.to_be_bytes());
    assert_eq!(k.produce("hx", 0, Bytes::from(ctl), -1).error_code, INVALID_RECORD);
    // Transactional records without the request's transactional id, as Kafka answers.
    assert_eq!(k.produce("hx", 0, txn_batch(&[b"x"], pid, 0, 0), -1).error_code, TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
    let mut t = Txn { k: &mut k, tid: "tx-h", pid, epoch: 0 };
    // Before AddPartitionsToTxn, a transactional produce is outside any transaction.
    assert_eq!(t.produce("hx", 0, &[b"x"], 0).error_code, INVALID_TXN_STATE);
    let mut other = Txn { k: t.k, tid: "tx-other", pid, epoch: 0 };
    assert_eq!(other.add("hx", &[0]), INVALID_PRODUCER_ID_MAPPING, "an id never initialised");
    let mut wrong = Txn { k: other.k, tid: "tx-h", pid: pid + 1000, epoch: 0 };
    assert_eq!(wrong.add("hx", &[0]), INVALID_PRODUCER_ID_MAPPING, "another producer's id");
    assert_eq!(wrong.end(true), INVALID_PRODUCER_ID_MAPPING);
    let mut t = Txn { k: wrong.k, tid: "tx-h", pid, epoch: 0 };
    assert_eq!(t.add("hx", &[7]), 3, "UNKNOWN_TOPIC_OR_PARTITION");
    assert_eq!(t.add("hx", &[-1]), 3, "UNKNOWN_TOPIC_OR_PARTITION");
    assert_eq!(t.end(true), INVALID_TXN_STATE, "nothing is open");
    assert_eq!(t.k.list_offset("hx", 0, -1).offset, 0, "no refused request stored anything");
}

#[test]
fn an_open_transaction_survives_kill_9_and_its_timeout_aborts_it() {
    let (mut s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    k.metadata(&["crash"]);
    let i = init(&mut k, "tx-c", 3_000);
    let mut t = Txn { k: &mut k, tid: "tx-c", pid: i.producer_id.0, epoch: 0 };
    assert_eq!(t.add("crash", &[0]), 0);
    assert_eq!(t.produce("crash", 0, &[b"in-flight"], 0).error_code, 0);
    s.kill9();
    s.restart();
    let mut k = Kafka::connect(port);
    let rc = fetch_at(&mut k, "crash", true);
    assert_eq!((rc.high_watermark, rc.last_stable_offset), (1, 0), "still open after the restart");
    // The timeout (3 s from the AddPartitionsToTxn) aborts it; checked once a second.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let rc = fetch_at(&mut k, "crash", true);
        if rc.last_stable_offset == 2 {
            assert!(data_values(&rc).is_empty(), "aborted: {rc:?}");
            assert_eq!(rc.aborted_transactions.map(|a| a.len()), Some(1));
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the timed-out transaction was never aborted: {rc:?}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let mut t = Txn { k: &mut k, tid: "tx-c", pid: i.producer_id.0, epoch: 0 };
    assert_eq!(t.end(true), PRODUCER_FENCED, "the timeout abort bumped the epoch");
}

/// Issue 15 item 3: the offsets a Kafka transaction commits are the Baton group's cursor,
/// moved in the commit's entry, so an HTTP consumer of that group goes on from there; an
/// aborted transaction's offsets move nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_sent_in_a_transaction_move_the_http_consumer_group() {
    let (s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    k.metadata(&["src", "dst"]);
    let c = client();
    let push =
        json!({"items": (0..5).map(|i| json!({"queue": "src", "partition": "0", "payload": i})).collect::<Vec<_>>()});
    let (st, v) = read(c.post(s.url("/api/v1/push")).json(&push).send().await.unwrap()).await;
    assert_eq!(st, 201, "{v}");
    let i = init(&mut k, "tx-ctp", 60_000);
    let mut t = Txn { k: &mut k, tid: "tx-ctp", pid: i.producer_id.0, epoch: 0 };
    // Aborted: offsets 0..2 consumed, nothing moves.
    assert_eq!(t.add("dst", &[0]), 0);
    t.produce("dst", 0, &[b"x0", b"x1"], 0);
    assert_eq!(t.send_offsets("g", "src", 2), (0, 0));
    assert_eq!(t.end(false), 0);
    // Committed: the group's position on src/0 is 3.
    assert_eq!(t.add("dst", &[0]), 0);
    t.produce("dst", 0, &[b"y0", b"y1", b"y2"], 2);
    assert_eq!(t.send_offsets("g", "src", 3), (0, 0));
    let (st, _) =
        read(c.get(s.url("/api/v1/pop/queue/src?consumerGroup=h&batch=1&autoAck=true")).send().await.unwrap()).await;
    assert_eq!(st, 200, "another group is not held back by the open transaction's offsets");
    assert_eq!(t.end(true), 0);
    let url = s.url("/api/v1/pop/queue/src?consumerGroup=g&batch=10");
    let (st, v) = read(c.get(url).send().await.unwrap()).await;
    assert_eq!(st, 200, "{v}");
    let got: Vec<_> = v["messages"].as_array().unwrap().iter().map(|m| m["data"].clone()).collect();
    assert_eq!(got, vec![json!(3), json!(4)], "the HTTP consumer of g goes on from the transaction's offset");
    // Offsets for a group the transaction did not add are refused.
    assert_eq!(t.add("dst", &[0]), 0);
    let commit = TxnOffsetCommitRequest::default()
        .with_transactional_id(TransactionalId(name("tx-ctp")))
        .with_group_id(GroupId(name("never-added")))
        .with_producer_id(i.producer_id.0.into())
        .with_producer_epoch(0)
        .with_generation_id(-1)
        .with_member_id(name(""))
        .with_topics(vec![txn_offset_commit_request::TxnOffsetCommitRequestTopic::default()
            .with_name(topic("src"))
            .with_partitions(vec![txn_offset_commit_request::TxnOffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(1)])]);
    let r: TxnOffsetCommitResponse = t.k.call(ApiKey::TxnOffsetCommit, 3, &commit);
    assert_eq!(r.topics[0].partitions[0].error_code, INVALID_TXN_STATE);
}

/// Transactions v2 (KIP-890): the broker finalizes `transaction.version` 2; a produce
/// (v12) adds its partition itself, TxnOffsetCommit v5 its group, and every EndTxn (v5)
/// moves the id to its next epoch, which the client uses next. A retried EndTxn naming
/// the epoch it ended is answered as the first; the old epoch is fenced for anything else.
#[test]
fn transactions_v2_add_by_produce_and_bump_the_epoch_at_every_end() {
    let (_s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    let v: ApiVersionsResponse = k.call(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
    let tv = v.finalized_features.iter().find(|f| f.name.as_str() == "transaction.version").expect("finalized");
    assert_eq!(tv.max_version_level, 2);
    k.metadata(&["v2", "v2in"]);
    k.produce("v2in", 0, batch(&[b"a", b"b"], Compression::None, None), -1);
    let i = init(&mut k, "tx-v2", 60_000);
    let pid = i.producer_id.0;
    let produce12 = |k: &mut Kafka, epoch: i16, seq: i32, v: &[u8]| -> i16 {
        let req = produce_req("v2", 0, txn_batch(&[v], pid, epoch, seq), -1)
            .with_transactional_id(Some(TransactionalId(name("tx-v2"))));
        let r: ProduceResponse = k.call(ApiKey::Produce, 12, &req);
        r.responses[0].partition_responses[0].error_code
    };
    let end5 = |k: &mut Kafka, epoch: i16, commit: bool| -> EndTxnResponse {
        let req = EndTxnRequest::default()
            .with_transactional_id(TransactionalId(name("tx-v2")))
            .with_producer_id(pid.into())
            .with_producer_epoch(epoch)
            .with_committed(commit);
        k.call(ApiKey::EndTxn, 5, &req)
    };
    assert_eq!(produce12(&mut k, 0, 0, b"one"), 0, "no AddPartitionsToTxn needed");
    let offsets = TxnOffsetCommitRequest::default()
        .with_transactional_id(TransactionalId(name("tx-v2")))
        .with_group_id(GroupId(name("g2")))
        .with_producer_id(pid.into())
        .with_producer_epoch(0)
        .with_generation_id(-1)
        .with_member_id(name(""))
        .with_topics(vec![txn_offset_commit_request::TxnOffsetCommitRequestTopic::default()
            .with_name(topic("v2in"))
            .with_partitions(vec![txn_offset_commit_request::TxnOffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(2)])]);
    let r: TxnOffsetCommitResponse = k.call(ApiKey::TxnOffsetCommit, 5, &offsets);
    assert_eq!(r.topics[0].partitions[0].error_code, 0, "no AddOffsetsToTxn needed");
    let e = end5(&mut k, 0, true);
    assert_eq!((e.error_code, e.producer_id.0, e.producer_epoch), (0, pid, 1), "the next epoch");
    let again = end5(&mut k, 0, true);
    assert_eq!((again.error_code, again.producer_epoch), (0, 1), "a retry is answered as the first");
    assert_eq!(end5(&mut k, 0, false).error_code, PRODUCER_FENCED, "epoch 0 may do nothing else");
    assert_eq!(produce12(&mut k, 0, 1, b"late"), 47, "INVALID_PRODUCER_EPOCH");
    let rc = fetch_at(&mut k, "v2", true);
    assert_eq!(data_values(&rc), vec![bytes::Bytes::from("one")]);
    assert_eq!(committed_offset(&mut k, "g2", "v2in"), 2, "the offsets committed with the transaction");
    // The next transaction at epoch 1, sequences from 0; an abort bumps again.
    assert_eq!(produce12(&mut k, 1, 0, b"two"), 0);
    let e = end5(&mut k, 1, false);
    assert_eq!((e.error_code, e.producer_epoch), (0, 2));
    assert_eq!(data_values(&fetch_at(&mut k, "v2", true)), vec![bytes::Bytes::from("one")]);
}
