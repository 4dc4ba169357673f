//! The idempotent producer and what one ProduceRequest stores, and what
//! OffsetFetch may show, through the real binary: sequences wrap to 0 after
//! i32::MAX as in Kafka, a partition's batches in one request are stored all
//! or none, and OffsetFetch never shows a commit whose entry is not durable.

use crate::common;
use crate::kafka_util;

use bytes::Bytes;
use common::Server;
use kafka_protocol::messages::*;
use kafka_protocol::records::Compression;
use kafka_util::*;
use std::process::{Command, Stdio};

const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;
const UNKNOWN_PRODUCER_ID: i16 = 59;

fn init_producer(k: &mut Kafka) -> i64 {
    let init: InitProducerIdResponse =
        k.call(ApiKey::InitProducerId, 4, &InitProducerIdRequest::default().with_transaction_timeout_ms(60_000));
    assert_eq!(init.error_code, 0);
    i64::from(init.producer_id)
}

/// Issue #12 item 8: after i32::MAX the expected sequence was i32::MIN.
#[test]
fn the_idempotent_sequence_wraps_to_zero_after_i32_max() {
    let (_s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    k.metadata(&["wrap"]);
    let pid = init_producer(&mut k);
    let last = batch(&[b"max"], Compression::None, Some((pid, 0, i32::MAX)));
    assert_eq!(k.produce("wrap", 0, last.clone(), -1).error_code, 0);
    let next = k.produce("wrap", 0, batch(&[b"zero"], Compression::None, Some((pid, 0, 0))), -1);
    assert_eq!((next.error_code, next.base_offset), (0, 1), "sequence 0 follows i32::MAX");
    let retry = k.produce("wrap", 0, last, -1);
    assert_eq!((retry.error_code, retry.base_offset), (0, 0), "the retry is still recognised");
    let gap = k.produce("wrap", 0, batch(&[b"gap"], Compression::None, Some((pid, 0, 5))), -1);
    assert_eq!(gap.error_code, OUT_OF_ORDER_SEQUENCE_NUMBER);
    assert_eq!(k.list_offset("wrap", 0, -1).offset, 2);
}

/// Issue #12 item 6: any producer id was accepted, and its state kept.
#[test]
fn a_producer_id_never_assigned_is_refused() {
    let (_s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    k.metadata(&["ids"]);
    let pid = init_producer(&mut k);
    let r = k.produce("ids", 0, batch(&[b"forged"], Compression::None, Some((pid + 1000, 0, 0))), -1);
    assert_eq!(r.error_code, UNKNOWN_PRODUCER_ID, "{r:?}");
    let why = r.error_message.map(|m| m.to_string()).unwrap_or_default();
    assert!(why.contains(&format!("{}", pid + 1000)), "{why}");
    assert_eq!(k.list_offset("ids", 0, -1).offset, 0, "nothing stored");
    assert_eq!(k.produce("ids", 0, batch(&[b"real"], Compression::None, Some((pid, 0, 0))), -1).error_code, 0);
}

/// Issue #12 item 6: producer state never expired. With
/// --kafka-producer-id-expiration-ms, an idle producer's state is dropped
/// when another producer enters the partition, by an effect that replay
/// repeats (the state is still gone after a SIGKILL and restart).
#[test]
fn idle_producer_state_expires_and_stays_expired_after_replay() {
    let (mut s, port) = Server::start_kafka(&["--kafka-producer-id-expiration-ms", "200"]);
    let mut k = Kafka::connect(port);
    k.metadata(&["idle"]);
    let a = init_producer(&mut k);
    let b = init_producer(&mut k);
    assert_eq!(k.produce("idle", 0, batch(&[b"a0"], Compression::None, Some((a, 0, 0))), -1).error_code, 0);
    let gap = k.produce("idle", 0, batch(&[b"a5"], Compression::None, Some((a, 0, 5))), -1);
    assert_eq!(gap.error_code, OUT_OF_ORDER_SEQUENCE_NUMBER, "a's state is live");
    std::thread::sleep(std::time::Duration::from_millis(400));
    assert_eq!(k.produce("idle", 0, batch(&[b"b0"], Compression::None, Some((b, 0, 0))), -1).error_code, 0);
    drop(k);
    s.kill9();
    s.restart();
    let mut k = Kafka::connect(port);
    let r = k.produce("idle", 0, batch(&[b"a5"], Compression::None, Some((a, 0, 5))), -1);
    assert_eq!((r.error_code, r.base_offset), (0, 2), "a's state was dropped, and replay dropped it again");
}

fn concat(parts: &[&Bytes]) -> Bytes {
    Bytes::from(parts.iter().flat_map(|b| b.iter().copied()).collect::<Vec<u8>>())
}

/// Issue #12 item 8: a produce whose later batch failed kept the earlier ones.
#[test]
fn a_partitions_batches_in_one_produce_are_stored_all_or_none() {
    let (_s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    k.metadata(&["whole"]);
    let pid = init_producer(&mut k);
    let first = batch(&[b"a", b"b"], Compression::None, Some((pid, 0, 0)));
    let gap = batch(&[b"c"], Compression::None, Some((pid, 0, 7)));
    let r = k.produce("whole", 0, concat(&[&first, &gap]), -1);
    assert_eq!(r.error_code, OUT_OF_ORDER_SEQUENCE_NUMBER, "{r:?}");
    assert_eq!(k.list_offset("whole", 0, -1).offset, 0, "the first batch was not kept");
    // The producer's state did not move either: sequence 0 is still next,
    // and two batches of one request chain their sequences.
    let second = batch(&[b"c"], Compression::None, Some((pid, 0, 2)));
    let r = k.produce("whole", 0, concat(&[&first, &second]), -1);
    assert_eq!((r.error_code, r.base_offset), (0, 0), "{r:?}");
    assert_eq!(k.list_offset("whole", 0, -1).offset, 3);
    let f = k.fetch("whole", 0, 0, 0);
    assert_eq!(records(f.records.as_ref().unwrap()).len(), 3);
}

use common::{Baton, Mount};

fn commit_req(group: &str, t: &str, offset: i64) -> OffsetCommitRequest {
    OffsetCommitRequest::default()
        .with_group_id(GroupId(name(group)))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![offset_commit_request::OffsetCommitRequestTopic::default()
            .with_name(topic(t))
            .with_partitions(vec![offset_commit_request::OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(offset)])])
}

fn offset_fetch_req(group: &str, t: &str) -> OffsetFetchRequest {
    OffsetFetchRequest::default().with_group_id(GroupId(name(group))).with_topics(Some(vec![
        offset_fetch_request::OffsetFetchRequestTopic::default().with_name(topic(t)).with_partition_indexes(vec![0]),
    ]))
}

/// Issue #12 item 8: OffsetFetch answered from the planned state, so a commit
/// whose entry never became durable (here: the disk filled up under it) was
/// shown as committed. Needs root for a tiny tmpfs; says so and returns
/// where that is not allowed.
#[test]
fn offset_fetch_never_shows_a_commit_that_is_not_durable() {
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("small");
    std::fs::create_dir_all(&mnt).unwrap();
    let ok = Command::new("mount").args(["-t", "tmpfs", "-o", "size=3m", "tmpfs"]).arg(&mnt).status();
    if !ok.map(|s| s.success()).unwrap_or(false) {
        eprintln!("SKIPPED: cannot mount a tmpfs here (needs root); the durability test did not run");
        return;
    }
    let _m = Mount(mnt.clone());
    let (port, kport) = (common::free_port(), common::free_port());
    let _child = Baton(
        Command::new(env!("CARGO_BIN_EXE_baton"))
            .args(["serve", "--http-addr", &format!("127.0.0.1:{port}")])
            .args(["--kafka-addr", &format!("127.0.0.1:{kport}"), "--data-dir"])
            .arg(mnt.join("data"))
            .args(["--wal-segment-mb", "1", "--partition-segment-mb", "1", "--checkpoint-interval-secs", "3600"])
            .args(["--wal-preallocate", "false"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn baton"),
    );
    let mut k = loop {
        if let Ok(s) = std::net::TcpStream::connect(("127.0.0.1", kport)) {
            drop(s);
            break Kafka::connect(kport);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    k.metadata(&["full"]);
    let value: Vec<u8> = (0..200_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
    let mut acked = -1i64;
    let mut refused = None;
    for i in 1..1000i64 {
        // The commit rides in the same planner batch as a produce the disk
        // cannot take, so its effect is planned and then never made durable.
        k.send(ApiKey::Produce, 9, &produce_req("full", 0, batch(&[&value], Compression::None, None), -1));
        k.send(ApiKey::OffsetCommit, 8, &commit_req("g", "full", i));
        let (_, _p): (i32, ProduceResponse) = k.recv(ApiKey::Produce, 9);
        let (_, c): (i32, OffsetCommitResponse) = k.recv(ApiKey::OffsetCommit, 8);
        if c.topics[0].partitions[0].error_code == 0 {
            acked = i;
        } else {
            refused = Some(i);
            break;
        }
    }
    let refused = refused.expect("the 3 MiB disk filled up and a commit failed");
    assert!(acked >= 1, "some commits were durable first");
    let r: OffsetFetchResponse = k.call(ApiKey::OffsetFetch, 7, &offset_fetch_req("g", "full"));
    if r.error_code != 0 {
        // Refused (KAFKA_STORAGE_ERROR on a latched node): shows nothing.
        return;
    }
    let p = &r.topics[0].partitions[0];
    assert!(
        p.error_code != 0 || p.committed_offset <= acked,
        "OffsetFetch shows {} though the commit of {refused} failed (last durable: {acked})",
        p.committed_offset
    );
}
