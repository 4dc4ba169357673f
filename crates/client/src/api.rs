//! The typed calls of [`Client`], one per route of docs/api.md.
//!
//! Owns the paths, query strings and answer checks of each call. Must never
//! turn a refusal into success: a 2xx of an unexpected shape is
//! [`Error::Shape`], a non-2xx is [`Error::Api`].

use crate::error::{truncate, Error, Result};
use crate::types::*;
use crate::{query_value, segment, Client};
use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::{json, Value};
use std::time::Duration;

impl Client {
    /// GET /health answers 200.
    pub async fn health(&self) -> Result<Value> {
        let (_, b) = self.call(self.http.get(self.path_url("/health")).timeout(Duration::from_secs(2))).await?;
        Ok(serde_json::from_slice(&b).unwrap_or(Value::Null))
    }

    /// Poll /health until it answers 200 or `within` passes.
    pub async fn wait_healthy(&self, within: Duration) -> Result<()> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            match self.health().await {
                Ok(_) => return Ok(()),
                Err(e) if tokio::time::Instant::now() >= deadline => return Err(e),
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }

    /// GET /metrics: the Prometheus text.
    pub async fn metrics(&self) -> Result<String> {
        let (_, b) = self.call(self.http.get(self.path_url("/metrics/prometheus")).timeout(self.timeout)).await?;
        Ok(String::from_utf8_lossy(&b).into_owned())
    }

    /// POST /api/v1/configure with these options (merged over the current ones).
    pub async fn configure(&self, queue: &str, options: Value) -> Result<Value> {
        self.post_json("/api/v1/configure", &json!({"queue": queue, "options": options})).await
    }

    /// POST /api/v1/push: one result per item, in order (a `failed` item is a
    /// result, not an error: the others may be queued).
    pub async fn push(&self, items: &[PushItem]) -> Result<Vec<PushResult>> {
        let v: Vec<PushResult> = self.post_json("/api/v1/push", &json!({ "items": items })).await?;
        if v.len() != items.len() {
            return Err(Error::Shape(format!("push of {} items answered {} results", items.len(), v.len())));
        }
        Ok(v)
    }

    /// GET /api/v1/pop/queue/:q[/partition/:p]; `None` when empty (204 or no messages).
    pub async fn pop_with(&self, queue: &str, o: &PopOptions) -> Result<Option<Popped>> {
        let mut path = format!("/api/v1/pop/queue/{}", segment(queue));
        if let Some(p) = &o.partition {
            path.push_str(&format!("/partition/{}", segment(p)));
        }
        let wait = o.wait_ms.unwrap_or(0);
        path.push_str(&format!("?wait={}&timeout={wait}", o.wait_ms.is_some()));
        if let Some(b) = o.batch {
            path.push_str(&format!("&batch={b}"));
        }
        if let Some(g) = &o.group {
            path.push_str(&format!("&consumerGroup={}", query_value(g)));
        }
        if o.auto_ack {
            path.push_str("&autoAck=true");
        }
        if let Some(s) = o.lease_seconds {
            path.push_str(&format!("&leaseSeconds={s}"));
        }
        if let Some(m) = &o.subscription_mode {
            path.push_str(&format!("&subscriptionMode={}", query_value(m)));
        }
        let limit = Duration::from_millis(wait) + self.timeout.max(Duration::from_secs(5));
        let (s, b) = self.call(self.http.get(self.path_url(&path)).timeout(limit)).await?;
        if s == StatusCode::NO_CONTENT {
            return Ok(None);
        }
        let p: Popped = crate::parse(&b)?;
        Ok((!p.messages.is_empty()).then_some(p))
    }

    /// A queue-mode pop of up to `batch`; `wait_ms` = Some(t) long-polls up to t ms.
    pub async fn pop(
        &self,
        queue: &str,
        partition: Option<&str>,
        batch: u32,
        wait_ms: Option<u64>,
    ) -> Result<Option<Popped>> {
        let o =
            PopOptions { partition: partition.map(str::to_string), batch: Some(batch), wait_ms, ..Default::default() };
        self.pop_with(queue, &o).await
    }

    /// POST /api/v1/ack: one ack's answer (a refusal is `success: false`).
    pub async fn ack(&self, ack: &Ack) -> Result<AckResult> {
        let v: Value = self.post_json("/api/v1/ack", ack).await?;
        // The answer is a list of one; a bare object is read too.
        let one = match v {
            Value::Array(mut a) if a.len() == 1 => a.remove(0),
            Value::Object(_) => v,
            other => return Err(Error::Shape(format!("ack answered {}", truncate(&other.to_string(), 300)))),
        };
        serde_json::from_value(one).map_err(|e| Error::Shape(format!("ack answer: {e}")))
    }

