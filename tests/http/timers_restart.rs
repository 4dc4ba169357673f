//! Timers through the real binary survive a crash: a timer scheduled before a
//! SIGKILL fires after the restart (late rather than never), exactly once,
//! and a cancelled one never fires.

use crate::common;

use common::api::Api;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn b64(s: &str) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let b = s.as_bytes();
    let mut out = String::new();
    for c in b.chunks(3) {
        let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= c.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[tokio::test]
async fn a_timer_scheduled_before_a_crash_fires_once_after_restart() {
    let mut api = Api::with(&["--checkpoint-interval-secs", "3600"]);
    let ops = json!({"operations": [
        {"op": "schedule", "queue": "tq", "timerKey": "late", "payload": b64("{\"k\":1}"), "delayMs": 1500, "txn": "t-late"},
        {"op": "schedule", "queue": "tq", "timerKey": "gone", "payload": b64("{\"k\":2}"), "delayMs": 1500, "txn": "t-gone"},
    ]});
    let (st, v) = api.post("/api/v1/timers", ops).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["results"][0]["status"], "scheduled");
    let (st, v) =
        api.post("/api/v1/timers", json!({"operations": [{"op": "cancel", "queue": "tq", "timerKey": "gone"}]})).await;
    assert_eq!((st, v["results"][0]["status"].as_str()), (200, Some("cancelled")), "{v}");
    // Crash before it is due; stay down past the due time.
    api.s.kill9();
    std::thread::sleep(Duration::from_millis(2000));
    api.s.restart();
    api.c = common::api::client();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got: Vec<Value> = Vec::new();
    while Instant::now() < deadline {
        let (st, v) = api.get("/api/v1/pop/queue/tq?batch=10&wait=true&timeout=500&autoAck=true").await;
        if st == 200 {
            got.extend(v["messages"].as_array().unwrap().iter().cloned());
        }
        if !got.is_empty() && st == 204 {
            break;
        }
    }
    assert_eq!(got.len(), 1, "exactly one firing, the cancelled timer never: {got:?}");
    assert_eq!(got[0]["transactionId"], "t-late");
    assert_eq!(got[0]["data"], json!({"k": 1}));
    let (_, peek) = api.get("/api/v1/timers/tq/late").await;
    assert_eq!(peek["found"], false, "a fired timer is gone: {peek}");
    // And it does not fire again after another restart.
    api.s.kill9();
    api.s.restart();
    api.c = common::api::client();
    let (st, _) = api.get("/api/v1/pop/queue/tq?batch=10&wait=true&timeout=1500").await;
    assert_eq!(st, 204, "no second firing after a restart");
}
