//! The pipeline's actors: feeders push the input, workers pop under a lease
//! and commit one transaction per batch (with injected faults), readers
//! consume the output, and the killer SIGKILLs and restarts the broker. Each
//! records what it saw in the shared history; none of them judges it.

use crate::broker::Broker;
use crate::history::{Delivery, Fed, Outcome, Txn};
use crate::pipeline::{Fault, Rng, Shared};
use baton_client::{Ack, PushItem, TxnOutcome};
use serde_json::{json, Value};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) async fn sleep_ms(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await
}

fn backoff(b: &mut u64) -> u64 {
    let cur = *b;
    *b = (*b * 2).min(500);
    cur
}

pub(crate) async fn feeder(s: Arc<Shared>, f: u32, nf: u32) {
    let p = s.a.partitions as u64;
    let ids: Vec<u64> = (0..s.a.messages).filter(|id| ((id % p) as u32) % nf == f).collect();
    'chunks: for chunk in ids.chunks(s.a.feed_batch.max(1) as usize) {
        let items: Vec<PushItem> = chunk
            .iter()
            .map(|id| {
                PushItem::new(&s.qin, &(id % p).to_string(), &format!("in-{id}"), json!({"id": id, "seq": id / p}))
            })
            .collect();
        let mut b = 10;
        loop {
            if Instant::now() >= s.deadline || s.stop_work.load(SeqCst) {
                s.rec().maybe_fed.extend_from_slice(chunk);
                break 'chunks;
            }
            match s.client.push(&items).await {
                Ok(res) if res.iter().all(|r| r.status == "queued" || r.status == "duplicate") => {
                    s.rec().fed.extend(chunk.iter().map(|id| Fed {
                        id: *id,
                        partition: (id % p).to_string(),
                        seq: id / p,
                    }));
                    break;
                }
                Ok(res) => {
                    let bad = res.iter().find(|r| r.status != "queued" && r.status != "duplicate");
                    s.note(format!("push answered {bad:?}; retrying the batch"));
                    sleep_ms(backoff(&mut b)).await;
                }
                Err(e) if e.is_unknown() => sleep_ms(backoff(&mut b)).await,
                Err(e) => {
                    let mut r = s.rec();
                    r.fatal.push(format!("feeder: push refused: {e}"));
                    r.maybe_fed.extend_from_slice(chunk);
                    break 'chunks;
                }
            }
        }
    }
    s.feeders_done.fetch_add(1, SeqCst);
}

fn out_item(s: &Shared, partition: &str, id: u64, seq: u64, tag: &str) -> PushItem {
    PushItem::new(&s.qout, partition, &format!("out-{id}"), json!({"id": id, "seq": seq, "out": id * 2, "txn": tag}))
}

