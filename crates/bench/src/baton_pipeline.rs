//! Baton's take-work-commit step over HTTP, for the `pipeline` workload.
//!
//! A step pops up to `max` messages of one input partition under a lease,
//! then commits ONE `POST /api/v1/transaction` that acks them with that lease
//! and pushes one output per input to the same partition name of the output
//! queue (same transaction id, so the verifier can pair them). Either all of
//! it is in the log or none of it (I2, I4). Bodies are written by hand and
//! answers checked by markers, as in `baton.rs`, so the driver's own JSON
//! work stays small next to the server's.

use crate::hist::Latency;
use crate::pipeline::{Output, PipelineTarget};
use crate::target::{BenchError, Msg, Result};
use baton_client::http1::Http1;
use baton_client::wire::{self, json_str, snippet, RawFetchAnswer, RawPopped};
use hyper::StatusCode;
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

fn err(what: &str) -> impl Fn(baton_client::Error) -> BenchError + '_ {
    move |e| BenchError(format!("{what}: {e}"))
}

impl BatonPipeline {
    /// The Baton at `base`; `pool` = concurrent workers.
    pub fn new(base: &str) -> Result<BatonPipeline> {
        Ok(BatonPipeline {
            http: Http1::new(base).map_err(|e| BenchError(format!("--url: {e}")))?,
            lease_secs: 30,
            names: OnceLock::new(),
            commits: Mutex::new(Latency::new()),
        })
    }

    fn names(&self) -> Result<&Names> {
        self.names.get().ok_or_else(|| BenchError("setup() was not called".into()))
    }

    async fn post(&self, path: &str, body: Vec<u8>) -> Result<(StatusCode, bytes::Bytes)> {
        self.http.post(path, body).await.map_err(err(path))
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
        let (st, b) = self.post("/api/v1/push", wire::push_body(&n.input_json, part, &batch)).await?;
        if st != StatusCode::CREATED {
            return Err(BenchError(format!("feed: HTTP {st}: {}", snippet(&b))));
        }
        let queued = wire::count_queued(&b);
        if queued != batch.len() {
            return Err(BenchError(format!("feed: {queued} of {} queued: {}", batch.len(), snippet(&b))));
        }
        Ok(())
    }

    /// One take-work-commit step; `Ok(0)` when no input came within a second.
    async fn step(&self, max: usize) -> Result<usize> {
        let n = self.names()?;
        let url = wire::pop_path(&format!("{}-in", n.queue), max, Some(1000), Some(self.lease_secs));
        let (st, b) = self.http.get(&url).await.map_err(err("pop"))?;
        if st == StatusCode::NO_CONTENT {
            return Ok(0);
        }
        if st != StatusCode::OK {
            return Err(BenchError(format!("pop: HTTP {st}: {}", snippet(&b))));
        }
        let p: RawPopped = serde_json::from_slice(&b).map_err(|e| BenchError(format!("pop: bad JSON: {e}")))?;
        if p.messages.is_empty() {
            return Ok(0);
        }
        let lease = p.lease_id.as_deref().ok_or_else(|| BenchError("pop: answer without a leaseId".into()))?;
        let body = wire::txn_ack_push_body(&n.output_json, &p.partition, lease, &p.messages);
        let t0 = Instant::now();
        let (st, b) = self.post("/api/v1/transaction", body).await?;
        if st != StatusCode::OK || !wire::txn_committed(&b) {
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
                let body = wire::fetch_one_body(&n.output_json, part, offset, 4 << 20);
                let (st, b) = self.post("/api/v1/fetch", body).await?;
                if st != StatusCode::OK {
                    return Err(BenchError(format!("fetch: HTTP {st}: {}", snippet(&b))));
                }
                let a: RawFetchAnswer =
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
            let url = wire::pop_path(&format!("{}-in", n.queue), 10_000, None, None);
            let (st, b) = self.http.get(&url).await.map_err(err("pop"))?;
            if st == StatusCode::NO_CONTENT {
                return Ok(left);
            }
            if st != StatusCode::OK {
                return Err(BenchError(format!("pop: HTTP {st}: {}", snippet(&b))));
            }
            let p: RawPopped = serde_json::from_slice(&b).map_err(|e| BenchError(format!("pop: bad JSON: {e}")))?;
            if p.messages.is_empty() {
                return Ok(left);
            }
            left.extend(p.messages.into_iter().map(|m| m.transaction_id.into_owned()));
        }
        Err(BenchError("remaining_inputs: the input queue did not run dry".into()))
    }
}
