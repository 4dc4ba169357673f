//! D87: the request-memory budget at the HTTP door. Clients that announce large
//! bodies and never finish them held what they sent until they chose to stop:
//! 40 such connections held 840 MB of a server's memory, growing with each one.

use crate::common;
use common::api::Api;
use common::{closed_within, rss_bytes, trickle};
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
    tokio::task::spawn_blocking(move || {
        for (i, mut c) in hostile.into_iter().enumerate() {
            assert!(closed_within(&mut c, Duration::from_secs(40)), "trickling connection {i} still open");
        }
    })
    .await
    .unwrap();
    assert!(api.metric("baton_http_errors_total{status=\"408\",code=\"request_timeout\"}").await >= 12.0);
    assert_eq!(api.metric("baton_request_memory_bytes").await, 0.0, "every hold is given back");
    let popped = api.pop_some("mem", "").await;
    assert_eq!(popped.len(), 1, "only the small push was stored: {popped:?}");
}
