//! The Kafka front door at the wire: a raw client built on the kafka-protocol
//! codec talks to the real `baton` binary. ApiVersions (and the KIP-511
//! fallback), produce and fetch of the exact stored bytes, list offsets,
//! long-poll fetch, fetch sessions across a restart, the idempotent
//! producer, pipelining, unsupported versions and bad frames.

use crate::common;
use crate::kafka_util;

use bytes::{BufMut, Bytes, BytesMut};
use common::Server;
use kafka_protocol::messages::*;
use kafka_protocol::records::Compression;
use kafka_util::*;
use std::time::{Duration, Instant};

const UNSUPPORTED_VERSION: i16 = 35;

#[test]
fn api_versions_and_the_kip511_fallback() {
    let (_s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    for v in [0, 1, 2, 3, 4] {
        let r: ApiVersionsResponse = k.call(ApiKey::ApiVersions, v, &ApiVersionsRequest::default());
        assert_eq!(r.error_code, 0, "v{v}");
        let produce = r.api_keys.iter().find(|a| a.api_key == ApiKey::Produce as i16).expect("Produce listed");
        assert!(produce.min_version <= 3 && produce.max_version >= 9);
        assert!(r.api_keys.iter().any(|a| a.api_key == ApiKey::Fetch as i16));
    }
    // A client newer than us asks with ApiVersions v99: answered at v0 with
    // UNSUPPORTED_VERSION and the table, on the same connection.
    let mut f = BytesMut::new();
    f.put_i32(0);
    f.put_i16(ApiKey::ApiVersions as i16);
    f.put_i16(99);
    f.put_i32(4242);
    f.put_slice(b"\x00\x04test\x00");
    let len = (f.len() - 4) as i32;
    f[0..4].copy_from_slice(&len.to_be_bytes());
    k.send_raw(&f);
    let (cid, r): (i32, ApiVersionsResponse) = k.recv(ApiKey::ApiVersions, 0);
    assert_eq!(cid, 4242);
    assert_eq!(r.error_code, UNSUPPORTED_VERSION);
    assert!(r.api_keys.len() >= 15, "the table comes with the fallback");
    let again: ApiVersionsResponse = k.call(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
    assert_eq!(again.error_code, 0);
}

#[test]
fn produce_then_fetch_returns_the_stored_bytes() {
    let (_s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    let md = k.metadata(&["bytes"]);
    assert_eq!(md.topics[0].error_code, 0);
    assert_eq!(md.topics[0].partitions.len(), 1);
    assert_eq!(md.brokers[0].port, port as i32);
    let b1 = batch(&[b"one", b"two", b"three"], Compression::None, None);
    let b2 = batch(&[b"four", b"five"], Compression::Gzip, None);
    let b3 = batch(&[b"six"], Compression::Zstd, None);
    assert_eq!(k.produce("bytes", 0, b1.clone(), -1).base_offset, 0);
    let p2 = k.produce("bytes", 0, b2.clone(), 1);
    assert_eq!((p2.error_code, p2.base_offset), (0, 3));
    assert_eq!(k.produce("bytes", 0, b3.clone(), -1).base_offset, 5);
    let f = k.fetch("bytes", 0, 0, 0);
    assert_eq!(f.error_code, 0);
    assert_eq!((f.high_watermark, f.log_start_offset), (6, 0));
    let mut want = with_base(&b1, 0);
    want.extend(with_base(&b2, 3));
    want.extend(with_base(&b3, 5));
    assert_eq!(f.records.as_deref(), Some(&want[..]), "fetch returns what was produced, offsets assigned");
    let vals: Vec<_> = records(f.records.as_ref().unwrap()).into_iter().map(|(o, v)| (o, v.to_vec())).collect();
    assert_eq!(vals[3], (3, b"four".to_vec()));
    assert_eq!(vals[5], (5, b"six".to_vec()));
    // From the middle of a compressed batch: the whole batch comes back.
    let mid = k.fetch("bytes", 0, 4, 0);
    assert_eq!(mid.records.as_deref(), Some(&want[b1.len()..]));
    // Past the end, before the start: OFFSET_OUT_OF_RANGE with the bounds.
    let oor = k.fetch("bytes", 0, 99, 0);
    assert_eq!((oor.error_code, oor.high_watermark), (1, 6));
    assert_eq!(k.fetch("bytes", 0, -5, 0).error_code, 1);
    assert_eq!(k.fetch("bytes", 7, 0, 0).error_code, 3, "no partition 7");
}

#[test]
fn list_offsets_earliest_latest_and_by_time() {
    let (_s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    k.metadata(&["lo"]);
    assert_eq!(k.list_offset("lo", 0, -1).offset, 0, "empty topic");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let hour = 3_600_000;
    // CreateTimes out of write order, all in the past, as a replay or a mirror writes them.
    k.produce("lo", 0, batch_stamped(&[b"a", b"b"], &[now - 3 * hour, now - hour], Compression::None, None), -1);
    k.produce("lo", 0, batch_stamped(&[b"c"], &[now - 2 * hour], Compression::Lz4, None), -1);
    assert_eq!(k.list_offset("lo", 0, -2).offset, 0);
    assert_eq!(k.list_offset("lo", 0, -1).offset, 3);
    // Kafka's rule: the first record, in offset order, stamped at or after the target.
    let before_all = k.list_offset("lo", 0, now - 4 * hour);
    assert_eq!((before_all.offset, before_all.timestamp), (0, now - 3 * hour));
    let between = k.list_offset("lo", 0, now - 5 * hour / 2);
    assert_eq!((between.offset, between.timestamp), (1, now - hour), "b, not c: c comes later in the log");
    let exact = k.list_offset("lo", 0, now - 2 * hour);
    assert_eq!((exact.offset, exact.timestamp), (1, now - hour));
    let none = k.list_offset("lo", 0, now - hour / 2);
    assert_eq!((none.offset, none.timestamp), (-1, -1), "every record is stamped earlier, though written later");
    let future = k.list_offset("lo", 0, now + hour);
    assert_eq!((future.offset, future.timestamp), (-1, -1));
    assert_eq!(k.list_offset("lo", 3, -1).error_code, 3);
}

#[test]
fn fetch_waits_for_data_without_polling() {
    let (_s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    k.metadata(&["wait"]);
    // Nothing arrives: the answer comes at max_wait, empty.
    let t = Instant::now();
    let f = k.fetch("wait", 0, 0, 600);
    assert!(t.elapsed() >= Duration::from_millis(550), "{:?}", t.elapsed());
    assert_eq!(f.records.as_ref().map(|r| r.len()), Some(0));
    // A produce from another connection wakes the waiting fetch early.
    let producer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        let mut p = Kafka::connect(port);
        p.produce("wait", 0, batch(&[b"hello"], Compression::None, None), -1);
    });
    let t = Instant::now();
    let f = k.fetch("wait", 0, 0, 10_000);
    let took = t.elapsed();
    producer.join().unwrap();
    assert!(took < Duration::from_secs(5), "woken by the produce, took {took:?}");
    assert_eq!(records(f.records.as_ref().unwrap())[0].1, Bytes::from_static(b"hello"));
}

#[test]
fn fetch_sessions_are_incremental_and_a_restart_loses_them_cleanly() {
    let (mut s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    k.metadata(&["sess"]);
    k.produce("sess", 0, batch(&[b"x"], Compression::None, None), -1);
    let full: FetchResponse = k.call(ApiKey::Fetch, 12, &fetch_req("sess", 0, 0, 0, 0, 0));
    assert_eq!(full.error_code, 0);
    let id = full.session_id;
    assert_ne!(id, 0, "a session was created");
    assert_eq!(full.responses[0].partitions[0].high_watermark, 1);
    // Incremental, nothing new: the partition is left out of the answer.
    // The client names the partition again because its position moved to 1.
    let mut inc = fetch_req("sess", 0, 1, 100, id, 1);
    let r: FetchResponse = k.call(ApiKey::Fetch, 12, &inc);
    assert_eq!((r.error_code, r.session_id), (0, id));
    assert!(r.responses.is_empty(), "no news: {r:?}");
    // New data: the session (which remembers offset 1) answers with it,
    // though this request names no partition at all.
    k.produce("sess", 0, batch(&[b"y"], Compression::None, None), -1);
    inc.topics.clear();
    inc.session_epoch = 2;
    let r: FetchResponse = k.call(ApiKey::Fetch, 12, &inc);
    let p = &r.responses[0].partitions[0];
    assert_eq!(p.high_watermark, 2);
    assert_eq!(records(p.records.as_ref().unwrap())[0], (1, Bytes::from_static(b"y")));
    // A wrong epoch is refused.
    inc.session_epoch = 9;
    let r: FetchResponse = k.call(ApiKey::Fetch, 12, &inc);
    assert_eq!(r.error_code, 71, "INVALID_FETCH_SESSION_EPOCH");
    // After a restart the session is gone: FETCH_SESSION_ID_NOT_FOUND, and a
    // new full fetch works (the data is durable).
    s.terminate();
    s.restart();
    let mut k = Kafka::connect(port);
    inc.session_epoch = 3;
    let r: FetchResponse = k.call(ApiKey::Fetch, 12, &inc);
    assert_eq!(r.error_code, 70, "FETCH_SESSION_ID_NOT_FOUND");
    let again: FetchResponse = k.call(ApiKey::Fetch, 12, &fetch_req("sess", 0, 0, 0, 0, 0));
    assert_eq!(again.error_code, 0);
    assert_eq!(records(again.responses[0].partitions[0].records.as_ref().unwrap()).len(), 2);
}

#[test]
fn idempotent_producer_drops_duplicates_and_refuses_gaps() {
    let (_s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    k.metadata(&["idem"]);
    let init: InitProducerIdResponse =
        k.call(ApiKey::InitProducerId, 4, &InitProducerIdRequest::default().with_transaction_timeout_ms(60_000));
    assert_eq!(init.error_code, 0);
    let pid = i64::from(init.producer_id);
    assert!(pid >= 0);
    let first = batch(&[b"a", b"b", b"c"], Compression::None, Some((pid, 0, 0)));
    assert_eq!(k.produce("idem", 0, first.clone(), -1).base_offset, 0);
    let dup = k.produce("idem", 0, first, -1);
    assert_eq!((dup.error_code, dup.base_offset), (0, 0), "a retry answers with the original offset");
    let gap = k.produce("idem", 0, batch(&[b"z"], Compression::None, Some((pid, 0, 7))), -1);
    assert_eq!(gap.error_code, 45, "OUT_OF_ORDER_SEQUENCE_NUMBER");
    let next = k.produce("idem", 0, batch(&[b"d"], Compression::None, Some((pid, 0, 3))), -1);
    assert_eq!((next.error_code, next.base_offset), (0, 3));
    assert_eq!(k.list_offset("idem", 0, -1).offset, 4, "the duplicate stored nothing");
    // A transactional id needs a transaction timeout (D48; the flow is in kafka_transactions.rs).
    let txn: InitProducerIdResponse = k.call(
        ApiKey::InitProducerId,
        4,
        &InitProducerIdRequest::default().with_transactional_id(Some(TransactionalId(name("tx")))),
    );
    assert_eq!(txn.error_code, 50, "INVALID_TRANSACTION_TIMEOUT");
}

#[test]
fn pipelined_requests_are_answered_in_order_and_acks0_answers_nothing() {
    let (_s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    k.metadata(&["pipe"]);
    let mut cids = Vec::new();
    for i in 0..8u8 {
        let v = [i];
        cids.push(k.send(ApiKey::Produce, 9, &produce_req("pipe", 0, batch(&[&v], Compression::None, None), -1)));
    }
    for (i, cid) in cids.iter().enumerate() {
        let (got, r): (i32, ProduceResponse) = k.recv(ApiKey::Produce, 9);
        assert_eq!(got, *cid);
        assert_eq!(r.responses[0].partition_responses[0].base_offset, i as i64, "appended in send order");
    }
    // acks=0: stored, no answer; the next answer on the wire is the ApiVersions one.
    k.send(ApiKey::Produce, 9, &produce_req("pipe", 0, batch(&[b"quiet"], Compression::None, None), 0));
    let cid = k.send(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
    let (got, _): (i32, ApiVersionsResponse) = k.recv(ApiKey::ApiVersions, 3);
    assert_eq!(got, cid);
    let f = k.fetch("pipe", 0, 8, 0);
    assert_eq!(records(f.records.as_ref().unwrap())[0].1, Bytes::from_static(b"quiet"));
}

#[test]
fn unknown_topics_without_auto_create_and_topic_admin() {
    let (_s, port) = Server::start_kafka(&["--kafka-auto-create", "false"]);
    let mut k = Kafka::connect(port);
    assert_eq!(k.metadata(&["nope"]).topics[0].error_code, 3);
    let p = k.produce("nope", 0, batch(&[b"x"], Compression::None, None), -1);
    assert_eq!(p.error_code, 3, "UNKNOWN_TOPIC_OR_PARTITION");
    assert_eq!(k.fetch("nope", 0, 0, 0).error_code, 3);
    let create = CreateTopicsRequest::default().with_timeout_ms(5000).with_topics(vec![
        create_topics_request::CreatableTopic::default()
            .with_name(topic("made"))
            .with_num_partitions(3)
            .with_replication_factor(1),
        create_topics_request::CreatableTopic::default()
            .with_name(topic("bad name!"))
            .with_num_partitions(1)
            .with_replication_factor(1),
        create_topics_request::CreatableTopic::default()
            .with_name(topic("rf3"))
            .with_num_partitions(1)
            .with_replication_factor(3),
    ]);
    let r: CreateTopicsResponse = k.call(ApiKey::CreateTopics, 5, &create);
    let codes: Vec<i16> = r.topics.iter().map(|t| t.error_code).collect();
    assert_eq!(codes, vec![0, 17, 38]);
    assert_eq!(r.topics[0].num_partitions, 3);
    let r: CreateTopicsResponse = k.call(ApiKey::CreateTopics, 5, &create);
    assert_eq!(r.topics[0].error_code, 36, "TOPIC_ALREADY_EXISTS");
    assert_eq!(k.metadata(&["made"]).topics[0].partitions.len(), 3);
    assert_eq!(k.produce("made", 2, batch(&[b"x"], Compression::None, None), -1).error_code, 0);
    let grow = CreatePartitionsRequest::default().with_topics(vec![
        create_partitions_request::CreatePartitionsTopic::default().with_name(topic("made")).with_count(5),
    ]);
    let r: CreatePartitionsResponse = k.call(ApiKey::CreatePartitions, 1, &grow);
    assert_eq!(r.results[0].error_code, 0);
    assert_eq!(k.metadata(&["made"]).topics[0].partitions.len(), 5);
    let del = DeleteTopicsRequest::default().with_topic_names(vec![topic("made"), topic("never")]);
    let r: DeleteTopicsResponse = k.call(ApiKey::DeleteTopics, 4, &del);
    assert_eq!(r.responses.iter().map(|t| t.error_code).collect::<Vec<_>>(), vec![0, 3]);
    assert_eq!(k.metadata(&["made"]).topics[0].error_code, 3);
    let cfg = DescribeConfigsRequest::default().with_resources(vec![
        describe_configs_request::DescribeConfigsResource::default()
            .with_resource_type(4)
            .with_resource_name(name("0")),
    ]);
    let r: DescribeConfigsResponse = k.call(ApiKey::DescribeConfigs, 1, &cfg);
    assert!(r.results[0].configs.iter().any(|c| c.name.as_str() == "auto.create.topics.enable"), "{r:?}");
    assert!(r.results[0]
        .configs
        .iter()
        .any(|c| c.name.as_str() == "auto.create.topics.enable" && c.value.as_deref() == Some("false")));
}

#[test]
fn unsupported_versions_get_the_kafka_error_code() {
    let (_s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    // Metadata v13 decodes but is past our table.
    let req = MetadataRequest::default()
        .with_topics(Some(vec![metadata_request::MetadataRequestTopic::default().with_name(Some(topic("x")))]));
    let r: MetadataResponse = k.call(ApiKey::Metadata, 13, &req);
    assert_eq!(r.error_code, UNSUPPORTED_VERSION);
    // The connection is still good.
    let ok: ApiVersionsResponse = k.call(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
    assert_eq!(ok.error_code, 0);
}

#[test]
fn bad_frames_close_the_connection_and_are_counted() {
    let (s, port) = Server::start_kafka(&["--kafka-max-frame-bytes", "1048576"]);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("absurd length", 0x7fff_ffffi32.to_be_bytes().to_vec()),
        ("over the cap", (2i32 << 20).to_be_bytes().to_vec()),
        ("negative length", (-1i32).to_be_bytes().to_vec()),
        ("too short", [&3i32.to_be_bytes()[..], &[0, 0, 0]].concat()),
        ("unknown api key", [&8i32.to_be_bytes()[..], &[0x03, 0xe7, 0, 0, 0, 0, 0, 1]].concat()),
        ("produce v0", [&8i32.to_be_bytes()[..], &[0, 0, 0, 0, 0, 0, 0, 1]].concat()),
        ("garbage body", {
            let mut f = vec![0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 2, 0xff, 0xff, 0xff, 0x7f, 1, 2, 3];
            let len = (f.len() - 4) as i32;
            f[0..4].copy_from_slice(&len.to_be_bytes());
            f
        }),
    ];
    for (what, bytes) in &cases {
        let mut k = Kafka::connect(port);
        k.send_raw(bytes);
        assert!(k.closed(), "{what}: the server closes the connection");
    }
    // A frame cut short by the client closing is not an answerable request either.
    {
        let mut k = Kafka::connect(port);
        k.send_raw(&[0, 0, 0, 50, 0, 18, 0, 3]);
        k.s.shutdown(std::net::Shutdown::Write).unwrap();
        assert!(k.closed());
    }
    // The server is fine: a new connection is served.
    let mut k = Kafka::connect(port);
    let ok: ApiVersionsResponse = k.call(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
    assert_eq!(ok.error_code, 0);
    // The last close is logged just after the socket closes; give it a moment.
    std::thread::sleep(Duration::from_millis(200));
    // The log file is written with ANSI colours between key and value.
    let raw = s.log();
    let mut log = String::new();
    let mut esc = false;
    for c in raw.chars() {
        match (esc, c) {
            (false, '\u{1b}') => esc = true,
            (true, 'm') => esc = false,
            (true, _) => {}
            (false, c) => log.push(c),
        }
    }
    let closes = log.matches("kafka: bad frame, closing connection").count();
    assert_eq!(closes, cases.len() + 1, "each bad frame is logged once:\n{log}");
    assert!(log.contains(&format!("bad_frames_total={}", cases.len() + 1)), "and counted:\n{log}");
    assert!(!log.contains("panicked"), "{log}");
}

/// Kafka's max.message.bytes: a batch over it is refused with MESSAGE_TOO_LARGE and the
/// reason, nothing of it is stored, and a batch at the limit goes through.
#[test]
fn a_batch_over_max_message_bytes_is_refused_and_not_stored() {
    let (_s, port) = Server::start_kafka(&["--kafka-max-message-bytes", "2000"]);
    let mut k = Kafka::connect(port);
    k.metadata(&["big"]);
    let small = batch(&[b"fits"], Compression::None, None);
    let big_value = vec![b'x'; 3000];
    let big = batch(&[&big_value], Compression::None, None);
    assert!(small.len() <= 2000 && big.len() > 2000);
    let r = k.produce("big", 0, big.clone(), -1);
    assert_eq!(r.error_code, 10, "MESSAGE_TOO_LARGE");
    let why = r.error_message.map(|m| m.to_string()).unwrap_or_default();
    assert!(why.contains(&format!("{} bytes", big.len())) && why.contains("2000"), "{why}");
    assert_eq!(k.list_offset("big", 0, -1).offset, 0, "nothing stored");
    let r = k.produce("big", 0, small, -1);
    assert_eq!((r.error_code, r.base_offset), (0, 0));
    assert_eq!(k.list_offset("big", 0, -1).offset, 1);
}

/// Partitions that never got a record have no directory yet (D17): checkpoints
/// taken while they are empty succeed, and they work after a restart.
#[test]
fn checkpoints_with_partitions_that_were_never_written_succeed() {
    let (mut s, port) = Server::start_kafka(&["--checkpoint-interval-secs", "1"]);
    let mut k = Kafka::connect(port);
    let create = CreateTopicsRequest::default().with_timeout_ms(5000).with_topics(vec![
        create_topics_request::CreatableTopic::default()
            .with_name(topic("sparse"))
            .with_num_partitions(3)
            .with_replication_factor(1),
    ]);
    let r: CreateTopicsResponse = k.call(ApiKey::CreateTopics, 5, &create);
    assert_eq!(r.topics[0].error_code, 0);
    assert_eq!(k.produce("sparse", 2, batch(&[b"only here"], Compression::None, None), -1).error_code, 0);
    let get = |port: u16, path: &str| -> String {
        use std::io::{Read, Write};
        let mut t = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(t, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
        let mut out = String::new();
        t.read_to_string(&mut out).unwrap();
        out
    };
    let metric = |name: &str| -> u64 {
        let body = get(s.port, "/metrics/prometheus");
        body.lines().find_map(|l| l.strip_prefix(&format!("{name} ")).map(|v| v.parse().unwrap())).unwrap_or(0)
    };
    // A checkpoint is written once a second when something changed.
    let wait_checkpoints = |n: u64| {
        let deadline = Instant::now() + Duration::from_secs(10);
        while metric("baton_checkpoints_total") < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(metric("baton_checkpoints_total") >= n, "checkpoint {n} was written");
        let health = get(s.port, "/health");
        assert!(health.starts_with("HTTP/1.1 200"), "no checkpoint failed: {health}\n{}", s.log());
    };
    wait_checkpoints(1);
    assert_eq!(k.produce("sparse", 0, batch(&[b"later"], Compression::None, None), -1).error_code, 0);
    wait_checkpoints(2);
    drop(k);
    s.kill9();
    s.restart();
    let mut k = Kafka::connect(port);
    for (p, want) in [(0, 1), (1, 0), (2, 1)] {
        let f = k.fetch("sparse", p, 0, 0);
        assert_eq!((f.error_code, f.high_watermark), (0, want), "partition {p}");
    }
}
