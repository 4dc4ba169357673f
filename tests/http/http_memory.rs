//! D87: the request-memory budget at the HTTP door. Clients that announce large
//! bodies and never finish them held what they sent until they chose to stop:
//! 40 such connections held 840 MB of a server's memory, growing with each one.

use crate::common;
use common::api::Api;
use common::{all_closed_within, rss_bytes, trickle};
use serde_json::json;
use std::time::{Duration, Instant};

const MB: u64 = 1 << 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trickled_bodies_hold_at_most_the_budget_are_refused_408_and_never_stop_small_requests() {
    let api = Api::with(&common::SMALL_REQUEST_BUDGET);
    let (pid, port) = (api.s.pid(), api.s.port);
    let base = rss_bytes(pid);
    let body = 15_000_000usize;
    let head = format!(
        "POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {body}\r\n\r\n"
    );
    let hostile =
        tokio::task::spawn_blocking(move || (0..12).map(|_| trickle(port, head.as_bytes(), body)).collect::<Vec<_>>())
            .await
            .unwrap();
    let grown = rss_bytes(pid).saturating_sub(base);
    assert!(grown < 64 * MB + 40 * MB, "the server grew by {} MiB for 12 unfinished bodies", grown / MB);
    let held = api.metric("baton_request_memory_bytes").await as u64;
    assert!(held > 0 && held <= 56 * MB, "held {held} bytes");
    assert!(api.metric("baton_request_memory_waits_total").await >= 1.0, "bodies past the budget wait");

    // The last eighth is for small requests: a push is answered at once.
    let t = Instant::now();
    let (status, v) = api.post("/api/v1/push", json!({"items": [{"queue": "mem", "payload": {"n": 1}}]})).await;
    assert_eq!(status, 201, "{v}");
    assert!(t.elapsed() < Duration::from_secs(2), "a small push waited {:?}", t.elapsed());

    // Each unfinished body is answered 408 once its read deadline passes, and its
    // connection closes: three at a time, so four rounds of 3 s.
    tokio::task::spawn_blocking(move || all_closed_within(hostile, Duration::from_secs(40), "trickling"))
        .await
        .unwrap();
    assert!(api.metric("baton_http_errors_total{status=\"408\",code=\"request_timeout\"}").await >= 12.0);
    assert_eq!(api.metric("baton_request_memory_bytes").await, 0.0, "every hold is given back");
    let popped = api.pop_some("mem", "").await;
    assert_eq!(popped.len(), 1, "only the small push was stored: {popped:?}");
}

/// D88: each fetch or pop answer was made whole in memory and kept until hyper wrote it,
/// outside the budget: eight clients that asked for 36 MB each and read nothing grew the
/// server by 466 MiB until the idle timeout. Now the records are held before they are read and the answer
/// keeps the hold until sent, so the rest wait for memory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_no_client_reads_hold_at_most_the_budget() {
    let mut args = common::SMALL_REQUEST_BUDGET.to_vec();
    args.extend(["--http-idle-timeout-secs", "2"]);
    let api = Api::with(&args);
    let (pid, port) = (api.s.pid(), api.s.port);
    let value = "v".repeat(900_000);
    for _ in 0..40 {
        let (status, v) = api.post("/api/v1/push", json!({"items": [{"queue": "big", "payload": value}]})).await;
        assert_eq!(status, 201, "{v}");
    }
    let base = rss_bytes(pid);
    let waits = api.metric("baton_request_memory_waits_total").await;
    let body = r#"{"entries":[{"queue":"big","offset":0,"maxBytes":50000000}]}"#;
    let req = format!(
        "POST /api/v1/fetch HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    // Eight clients ask for all 36 MB and read none of it.
    let greedy =
        tokio::task::spawn_blocking(move || (0..8).map(|_| trickle(port, req.as_bytes(), 1)).collect::<Vec<_>>())
            .await
            .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while api.metric("baton_request_memory_waits_total").await < waits + 7.0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // One answer fits the 56 MiB large holds may use; the other seven wait to be made.
    assert_eq!(api.metric("baton_request_memory_waits_total").await, waits + 7.0, "answers past the budget wait");
    let held = api.metric("baton_request_memory_bytes").await as u64;
    assert!((36_000_000..=64 * MB).contains(&held), "held {held} bytes");
    // One answer and its copies while it is made (stored bytes, records, JSON), with room
    // for the allocator: 466 MiB without the holds.
    let grown = rss_bytes(pid).saturating_sub(base);
    assert!(grown < 3 * 36 * MB + 40 * MB, "the server grew by {} MiB for 8 unread answers", grown / MB);

    // Small requests pass meanwhile.
    let t = Instant::now();
    let (status, v) = api.post("/api/v1/push", json!({"items": [{"queue": "small", "payload": {"n": 1}}]})).await;
    assert_eq!(status, 201, "{v}");
    assert_eq!(api.pop_some("small", "").await.len(), 1);
    assert!(t.elapsed() < Duration::from_secs(2), "small requests waited {:?}", t.elapsed());

    // Each greedy client is closed as idle in turn, and its answer's hold given back.
    tokio::task::spawn_blocking(move || all_closed_within(greedy, Duration::from_secs(40), "greedy")).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while api.metric("baton_request_memory_bytes").await > 0.0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(api.metric("baton_request_memory_bytes").await, 0.0, "every answer's hold is given back");
}

/// A dead-letter page had no bound in bytes: 10,000 rows of large dead messages were one
/// answer of gigabytes, made whole in memory. A page now reads at most a browse page's
/// bytes (4 MiB; the first row always), and a client pages on by `offset`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_letter_page_reads_a_bounded_number_of_bytes() {
    let api = Api::start();
    api.configure("dl", json!({"retryLimit": 1})).await;
    let value = "d".repeat(900_000);
    for i in 0..12 {
        api.push("dl", "Default", &[(&format!("t{i}"), json!(value))]).await;
    }
    // One at a time: a failed ack ends its lease. Two failed deliveries each.
    for _ in 0..24 {
        let m = api.pop_some("dl", "batch=1").await;
        let a = api.ack(&m[0], "failed", Some("too big")).await;
        assert_eq!(a["success"], true, "{a}");
    }
    let mut seen = Vec::new();
    for page in 0..4 {
        let v = api.ok(&format!("/api/v1/dlq?queue=dl&limit=100&offset={}", seen.len())).await;
        assert_eq!(v["total"], 12, "{page}");
        let rows = v["messages"].as_array().unwrap();
        // Four 900 KB records fit in 4 MiB; a fifth does not.
        assert_eq!(rows.len(), if page < 3 { 4 } else { 0 }, "page {page}");
        for r in rows {
            assert_eq!(r["data"].as_str().map(str::len), Some(900_000));
            seen.push(r["transactionId"].as_str().unwrap().to_string());
        }
    }
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 12, "every dead message is on exactly one page: {seen:?}");
    assert_eq!(api.metric("baton_request_memory_bytes").await, 0.0, "the pages' holds are given back");
}
