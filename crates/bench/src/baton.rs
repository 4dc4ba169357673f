//! Baton over its HTTP API (Queen's data-plane shapes), through `baton-client`.
//!
//! One client for the whole run: HTTP/1.1 keep-alive, an idle pool as large
//! as the worker count (so each worker keeps its connection), Nagle off.
//! Request bodies are the client's hand-written ones ([`baton_client::wire`])
//! sent with [`Client::post_raw`] on URLs parsed once; answers are checked by
//! counting status markers instead of building a JSON tree, except pop, whose
//! few fields are read with the client's borrowing parse. This module owns
//! only the mapping of the [`Target`] calls onto those; it must never build a
//! body or parse an answer of its own (an API change is made in the client).

use crate::target::{BenchError, Delivery, Msg, Result, Target};
use baton_client::wire::{self, AckMsg, PushMsg};
use baton_client::{Client, Options};
use reqwest::{StatusCode, Url};
use std::sync::OnceLock;
use std::time::Duration;

pub const ACK_MEANING: &str = "push 201 and ack 200 are sent after the log entry holding them is written and \
     fdatasync'd (group commit; single node) and applied";

pub struct BatonHttp {
    client: Client,
    /// Pushes go as Queen's binary push body instead of JSON (`--push-body binary`).
    binary: bool,
    pop_wait_ms: u64,
    lease_secs: u64,
    prep: OnceLock<Prepared>,
}

struct Prepared {
    queue_json: String,
    part_json: Vec<String>,
    push_url: Url,
    ack_url: Url,
    queue: String,
}

impl PushMsg for Msg {
    fn txid(&self) -> &str {
        &self.txid
    }
    fn payload(&self) -> &[u8] {
        &self.payload
    }
}

impl AckMsg for Delivery {
    fn txid(&self) -> &str {
        &self.txid
    }
    fn partition_id(&self) -> &str {
        &self.partition
    }
    fn lease_id(&self) -> Option<&str> {
        self.lease.as_deref()
    }
}

fn err(what: &str) -> impl Fn(baton_client::Error) -> BenchError + '_ {
    move |e| BenchError(format!("{what}: {e}"))
}

impl BatonHttp {
    /// `base` like `http://127.0.0.1:6632`; `pool` = concurrent workers;
    /// `pop_wait_ms` = long-poll time of a consume before it reports empty.
    pub fn new(base: &str, pool: usize, pop_wait_ms: u64) -> Result<BatonHttp> {
        Ok(BatonHttp {
            client: Self::client(base, pool)?,
            binary: false,
            pop_wait_ms,
            lease_secs: 60,
            prep: OnceLock::new(),
        })
    }

    /// Push with Queen's binary body (`QPB1`) instead of JSON.
    pub fn binary_push(mut self, on: bool) -> Self {
        self.binary = on;
        self
    }

    /// The client every Baton adapter uses: keep-alive pool of `pool`, Nagle
    /// off, and a load generator's patience (a loaded server may take a while).
    pub fn client(base: &str, pool: usize) -> Result<Client> {
        let o = Options {
            pool,
            connect_timeout: Duration::from_secs(10),
            timeout: Duration::from_secs(120),
            pool_idle_timeout: Duration::from_secs(90),
        };
        Client::with_options(base, o).map_err(|e| BenchError(format!("--url: {e}")))
    }

    fn prep(&self) -> Result<&Prepared> {
        self.prep.get().ok_or_else(|| BenchError("setup() was not called".into()))
    }

    /// GET /health until 200 or `within` passes.
    pub async fn wait_healthy(&self, within: Duration) -> Result<()> {
        self.client
            .wait_healthy(within)
            .await
            .map_err(|e| BenchError(format!("{} did not answer /health in {within:?}: {e}", self.client.base())))
    }
}

impl Target for BatonHttp {
    fn system(&self) -> &'static str {
        "baton"
    }

    async fn setup(&self, queue: &str, partitions: u32) -> Result<()> {
        if queue.is_empty() || !queue.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) {
            return Err(BenchError(format!("queue name {queue:?}: use letters, digits, '.', '_', '-'")));
        }
        self.client
            .configure(queue, serde_json::json!({"leaseTime": self.lease_secs, "retryLimit": 3}))
            .await
            .map_err(err("configure"))?;
        let prep = Prepared {
            queue_json: wire::json_str(queue),
            part_json: (0..partitions.max(1)).map(|p| wire::json_str(&format!("p{p}"))).collect(),
            push_url: self.client.url("/api/v1/push").map_err(err("push"))?,
            ack_url: self.client.url("/api/v1/ack/batch").map_err(err("ack"))?,
            queue: queue.to_string(),
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
        let body = if self.binary {
            wire::push_body_binary(&p.queue, &format!("p{part}"), &batch)
        } else {
            wire::push_body(&p.queue_json, &p.part_json[part], &batch)
        };
        drop(batch);
        let (st, b) = self.client.post_raw(&p.push_url, body).await.map_err(err("push"))?;
        if st != StatusCode::CREATED {
            return Err(BenchError(format!("push: HTTP {st}: {}", wire::snippet(&b))));
        }
        let queued = if self.binary { wire::binary_queued(&b) } else { wire::count_queued(&b) };
        if queued != n {
            return Err(BenchError(format!("push: {queued} of {n} items queued: {}", wire::snippet(&b))));
        }
        Ok(())
    }

    async fn consume(&self, max: usize) -> Result<Vec<Delivery>> {
        let p = self.prep()?;
        let path = wire::pop_path(&p.queue, max, Some(self.pop_wait_ms), None);
        let (st, b) = self.client.get_raw(&path, Duration::ZERO).await.map_err(err("pop"))?;
        if st == StatusCode::NO_CONTENT {
            return Ok(Vec::new());
        }
        if st != StatusCode::OK {
            return Err(BenchError(format!("pop: HTTP {st}: {}", wire::snippet(&b))));
        }
        let body: wire::RawPopped =
            serde_json::from_slice(&b).map_err(|e| BenchError(format!("pop: bad JSON: {e}")))?;
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
        let body = wire::ack_body(&deliveries);
        drop(deliveries);
        let (st, b) = self.client.post_raw(&p.ack_url, body).await.map_err(err("ack"))?;
        if st != StatusCode::OK {
            return Err(BenchError(format!("ack: HTTP {st}: {}", wire::snippet(&b))));
        }
        let ok = wire::count_acked(&b);
        if ok != n {
            return Err(BenchError(format!("ack: {ok} of {n} acks succeeded: {}", wire::snippet(&b))));
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

    /// The bench's own message types go through the client's bodies unchanged.
    #[test]
    fn msgs_and_deliveries_make_the_queen_shapes() {
        let m = |t: &str, p: &str| Msg { partition: 0, txid: t.into(), payload: Bytes::from(p.to_string()) };
        let b = wire::push_body(&wire::json_str("q"), &wire::json_str("p0"), &[m("a", "xx"), m("b\"", "é")]);
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"items": [
                {"queue": "q", "partition": "p0", "transactionId": "a", "payload": "xx"},
                {"queue": "q", "partition": "p0", "transactionId": "b\"", "payload": "é"},
            ]})
        );
        let d = Delivery { partition: "pid".into(), txid: "t1".into(), lease: Some("L".into()) };
        let v: serde_json::Value = serde_json::from_slice(&wire::ack_body(&[d])).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"consumerGroup": null, "acknowledgments": [
                {"transactionId": "t1", "partitionId": "pid", "leaseId": "L", "status": "completed"},
            ]})
        );
    }
}
