//! How wide one Kafka transaction may be (D79). Its end writes a marker into every
//! partition it touched, all in one entry planned at once, so its width bounds how long
//! that entry holds the planner: past `--kafka-max-transaction-partitions` an
//! AddPartitionsToTxn is refused. Within the bound, a transaction wider than the node's
//! descriptor budget commits, because a reserved place in a partition file holds no
//! descriptor until its bytes are written.

use crate::common;
use crate::kafka_util;

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

/// Spare partition directories ready under `s`'s data directory (D81).
fn spare_dirs(s: &Server) -> usize {
    std::fs::read_dir(s.dir.join("partitions/.spare-parts")).map_or(0, |d| d.count())
}

/// A server with a topic `t` of `parts` partitions that have no files yet, a one-partition
/// topic "probe" already written, the spare directory pool at its first 16, and `tid`
/// initialised with `timeout_ms`: (server, Kafka port, client, producer id, spare
/// directories (taken, missed) so far).
fn with_new_partitions(t: &str, parts: i32, tid: &str, timeout_ms: i32) -> (Server, u16, Kafka, i64, (f64, f64)) {
    let (s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    k.create_topic("probe", 1);
    assert_eq!(k.produce("probe", 0, batch(&[b"first"], Compression::None, None), -1).error_code, 0);
    k.create_topic(t, parts);
    let t0 = std::time::Instant::now();
    while spare_dirs(&s) < 16 {
        assert!(t0.elapsed() < std::time::Duration::from_secs(60), "the spare directory pool never filled");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let pid = init(&mut k, tid, timeout_ms).producer_id.0;
    let dirs =
        (s.metric("baton_partition_spare_dirs_taken_total"), s.metric("baton_partition_spare_dirs_missed_total"));
    (s, port, k, pid, dirs)
}

/// Polls until `f` holds, at most `secs`.
fn eventually(secs: u64, what: &str, mut f: impl FnMut() -> bool) {
    let t0 = std::time::Instant::now();
    while !f() {
        assert!(t0.elapsed() < std::time::Duration::from_secs(secs), "{what}: not within {secs} s");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// An EndTxn writes a marker into every partition of its transaction in one entry, and a
/// partition added by AddPartitionsToTxn that holds no data yet has no files: its marker
/// makes them. Past the spare directories ready (D81), the end waits for the provisioner
/// to make them, planning nothing meanwhile, as an HTTP transaction does: every partition
/// then finds a directory ready, none is made on the planner, and a produce sent while it
/// waits is answered. Before, the planner made up to 1,000 partitions' files itself
/// (D79's bound), holding every other request back for seconds.
#[test]
fn an_end_over_new_partitions_waits_for_their_directories_instead_of_making_them_on_the_planner() {
    let (s, port, mut k, pid, before) = with_new_partitions("d", 600, "tx-d", 60_000);
    assert_eq!(add(&mut k, "tx-d", pid, "d", 0..600), vec![0; 600]);
    let end = std::thread::spawn(move || {
        let mut k = Kafka::connect(port);
        Txn { k: &mut k, tid: "tx-d", pid, epoch: 0 }.end(true)
    });
    eventually(30, "the end waited", || {
        s.metric("baton_planner_transactions_waited_total") >= 1.0 || end.is_finished()
    });
    let r = k.produce("probe", 0, batch(&[b"while it waits"], Compression::None, None), -1);
    assert_eq!(r.error_code, 0, "{r:?}");
    assert_eq!(end.join().unwrap(), 0, "{}", s.log());
    assert_eq!(s.metric("baton_planner_transactions_waited_total"), 1.0);
    let (taken, missed) =
        (s.metric("baton_partition_spare_dirs_taken_total"), s.metric("baton_partition_spare_dirs_missed_total"));
    assert_eq!((taken - before.0, missed - before.1), (600.0, 0.0), "every new partition found a directory ready");
    for p in [0, 300, 599] {
        assert_eq!(k.list_offset("d", p, -1).offset, 1, "partition {p} has its marker");
    }
}

/// The same transaction left to time out: its abort (markers in every partition, made by
/// the planner's expiry) waits for the directories too, and happens once they are ready.
#[test]
fn a_timed_out_transaction_over_new_partitions_is_aborted_once_their_directories_are_ready() {
    let (s, _port, mut k, pid, before) = with_new_partitions("e", 600, "tx-e", 1_000);
    assert_eq!(add(&mut k, "tx-e", pid, "e", 0..600), vec![0; 600]);
    eventually(60, "the timed-out transaction was aborted", || k.list_offset("e", 599, -1).offset == 1);
    for p in [0, 300] {
        assert_eq!(k.list_offset("e", p, -1).offset, 1, "partition {p} has its abort marker");
    }
    let (taken, missed) =
        (s.metric("baton_partition_spare_dirs_taken_total"), s.metric("baton_partition_spare_dirs_missed_total"));
    assert_eq!((taken - before.0, missed - before.1), (600.0, 0.0), "every new partition found a directory ready");
    let mut t = Txn { k: &mut k, tid: "tx-e", pid, epoch: 0 };
    assert_eq!(t.end(true), PRODUCER_FENCED, "the abort fenced the producer that let it time out");
}

/// An end whose directories never come (the provisioner cannot make any: its directory is
/// replaced by a file) is refused after its wait (10 s) with a code every transactional
/// client retries (COORDINATOR_LOAD_IN_PROGRESS), nothing written and the transaction still
/// open; once the provisioner can make directories again, the retried end commits.
#[test]
fn an_end_whose_directories_never_come_is_refused_retriably_and_a_retry_commits() {
    let (s, _port, mut k, pid, _) = with_new_partitions("f", 100, "tx-f", 120_000);
    assert_eq!(add(&mut k, "tx-f", pid, "f", 0..100), vec![0; 100]);
    let spares = s.dir.join("partitions/.spare-parts");
    let moved = s.dir.join("spare-parts-moved");
    std::fs::rename(&spares, &moved).unwrap();
    std::fs::write(&spares, b"not a directory").unwrap();
    let t0 = std::time::Instant::now();
    let mut t = Txn { k: &mut k, tid: "tx-f", pid, epoch: 0 };
    assert_eq!(t.end(true), 14, "COORDINATOR_LOAD_IN_PROGRESS\n{}", s.log());
    assert!(t0.elapsed() >= std::time::Duration::from_secs(9), "refused after {:?}, before its wait", t0.elapsed());
    for p in [0, 99] {
        assert_eq!(k.list_offset("f", p, -1).offset, 0, "partition {p}: the refused end wrote nothing");
    }
    std::fs::remove_file(&spares).unwrap();
    std::fs::rename(&moved, &spares).unwrap();
    let mut t = Txn { k: &mut k, tid: "tx-f", pid, epoch: 0 };
    assert_eq!(t.end(true), 0, "the retry commits the transaction still open\n{}", s.log());
    for p in [0, 99] {
        assert_eq!(k.list_offset("f", p, -1).offset, 1, "partition {p} has its marker");
    }
}

/// A new producer with the same transactional id fences the open transaction and aborts it,
/// which writes its markers: that waits for the directories too.
#[test]
fn a_fence_over_new_partitions_waits_for_their_directories() {
    let (s, _port, mut k, pid, before) = with_new_partitions("g", 300, "tx-g", 60_000);
    assert_eq!(add(&mut k, "tx-g", pid, "g", 0..300), vec![0; 300]);
    let again = init(&mut k, "tx-g", 60_000);
    assert_eq!((again.error_code, again.producer_epoch), (0, 1), "{again:?}");
    assert_eq!(s.metric("baton_planner_transactions_waited_total"), 1.0);
    let (taken, missed) =
        (s.metric("baton_partition_spare_dirs_taken_total"), s.metric("baton_partition_spare_dirs_missed_total"));
    assert_eq!((taken - before.0, missed - before.1), (300.0, 0.0), "every new partition found a directory ready");
    assert_eq!(k.list_offset("g", 299, -1).offset, 1, "the fence's abort marker");
}
