//! D77 under a power cut: a Kafka transaction's Produce and TxnOffsetCommit are answered
//! before their entry is durable, so a power cut can take one of them while the transaction
//! stays open with the rest. The start after the cut must abort that transaction: a commit
//! of what is left would commit part of it (the offsets without the output, or the other
//! way round). Runs the real binary under the fault shim's power mirror; the fsync is
//! slowed so that the cut lands after the early answers and before their sync.

mod kafka_util;

use baton_check::broker::{find_shim, free_port, Broker};
use kafka_protocol::messages::*;
use kafka_protocol::records::Compression;
use kafka_util::txn::*;
use kafka_util::*;
use std::path::Path;
use std::time::{Duration, Instant};

const SLOW_MS: u64 = 5000;

#[test]
fn a_transaction_that_lost_an_early_answered_step_to_a_power_cut_is_aborted_not_committed() {
    let bin = Path::new(env!("CARGO_BIN_EXE_baton"));
    let shim = find_shim(bin).expect("the fault shim (cargo build --release -p baton-faults)");
    let kport = free_port().unwrap();
    let kaddr = format!("127.0.0.1:{kport}");
    let args =
        ["--checkpoint-interval-secs", "3600", "--kafka-addr", &kaddr, "--kafka-initial-rebalance-delay-ms", "0"];
    let mut b = Broker::start_with_shim_power(Some(bin), &args, Some(&shim), true).unwrap();
    let mut k = Kafka::connect(kport);
    assert!(k.metadata(&["cut", "cut-other"]).topics.iter().all(|t| t.error_code == 0));
    let i = init(&mut k, "tx-cut", 900_000);
    assert_eq!(i.error_code, 0, "{i:?}");
    let (pid, epoch) = (i.producer_id.0, i.producer_epoch);
    let mut t = Txn { k: &mut k, tid: "tx-cut", pid, epoch };
    assert_eq!(t.add("cut", &[0]), 0);
    assert_eq!(t.produce("cut", 0, &[b"kept"], 0).error_code, 0);
    // A plain produce is answered only once durable, and the log is one sequence: the
    // transaction's first record is on disk from here on.
    assert_eq!(k.produce("cut-other", 0, batch(&[b"plain"], Compression::None, None), -1).error_code, 0);

    b.set_faults(&format!("fsync slow {SLOW_MS}")).unwrap();
    let mut t = Txn { k: &mut k, tid: "tx-cut", pid, epoch };
    let t0 = Instant::now();
    assert_eq!(t.produce("cut", 0, &[b"lost"], 1).error_code, 0);
    assert_eq!(t.send_offsets("cut-group", "cut", 7), (0, 0));
    let took = t0.elapsed();
    assert!(
        took < Duration::from_millis(SLOW_MS / 2),
        "the steps inside the transaction were answered before their sync (D77), not after a {SLOW_MS} ms fsync: {took:?}"
    );
    // Their sync sleeps in the shim now; the power goes before it ends (the record read
    // back below shows that it did not end).
    std::thread::sleep(Duration::from_millis(300));
    b.kill9();
    b.power_cut(11, false).unwrap();
    b.restart().unwrap_or_else(|e| panic!("start after the cut: {e}\n{}", b.log_tail(40)));

    let mut k = Kafka::connect(kport);
    let ru = fetch_at(&mut k, "cut", false);
    let seen: Vec<_> = fetched(&ru).into_iter().filter(|r| !r.2).map(|r| r.1).collect();
    assert_eq!(seen, vec![bytes::Bytes::from("kept")], "the cut took the unsynced record and kept the synced one");
    let mut t = Txn { k: &mut k, tid: "tx-cut", pid, epoch };
    let end = t.end(true);
    assert_ne!(end, 0, "a commit of the transaction's surviving half was accepted");
    assert_eq!(end, PRODUCER_FENCED, "aborted at the start with an epoch bump, as a timeout would");
    let rc = fetch_at(&mut k, "cut", true);
    assert!(data_values(&rc).is_empty(), "read_committed sees nothing of it: {rc:?}");
    assert_eq!(rc.last_stable_offset, rc.high_watermark, "nothing is left open: {rc:?}");
    assert_eq!(rc.aborted_transactions.map(|a| a.len()), Some(1));
    // The offsets sent inside it did not reach the group.
    let f = OffsetFetchRequest::default().with_group_id(GroupId(name("cut-group"))).with_topics(Some(vec![
        offset_fetch_request::OffsetFetchRequestTopic::default()
            .with_name(topic("cut"))
            .with_partition_indexes(vec![0]),
    ]));
    let r: OffsetFetchResponse = k.call(ApiKey::OffsetFetch, 5, &f);
    assert_eq!(r.topics[0].partitions[0].committed_offset, -1, "{r:?}");
}
