//! Baton's take-work-commit step over HTTP, for the `pipeline` workload.
//!
//! A step pops up to `max` messages of one input partition under a lease,
//! then commits ONE `POST /api/v1/transaction` that acks them with that lease
//! and pushes one output per input to the same partition name of the output
//! queue (same transaction id, so the verifier can pair them). Either all of
//! it is in the log or none of it (I2, I4). Bodies are written by hand and
//! answers checked by markers, as in `baton.rs`, so the driver's own JSON
//! work stays small next to the server's.

use crate::baton::push_body;
use crate::hist::Latency;
use crate::http1::Http1;
use crate::pipeline::{Output, PipelineTarget};
use crate::target::{BenchError, Msg, Result};
use hyper::StatusCode;
use serde::Deserialize;
use std::borrow::Cow;
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

pub const PIPELINE_ACK_MEANING: &str = "a transaction's 200 success:true comes after its one log entry (acks + \
     pushes) is fdatasync'd and applied; a lease that expired before the commit commits nothing";

pub struct BatonPipeline {
    http: Http1,
    lease_secs: u64,
    names: OnceLock<Names>,
    /// The transaction request alone (issue #3's "commit latency").
    commits: Mutex<Latency>,
}

struct Names {
    queue: String,
    input_json: String,
    output_json: String,
    part_json: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Popped<'a> {
    #[serde(borrow, default)]
    partition: Cow<'a, str>,
    #[serde(borrow, default)]
    lease_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    messages: Vec<PoppedMsg<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PoppedMsg<'a> {
    #[serde(borrow)]
    transaction_id: Cow<'a, str>,
    #[serde(borrow)]
    partition_id: Cow<'a, str>,
    #[serde(borrow, default)]
    data: Option<&'a serde_json::value::RawValue>,
}

#[derive(Deserialize)]
struct FetchAnswer<'a> {
    #[serde(borrow)]
    entries: Vec<FetchEntry<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FetchEntry<'a> {
    #[serde(borrow, default)]
    records: Vec<FetchRecord<'a>>,
    #[serde(default)]
    high_watermark: u64,
    #[serde(default)]
    error: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FetchRecord<'a> {
    offset: u64,
    #[serde(borrow)]
    transaction_id: Cow<'a, str>,
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("a str serializes")
}

fn snippet(body: &[u8]) -> String {
    String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned()
}

impl BatonPipeline {
    /// The Baton at `base`; `pool` = concurrent workers.
    pub fn new(base: &str) -> Result<BatonPipeline> {
        Ok(BatonPipeline {
            http: Http1::new(base)?,
            lease_secs: 30,
            names: OnceLock::new(),
            commits: Mutex::new(Latency::new()),
        })
    }

    fn names(&self) -> Result<&Names> {
        self.names.get().ok_or_else(|| BenchError("setup() was not called".into()))
    }

    async fn post(&self, path: &str, body: Vec<u8>) -> Result<(StatusCode, bytes::Bytes)> {
        self.http.post(path, body).await
    }
}

