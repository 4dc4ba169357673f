//! Baton over its HTTP API (Queen's data-plane shapes).
//!
//! One `reqwest` client for the whole run: HTTP/1.1 keep-alive, an idle pool
//! as large as the worker count (so each worker keeps its connection), Nagle
//! off. Request bodies are written by hand into one buffer; responses are
//! checked by counting status markers instead of building a JSON tree, except
//! pop, whose few fields are read with a typed, borrowing parse.

use crate::target::{BenchError, Delivery, Msg, Result, Target};
use reqwest::{Client, StatusCode, Url};
use serde::Deserialize;
use std::sync::OnceLock;
use std::time::Duration;

pub const ACK_MEANING: &str = "push 201 and ack 200 are sent after the log entry holding them is written and \
     fdatasync'd (group commit; single node) and applied";

pub struct BatonHttp {
    client: Client,
    base: String,
    pop_wait_ms: u64,
    lease_secs: u64,
    prep: OnceLock<Prepared>,
}

struct Prepared {
    queue_json: String,
    part_json: Vec<String>,
    push_url: Url,
    ack_url: Url,
    pop_prefix: String,
}

impl BatonHttp {
    /// `base` like `http://127.0.0.1:6632`; `pool` = concurrent workers;
    /// `pop_wait_ms` = long-poll time of a consume before it reports empty.
    pub fn new(base: &str, pool: usize, pop_wait_ms: u64) -> Result<BatonHttp> {
        let client = Self::client(pool)?;
        let base = base.trim_end_matches('/').to_string();
        Url::parse(&base).map_err(|e| BenchError(format!("--url {base}: {e}")))?;
        Ok(BatonHttp { client, base, pop_wait_ms, lease_secs: 60, prep: OnceLock::new() })
    }

    /// The HTTP client every Baton adapter uses: keep-alive pool of `pool`, Nagle off.
    pub fn client(pool: usize) -> Result<Client> {
        Client::builder()
            .pool_max_idle_per_host(pool.max(1))
            .pool_idle_timeout(Duration::from_secs(90))
            .tcp_nodelay(true)
            .http1_only()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(120))
            .build()
            .map_err(|e| BenchError(format!("http client: {e}")))
    }

    fn prep(&self) -> Result<&Prepared> {
        self.prep.get().ok_or_else(|| BenchError("setup() was not called".into()))
    }

    fn url(&self, path: &str) -> Result<Url> {
        Url::parse(&format!("{}{}", self.base, path)).map_err(|e| BenchError(format!("url {path}: {e}")))
    }

    /// GET /health until 200 or `within` passes.
    pub async fn wait_healthy(&self, within: Duration) -> Result<()> {
        let url = self.url("/health")?;
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let r = self.client.get(url.clone()).timeout(Duration::from_secs(2)).send().await;
            match r {
                Ok(r) if r.status() == StatusCode::OK => return Ok(()),
                _ if tokio::time::Instant::now() >= deadline => {
                    return Err(BenchError(format!("{} did not answer /health in {within:?}", self.base)))
                }
                _ => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }
}

/// Append `s` as a JSON string. The fast path copies plain ASCII; anything
/// else goes through serde_json.
fn push_json_str(buf: &mut Vec<u8>, s: &[u8]) {
    if s.iter().all(|&b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\') {
        buf.push(b'"');
        buf.extend_from_slice(s);
        buf.push(b'"');
    } else {
        let text = String::from_utf8_lossy(s);
        serde_json::to_writer(&mut *buf, &text).expect("writing to a Vec cannot fail");
    }
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("a str serializes")
}

/// The body of `POST /api/v1/push` for one batch.
pub fn push_body(queue_json: &str, partition_json: &str, batch: &[Msg]) -> Vec<u8> {
    let per =
        batch.first().map_or(0, |m| m.payload.len() + m.txid.len()) + queue_json.len() + partition_json.len() + 64;
    let mut b = Vec::with_capacity(16 + per * batch.len());
    b.extend_from_slice(b"{\"items\":[");
    for (i, m) in batch.iter().enumerate() {
        if i > 0 {
            b.push(b',');
        }
        b.extend_from_slice(b"{\"queue\":");
        b.extend_from_slice(queue_json.as_bytes());
        b.extend_from_slice(b",\"partition\":");
        b.extend_from_slice(partition_json.as_bytes());
        b.extend_from_slice(b",\"transactionId\":");
        push_json_str(&mut b, m.txid.as_bytes());
        b.extend_from_slice(b",\"payload\":");
        push_json_str(&mut b, &m.payload);
        b.push(b'}');
    }
    b.extend_from_slice(b"]}");
    b
}

