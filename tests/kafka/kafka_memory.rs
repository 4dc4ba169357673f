//! D87: the request-memory budget at the Kafka door. Clients that claim large
//! frames and never finish them held their bytes until the idle timeout (ten
//! minutes), each as much as `--kafka-max-frame-bytes`: 40 such connections
//! held 3.9 GB of a server's memory, and 240 would run a 24 GiB machine out.

use crate::common;
use crate::kafka_util::*;
use common::{closed_within, rss_bytes, trickle, Server};
use kafka_protocol::messages::*;
use std::time::{Duration, Instant};

const MB: u64 = 1 << 20;

#[test]
fn trickled_frames_hold_at_most_the_budget_time_out_and_never_stop_small_requests() {
    let (s, port) = Server::start_kafka(&common::SMALL_REQUEST_BUDGET);
    let base = rss_bytes(s.pid());
    let frame = 15_000_000usize;
    let mut hostile: Vec<_> = (0..12).map(|_| trickle(port, &(frame as i32).to_be_bytes(), frame)).collect();
    let grown = rss_bytes(s.pid()).saturating_sub(base);
    // 12 × 15 MB would be 180 MB; the budget lets three such frames in (56 MiB, seven
    // eighths of 64), and the rest wait unread in the kernel's socket buffers.
    assert!(grown < 64 * MB + 40 * MB, "the server grew by {} MiB for 12 unfinished frames", grown / MB);
    let held = s.metric("baton_request_memory_bytes") as u64;
    assert!(held > 0 && held <= 56 * MB, "held {held} bytes");
    assert!(s.metric("baton_request_memory_waits_total") >= 1.0, "frames past the budget wait");

    // The last eighth is for small requests: a new client is answered at once.
    let t = Instant::now();
    let mut k = Kafka::connect(port);
    let r: ApiVersionsResponse = k.call(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
    assert_eq!(r.error_code, 0);
    assert!(t.elapsed() < Duration::from_secs(2), "a small request waited {:?}", t.elapsed());

    // Each unfinished frame closes its connection once its read deadline passes: three at a
    // time, so four rounds of 3 s.
    for (i, c) in hostile.iter_mut().enumerate() {
        assert!(closed_within(c, Duration::from_secs(30)), "trickling connection {i} still open");
    }
    assert!(s.metric("baton_kafka_connections_closed_total{reason=\"read_timeout\"}") >= 12.0);
    let held = s.metric_when("baton_request_memory_bytes", |v| v == 0.0, Duration::from_secs(5));
    assert_eq!(held, 0.0, "every hold is given back");

    // A whole large frame still goes through: a produce of one 900 KB record.
    let big = vec![7u8; 900_000];
    let mut p = Kafka::connect(port);
    p.create_topic("after", 1);
    let part = p.produce("after", 0, batch(&[&big], kafka_protocol::records::Compression::None, None), -1);
    assert_eq!(part.error_code, 0, "{part:?}");
}

#[test]
fn a_budget_that_cannot_hold_the_largest_frame_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["serve", "--data-dir"])
        .arg(dir.path())
        .args(["--http-addr", "127.0.0.1:0", "--kafka-addr", "127.0.0.1:0"])
        .args(["--max-request-memory-mb", "64", "--kafka-max-frame-bytes", "60000000"])
        .output()
        .expect("run baton");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("--max-request-memory-mb (64 MiB) must hold the largest request"), "{err}");
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none(), "nothing made on disk");
}

/// A topic "big" of 40 batches of one 900 KB record, and a Fetch of up to 50 MB of it.
fn big_topic_and_greedy_fetch(port: u16) -> FetchRequest {
    let mut k = Kafka::connect(port);
    k.create_topic("big", 1);
    let value = vec![b'v'; 900_000];
    for _ in 0..40 {
        let r = k.produce("big", 0, batch(&[&value], kafka_protocol::records::Compression::None, None), -1);
        assert_eq!(r.error_code, 0);
    }
    fetch_req("big", 0, 0, 0, 0, -1).with_max_bytes(50_000_000).with_topics(vec![fetch_request::FetchTopic::default()
        .with_topic(topic("big"))
        .with_partitions(vec![fetch_request::FetchPartition::default()
            .with_partition(0)
            .with_fetch_offset(0)
            .with_partition_max_bytes(50_000_000)])])
}

