//! D80 for Kafka: a Produce naming thousands of fresh partitions is one planner command
//! per partition, each making its partition's files. Within a pass of the planner those
//! may take `--push-step-ms`; the rest wait for later passes, so a produce from another
//! client that arrives meanwhile is answered long before the wide one, every partition
//! still gets its record exactly once, and a producer's pipelined batches to a partition
//! that has to wait keep their order (no OUT_OF_ORDER_SEQUENCE).

use crate::common;
use crate::kafka_util;

use common::Server;
use kafka_protocol::messages::*;
use kafka_protocol::records::Compression;
use kafka_util::*;
use std::time::{Duration, Instant};

const WIDE: i32 = 3_000;

/// One Produce with one record in each of `parts` partitions of `t`.
fn wide_req(t: &str, parts: impl IntoIterator<Item = i32>) -> ProduceRequest {
    let data = parts
        .into_iter()
        .map(|p| {
            produce_request::PartitionProduceData::default().with_index(p).with_records(Some(batch(
                &[format!("v{p}").as_bytes()],
                Compression::None,
                None,
            )))
        })
        .collect();
    ProduceRequest::default().with_acks(-1).with_timeout_ms(120_000).with_topic_data(vec![
        produce_request::TopicProduceData::default().with_name(topic(t)).with_partition_data(data),
    ])
}