    /// POST /api/v1/ack/batch; one result per ack, in order.
    pub async fn ack_batch(&self, acks: &[Ack]) -> Result<Vec<AckResult>> {
        let group = acks.first().and_then(|a| a.consumer_group.clone());
        let v: Vec<AckResult> =
            self.post_json("/api/v1/ack/batch", &json!({ "consumerGroup": group, "acknowledgments": acks })).await?;
        if v.len() != acks.len() {
            return Err(Error::Shape(format!("ack of {} answered {} results", acks.len(), v.len())));
        }
        Ok(v)
    }

    /// POST /api/v1/lease/:id/extend (by `seconds`, else by the queue's lease time).
    pub async fn extend_lease(&self, lease_id: &str, seconds: Option<u64>) -> Result<Extended> {
        let path = format!("/api/v1/lease/{}/extend", segment(lease_id));
        let body = match seconds {
            Some(s) => json!({ "seconds": s }),
            None => json!({}),
        };
        self.post_json(&path, &body).await
    }

    /// POST /api/v1/transaction: acks (each with its lease), then one push
    /// operation with `pushes`, requiring `required_leases` to be live.
    pub async fn transaction(&self, acks: &[Ack], pushes: &[PushItem], required_leases: &[String]) -> TxnOutcome {
        self.transaction_within(acks, pushes, required_leases, self.timeout).await
    }

    /// [`Client::transaction`] that gives up (outcome unknown) after `timeout`.
    pub async fn transaction_within(
        &self,
        acks: &[Ack],
        pushes: &[PushItem],
        required_leases: &[String],
        timeout: Duration,
    ) -> TxnOutcome {
        let mut ops: Vec<Value> = acks
            .iter()
            .map(|a| {
                let mut op = json!({"type": "ack", "transactionId": a.transaction_id, "partitionId": a.partition_id,
                       "leaseId": a.lease_id, "status": a.status});
                if let Some(g) = &a.consumer_group {
                    op["consumerGroup"] = json!(g);
                }
                op
            })
            .collect();
        if !pushes.is_empty() {
            ops.push(json!({"type": "push", "items": pushes}));
        }
        self.transaction_raw(&json!({"operations": ops, "requiredLeases": required_leases}), timeout).await
    }

    /// POST /api/v1/transaction with a body the caller built (kv and timer operations too).
    pub async fn transaction_raw(&self, body: &Value, timeout: Duration) -> TxnOutcome {
        let req = self.http.post(self.path_url("/api/v1/transaction")).json(body).timeout(timeout);
        let (s, b) = match self.send_bytes(req).await {
            Ok(x) => x,
            Err(e) => return TxnOutcome::Unknown(e.to_string()),
        };
        let t = String::from_utf8_lossy(&b);
        if s.is_server_error() {
            return TxnOutcome::Unknown(format!("HTTP {}: {}", s.as_u16(), truncate(&t, 300)));
        }
        if !s.is_success() {
            return TxnOutcome::Refused { code: s.as_u16(), body: t.into_owned() };
        }
        let v: Value = match serde_json::from_slice(&b) {
            Ok(v) => v,
            // A 2xx we cannot read: we cannot say what happened.
            Err(e) => return TxnOutcome::Unknown(format!("unreadable 2xx answer ({e}): {}", truncate(&t, 300))),
        };
        match v.get("success").and_then(Value::as_bool) {
            Some(true) => TxnOutcome::Committed {
                results: v.get("results").and_then(Value::as_array).cloned().unwrap_or_default(),
            },
            Some(false) => TxnOutcome::RolledBack {
                reason: v.get("reason").and_then(Value::as_str).unwrap_or("unspecified").to_string(),
                failed_index: v.get("failedIndex").and_then(Value::as_u64).map(|x| x as usize),
                error: v.get("error").and_then(Value::as_str).unwrap_or("").to_string(),
            },
            None => TxnOutcome::Unknown(format!("2xx without success: {}", truncate(&t, 300))),
        }
    }

    /// POST /api/v1/locks with this body (`{"operations": [...]}`): the answer as is.
    pub async fn locks(&self, body: &Value) -> Result<Value> {
        self.post_json("/api/v1/locks", body).await
    }

    /// POST /api/v1/fetch: one answer per entry, in order.
    pub async fn fetch(&self, entries: &[FetchEntry]) -> Result<Vec<Fetched>> {
        #[derive(Deserialize)]
        struct Answer {
            entries: Vec<Fetched>,
        }
        let a: Answer = self.post_json("/api/v1/fetch", &json!({ "entries": entries })).await?;
        if a.entries.len() != entries.len() {
            return Err(Error::Shape(format!("fetch of {} entries answered {}", entries.len(), a.entries.len())));
        }
        Ok(a.entries)
    }