/// The body of `POST /api/v1/ack/batch` (queue mode: `consumerGroup` null).
pub fn ack_body(deliveries: &[Delivery]) -> Vec<u8> {
    let mut b = Vec::with_capacity(48 + deliveries.len() * 160);
    b.extend_from_slice(b"{\"consumerGroup\":null,\"acknowledgments\":[");
    for (i, d) in deliveries.iter().enumerate() {
        if i > 0 {
            b.push(b',');
        }
        b.extend_from_slice(b"{\"transactionId\":");
        push_json_str(&mut b, d.txid.as_bytes());
        b.extend_from_slice(b",\"partitionId\":");
        push_json_str(&mut b, d.partition.as_bytes());
        if let Some(l) = &d.lease {
            b.extend_from_slice(b",\"leaseId\":");
            push_json_str(&mut b, l.as_bytes());
        }
        b.extend_from_slice(b",\"status\":\"completed\"}");
    }
    b.extend_from_slice(b"]}");
    b
}

fn count(hay: &[u8], needle: &str) -> usize {
    memchr::memmem::find_iter(hay, needle.as_bytes()).count()
}

fn snippet(body: &[u8]) -> String {
    let s = String::from_utf8_lossy(&body[..body.len().min(300)]);
    s.into_owned()
}

#[derive(Deserialize)]
struct PopBody<'a> {
    #[serde(borrow, default)]
    messages: Vec<PopMsg<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PopMsg<'a> {
    #[serde(borrow)]
    transaction_id: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    partition_id: std::borrow::Cow<'a, str>,
    #[serde(borrow, default)]
    lease_id: Option<std::borrow::Cow<'a, str>>,
}

