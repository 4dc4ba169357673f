//! Fetch and ListOffsets: reading what is durable. Fetch returns the stored
//! record-batch bytes as they are (the first batch may start before the
//! requested offset; clients skip what they did not ask for), with the
//! durable end as the high watermark, and honours max_wait_ms and min_bytes
//! by waiting on the engine's per-topic notifiers, never by polling.

use crate::errors::*;
use crate::sessions::{Said, Want};
use crate::topics::{kafka_partitions, queue_view};
use crate::{Ctx, KafkaStats};
use baton_core::request_memory::MemoryHold;
use baton_core::{FetchRequest as CoreFetch, FetchResult, Query, QueryResult};
use bytes::{Bytes, BytesMut};
use futures_util::future::select_all;
use kafka_protocol::messages::fetch_response::{self, FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::list_offsets_response::{ListOffsetsPartitionResponse, ListOffsetsTopicResponse};
use kafka_protocol::messages::{FetchRequest, FetchResponse, ListOffsetsRequest, ListOffsetsResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use std::time::Instant;

const READ_COMMITTED: i8 = 1;

/// One partition's part of the answer before it is shaped for the wire.
struct Part {
    want: Want,
    error: i16,
    hw: i64,
    log_start: i64,
    result: Option<FetchResult>,
    /// How many of the result's spans fit the response budget.
    take: usize,
}

/// The answer, and the request memory held for the records it carries (D88).
pub async fn fetch(ctx: &Ctx, req: FetchRequest, version: i16) -> (FetchResponse, MemoryHold) {
    let start = Instant::now();
    let wait = std::time::Duration::from_millis(req.max_wait_ms.max(0) as u64).min(ctx.cfg.max_fetch_wait);
    let deadline = start + wait;
    let (mode, wants) = match ctx.sessions.open(&req, version, start) {
        Ok(x) => x,
        Err(code) => return (FetchResponse::default().with_error_code(code).with_session_id(0), MemoryHold::none()),
    };
    let mut topics: Vec<String> = wants.iter().map(|w| w.topic.clone()).collect();
    topics.sort();
    topics.dedup();
    let min_bytes = req.min_bytes.max(0) as u64;
    // Kafka's fetch.max.bytes: the broker's cap wins over what the client
    // asks, and "no limit" (<= 0) is the cap, so one answer stays bounded.
    let cap = ctx.cfg.fetch_max_bytes;
    let max_bytes = if req.max_bytes > 0 { (req.max_bytes as u64).min(cap) } else { cap };
    let mut parts = loop {
        // Arm the notifiers before looking, so a produce that lands between
        // the look and the wait still wakes us.
        let notifies: Vec<_> = topics.iter().map(|t| ctx.engine.notifier(t)).collect();
        let mut waits: Vec<_> = notifies.iter().map(|n| Box::pin(n.notified())).collect();
        for w in &mut waits {
            w.as_mut().enable();
        }
        let parts = read(ctx, &wants, max_bytes, req.isolation_level == READ_COMMITTED).await;
        let bytes: u64 = parts.iter().map(taken_bytes).sum();
        let errors = parts.iter().any(|p| p.error != NONE);
        let now = Instant::now();
        // A fetch of nothing (a consumer closing its session) waits for nothing, as in Kafka.
        if bytes >= min_bytes || errors || now >= deadline || wants.is_empty() {
            break parts;
        }
        let sleep = tokio::time::sleep_until((deadline).into());
        if waits.is_empty() {
            sleep.await;
        } else {
            tokio::select! {
                _ = select_all(waits) => {}
                _ = sleep => {}
            }
        }
    };
    let mem = hold_answer(ctx, &mut parts).await;
    let verdicts: Vec<_> = parts
        .iter()
        .map(|p| {
            let key = (p.want.topic.clone(), p.want.partition);
            let said = Said { high_watermark: p.hw, log_start: p.log_start };
            (key, said, p.take > 0, p.error != NONE)
        })
        .collect();
    let include = ctx.sessions.close(mode, &verdicts);
    let mut out: Vec<FetchableTopicResponse> = Vec::new();
    for (p, inc) in parts.into_iter().zip(include) {
        if !inc {
            continue;
        }
        let topic = p.want.topic.clone();
        let data = shape(p, version, req.isolation_level);
        match out.last_mut() {
            Some(t) if t.topic.as_str() == topic => t.partitions.push(data),
            _ => out.push(
                FetchableTopicResponse::default()
                    .with_topic(TopicName(StrBytes::from_string(topic)))
                    .with_partitions(vec![data]),
            ),
        }
    }
    let mut resp = FetchResponse::default().with_responses(out);
    if version >= 7 {
        resp.session_id = mode.session_id();
    }
    (resp, mem)
}

/// D88: the records an answer carries are held in the node's request memory
/// before they are read from storage, until the answer is written, so
/// answers that clients do not read cannot add up past the budget. When that
/// much is not free now, the answer is cut to its first batch (KIP-74's
/// least, so a consumer still moves) and waits only for that; a consumer
/// asks again for the rest.
async fn hold_answer(ctx: &Ctx, parts: &mut [Part]) -> MemoryHold {
    let memory = &ctx.cfg.request_memory;
    let total: u64 = parts.iter().map(taken_bytes).sum();
    if let Some(held) = memory.try_hold(usize::try_from(total).unwrap_or(usize::MAX)) {
        return held;
    }
    KafkaStats::bump(&ctx.stats.fetch_trimmed);
    let mut first = None;
    for p in parts.iter_mut() {
        if p.take > 0 && first.is_none() {
            p.take = 1;
            first = p.result.as_ref().map(|r| r.spans[0].len as usize);
        } else {
            p.take = 0;
        }
    }
    memory.hold(first.unwrap_or(0)).await
}

fn taken_bytes(p: &Part) -> u64 {
    p.result.as_ref().map_or(0, |r| r.spans[..p.take].iter().map(|s| s.len as u64).sum())
}

/// Ask the engine for every wanted partition, then fit the answer into
/// `max_bytes`: the first batch of the first partition with data always goes
/// (KIP-74, so one big batch cannot wedge a consumer); after that, whole
/// batches while they fit.
async fn read(ctx: &Ctx, wants: &[Want], max_bytes: u64, committed: bool) -> Vec<Part> {
    let mut parts: Vec<Part> = wants
        .iter()
        .map(|w| Part { want: w.clone(), error: NONE, hw: -1, log_start: -1, result: None, take: 0 })
        .collect();
    let mut asks = Vec::new();
    let mut idx = Vec::new();
    for (i, p) in parts.iter_mut().enumerate() {
        if p.want.partition < 0 {
            p.error = UNKNOWN_TOPIC_OR_PARTITION;
        } else if p.want.offset < 0 {
            p.error = OFFSET_OUT_OF_RANGE;
        } else {
            asks.push(CoreFetch {
                queue: p.want.topic.clone(),
                partition: p.want.partition.to_string(),
                offset: p.want.offset as u64,
                // No partition is read past what the whole answer may carry.
                max_bytes: (p.want.max_bytes.max(1) as u64).min(max_bytes),
                committed,
            });
            idx.push(i);
        }
    }
    if !asks.is_empty() {
        match ctx.engine.fetch(asks).await {
            Ok(results) => {
                for (i, r) in idx.into_iter().zip(results) {
                    let p = &mut parts[i];
                    p.hw = r.high_watermark as i64;
                    p.log_start = r.log_start as i64;
                    match &r.error {
                        Some(e) => {
                            p.error = code_of(e);
                            if p.error == UNKNOWN_TOPIC_OR_PARTITION {
                                p.hw = -1;
                                p.log_start = -1;
                            }
                        }
                        None => p.result = Some(r),
                    }
                }
            }
            Err(e) => {
                for i in idx {
                    parts[i].error = code_of(&e);
                }
            }
        }
    }
    let mut total = 0u64;
    for p in &mut parts {
        let Some(r) = &p.result else { continue };
        for s in &r.spans {
            if total > 0 && total + s.len as u64 > max_bytes {
                break;
            }
            total += s.len as u64;
            p.take += 1;
        }
    }
    parts
}

fn shape(p: Part, version: i16, isolation: i8) -> PartitionData {
    let lso = p.result.as_ref().map_or(p.hw, |r| r.last_stable as i64);
    let aborted = (isolation == READ_COMMITTED).then(|| {
        p.result.as_ref().map_or_else(Vec::new, |r| {
            r.aborted
                .iter()
                .map(|(pid, first)| {
                    fetch_response::AbortedTransaction::default()
                        .with_producer_id((*pid).into())
                        .with_first_offset(*first as i64)
                })
                .collect()
        })
    });
    let mut d = PartitionData::default()
        .with_partition_index(p.want.partition)
        .with_error_code(p.error)
        .with_high_watermark(p.hw)
        .with_last_stable_offset(lso)
        .with_aborted_transactions(aborted)
        .with_records(Some(Bytes::new()));
    if version >= 5 {
        d.log_start_offset = p.log_start;
    }
    if let Some(r) = p.result {
        let spans = &r.spans[..p.take];
        // One span (the usual case when a consumer keeps up) is handed over
        // as read, without a second copy; several go into one buffer sized
        // up front.
        let mut buf =
            BytesMut::with_capacity(if spans.len() > 1 { spans.iter().map(|s| s.len as usize).sum() } else { 0 });
        let mut single = None;
        for s in spans {
            match s.read() {
                Ok(b) if spans.len() == 1 => single = Some(Bytes::from(b)),
                Ok(b) => buf.extend_from_slice(&b),
                Err(e) => {
                    tracing::error!(topic = %p.want.topic, partition = p.want.partition, error = %e,
                        "kafka: reading a stored batch failed");
                    d.error_code = KAFKA_STORAGE_ERROR;
                    buf.clear();
                    break;
                }
            }
        }
        d.records = Some(single.unwrap_or_else(|| buf.freeze()));
    }
    d
}

/// ListOffsets: earliest (-2) is the log start, latest (-1) the durable end,
/// a timestamp the first record stamped at or after it.
pub async fn list_offsets(ctx: &Ctx, req: ListOffsetsRequest, version: i16) -> ListOffsetsResponse {
    let mut topics = Vec::new();
    for t in req.topics {
        let view = queue_view(ctx, &t.name).await;
        let mut parts = Vec::new();
        for p in t.partitions {
            let mut r = ListOffsetsPartitionResponse::default().with_partition_index(p.partition_index);
            let pv = match &view {
                Ok(Some(q)) => kafka_partitions(q).into_iter().find(|(i, _)| *i == p.partition_index),
                Ok(None) => None,
                Err(e) => {
                    r.error_code = code_of(e);
                    parts.push(r);
                    continue;
                }
            };
            let Some((_, pv)) = pv else {
                r.error_code = UNKNOWN_TOPIC_OR_PARTITION;
                parts.push(r);
                continue;
            };
            if version >= 4 {
                r.leader_epoch = 0;
            }
            match p.timestamp {
                -2 => r.offset = pv.start as i64,
                -1 if req.isolation_level == READ_COMMITTED => r.offset = pv.stable_end as i64,
                -1 => r.offset = pv.durable_end as i64,
                ts if ts >= 0 => match offset_for_time(ctx, &t.name, p.partition_index, ts).await {
                    Ok(Some((o, at))) => {
                        r.offset = o;
                        r.timestamp = at.max(ts);
                    }
                    Ok(None) => {}
                    Err(code) => r.error_code = code,
                },
                _ => r.error_code = INVALID_REQUEST,
            }
            parts.push(r);
        }
        topics.push(ListOffsetsTopicResponse::default().with_name(t.name).with_partitions(parts));
    }
    ListOffsetsResponse::default().with_topics(topics)
}

/// How far past the first batch written at or after the target a search for a record
/// stamped at or after it reads before settling for that batch.
const TIME_SCAN_BYTES: usize = 64 << 20;
const TIME_SCAN_CHUNK: u64 = 1 << 20;

/// Kafka's rule: the first record whose timestamp (CreateTime, or the broker's time in a
/// log-append-time batch) is at or after `ts_ms`, with that timestamp; `None` if no record is.
///
/// The engine's index finds the first batch *written* at or after `ts_ms`; a record in an
/// earlier batch was written before the target time, so unless its producer's clock ran
/// ahead of the broker's it cannot be stamped at or after it. From that batch the records
/// are read in order until one qualifies (a producer's clock behind the broker's moves the
/// answer later, as in Kafka). Past `TIME_SCAN_BYTES` without one, the batch the index
/// found is answered rather than read on.
async fn offset_for_time(ctx: &Ctx, topic: &str, partition: i32, ts_ms: i64) -> Result<Option<(i64, i64)>, i16> {
    let q = Query::OffsetForTime { topic: topic.to_string(), partition: partition.to_string(), ts_ms };
    let first = match ctx.engine.query(q).await {
        Ok(QueryResult::Offset(Ok(Some(o)))) => o,
        Ok(QueryResult::Offset(Ok(None))) => return Ok(None),
        Ok(QueryResult::Offset(Err(e))) | Err(e) => return Err(code_of(&e)),
        Ok(_) => return Err(UNKNOWN_SERVER_ERROR),
    };
    let (mut at, mut scanned) = (first, 0usize);
    while scanned < TIME_SCAN_BYTES {
        let ask = CoreFetch {
            queue: topic.to_string(),
            partition: partition.to_string(),
            offset: at,
            max_bytes: TIME_SCAN_CHUNK,
            committed: false,
        };
        let Some(r) = ctx.engine.fetch(vec![ask]).await.map_err(|e| code_of(&e))?.pop() else { break };
        if let Some(e) = &r.error {
            return Err(code_of(e));
        }
        let before = at;
        for span in &r.spans {
            let bytes = span.read().map_err(|_| KAFKA_STORAGE_ERROR)?;
            scanned += bytes.len();
            let records = baton_wire::decode_batches_where(&bytes, |_| true).map_err(|_| CORRUPT_MESSAGE)?;
            if let Some(hit) = records.iter().find(|rec| rec.offset >= at && rec.timestamp_ms >= ts_ms) {
                return Ok(Some((hit.offset as i64, hit.timestamp_ms)));
            }
            at = records.iter().map(|rec| rec.offset + 1).max().unwrap_or(at).max(at);
        }
        if at == before {
            // Past the durable end: no record is stamped at or after the target.
            return Ok(None);
        }
    }
    // Settle for the first batch written at or after the target.
    Ok(Some((first as i64, ts_ms)))
}
