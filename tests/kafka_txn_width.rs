//! How wide one Kafka transaction may be (D79). Its end writes a marker into every
//! partition it touched, all in one entry planned at once, so its width bounds how long
//! that entry holds the planner: past `--kafka-max-transaction-partitions` an
//! AddPartitionsToTxn is refused. Within the bound, a transaction wider than the node's
//! descriptor budget commits, because a reserved place in a partition file holds no
//! descriptor until its bytes are written.

mod common;
mod kafka_util;

use common::{free_port, Server};
use kafka_protocol::messages::*;
use kafka_protocol::records::Compression;
use kafka_util::txn::*;
use kafka_util::*;

const POLICY_VIOLATION: i16 = 44;

/// AddPartitionsToTxn v3: every partition's code.
fn add(k: &mut Kafka, tid: &str, pid: i64, t: &str, parts: std::ops::Range<i32>) -> Vec<i16> {
    add_list(k, tid, pid, t, parts.collect())
}

fn add_list(k: &mut Kafka, tid: &str, pid: i64, t: &str, parts: Vec<i32>) -> Vec<i16> {
    let req = AddPartitionsToTxnRequest::default()
        .with_v3_and_below_transactional_id(TransactionalId(name(tid)))
        .with_v3_and_below_producer_id(pid.into())
        .with_v3_and_below_producer_epoch(0)
        .with_v3_and_below_topics(vec![add_partitions_to_txn_request::AddPartitionsToTxnTopic::default()
            .with_name(topic(t))
            .with_partitions(parts)]);
    let r: AddPartitionsToTxnResponse = k.call(ApiKey::AddPartitionsToTxn, 3, &req);
    r.results_by_topic_v3_and_below[0].results_by_partition.iter().map(|p| p.partition_error_code).collect()
}

/// A server whose transactions may write to `bound` partitions, a topic `t` of `parts`
/// partitions, and transactional id `tid` initialised: (server, client, producer id).
fn bounded(bound: &str, t: &str, parts: i32, tid: &str) -> (Server, Kafka, i64) {
    let (s, port) = Server::start_kafka(&["--kafka-max-transaction-partitions", bound]);
    let mut k = Kafka::connect(port);
    k.create_topic(t, parts);
    let pid = init(&mut k, tid, 60_000).producer_id.0;
    (s, k, pid)
}

#[test]
fn a_transaction_past_the_width_bound_is_refused_and_the_rest_commits() {
    let (_s, mut k, pid) = bounded("50", "w", 60, "tx-w");
    assert_eq!(add(&mut k, "tx-w", pid, "w", 0..40), vec![0; 40]);
    // 10 of these are in already, 20 are new: 60 > 50, so none of them is added.
    assert_eq!(add(&mut k, "tx-w", pid, "w", 30..60), vec![POLICY_VIOLATION; 30]);
    // One partition named a thousand times is one partition.
    let same = add_list(&mut k, "tx-w", pid, "w", vec![40; 1_000]);
    assert!(!same.is_empty() && same.iter().all(|c| *c == 0), "{same:?}");
    assert_eq!(add(&mut k, "tx-w", pid, "w", 41..50), vec![0; 9], "up to the bound itself");
    let mut t = Txn { k: &mut k, tid: "tx-w", pid, epoch: 0 };
    assert_eq!(t.end(true), 0);
    // The commit marked the 50 partitions it had, and none of the refused ones.
    assert_eq!(k.list_offset("w", 49, -1).offset, 1, "a marker");
    assert_eq!(k.list_offset("w", 50, -1).offset, 0, "refused: never in the transaction");
    // The bound is per transaction: the next one may be as wide again.
    assert_eq!(add(&mut k, "tx-w", pid, "w", 10..60), vec![0; 50]);
}

/// Transactions v2 (KIP-890) add a partition by producing to it: the same bound holds
/// there, and a partition already in the transaction may still be written at the bound.
#[test]
fn a_v2_produce_past_the_width_bound_is_refused() {
    let (_s, mut k, pid) = bounded("3", "v", 5, "tx-v");
    let produce12 = |k: &mut Kafka, p: i32, seq: i32| -> i16 {
        let req = produce_req("v", p, txn_batch(&[b"x"], pid, 0, seq), -1)
            .with_transactional_id(Some(TransactionalId(name("tx-v"))));
        let r: ProduceResponse = k.call(ApiKey::Produce, 12, &req);
        r.responses[0].partition_responses[0].error_code
    };
    for p in 0..3 {
        assert_eq!(produce12(&mut k, p, 0), 0, "partition {p} joins the transaction");
    }
    assert_eq!(produce12(&mut k, 3, 0), INVALID_TXN_STATE, "a fourth partition");
    assert_eq!(produce12(&mut k, 0, 1), 0, "one already in it");
    assert_eq!(k.list_offset("v", 3, -1).offset, 0, "nothing stored in the refused partition");
}

/// Regression: a frame reserved a place in every partition it wrote to by opening the
/// file and holding it until the appender wrote the bytes, whatever `--max-open-files`
/// said. An EndTxn over more partitions than the process may open ran out of descriptors
/// halfway through its plan and latched the node ("storage failed: ... Too many open
/// files"); with 100,000 partitions it also held the planner for 30 s.
#[test]
fn a_commit_wider_than_the_descriptor_limit_neither_fails_nor_latches() {
    let kport = free_port();
    let addr = format!("127.0.0.1:{kport}");
    let args = [
        "--kafka-addr",
        &addr,
        "--kafka-initial-rebalance-delay-ms",
        "0",
        "--kafka-max-transaction-partitions",
        "2000",
    ];
    let s = Server::start_with_nofile(&args, 512);
    let mut k = Kafka::connect(kport);
    k.create_topic("wide", 1_500);
    let pid = init(&mut k, "tx-wide", 120_000).producer_id.0;
    assert_eq!(add(&mut k, "tx-wide", pid, "wide", 0..1_500), vec![0; 1_500]);
    let mut t = Txn { k: &mut k, tid: "tx-wide", pid, epoch: 0 };
    assert_eq!(t.end(true), 0, "{}", s.log());
    assert!(!s.log().contains("storage failed"), "{}", s.log());
    for p in [0, 777, 1_499] {
        assert_eq!(k.list_offset("wide", p, -1).offset, 1, "partition {p} has its marker");
    }
    // The node still writes.
    let r = k.produce("wide", 3, batch(&[b"after"], Compression::None, None), -1);
    assert_eq!(r.error_code, 0, "{r:?}\n{}", s.log());
    let open = std::fs::read_dir(format!("/proc/{}/fd", s.pid())).unwrap().count();
    assert!(open < 512, "{open} descriptors open");
}