impl Target for BatonHttp {
    fn system(&self) -> &'static str {
        "baton"
    }

    async fn setup(&self, queue: &str, partitions: u32) -> Result<()> {
        if queue.is_empty() || !queue.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) {
            return Err(BenchError(format!("queue name {queue:?}: use letters, digits, '.', '_', '-'")));
        }
        let body = format!(
            "{{\"queue\":{},\"namespace\":null,\"task\":null,\"options\":{{\"leaseTime\":{},\"retryLimit\":3}}}}",
            json_str(queue),
            self.lease_secs
        );
        let r = self
            .client
            .post(self.url("/api/v1/configure")?)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| BenchError(format!("configure: {e}")))?;
        let st = r.status();
        if !st.is_success() {
            let b = r.bytes().await.unwrap_or_default();
            return Err(BenchError(format!("configure: HTTP {st}: {}", snippet(&b))));
        }
        let prep = Prepared {
            queue_json: json_str(queue),
            part_json: (0..partitions.max(1)).map(|p| json_str(&format!("p{p}"))).collect(),
            push_url: self.url("/api/v1/push")?,
            ack_url: self.url("/api/v1/ack/batch")?,
            pop_prefix: format!("{}/api/v1/pop/queue/{queue}", self.base),
        };
        // A second setup of the same target keeps the first; workloads call it once.
        let _ = self.prep.set(prep);
        Ok(())
    }

    async fn produce(&self, batch: Vec<Msg>) -> Result<()> {
        let p = self.prep()?;
        let n = batch.len();
        if n == 0 {
            return Ok(());
        }
        let part = batch[0].partition as usize % p.part_json.len();
        let body = push_body(&p.queue_json, &p.part_json[part], &batch);
        drop(batch);
        let r = self
            .client
            .post(p.push_url.clone())
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| BenchError(format!("push: {e}")))?;
        let st = r.status();
        let b = r.bytes().await.map_err(|e| BenchError(format!("push: reading the answer: {e}")))?;
        if st != StatusCode::CREATED {
            return Err(BenchError(format!("push: HTTP {st}: {}", snippet(&b))));
        }
        let queued = count(&b, "\"status\":\"queued\"");
        if queued != n {
            return Err(BenchError(format!("push: {queued} of {n} items queued: {}", snippet(&b))));
        }
        Ok(())
    }

    async fn consume(&self, max: usize) -> Result<Vec<Delivery>> {
        let p = self.prep()?;
        let url = format!("{}?batch={}&wait=true&timeout={}", p.pop_prefix, max.clamp(1, 10_000), self.pop_wait_ms);
        let r = self.client.get(url).send().await.map_err(|e| BenchError(format!("pop: {e}")))?;
        let st = r.status();
        if st == StatusCode::NO_CONTENT {
            return Ok(Vec::new());
        }
        let b = r.bytes().await.map_err(|e| BenchError(format!("pop: reading the answer: {e}")))?;
        if st != StatusCode::OK {
            return Err(BenchError(format!("pop: HTTP {st}: {}", snippet(&b))));
        }
        let body: PopBody = serde_json::from_slice(&b).map_err(|e| BenchError(format!("pop: bad JSON: {e}")))?;
        Ok(body
            .messages
            .into_iter()
            .map(|m| Delivery {
                partition: m.partition_id.into_owned(),
                txid: m.transaction_id.into_owned(),
                lease: m.lease_id.map(|l| l.into_owned()),
            })
            .collect())
    }

    async fn ack(&self, deliveries: Vec<Delivery>) -> Result<()> {
        let p = self.prep()?;
        let n = deliveries.len();
        if n == 0 {
            return Ok(());
        }
        let body = ack_body(&deliveries);
        drop(deliveries);
        let r = self
            .client
            .post(p.ack_url.clone())
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| BenchError(format!("ack: {e}")))?;
        let st = r.status();
        let b = r.bytes().await.map_err(|e| BenchError(format!("ack: reading the answer: {e}")))?;
        if st != StatusCode::OK {
            return Err(BenchError(format!("ack: HTTP {st}: {}", snippet(&b))));
        }
        let ok = count(&b, "\"success\":true");
        if ok != n {
            return Err(BenchError(format!("ack: {ok} of {n} acks succeeded: {}", snippet(&b))));
        }
        Ok(())
    }

    fn ack_meaning(&self) -> &'static str {
        ACK_MEANING
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    #[test]
    fn push_body_is_the_queen_shape() {
        let m = |t: &str, p: &str| Msg { partition: 0, txid: t.into(), payload: Bytes::from(p.to_string()) };
        let b = push_body(&json_str("q"), &json_str("p0"), &[m("a", "xx"), m("b\"", "é")]);
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"items": [
                {"queue": "q", "partition": "p0", "transactionId": "a", "payload": "xx"},
                {"queue": "q", "partition": "p0", "transactionId": "b\"", "payload": "é"},
            ]})
        );
    }

    #[test]
    fn ack_body_is_the_queen_shape() {
        let d = Delivery { partition: "pid".into(), txid: "t1".into(), lease: Some("L".into()) };
        let mut d2 = d.clone();
        d2.lease = None;
        let v: serde_json::Value = serde_json::from_slice(&ack_body(&[d, d2])).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"consumerGroup": null, "acknowledgments": [
                {"transactionId": "t1", "partitionId": "pid", "leaseId": "L", "status": "completed"},
                {"transactionId": "t1", "partitionId": "pid", "status": "completed"},
            ]})
        );
    }

    #[test]
    fn pop_answer_parses() {
        let b = br#"{"success":true,"messages":[{"id":"x","transactionId":"t","data":{"a":[1,2]},"partitionId":"p","leaseId":"L","offset":0}]}"#;
        let v: PopBody = serde_json::from_slice(b).unwrap();
        assert_eq!(v.messages.len(), 1);
        assert_eq!(v.messages[0].transaction_id, "t");
        assert_eq!(v.messages[0].lease_id.as_deref(), Some("L"));
    }
}
