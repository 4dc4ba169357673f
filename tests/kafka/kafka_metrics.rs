//! The Kafka listener's counters in /metrics, against the real `baton`
//! binary: produce and fetch over Kafka with a raw client, then read
//! /metrics and check each counter moved by exactly what was sent.

use crate::common;
use crate::kafka_util;

use common::Server;
use kafka_protocol::messages::ApiKey;
use kafka_protocol::records::Compression;
use kafka_util::*;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

fn metrics(s: &Server) -> String {
    let mut t = std::net::TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    t.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    t.write_all(b"GET /metrics/prometheus HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut body = String::new();
    t.read_to_string(&mut body).unwrap();
    assert!(body.starts_with("HTTP/1.1 200"), "{body}");
    body
}

/// The value of one series (name with labels, exactly as rendered); 0 when absent.
fn metric(text: &str, series: &str) -> f64 {
    text.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok()).unwrap_or(0.0)
}

/// Wait (bounded) until `series` reaches `want`: connection ends are counted
/// by the server after the client sees them.
fn eventually(s: &Server, series: &str, want: f64) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let m = metrics(s);
        if metric(&m, series) >= want || Instant::now() > deadline {
            return m;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn kafka_counters_move_with_kafka_traffic() {
    let (s, port) = Server::start_kafka(&[]);
    let before = metrics(&s);
    for family in [
        "# TYPE baton_kafka_connections_open gauge",
        "# TYPE baton_kafka_requests_total counter",
        "# TYPE baton_kafka_request_duration_seconds histogram",
        "# TYPE baton_kafka_sasl_authentications_total counter",
    ] {
        assert!(before.contains(family), "missing {family}");
    }
    assert_eq!(metric(&before, "baton_kafka_requests_total{api=\"Produce\"}"), 0.0);

    let mut k = Kafka::connect(port);
    k.metadata(&["counted"]);
    let batches = [
        batch(&[b"one", b"two"], Compression::None, None),
        batch(&[b"three"], Compression::Gzip, None),
        batch(&[b"four", b"five", b"six"], Compression::None, None),
    ];
    let sent: usize = batches.iter().map(|b| b.len()).sum();
    for b in &batches {
        assert_eq!(k.produce("counted", 0, b.clone(), -1).error_code, 0);
    }
    // Partition 7 does not exist: an answer carrying UNKNOWN_TOPIC_OR_PARTITION (3).
    let missing = batch(&[b"x"], Compression::None, None);
    assert_eq!(k.produce("counted", 7, missing.clone(), -1).error_code, 3);
    let f = k.fetch("counted", 0, 0, 0);
    let fetched = f.records.as_ref().unwrap().len();
    assert!(fetched >= sent, "all three batches come back");
    let open = metrics(&s);
    assert_eq!(metric(&open, "baton_kafka_connections_open"), 1.0);

    // A second connection that sends garbage: closed as a bad frame.
    let mut bad = Kafka::connect(port);
    bad.send_raw(&[0, 0, 0, 4, 0, 0, 0, 0]);
    assert!(bad.closed());
    drop(k);
    eventually(&s, "baton_kafka_connections_closed_total{reason=\"bad_frame\"}", 1.0);
    let m = eventually(&s, "baton_kafka_connections_closed_total{reason=\"client\"}", 1.0);

    assert_eq!(metric(&m, "baton_kafka_requests_total{api=\"Produce\"}"), 4.0);
    assert_eq!(metric(&m, "baton_kafka_requests_total{api=\"Fetch\"}"), 1.0);
    assert_eq!(metric(&m, "baton_kafka_requests_total{api=\"Metadata\"}"), 1.0);
    assert_eq!(metric(&m, "baton_kafka_produce_bytes_total"), (sent + missing.len()) as f64);
    assert_eq!(metric(&m, "baton_kafka_fetch_bytes_total"), fetched as f64);
    assert_eq!(metric(&m, "baton_kafka_request_errors_total{api=\"Produce\"}"), 1.0);
    assert_eq!(metric(&m, "baton_kafka_request_errors_total{api=\"Fetch\"}"), 0.0);
    assert_eq!(
        metric(&m, "baton_kafka_error_codes_total{api=\"Produce\",code=\"3\",error=\"UnknownTopicOrPartition\"}"),
        1.0
    );
    assert_eq!(metric(&m, "baton_kafka_request_duration_seconds_count{api=\"Produce\"}"), 4.0);
    assert_eq!(metric(&m, "baton_kafka_request_duration_seconds_bucket{api=\"Produce\",le=\"+Inf\"}"), 4.0);
    assert!(metric(&m, "baton_kafka_request_duration_seconds_sum{api=\"Produce\"}") > 0.0);
    assert_eq!(metric(&m, "baton_kafka_connections_total"), 2.0);
    assert_eq!(metric(&m, "baton_kafka_connections_closed_total{reason=\"client\"}"), 1.0);
    assert_eq!(metric(&m, "baton_kafka_connections_closed_total{reason=\"bad_frame\"}"), 1.0);
    assert_eq!(metric(&m, "baton_kafka_bad_frames_total"), 1.0);
    assert_eq!(metric(&m, "baton_kafka_connections_open"), 0.0);
    // The engine's own counters saw the same produces.
    assert!(metric(&m, "baton_log_entries_total") > metric(&before, "baton_log_entries_total"));
    // ApiVersions goes through the same path (and carries no error).
    let mut k = Kafka::connect(port);
    let _: kafka_protocol::messages::ApiVersionsResponse =
        k.call(ApiKey::ApiVersions, 3, &kafka_protocol::messages::ApiVersionsRequest::default());
    let m = metrics(&s);
    assert_eq!(metric(&m, "baton_kafka_requests_total{api=\"ApiVersions\"}"), 1.0);
    assert_eq!(metric(&m, "baton_kafka_request_errors_total{api=\"ApiVersions\"}"), 0.0);
}
