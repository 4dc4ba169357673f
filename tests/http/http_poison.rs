//! Poison payloads (issue #12 item 13) through the real binary: a JSON value
//! the API could not render again (`1e400`, a lone surrogate, nesting past
//! `--max-payload-depth`) is refused at every way in with 400 `bad_payload`,
//! and stored bytes that are no such value (a Kafka producer writes anything)
//! are shown by every view as a defined JSON value, never an empty reply.

use crate::common;
use crate::kafka_util;

use common::api::{read, Api};
use common::Server;
use kafka_protocol::records::Compression;
use kafka_util::{batch, Kafka};
use serde_json::{json, Value};

fn nested(n: usize) -> String {
    format!("{}1{}", "[".repeat(n), "]".repeat(n))
}

async fn post_raw(api: &Api, path: &str, body: String) -> (u16, Value) {
    read(api.c.post(api.s.url(path)).header("content-type", "application/json").body(body).send().await.unwrap()).await
}

/// Standard base64 with padding (what the timer API takes), without a dependency for one test.
fn base64(b: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in b.chunks(3) {
        let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= c.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[track_caller]
fn assert_bad_payload(got: &(u16, Value), what: &str) {
    assert_eq!(got.0, 400, "{what}: {}", got.1);
    assert_eq!(got.1["code"], "bad_payload", "{what}: {}", got.1);
    assert!(got.1["error"].as_str().is_some_and(|e| !e.is_empty()), "{what}: {}", got.1);
}

#[tokio::test]
async fn unrenderable_json_is_refused_at_every_way_in() {
    let api = Api::with(&["--max-payload-depth", "32"]);
    let poisons = [
        ("1e400".to_string(), "number out of range"),
        ("-1e400".to_string(), "number out of range"),
        ("9".repeat(400), "number out of range"),
        (r#""\ud800""#.to_string(), "escape"),
        (r#"{"\udc00": 1}"#.to_string(), "escape"),
        (nested(33), "nested deeper than 32"),
        (nested(128), "nested deeper than 32"),
    ];
    for (p, why) in &poisons {
        let got = post_raw(&api, "/api/v1/push", format!(r#"{{"items":[{{"queue":"pq","payload":{p}}}]}}"#)).await;
        assert_bad_payload(&got, p);
        assert!(got.1["error"].as_str().unwrap().contains(why), "{p}: {}", got.1);
        let got = post_raw(
            &api,
            "/api/v1/transaction",
            format!(r#"{{"operations":[{{"type":"push","items":[{{"queue":"pq","data":{p}}}]}}]}}"#),
        )
        .await;
        assert_bad_payload(&got, p);
        let got = post_raw(
            &api,
            "/api/v1/kv",
            format!(r#"{{"operations":[{{"op":"put","ns":"n","key":"k","value":{p}}}]}}"#),
        )
        .await;
        assert_bad_payload(&got, p);
        let b64 = base64(p.as_bytes());
        let timer =
            json!({"operations": [{"op": "schedule", "queue": "pq", "timerKey": "t", "payload": b64, "delayMs": 1}]});
        let got = api.post("/api/v1/timers", timer).await;
        assert_bad_payload(&got, p);
    }
    let refused = api.metric("baton_http_errors_total{status=\"400\",code=\"bad_payload\"}").await;
    assert_eq!(refused, (poisons.len() * 4) as f64, "every refusal is counted");
    // Nothing of it was stored, and a payload at the bound is fine.
    assert_eq!(api.get("/api/v1/resources/queues/pq").await.0, 404);
    let (st, v) =
        post_raw(&api, "/api/v1/push", format!(r#"{{"items":[{{"queue":"pq","payload":{}}}]}}"#, nested(32))).await;
    assert_eq!(st, 201, "{v}");
    let e = api.fetch("pq", "Default", 0).await;
    let expect: Value = serde_json::from_str(&nested(32)).unwrap();
    assert_eq!(e["records"][0]["payload"], expect, "{e}");
    let (st, v) =
        api.post("/api/v1/kv", json!({"operations": [{"op": "put", "ns": "n", "key": "k", "value": 1e300}]})).await;
    assert_eq!(st, 200, "{v}");
    let (st, v) = api.post("/api/v1/kv", json!({"operations": [{"op": "get", "ns": "n", "key": "k"}]})).await;
    assert_eq!((st, &v["results"][0]["value"]), (200, &json!(1e300)), "{v}");
}

#[tokio::test]
async fn kafka_written_poison_is_readable_over_every_http_view() {
    let (s, port) = Server::start_kafka(&["--max-payload-depth", "16"]);
    let deep = nested(200);
    let values: [&[u8]; 6] =
        [b"1e400", deep.as_bytes(), br#""\ud800""#, b"\xff\xfe not utf-8", b"plain", b"{\"ok\":1}"];
    // Records without a `baton-txid` header are named `<partition>-<offset>`.
    let txids = ["0-0", "0-1", "0-2", "0-3", "0-4", "0-5"];
    let shown = [
        json!("1e400"),
        json!(deep),
        json!(r#""\ud800""#),
        json!("\u{fffd}\u{fffd} not utf-8"),
        json!("plain"),
        json!({"ok": 1}),
    ];
    let mut k = Kafka::connect(port);
    k.metadata(&["kp"]);
    let p = k.produce("kp", 0, batch(&values, Compression::None, None), -1);
    assert_eq!(p.error_code, 0);
    let api = Api { s, c: common::api::client() };

    let e = api.fetch("kp", "0", 0).await;
    let got: Vec<Value> = e["records"].as_array().unwrap().iter().map(|r| r["payload"].clone()).collect();
    assert_eq!(got, shown, "fetch: {e}");

    let (st, v) = api.get("/api/v1/pop/queue/kp?batch=10&wait=false").await;
    assert_eq!(st, 200, "{v}");
    let msgs = v["messages"].as_array().unwrap();
    let got: Vec<Value> = msgs.iter().map(|m| m["data"].clone()).collect();
    assert_eq!(got, shown, "pop: {v}");
    let pid = msgs[0]["partitionId"].as_str().unwrap().to_string();

    for (t, want) in txids.iter().zip(&shown) {
        let (st, v) = api.get(&format!("/api/v1/messages/{pid}/{t}")).await;
        assert_eq!(st, 200, "message {t}: {v}");
        assert_eq!(&v["data"], want, "message {t}: {v}");
    }

    // Dead-letter them all, then the DLQ view shows them the same way.
    for m in msgs {
        let r = api.ack(m, "dlq", Some("poison")).await;
        assert_eq!(r["success"], true, "{r}");
    }
    let d = api.dlq("kp").await;
    let mut got: Vec<(u64, Value)> =
        d["messages"].as_array().unwrap().iter().map(|m| (m["offset"].as_u64().unwrap(), m["data"].clone())).collect();
    got.sort_by_key(|(o, _)| *o);
    let got: Vec<Value> = got.into_iter().map(|(_, d)| d).collect();
    assert_eq!(got, shown, "dlq: {d}");
}
