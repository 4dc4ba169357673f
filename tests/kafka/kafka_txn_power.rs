//! A Kafka transaction stays open, and committable, across a crash (D48, D77): that is safe
//! only because every step of it that was answered is durable, so the transaction a
//! restarted broker holds is exactly the one its client was told about. Here a power cut
//! lands while the sync of a transaction's second Produce and its TxnOffsetCommit is under
//! way (the fsync slowed by the fault shim, whose power mirror keeps only what was synced):
//! neither may have been answered, the first Produce must survive, and the commit after the
//! start holds exactly the answered part. A broker that answered those steps before their
//! sync (D77's rejected variant, without its abort at start) fails the first check; one
//! that lost a synced step fails the second.

use crate::kafka_util;

use baton_check::broker::{find_shim, free_port, Broker};
use kafka_util::txn::*;
use kafka_util::*;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

const SLOW_MS: u64 = 5000;

#[test]
fn a_power_cut_keeps_every_answered_step_of_an_open_transaction_and_it_commits_after() {
    let bin = Path::new(env!("CARGO_BIN_EXE_baton"));
    let shim = find_shim(bin).expect("the fault shim (cargo build --release -p baton-faults)");
    let kport = free_port().unwrap();
    let kaddr = format!("127.0.0.1:{kport}");
    let args =
        ["--checkpoint-interval-secs", "3600", "--kafka-addr", &kaddr, "--kafka-initial-rebalance-delay-ms", "0"];
    let mut b = Broker::start_with_shim_power(Some(bin), &args, Some(&shim), true).unwrap();
    let mut k = Kafka::connect(kport);
    assert!(k.metadata(&["cut"]).topics.iter().all(|t| t.error_code == 0));
    let i = init(&mut k, "tx-cut", 900_000);
    assert_eq!(i.error_code, 0, "{i:?}");
    let (pid, epoch) = (i.producer_id.0, i.producer_epoch);
    let mut t = Txn { k: &mut k, tid: "tx-cut", pid, epoch };
    assert_eq!(t.add("cut", &[0]), 0);
    assert_eq!(t.produce("cut", 0, &[b"kept"], 0).error_code, 0, "answered: durable from here on");

    b.set_faults(&format!("fsync slow {SLOW_MS}")).unwrap();
    let (tx, rx) = mpsc::channel();
    let late = std::thread::spawn(move || {
        let mut k = Kafka::connect(kport);
        let mut t = Txn { k: &mut k, tid: "tx-cut", pid, epoch };
        // Either answer (or a dropped connection, which panics this thread) comes after
        // the kill below, unless the broker answers before the sync.
        let produced = t.produce("cut", 0, &[b"unanswered"], 1).error_code;
        let _ = tx.send(("produce", produced));
        let offsets = t.send_offsets("cut-group", "cut", 7);
        let _ = tx.send(("offsets", offsets.1));
    });
    match rx.recv_timeout(Duration::from_millis(SLOW_MS / 2)) {
        Err(_) => {}
        Ok(answer) => panic!("a step inside the transaction was answered before its sync: {answer:?}"),
    }
    b.kill9();
    let _ = late.join();
    assert!(rx.try_recv().is_err(), "nothing was answered before the kill");
    b.power_cut(11, false).unwrap();
    b.restart().unwrap_or_else(|e| panic!("start after the cut: {e}\n{}", b.log_tail(40)));

    let mut k = Kafka::connect(kport);
    let ru = fetch_at(&mut k, "cut", false);
    let seen: Vec<_> = fetched(&ru).into_iter().filter(|r| !r.2).map(|r| r.1).collect();
    assert_eq!(
        seen,
        vec![bytes::Bytes::from("kept")],
        "the answered record survives; the unanswered one was never synced"
    );
    let rc = fetch_at(&mut k, "cut", true);
    assert_eq!((rc.high_watermark, rc.last_stable_offset), (1, 0), "still open after the start: {rc:?}");
    let mut t = Txn { k: &mut k, tid: "tx-cut", pid, epoch };
    assert_eq!(t.end(true), 0, "the client commits what it was told is in the transaction");
    let rc = fetch_at(&mut k, "cut", true);
    assert_eq!(data_values(&rc), vec![bytes::Bytes::from("kept")]);
    assert_eq!(committed_offset(&mut k, "cut-group", "cut"), -1, "the unanswered offsets moved nothing");
}
