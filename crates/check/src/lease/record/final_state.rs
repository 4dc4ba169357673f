//! The final state, read once nothing is in flight: what is still waiting per
//! (partition, group), each queue's DLQ, and every partition's whole log.
//!
//! Waiting is read by a drain: Baton has no read of "the unsettled offsets of
//! a group", but a pop of a named partition with a fresh lease, once every
//! earlier lease has ended, delivers exactly them (the lowest unsettled
//! offsets, up to the batch of 10,000; a pair with that many or more waiting
//! gets no `final_waiting` line).
//! Each drain pop is recorded as a `pop` operation like any other (so the
//! checker judges it too) and what it delivered is the `final_waiting` line;
//! nothing is acked. The DLQ is read after the drain (a drain pop settles
//! expired leases first, which may dead-letter), the logs last.
//!
//! Owns the wait for every lease to end and the three reads. Must never write
//! a `final_waiting` line it is not sure of (a drain pop that was not answered
//! leaves that pair without one, which the checker allows), and never a
//! `final_log` that is not the whole log.

use super::writer::{obj, End};
use super::{Ctx, GROUPS};
use baton_client::{DlqQuery, PopOptions};
use serde_json::{json, Value};
use std::time::Duration;

const DRAIN_BATCH: u32 = 10_000;
/// Entries per `final_log` line: lines stay short enough to read in an excerpt.
const LOG_CHUNK: usize = 2_000;

/// Read the final state into the history; `drainer` is the process id of the drain pops.
pub async fn read(cx: &Ctx, drainer: u64, notes: &mut Vec<String>) -> Result<(), String> {
    // Every lease granted or extended before now ends within one lease time
    // (extends ask for at most the lease time, a restart renews inherited
    // leases for one lease time from its start, which was before now), and a
    // request still in flight at the broker got there before the clients
    // stopped. The margin covers the broker's clock and a slow planner.
    tokio::time::sleep(Duration::from_millis(cx.lease_ms + 1500)).await;
    for q in &cx.queues {
        for p in 0..cx.partitions {
            let partition = p.to_string();
            for group in GROUPS {
                drain(cx, drainer, &q.name, &partition, group, notes).await?;
            }
        }
    }
    for q in &cx.queues {
        let mut entries = Vec::new();
        let mut skip = 0u64;
        loop {
            let dq =
                DlqQuery { queue: Some(q.name.clone()), limit: Some(10_000), offset: Some(skip), ..Default::default() };
            let v = retry(|| cx.client.dlq(&dq)).await.map_err(|e| format!("read the DLQ of {}: {e}", q.name))?;
            let msgs = v.get("messages").and_then(Value::as_array).cloned().unwrap_or_default();
            for m in &msgs {
                entries.push(json!({
                    "partition": m.get("partitionName").cloned().unwrap_or(Value::Null),
                    "group": m.get("consumerGroup").cloned().unwrap_or(Value::Null),
                    "offset": m.get("offset").cloned().unwrap_or(Value::Null),
                    "txid": m.get("transactionId").cloned().unwrap_or(Value::Null),
                }));
            }
            skip += msgs.len() as u64;
            let total = v.get("total").and_then(Value::as_u64).unwrap_or(0);
            if msgs.is_empty() || skip >= total {
                break;
            }
        }
        cx.rec.line(json!({"type": "final_dlq", "queue": q.name, "entries": entries}));
    }
    for q in &cx.queues {
        for p in 0..cx.partitions {
            let partition = p.to_string();
            let recs = retry(|| cx.client.fetch_all(&q.name, &partition, 0))
                .await
                .map_err(|e| format!("read the log of {}/{partition}: {e}", q.name))?;
            let entries: Vec<Value> =
                recs.iter().map(|r| json!({"offset": r.offset, "txid": r.transaction_id})).collect();
            if entries.is_empty() {
                cx.rec.line(
                    json!({"type": "final_log", "queue": q.name, "partition": partition, "first": 0, "entries": []}),
                );
            }
            for chunk in entries.chunks(LOG_CHUNK) {
                cx.rec.line(
                    json!({"type": "final_log", "queue": q.name, "partition": partition, "first": 0, "entries": chunk}),
                );
            }
        }
    }
    Ok(())
}

/// One drain pop of (partition, group), recorded; its delivery is the waiting list.
async fn drain(
    cx: &Ctx,
    me: u64,
    queue: &str,
    partition: &str,
    group: Option<&str>,
    notes: &mut Vec<String>,
) -> Result<(), String> {
    let mut args = obj([
        ("queue", queue.into()),
        ("partition", partition.into()),
        ("consumer", "drain".into()),
        ("batch", DRAIN_BATCH.into()),
    ]);
    if let Some(g) = group {
        args.insert("group".into(), g.into());
    }
    let o = PopOptions {
        partition: Some(partition.to_string()),
        batch: Some(DRAIN_BATCH),
        group: group.map(str::to_string),
        subscription_mode: group.map(|_| "all".to_string()),
        ..Default::default()
    };
    let id = cx.rec.invoke(me, "pop", args);
    let offsets: Vec<u64> = match cx.client.pop_with(queue, &o).await {
        Ok(None) => {
            cx.rec.complete(id, me, End::Ok(obj([("messages", json!([]))])));
            Vec::new()
        }
        Ok(Some(p)) => {
            let shown: Vec<Value> =
                p.messages.iter().map(|m| json!({"offset": m.offset, "txid": m.transaction_id})).collect();
            cx.rec.complete(
                id,
                me,
                End::Ok(obj([
                    ("partition", p.partition.clone().into()),
                    ("lease", p.lease_id.clone().into()),
                    ("messages", shown.into()),
                ])),
            );
            if p.messages.len() >= DRAIN_BATCH as usize {
                // More may wait than one pop can show: a partial list would read as losses.
                notes.push(format!(
                    "{DRAIN_BATCH} or more wait in {queue}/{partition} group {group:?}: waiting not read there"
                ));
                return Ok(());
            }
            p.messages.iter().map(|m| m.offset).collect()
        }
        Err(e) => {
            // Unanswered: it may hold a lease now, so a second drain could see nothing.
            cx.rec.complete(id, me, End::Unknown);
            notes
                .push(format!("drain of {queue}/{partition} group {group:?} unanswered ({e}): waiting not read there"));
            return Ok(());
        }
    };
    let g = group.unwrap_or(baton_client::QUEUE_MODE);
    cx.rec.line(
        json!({"type": "final_waiting", "queue": queue, "partition": partition, "group": g, "from": 0, "offsets": offsets}),
    );
    Ok(())
}

/// A read (which changes nothing) tried again on an unknown outcome, a bounded number of times.
async fn retry<T, F, Fut>(mut f: F) -> baton_client::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = baton_client::Result<T>>,
{
    let mut tries = 0;
    loop {
        match f().await {
            Err(e) if e.is_unknown() && tries < 20 => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            r => return r,
        }
    }
}