pub(crate) async fn worker(s: Arc<Shared>, w: u32) {
    let mut rng = Rng::new(s.seed ^ (0x1000 + w as u64));
    let mut attempt = 0u64;
    let mut b = 10;
    let lease_time = Duration::from_secs(s.a.lease_time);
    while !s.stop_work.load(SeqCst) && Instant::now() < s.deadline {
        let epoch0 = s.epoch.load(SeqCst);
        let sent_us = s.now_us();
        let popped = match s.client.pop(&s.qin, None, s.a.batch, Some(500)).await {
            Ok(Some(p)) => p,
            Ok(None) => continue,
            Err(e) => {
                if !e.is_unknown() {
                    s.note(format!("worker {w}: pop refused: {e}"));
                }
                sleep_ms(backoff(&mut b)).await;
                continue;
            }
        };
        b = 10;
        let got = Instant::now();
        let lease = popped.lease_id.clone();
        let mut outs: Vec<(u64, u64)> = Vec::with_capacity(popped.messages.len());
        for m in &popped.messages {
            match (m.data.get("id").and_then(Value::as_u64), m.data.get("seq").and_then(Value::as_u64)) {
                (Some(id), Some(seq)) => outs.push((id, seq)),
                _ => s.note(format!("worker {w}: undecodable input {}: {}", m.transaction_id, m.data)),
            }
        }
        s.rec().deliveries.push(Delivery {
            sent_us,
            partition: popped.partition.clone(),
            ids: outs.iter().map(|x| x.0).collect(),
        });
        let fault = s.fault(&mut rng);
        match fault {
            Fault::Abandon => {
                s.abandoned.fetch_add(1, SeqCst);
                continue;
            }
            Fault::HoldPastLease => {
                s.held.fetch_add(1, SeqCst);
                // Not cut short when the run is otherwise done: the point is the
                // commit after expiry, which must be refused (bounded: lease + 1 s).
                let until = got + lease_time + Duration::from_secs(1);
                while Instant::now() < until {
                    sleep_ms(50).await;
                }
            }
            Fault::Cut => {
                s.cut.fetch_add(1, SeqCst);
            }
            Fault::None => {}
        }
        let acks: Vec<Ack> = popped.messages.iter().map(|m| Ack::completed(m, lease.as_deref())).collect();
        let leases: Vec<String> = lease.iter().cloned().collect();
        let inputs: Vec<u64> = outs.iter().map(|x| x.0).collect();
        // At most one retry per duplicate output, plus the first attempt.
        for _ in 0..=outs.len() {
            attempt += 1;
            let tag = format!("w{w}-{attempt}");
            let items: Vec<PushItem> =
                outs.iter().map(|(id, seq)| out_item(&s, &popped.partition, *id, *seq, &tag)).collect();
            let timeout =
                if fault == Fault::Cut { Duration::from_micros(200 + rng.below(1500)) } else { s.client.timeout };
            let started_us = s.now_us();
            let t = Instant::now();
            let res = s.client.transaction_within(&acks, &items, &leases, timeout).await;
            let lat = t.elapsed();
            let ended_us = s.now_us();
            let stale = fault == Fault::HoldPastLease && s.epoch.load(SeqCst) == epoch0;
            let outcome = match &res {
                TxnOutcome::Committed { .. } => Outcome::Committed,
                TxnOutcome::RolledBack { reason, .. } => Outcome::RolledBack(reason.clone()),
                TxnOutcome::Unknown(_) => Outcome::Unknown,
                TxnOutcome::Refused { code, .. } => Outcome::RolledBack(format!("http_{code}")),
            };
            {
                let mut r = s.rec();
                r.txns.push(Txn {
                    tag,
                    inputs: inputs.clone(),
                    outputs: outs.iter().map(|x| x.0).collect(),
                    started_us,
                    ended_us,
                    outcome,
                    stale_lease: stale,
                });
                if matches!(res, TxnOutcome::Committed { .. }) {
                    r.latency.saturating_record((lat.as_micros() as u64).max(1));
                }
            }
            match res {
                TxnOutcome::Committed { .. } => {
                    s.committed_inputs.fetch_add(acks.len() as u64, SeqCst);
                    break;
                }
                TxnOutcome::RolledBack { reason, failed_index: Some(i), error }
                    if reason == "duplicate" && i >= acks.len() && i - acks.len() < outs.len() =>
                {
                    let (id, _) = outs.remove(i - acks.len());
                    s.note(format!(
                        "worker {w}: duplicate rollback for out-{id} (input delivered again after its output was written?): {error}"
                    ));
                }
                TxnOutcome::Refused { code, body } => {
                    // A well-formed transaction refused outright: the pipeline cannot make progress.
                    s.rec().fatal.push(format!("worker {w}: transaction refused with HTTP {code}: {body}"));
                    return;
                }
                TxnOutcome::RolledBack { reason, error, .. } if reason != "rejected_ack" => {
                    s.note(format!("worker {w}: rolled back ({reason}): {error}"));
                    break;
                }
                _ => break,
            }
        }
    }
}

pub(crate) async fn reader(s: Arc<Shared>, r: u32) {
    let mut b = 10;
    while !s.stop_read.load(SeqCst) {
        match s.client.pop(&s.qout, None, 100, Some(300)).await {
            Ok(Some(p)) => {
                b = 10;
                let ids: Vec<u64> =
                    p.messages.iter().filter_map(|m| m.data.get("id").and_then(Value::as_u64)).collect();
                s.rec().reader_seen.extend_from_slice(&ids);
                let acks: Vec<Ack> = p.messages.iter().map(|m| Ack::completed(m, p.lease_id.as_deref())).collect();
                // Only after the ack is sent do we count them as read: a lost
                // ack redelivers, which the reader tolerates.
                if let Err(e) = s.client.ack_batch(&acks).await {
                    if !e.is_unknown() {
                        s.note(format!("reader {r}: ack refused: {e}"));
                    }
                }
                s.seen.lock().unwrap_or_else(|e| e.into_inner()).extend(ids);
            }
            Ok(None) => {}
            Err(e) => {
                if !e.is_unknown() {
                    s.note(format!("reader {r}: pop refused: {e}"));
                }
                sleep_ms(backoff(&mut b)).await;
            }
        }
    }
}

/// SIGKILL + restart at K random points of progress (fraction of inputs committed).
pub(crate) fn killer(s: Arc<Shared>, mut broker: Broker, k: u32) -> (Broker, Result<(), String>) {
    let mut rng = Rng::new(s.seed ^ 0xdead);
    let mut at: Vec<f64> = (0..k).map(|_| 0.05 + 0.85 * rng.f64()).collect();
    at.sort_by(f64::total_cmp);
    let mut i = 0usize;
    while i < at.len() && !s.stop_work.load(SeqCst) && Instant::now() < s.deadline {
        let p = s.progress();
        if p < at[i] {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        std::thread::sleep(Duration::from_micros(rng.below(20_000)));
        s.epoch.fetch_add(1, SeqCst);
        let t = s.t0.elapsed();
        broker.kill9();
        std::thread::sleep(Duration::from_millis(rng.below(300)));
        match broker.restart() {
            Ok(up) => {
                s.rec().kill_log.push(format!(
                    "kill {} at {:.2} s ({:.0}% of inputs committed), healthy again {:.0} ms after restart",
                    i + 1,
                    t.as_secs_f64(),
                    p * 100.0,
                    up.as_secs_f64() * 1000.0
                ));
            }
            Err(e) => return (broker, Err(format!("broker did not come back after kill {}: {e}", i + 1))),
        }
        i += 1;
        s.kills_done.store(i as u32, SeqCst);
    }
    (broker, Ok(()))
}