impl PipelineTarget for BatonPipeline {
    fn system(&self) -> &'static str {
        "baton"
    }

    fn ack_meaning(&self) -> &'static str {
        PIPELINE_ACK_MEANING
    }

    fn fifo_per_partition(&self) -> bool {
        true
    }

    fn commit_latency(&self) -> Option<Latency> {
        Some(self.commits.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }

    fn reset_commit_latency(&self) {
        *self.commits.lock().unwrap_or_else(|e| e.into_inner()) = Latency::new();
    }

    /// Queues `<name>-in` and `<name>-out`, partitions `p0`..
    async fn setup(&self, name: &str, partitions: u32) -> Result<()> {
        for q in [format!("{name}-in"), format!("{name}-out")] {
            let body = format!(
                "{{\"queue\":{},\"options\":{{\"leaseTime\":{},\"retryLimit\":3}}}}",
                json_str(&q),
                self.lease_secs
            );
            let (st, b) = self.post("/api/v1/configure", body.into_bytes()).await?;
            if !st.is_success() {
                return Err(BenchError(format!("configure {q}: HTTP {st}: {}", snippet(&b))));
            }
        }
        let _ = self.names.set(Names {
            queue: name.to_string(),
            input_json: json_str(&format!("{name}-in")),
            output_json: json_str(&format!("{name}-out")),
            part_json: (0..partitions.max(1)).map(|p| json_str(&format!("p{p}"))).collect(),
        });
        Ok(())
    }

    /// Push one partition's batch into the input queue.
    async fn feed(&self, batch: Vec<Msg>) -> Result<()> {
        let n = self.names()?;
        let Some(first) = batch.first() else { return Ok(()) };
        let part = &n.part_json[first.partition as usize % n.part_json.len()];
        let (st, b) = self.post("/api/v1/push", push_body(&n.input_json, part, &batch)).await?;
        if st != StatusCode::CREATED {
            return Err(BenchError(format!("feed: HTTP {st}: {}", snippet(&b))));
        }
        let queued = memchr::memmem::find_iter(&b, b"\"status\":\"queued\"").count();
        if queued != batch.len() {
            return Err(BenchError(format!("feed: {queued} of {} queued: {}", batch.len(), snippet(&b))));
        }
        Ok(())
    }

    /// One take-work-commit step; `Ok(0)` when no input came within a second.
    async fn step(&self, max: usize) -> Result<usize> {
        let n = self.names()?;
        let url = format!(
            "/api/v1/pop/queue/{}-in?batch={}&wait=true&timeout=1000&leaseSeconds={}",
            n.queue,
            max.max(1),
            self.lease_secs
        );
        let (st, b) = self.http.get(&url).await?;
        if st == StatusCode::NO_CONTENT {
            return Ok(0);
        }
        if st != StatusCode::OK {
            return Err(BenchError(format!("pop: HTTP {st}: {}", snippet(&b))));
        }
        let p: Popped = serde_json::from_slice(&b).map_err(|e| BenchError(format!("pop: bad JSON: {e}")))?;
        if p.messages.is_empty() {
            return Ok(0);
        }
        let lease = p.lease_id.as_deref().ok_or_else(|| BenchError("pop: answer without a leaseId".into()))?;
        let body = txn_body(n, &p.partition, lease, &p.messages);
        let t0 = Instant::now();
        let (st, b) = self.post("/api/v1/transaction", body).await?;
        if st != StatusCode::OK || memchr::memmem::find(&b, b"\"success\":true").is_none() {
            return Err(BenchError(format!("transaction: HTTP {st}: {}", snippet(&b))));
        }
        self.commits.lock().unwrap_or_else(|e| e.into_inner()).record(t0.elapsed());
        Ok(p.messages.len())
    }

    /// Every output record's (partition index, transaction id), in offset order per partition.
    async fn outputs(&self) -> Result<Vec<Output>> {
        let n = self.names()?;
        let mut out = Vec::new();
        for (i, part) in n.part_json.iter().enumerate() {
            let mut offset = 0u64;
            // Bounded: each round advances past at least one record or stops.
            for _ in 0..1_000_000 {
                let body = format!(
                    "{{\"entries\":[{{\"queue\":{},\"partition\":{part},\"offset\":{offset},\"maxBytes\":4194304}}]}}",
                    n.output_json
                );
                let (st, b) = self.post("/api/v1/fetch", body.into_bytes()).await?;
                if st != StatusCode::OK {
                    return Err(BenchError(format!("fetch: HTTP {st}: {}", snippet(&b))));
                }
                let a: FetchAnswer =
                    serde_json::from_slice(&b).map_err(|e| BenchError(format!("fetch: bad JSON: {e}")))?;
                let Some(e) = a.entries.into_iter().next() else { break };
                if e.error.as_deref() == Some("UNKNOWN_TOPIC_OR_PARTITION") {
                    break;
                }
                if let Some(err) = e.error {
                    return Err(BenchError(format!("fetch: {err}")));
                }
                let Some(last) = e.records.last().map(|r| r.offset) else { break };
                out.extend(
                    e.records.into_iter().map(|r| Output { partition: i as u32, txid: r.transaction_id.into_owned() }),
                );
                offset = last + 1;
                if offset >= e.high_watermark {
                    break;
                }
            }
        }
        Ok(out)
    }

    /// Transaction ids still waiting in the input (popped under a lease that
    /// is never acked; call it only at the end of a run).
    async fn remaining_inputs(&self) -> Result<Vec<String>> {
        let n = self.names()?;
        let mut left = Vec::new();
        // Each pop drains up to 10,000 of one partition; bounded rounds cover them all.
        for _ in 0..100_000 {
            let url = format!("/api/v1/pop/queue/{}-in?batch=10000&wait=false", n.queue);
            let (st, b) = self.http.get(&url).await?;
            if st == StatusCode::NO_CONTENT {
                return Ok(left);
            }
            if st != StatusCode::OK {
                return Err(BenchError(format!("pop: HTTP {st}: {}", snippet(&b))));
            }
            let p: Popped = serde_json::from_slice(&b).map_err(|e| BenchError(format!("pop: bad JSON: {e}")))?;
            if p.messages.is_empty() {
                return Ok(left);
            }
            left.extend(p.messages.into_iter().map(|m| m.transaction_id.into_owned()));
        }
        Err(BenchError("remaining_inputs: the input queue did not run dry".into()))
    }
}

