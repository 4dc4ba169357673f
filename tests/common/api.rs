//! A small JSON client over a started server, shared by the HTTP suites.
#![allow(dead_code)]

use super::Server;
use serde_json::{json, Value};
use std::time::Duration;

pub struct Api {
    pub s: Server,
    pub c: reqwest::Client,
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(Duration::from_secs(20)).build().expect("http client")
}

/// A body as JSON; `Null` for an empty body. Panics on a non-JSON body, since
/// every answer of the API but /metrics is JSON.
pub async fn read(r: reqwest::Response) -> (u16, Value) {
    let status = r.status().as_u16();
    let bytes = r.bytes().await.expect("read body");
    if bytes.is_empty() {
        return (status, Value::Null);
    }
    let v = serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("status {status}: body is not JSON ({e}): {}", String::from_utf8_lossy(&bytes)));
    (status, v)
}

impl Api {
    pub fn start() -> Api {
        Self::with(&[])
    }

    pub fn with(args: &[&str]) -> Api {
        Api { s: Server::start_with(args), c: client() }
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        read(self.c.get(self.s.url(path)).send().await.expect("GET")).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        read(self.c.post(self.s.url(path)).json(&body).send().await.expect("POST")).await
    }
}

impl Api {
    pub async fn ok(&self, path: &str) -> Value {
        let (st, v) = self.get(path).await;
        assert_eq!(st, 200, "GET {path}: {v}");
        v
    }

    pub async fn configure(&self, queue: &str, options: Value) {
        let (st, v) = self.post("/api/v1/configure", json!({"queue": queue, "options": options})).await;
        assert_eq!(st, 200, "{v}");
        assert_eq!(v["configured"], true, "{v}");
    }

    /// Push (transactionId, payload) items to one partition; returns the per-item answers.
    pub async fn push(&self, queue: &str, partition: &str, items: &[(&str, Value)]) -> Vec<Value> {
        let items: Vec<Value> = items
            .iter()
            .map(|(t, p)| json!({"queue": queue, "partition": partition, "payload": p, "transactionId": t}))
            .collect();
        let (st, v) = self.post("/api/v1/push", json!({ "items": items })).await;
        assert_eq!(st, 201, "{v}");
        v.as_array().expect("push answers an array").clone()
    }

    /// Push payloads {"n": i} for i in range, transaction ids "<prefix>-<i>".
    pub async fn push_n(&self, queue: &str, partition: &str, prefix: &str, range: std::ops::Range<usize>) {
        let ids: Vec<String> = range.clone().map(|i| format!("{prefix}-{i}")).collect();
        let items: Vec<(&str, Value)> = ids.iter().zip(range).map(|(t, i)| (t.as_str(), json!({"n": i}))).collect();
        for r in self.push(queue, partition, &items).await {
            assert_eq!(r["status"], "queued", "{r}");
        }
    }

    pub async fn pop(&self, queue: &str, query: &str) -> (u16, Value) {
        self.get(&format!("/api/v1/pop/queue/{queue}?wait=false&{query}")).await
    }

    /// A pop that must deliver; returns its messages.
    pub async fn pop_some(&self, queue: &str, query: &str) -> Vec<Value> {
        let (st, v) = self.pop(queue, query).await;
        assert_eq!(st, 200, "pop {queue}?{query}: {v}");
        let msgs = v["messages"].as_array().expect("messages").clone();
        assert!(!msgs.is_empty(), "{v}");
        msgs
    }

    pub async fn pop_none(&self, queue: &str, query: &str) {
        let (st, v) = self.pop(queue, query).await;
        assert_eq!(st, 204, "pop {queue}?{query} must find nothing: {v}");
    }

    pub async fn ack(&self, m: &Value, status: &str, error: Option<&str>) -> Value {
        let body = json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                          "leaseId": m["leaseId"], "status": status, "error": error,
                          "consumerGroup": m["consumerGroup"]});
        let (st, v) = self.post("/api/v1/ack", body).await;
        assert_eq!(st, 200, "{v}");
        v[0].clone()
    }

    pub async fn ack_ok(&self, msgs: &[Value]) {
        for m in msgs {
            let r = self.ack(m, "completed", None).await;
            assert_eq!(r["success"], true, "{r}");
        }
    }

    pub async fn dlq(&self, queue: &str) -> Value {
        self.ok(&format!("/api/v1/dlq?queue={queue}")).await
    }

    pub async fn metrics(&self) -> String {
        self.c
            .get(self.s.url("/metrics/prometheus"))
            .send()
            .await
            .expect("GET /metrics")
            .text()
            .await
            .expect("metrics text")
    }

    pub async fn metric(&self, name: &str) -> f64 {
        let text = self.metrics().await;
        text.lines()
            .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(' ')))
            .unwrap_or_else(|| panic!("{name} missing from /metrics"))
            .trim()
            .parse()
            .expect("metric value")
    }

    pub async fn fetch(&self, queue: &str, partition: &str, offset: u64) -> Value {
        let (st, v) = self
            .post(
                "/api/v1/fetch",
                json!({"entries": [{"queue": queue, "partition": partition, "offset": offset, "maxBytes": 4096}]}),
            )
            .await;
        assert_eq!(st, 200, "{v}");
        assert_eq!(v["entries"].as_array().map(|e| e.len()), Some(1), "{v}");
        v["entries"][0].clone()
    }
}

pub fn ns(msgs: &[Value]) -> Vec<u64> {
    msgs.iter().map(|m| m["data"]["n"].as_u64().expect("data.n")).collect()
}

pub fn txids(msgs: &[Value]) -> Vec<String> {
    msgs.iter().map(|m| m["transactionId"].as_str().unwrap().to_string()).collect()
}

/// A push body of `n` items, item `i` to its own partition `p{i}` of queue `queue` with
/// transaction id `w{i}`: the wide push of the D80 suites.
pub fn wide_push(queue: &str, n: usize) -> Value {
    let items: Vec<Value> = (0..n)
        .map(|i| json!({"queue": queue, "partition": format!("p{i}"), "payload": {"i": i}, "transactionId": format!("w{i}")}))
        .collect();
    json!({ "items": items })
}