/// A client that sent Fetches and never read the answers kept them in the server for
/// as long as it liked: a connection with answers waiting was never idle, so the
/// idle timeout never came, however long the client took none of them.
#[test]
fn a_client_that_takes_none_of_its_answers_is_closed_as_idle() {
    let (s, port) = Server::start_kafka(&["--kafka-connections-max-idle-ms", "1500"]);
    // 36 MB an answer, four answers: far more than the loopback socket buffers take.
    let all = big_topic_and_greedy_fetch(port);
    let mut greedy = Kafka::connect(port);
    for _ in 0..4 {
        greedy.send(ApiKey::Fetch, 12, &all);
    }
    let open = s.metric_when("baton_kafka_connections_open", |v| v == 0.0, Duration::from_secs(15));
    assert_eq!(open, 0.0, "the connection taking no answers is still open");
    assert!(s.metric("baton_kafka_connections_closed_total{reason=\"idle\"}") >= 1.0);
    drop(greedy);
}

/// D88: each Fetch answer was built whole in memory and kept until written, outside the
/// budget: eight clients that each asked for 36 MB and read nothing grew the server by 399 MiB
/// for the idle time (ten minutes by default), and a few hundred would run it out
/// of memory. Answers now hold the budget; one that does not fit is cut to its first batch.
#[test]
fn answers_no_client_reads_hold_at_most_the_budget_and_are_cut_to_one_batch() {
    let mut args = common::SMALL_REQUEST_BUDGET.to_vec();
    args.extend(["--kafka-connections-max-idle-ms", "4000"]);
    let (s, port) = Server::start_kafka(&args);
    let all = big_topic_and_greedy_fetch(port);
    let base = rss_bytes(s.pid());
    let mut greedy: Vec<Kafka> = (0..8).map(|_| Kafka::connect(port)).collect();
    for g in &mut greedy {
        g.send(ApiKey::Fetch, 12, &all);
    }
    // One 36 MB answer fits the 56 MiB large answers may use; the other seven are cut to
    // one 900 KB batch each.
    let cut = s.metric_when("baton_kafka_fetch_trimmed_total", |v| v >= 7.0, Duration::from_secs(10));
    assert_eq!(cut, 7.0, "answers past the budget are cut");
    let held = s.metric("baton_request_memory_bytes") as u64;
    assert!(held <= 56 * MB, "held {held} bytes");
    // The cut answers fit the kernel's socket buffers and are written; the whole one is not.
    assert!(held >= 36_000_000, "the answer waiting to be written is counted: {held}");
    // What is held, and once more while an answer is encoded (its records are copied into
    // the frame), with room for the allocator: 399 MiB without the holds.
    let grown = rss_bytes(s.pid()).saturating_sub(base);
    assert!(grown < 2 * 56 * MB + 40 * MB, "the server grew by {} MiB for 8 unread answers", grown / MB);

    // A consumer that reads is still answered, and at once.
    let t = Instant::now();
    let mut reader = Kafka::connect(port);
    let one = fetch_req("big", 0, 0, 0, 0, -1);
    let r: FetchResponse = reader.call(ApiKey::Fetch, 12, &one);
    let records = r.responses[0].partitions[0].records.as_ref().map_or(0, |b| b.len());
    assert!(records >= 900_000, "a reader got {records} bytes");
    assert!(t.elapsed() < Duration::from_secs(2), "a reader waited {:?}", t.elapsed());
    drop(reader);

    // The greedy clients are idle: closed, and what their answers held is given back.
    let held = s.metric_when("baton_request_memory_bytes", |v| v == 0.0, Duration::from_secs(15));
    assert_eq!(held, 0.0, "every answer's hold is given back");
    assert!(s.metric("baton_kafka_connections_closed_total{reason=\"idle\"}") >= 8.0);
    drop(greedy);
}

/// One budget for both doors: what Kafka clients hold is not there for an HTTP body.
#[test]
fn the_budget_is_shared_by_both_doors() {
    let (s, port) = Server::start_kafka(&common::SMALL_REQUEST_BUDGET);
    let frame = 15_000_000usize;
    let mut kafka: Vec<_> = (0..3).map(|_| trickle(port, &(frame as i32).to_be_bytes(), frame)).collect();
    let held = s.metric_when("baton_request_memory_bytes", |v| v >= (3 * frame) as f64, Duration::from_secs(5));
    assert!(held >= (3 * frame) as f64, "three Kafka frames held");
    let waits = s.metric("baton_request_memory_waits_total");
    // 45 MB of the 56 MiB large requests may use are taken: a 15 MB body waits for them.
    let head = format!("POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Length: {frame}\r\n\r\n");
    let mut http = trickle(s.port, head.as_bytes(), frame);
    assert_eq!(s.metric("baton_request_memory_waits_total"), waits + 1.0, "the HTTP body waited for the Kafka frames");
    for c in kafka.iter_mut().chain(std::iter::once(&mut http)) {
        assert!(closed_within(c, Duration::from_secs(20)), "every trickled request ends on its deadline");
    }
    assert_eq!(s.metric("baton_request_memory_bytes"), 0.0);
}