fn wait_for_a_deferred_produce(s: &Server) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while s.metric("baton_planner_produces_deferred_total") == 0.0 {
        assert!(Instant::now() < deadline, "no produce waited for a later pass in 30 s");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A server with 2 ms passes, topics "wide" (`WIDE` fresh partitions) and "probe" (one,
/// written once), and the wide Produce sent, not yet answered: (server, port, its client).
fn wide_produce_in_flight() -> (Server, u16, Kafka) {
    let (s, port) = Server::start_kafka(&["--push-step-ms", "2"]);
    let mut k = Kafka::connect(port);
    k.create_topic("wide", WIDE);
    k.create_topic("probe", 1);
    assert_eq!(k.produce("probe", 0, batch(&[b"first"], Compression::None, None), -1).error_code, 0);
    k.send(ApiKey::Produce, 9, &wide_req("wide", 0..WIDE));
    wait_for_a_deferred_produce(&s);
    (s, port, k)
}

/// Every partition of "wide" holds exactly one record.
fn one_record_each(k: &mut Kafka) {
    for p in 0..WIDE {
        assert_eq!(k.list_offset("wide", p, -1).offset, 1, "partition {p}");
    }
}

#[test]
fn a_produce_sent_after_a_wide_one_began_is_answered_first() {
    let sent = Instant::now();
    let (s, port, mut wide) = wide_produce_in_flight();
    let mut probe = Kafka::connect(port);
    let t0 = Instant::now();
    let r = probe.produce("probe", 0, batch(&[b"second"], Compression::None, None), -1);
    let probe_took = t0.elapsed();
    assert_eq!((r.error_code, r.base_offset), (0, 1), "{r:?}");
    let deferred_then = s.metric("baton_planner_produces_deferred_total");
    let (_, resp): (i32, ProduceResponse) = wide.recv(ApiKey::Produce, 9);
    let wide_took = sent.elapsed();
    let parts = &resp.responses[0].partition_responses;
    assert_eq!(parts.len(), WIDE as usize);
    assert!(parts.iter().all(|p| p.error_code == 0 && p.base_offset == 0), "{:?}", &parts[..3]);
    // Relative, not a timed target: before D80 the probe waited for all 3,000 partitions.
    assert!(probe_took * 4 < wide_took, "the probe took {probe_took:?}, the wide produce {wide_took:?}");
    one_record_each(&mut wide);
    eprintln!("probe {probe_took:?}, wide {wide_took:?}, {deferred_then} produces had waited by the probe's answer");
}

/// An idempotent producer pipelines two Produce requests over the same 2,000 fresh
/// partitions (sequence 0, then 1, in each). Most of the first request's partitions wait
/// for later passes; a batch of the second for a partition whose first batch waits must
/// wait behind it, or it would be planned first and refused OUT_OF_ORDER_SEQUENCE.
#[test]
fn pipelined_batches_to_partitions_that_wait_keep_their_order() {
    const N: i32 = 2_000;
    let (s, port) = Server::start_kafka(&["--push-step-ms", "2"]);
    let mut k = Kafka::connect(port);
    k.create_topic("seq", N);
    let init: InitProducerIdResponse =
        k.call(ApiKey::InitProducerId, 4, &InitProducerIdRequest::default().with_transaction_timeout_ms(60_000));
    let (pid, epoch) = (init.producer_id.0, init.producer_epoch);
    for seq in 0..2 {
        let data = (0..N)
            .map(|p| {
                let b = batch(&[format!("p{p}s{seq}").as_bytes()], Compression::None, Some((pid, epoch, seq)));
                produce_request::PartitionProduceData::default().with_index(p).with_records(Some(b))
            })
            .collect();
        let req = ProduceRequest::default().with_acks(-1).with_timeout_ms(120_000).with_topic_data(vec![
            produce_request::TopicProduceData::default().with_name(topic("seq")).with_partition_data(data),
        ]);
        k.send(ApiKey::Produce, 9, &req);
    }
    for seq in 0..2 {
        let (_, r): (i32, ProduceResponse) = k.recv(ApiKey::Produce, 9);
        let bad: Vec<_> = r.responses[0]
            .partition_responses
            .iter()
            .filter(|p| (p.error_code, p.base_offset) != (0, seq as i64))
            .take(3)
            .collect();
        assert!(bad.is_empty(), "request {seq}: {bad:?}");
    }
    assert!(
        s.metric("baton_planner_produces_deferred_total") > 0.0,
        "no produce waited: the order was not put to the test"
    );
    for p in [0, N / 2, N - 1] {
        let got = records(&k.fetch("seq", p, 0, 0).records.expect("records"));
        let values: Vec<Vec<u8>> = got.into_iter().map(|(_, v)| v.to_vec()).collect();
        assert_eq!(values, vec![format!("p{p}s0").into_bytes(), format!("p{p}s1").into_bytes()], "partition {p}");
    }
}

/// Produces waiting for a later pass left the planner's queue but are still queued work:
/// past `--max-queued-requests` of them a produce is refused (THROTTLING_QUOTA_EXCEEDED,
/// saying why) and stores nothing, so a client cannot grow the wait without bound. The
/// produces come as 30 pipelined requests of 100 partitions 5 ms apart, so the planner's
/// queue (also 300) is never full and only the waiting can refuse them. The refused
/// partitions, sent again, are stored once.
#[test]
fn waiting_produces_are_bounded_like_the_queue_they_left() {
    let (_s, port) = Server::start_kafka(&["--push-step-ms", "1", "--max-queued-requests", "300"]);
    let mut k = Kafka::connect(port);
    k.create_topic("wide", WIDE);
    for chunk in 0..30 {
        k.send(ApiKey::Produce, 9, &wide_req("wide", chunk * 100..(chunk + 1) * 100));
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut refused: Vec<i32> = Vec::new();
    let mut said_why = false;
    for _ in 0..30 {
        let (_, r): (i32, ProduceResponse) = k.recv(ApiKey::Produce, 9);
        for p in &r.responses[0].partition_responses {
            if p.error_code == 0 {
                assert_eq!(p.base_offset, 0, "{p:?}");
                continue;
            }
            assert_eq!(p.error_code, 89, "refused only as overloaded: {p:?}");
            said_why |= p.error_message.as_deref().is_some_and(|m| m.contains("waiting to make new partition files"));
            refused.push(p.index);
        }
    }
    assert!(said_why, "no produce was refused for the waiting ones ({} refused)", refused.len());
    for p in refused.iter().take(20) {
        assert_eq!(k.list_offset("wide", *p, -1).offset, 0, "refused partition {p} stored something");
    }
    for _ in 0..50 {
        if refused.is_empty() {
            break;
        }
        let r: ProduceResponse = k.call(ApiKey::Produce, 9, &wide_req("wide", refused.iter().copied()));
        refused = r.responses[0].partition_responses.iter().filter(|p| p.error_code != 0).map(|p| p.index).collect();
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(refused.is_empty(), "{} partitions still refused after 50 tries", refused.len());
    one_record_each(&mut k);
}