/// The body of the commit: ack every popped message with the lease, push
/// each one's payload to the output partition of the same name.
fn txn_body(n: &Names, partition: &str, lease: &str, msgs: &[PoppedMsg<'_>]) -> Vec<u8> {
    let lease_json = json_str(lease);
    let part_json = json_str(partition);
    let mut b = Vec::with_capacity(128 + msgs.len() * 420);
    b.extend_from_slice(b"{\"operations\":[");
    for m in msgs {
        b.extend_from_slice(b"{\"type\":\"ack\",\"transactionId\":");
        b.extend_from_slice(json_str(&m.transaction_id).as_bytes());
        b.extend_from_slice(b",\"partitionId\":");
        b.extend_from_slice(json_str(&m.partition_id).as_bytes());
        b.extend_from_slice(b",\"leaseId\":");
        b.extend_from_slice(lease_json.as_bytes());
        b.extend_from_slice(b",\"status\":\"completed\"},");
    }
    b.extend_from_slice(b"{\"type\":\"push\",\"items\":[");
    for (i, m) in msgs.iter().enumerate() {
        if i > 0 {
            b.push(b',');
        }
        b.extend_from_slice(b"{\"queue\":");
        b.extend_from_slice(n.output_json.as_bytes());
        b.extend_from_slice(b",\"partition\":");
        b.extend_from_slice(part_json.as_bytes());
        b.extend_from_slice(b",\"transactionId\":");
        b.extend_from_slice(json_str(&m.transaction_id).as_bytes());
        b.extend_from_slice(b",\"payload\":");
        b.extend_from_slice(m.data.map_or("null", |d| d.get()).as_bytes());
        b.push(b'}');
    }
    b.extend_from_slice(b"]}],\"requiredLeases\":[");
    b.extend_from_slice(lease_json.as_bytes());
    b.extend_from_slice(b"]}");
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn txn_body_acks_with_the_lease_and_pushes_to_the_same_partition() {
        let n = Names {
            queue: "q".into(),
            input_json: json_str("q-in"),
            output_json: json_str("q-out"),
            part_json: vec![],
        };
        let raw: Box<serde_json::value::RawValue> = serde_json::from_str("\"xy\"").unwrap();
        let m = PoppedMsg { transaction_id: "t1".into(), partition_id: "P".into(), data: Some(&raw) };
        let v: serde_json::Value = serde_json::from_slice(&txn_body(&n, "p3", "L", &[m])).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"operations": [
                {"type": "ack", "transactionId": "t1", "partitionId": "P", "leaseId": "L", "status": "completed"},
                {"type": "push", "items": [{"queue": "q-out", "partition": "p3", "transactionId": "t1", "payload": "xy"}]}
            ], "requiredLeases": ["L"]})
        );
    }
}