    /// Every record of one partition from `from` up to the high watermark seen
    /// at the last read. An unknown partition reads as empty.
    pub async fn fetch_all(&self, queue: &str, partition: &str, from: u64) -> Result<Vec<FetchedRecord>> {
        let mut out = Vec::new();
        let mut offset = from;
        loop {
            let mut got = self
                .fetch(&[FetchEntry { queue: queue.into(), partition: partition.into(), offset, max_bytes: 1 << 20 }])
                .await?;
            let f = got.pop().expect("one entry asked, one answered");
            match f.error.as_deref() {
                None => {}
                Some("UNKNOWN_TOPIC_OR_PARTITION") if offset == 0 => return Ok(out),
                Some(e) => return Err(Error::Shape(format!("fetch {queue}/{partition} at {offset}: {e}"))),
            }
            if offset < f.log_start_offset {
                return Err(Error::Shape(format!(
                    "fetch {queue}/{partition}: log starts at {} (retention?), asked {offset}",
                    f.log_start_offset
                )));
            }
            if f.records.is_empty() {
                if offset >= f.high_watermark {
                    return Ok(out);
                }
                return Err(Error::Shape(format!(
                    "fetch {queue}/{partition} at {offset}: no records below high watermark {}",
                    f.high_watermark
                )));
            }
            for r in f.records {
                if r.offset >= offset {
                    offset = r.offset + 1;
                    out.push(r);
                }
            }
            if offset >= f.high_watermark {
                return Ok(out);
            }
        }
    }

    /// GET /cluster: the member's view of its cluster (404 `not_a_cluster` on a single node).
    pub async fn cluster(&self) -> Result<Value> {
        self.get_json("/cluster").await
    }

    /// POST /cluster/members (D44): adds member `id` at Raft address `raft_addr` as a voter,
    /// once it has caught up; the answer is the membership after the change.
    pub async fn add_member(&self, id: u64, raft_addr: &str) -> Result<Value> {
        self.post_json("/cluster/members", &serde_json::json!({"id": id, "raftAddr": raft_addr})).await
    }

    /// DELETE /cluster/members/:id (D44).
    pub async fn remove_member(&self, id: u64) -> Result<Value> {
        self.delete_json(&format!("/cluster/members/{id}")).await
    }

    /// GET /api/v1/resources/queues.
    pub async fn queues(&self) -> Result<Value> {
        self.get_json("/api/v1/resources/queues").await
    }

    /// GET /api/v1/resources/queues/:q (the queue view with `partitionList`; 404 if unknown).
    pub async fn queue_view(&self, queue: &str) -> Result<Value> {
        self.get_json(&format!("/api/v1/resources/queues/{}", segment(queue))).await
    }

    /// GET /api/v1/resources/queues/:q/depth.
    pub async fn depth(&self, queue: &str) -> Result<Value> {
        self.get_json(&format!("/api/v1/resources/queues/{}/depth", segment(queue))).await
    }

    /// DELETE /api/v1/resources/queues/:q.
    pub async fn delete_queue(&self, queue: &str) -> Result<Value> {
        self.delete_json(&format!("/api/v1/resources/queues/{}", segment(queue))).await
    }

    /// GET /api/v1/resources/overview.
    pub async fn overview(&self) -> Result<Value> {
        self.get_json("/api/v1/resources/overview").await
    }

    /// GET /api/v1/consumer-groups.
    pub async fn groups(&self) -> Result<Value> {
        self.get_json("/api/v1/consumer-groups").await
    }

    /// GET /api/v1/consumer-groups/:g.
    pub async fn group(&self, group: &str) -> Result<Value> {
        self.get_json(&format!("/api/v1/consumer-groups/{}", segment(group))).await
    }

    /// DELETE /api/v1/consumer-groups/:g.
    pub async fn delete_group(&self, group: &str) -> Result<Value> {
        self.delete_json(&format!("/api/v1/consumer-groups/{}", segment(group))).await
    }

    /// GET /api/v1/dlq with this query.
    pub async fn dlq(&self, q: &DlqQuery) -> Result<Value> {
        let mut params = Vec::new();
        for (k, v) in [("queue", &q.queue), ("consumerGroup", &q.consumer_group), ("partition", &q.partition)] {
            if let Some(v) = v {
                params.push(format!("{k}={}", query_value(v)));
            }
        }
        for (k, v) in [("limit", q.limit), ("offset", q.offset)] {
            if let Some(v) = v {
                params.push(format!("{k}={v}"));
            }
        }
        let mut path = "/api/v1/dlq".to_string();
        if !params.is_empty() {
            path.push('?');
            path.push_str(&params.join("&"));
        }
        self.get_json(&path).await
    }

    /// GET /api/v1/messages/:partitionId/:transactionId.
    pub async fn message(&self, partition_id: &str, transaction_id: &str) -> Result<Value> {
        self.get_json(&format!("/api/v1/messages/{}/{}", segment(partition_id), segment(transaction_id))).await
    }
}
