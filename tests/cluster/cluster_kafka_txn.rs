//! Issue 15 on a cluster (D48 with D42): the leader is the transaction coordinator, a
//! transaction's state is replicated with the log, so a transaction opened on a leader
//! that is then SIGKILLed stays open on the next one, commits there with the same
//! producer and epoch, and every member ends with the same partition files.

use crate::common;
use crate::kafka_util;

use common::cluster::{field, leader, wait_all, wait_known, Cluster};
use kafka_protocol::messages::*;
use kafka_util::txn::*;
use kafka_util::*;
use std::time::Duration;

const NOT_COORDINATOR: i16 = 16;

#[test]
fn a_transaction_open_when_its_leader_dies_commits_on_the_next_leader() {
    let mut cluster = Cluster::start(&[]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let c = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap();
    let l = rt.block_on(leader(&c, &cluster, Duration::from_secs(20)));
    rt.block_on(wait_known(&c, &cluster, l));
    let mut k = Kafka::connect(cluster.members[l].kafka);
    assert_eq!(k.metadata(&["ctx"]).topics[0].error_code, 0);
    // Every member holds every partition: a replication factor up to three is met (Connect
    // and Streams ask for 3 by default), four is refused.
    let create = |k: &mut Kafka, t: &str, rf: i16| -> i16 {
        let req = CreateTopicsRequest::default().with_timeout_ms(5000).with_topics(vec![
            create_topics_request::CreatableTopic::default()
                .with_name(topic(t))
                .with_num_partitions(1)
                .with_replication_factor(rf),
        ]);
        let r: CreateTopicsResponse = k.call(ApiKey::CreateTopics, 5, &req);
        r.topics[0].error_code
    };
    assert_eq!(create(&mut k, "rf3", 3), 0);
    assert_eq!(create(&mut k, "rf4", 4), 38, "INVALID_REPLICATION_FACTOR");
    let i = init(&mut k, "tx-cluster", 120_000);
    assert_eq!(i.error_code, 0, "{i:?}");
    let (pid, epoch) = (i.producer_id.0, i.producer_epoch);
    let mut t = Txn { k: &mut k, tid: "tx-cluster", pid, epoch };
    assert_eq!(t.add("ctx", &[0]), 0);
    assert_eq!(t.produce("ctx", 0, &[b"one", b"two"], 0).error_code, 0);

    // A member that does not lead is not the coordinator.
    let f = (0..3).find(|m| *m != l).unwrap();
    let mut kf = Kafka::connect(cluster.members[f].kafka);
    assert_eq!(Txn { k: &mut kf, tid: "tx-cluster", pid, epoch }.end(true), NOT_COORDINATOR);

    cluster.kill(l);
    let l2 = rt.block_on(leader(&c, &cluster, Duration::from_secs(20)));
    assert_ne!(l2, l);
    let mut k2 = Kafka::connect(cluster.members[l2].kafka);
    // The produce was answered, so it is on a majority; the transaction is still open.
    let rc = fetch_at(&mut k2, "ctx", true);
    assert_eq!((rc.high_watermark, rc.last_stable_offset), (2, 0), "{rc:?}");
    let mut t2 = Txn { k: &mut k2, tid: "tx-cluster", pid, epoch };
    assert_eq!(t2.end(true), 0, "the same producer and epoch commit on the new leader");
    let rc = fetch_at(t2.k, "ctx", true);
    assert_eq!(rc.last_stable_offset, 3);
    assert_eq!(data_values(&rc), vec![bytes::Bytes::from("one"), bytes::Bytes::from("two")]);
    // A second transaction aborts on the new leader.
    assert_eq!(t2.add("ctx", &[0]), 0);
    assert_eq!(t2.produce("ctx", 0, &[b"gone"], 2).error_code, 0);
    assert_eq!(t2.end(false), 0);
    let rc = fetch_at(t2.k, "ctx", true);
    assert_eq!(data_values(&rc).len(), 2, "the aborted record is filtered: {rc:?}");
    assert_eq!(rc.aborted_transactions.map(|a| a.len()), Some(1));

    // The killed member comes back and applies the same entries: the same files.
    cluster.restart(l);
    let last = rt.block_on(field(&c, &cluster, l2, "lastLogIndex"));
    rt.block_on(wait_all(&c, &cluster, "lastApplied", last, "all three applied the transactions"));
    cluster.stop_all();
    let files: Vec<_> = cluster.members.iter().map(|m| common::cluster::partition_files(&m.dir)).collect();
    assert!(!files[0].is_empty());
    for (i, f) in files.iter().enumerate().skip(1) {
        assert!(f == &files[0], "member {} holds other partition files than member 1", i + 1);
    }
}

/// D82 on a cluster: an EndTxn waiting on its leader for its partitions' directories while
/// that leader loses its term is never answered 0 unless the commit is on the cluster. The
/// same EndTxn sent to the new leader commits the transaction, still open there, and every
/// partition holds exactly one marker.
#[test]
fn an_end_waiting_for_directories_on_a_leader_that_loses_its_term_commits_once() {
    let cluster = Cluster::start(&[]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let c = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap();
    let l = rt.block_on(leader(&c, &cluster, Duration::from_secs(20)));
    rt.block_on(wait_known(&c, &cluster, l));
    let mut k = Kafka::connect(cluster.members[l].kafka);
    k.create_topic("dw", 400);
    let i = init(&mut k, "tx-dw", 120_000);
    assert_eq!(i.error_code, 0, "{i:?}");
    let pid = i.producer_id.0;
    let all: Vec<i32> = (0..400).collect();
    assert_eq!(Txn { k: &mut k, tid: "tx-dw", pid, epoch: 0 }.add("dw", &all), 0);
    let kport = cluster.members[l].kafka;
    let end = std::thread::spawn(move || {
        let mut k = Kafka::connect(kport);
        Txn { k: &mut k, tid: "tx-dw", pid, epoch: 0 }.end(true)
    });
    let metrics = cluster.members[l].url("/metrics/prometheus");
    let waited = || -> f64 {
        let text = rt.block_on(async { c.get(&metrics).send().await.ok()?.text().await.ok() }).unwrap_or_default();
        text.lines()
            .find_map(|l| l.strip_prefix("baton_planner_transactions_waited_total ")?.trim().parse().ok())
            .unwrap_or(0.0)
    };
    let t0 = std::time::Instant::now();
    while waited() < 1.0 {
        assert!(!end.is_finished(), "the end over 400 new partitions did not wait");
        assert!(t0.elapsed() < Duration::from_secs(30), "the end never waited");
        std::thread::sleep(Duration::from_millis(2));
    }
    cluster.pause(l);
    let l2 = rt.block_on(leader(&c, &cluster, Duration::from_secs(20)));
    assert_ne!(l2, l);
    cluster.resume(l);
    // No answer (the connection closed) counts as not committed by this leader.
    let first = end.join().unwrap_or(-1);
    // A member that no longer leads answers a waiting end at once, so the client finds the
    // new coordinator; before, it held the end to the whole 10 s wait and refused it
    // COORDINATOR_LOAD_IN_PROGRESS.
    assert_ne!(first, 14, "the old leader held the end to its whole wait");
    let mut k2 = Kafka::connect(cluster.members[l2].kafka);
    let mut again = -1;
    for _ in 0..100 {
        again = Txn { k: &mut k2, tid: "tx-dw", pid, epoch: 0 }.end(true);
        // The new leader may still be catching up or waiting for its own directories.
        if again != NOT_COORDINATOR && again != 14 {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(again, 0, "the new leader commits (or, if the old one committed, answers the retry as it was)");
    for p in [0, 199, 399] {
        assert_eq!(
            k2.list_offset("dw", p, -1).offset,
            1,
            "partition {p}: exactly one marker (the old leader answered {first})"
        );
    }
    eprintln!("the old leader answered {first}");
}
