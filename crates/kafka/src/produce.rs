//! Produce and InitProducerId. Each partition's batches go to the engine as
//! the client sent them (CRC checked there, offsets assigned there); the answer
//! comes after the entry is durable. acks=0 still stores, but answers nothing.
//!
//! Ordering: every partition's produce is handed to the engine in the first
//! poll of this future (see conn.rs), so pipelined produces append in the
//! order they arrived. Only the rare auto-create retry goes later.

use crate::errors::*;
use crate::records::{split_batches, BatchError};
use crate::topics::{ensure_topic, kafka_partitions, queue_view};
use crate::Ctx;
use baton_core::{kafka_ops::ProduceOutcome, kafka_ops::ProduceRequest as CoreProduce};
use futures_util::future::join_all;
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{InitProducerIdResponse, ProduceRequest, ProduceResponse};
use kafka_protocol::protocol::StrBytes;

struct Slot {
    topic: usize,
    index: i32,
    error: i16,
    message: Option<String>,
    base_offset: i64,
}

/// `None` for acks=0: the client waits for nothing.
pub async fn produce(ctx: &Ctx, req: ProduceRequest, version: i16) -> Option<ProduceResponse> {
    let acks = req.acks;
    let txn_id = req.transactional_id.as_ref().filter(|t| !t.is_empty()).map(|t| t.0.to_string());
    let mut slots = Vec::new();
    let mut calls = Vec::new();
    for (ti, t) in req.topic_data.iter().enumerate() {
        for p in &t.partition_data {
            let mut slot = Slot { topic: ti, index: p.index, error: NONE, message: None, base_offset: -1 };
            if !(-1..=1).contains(&acks) {
                slot.error = INVALID_REQUIRED_ACKS;
            } else if p.index < 0 {
                slot.error = UNKNOWN_TOPIC_OR_PARTITION;
            } else {
                let max = ctx.cfg.max_message_bytes;
                match split_batches(p.records.as_deref().unwrap_or_default(), ctx.cfg.max_uncompressed_batch_bytes) {
                    // Nothing of the partition's data is stored, as in Kafka.
                    Ok(batches) if batches.iter().any(|b| b.len() > max) => {
                        let len = batches.iter().map(|b| b.len()).max().unwrap_or(0);
                        slot.error = MESSAGE_TOO_LARGE;
                        slot.message = Some(format!("record batch of {len} bytes is over max.message.bytes ({max})"));
                    }
                    // As Kafka answers: transactional records need the request's transactional id.
                    Ok(batches) if txn_id.is_none() && batches.iter().any(|b| baton_wire::is_transactional(b)) => {
                        slot.error = TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
                    }
                    Ok(batches) => {
                        let r = CoreProduce {
                            topic: t.name.to_string(),
                            partition: p.index.to_string(),
                            batches,
                            create: false,
                            producer_expiry: ctx.cfg.producer_expiry_micros(),
                            txn_id: txn_id.clone(),
                            implicit_txn: version >= 12,
                        };
                        // Keep the raw bytes (a cheap Bytes clone) for the auto-create retry.
                        let raw = (
                            t.name.to_string(),
                            p.index,
                            p.records.clone().unwrap_or_default(),
                            txn_id.clone(),
                            version,
                        );
                        calls.push((slots.len(), raw, ctx.engine.produce(r)));
                    }
                    Err(BatchError::Corrupt(m)) => {
                        slot.error = CORRUPT_MESSAGE;
                        slot.message = Some(m);
                    }
                    Err(BatchError::Invalid(m)) => {
                        slot.error = INVALID_RECORD;
                        slot.message = Some(m);
                    }
                    Err(BatchError::TooLarge(m)) => {
                        slot.error = MESSAGE_TOO_LARGE;
                        slot.message = Some(m);
                    }
                }
            }
            slots.push(slot);
        }
    }
    let (idx, (raws, futs)): (Vec<usize>, (Vec<_>, Vec<_>)) = calls.into_iter().map(|(i, r, f)| (i, (r, f))).unzip();
    // All partitions are submitted by join_all's first poll, in order.
    let results = join_all(futs).await;
    for ((i, raw), res) in idx.into_iter().zip(raws).zip(results) {
        let res = match res {
            Ok(ProduceOutcome::UnknownTopicOrPartition) => retry_with_create(ctx, raw).await,
            other => other,
        };
        let slot = &mut slots[i];
        match res {
            Ok(ProduceOutcome::Appended { base_offset }) | Ok(ProduceOutcome::Duplicate { base_offset }) => {
                slot.base_offset = base_offset as i64;
            }
            Ok(ProduceOutcome::OutOfOrderSequence) => slot.error = OUT_OF_ORDER_SEQUENCE_NUMBER,
            Ok(ProduceOutcome::InvalidProducerEpoch) => slot.error = INVALID_PRODUCER_EPOCH,
            Ok(ProduceOutcome::UnknownProducerId(pid)) => {
                slot.error = UNKNOWN_PRODUCER_ID;
                slot.message = Some(format!("producer id {pid} was never assigned (use InitProducerId)"));
            }
            Ok(ProduceOutcome::CorruptMessage(m)) => {
                slot.error = CORRUPT_MESSAGE;
                slot.message = Some(m);
            }
            Ok(ProduceOutcome::UnknownTopicOrPartition) => slot.error = UNKNOWN_TOPIC_OR_PARTITION,
            Ok(ProduceOutcome::InvalidTxnState(m)) => {
                slot.error = crate::txn::INVALID_TXN_STATE;
                slot.message = Some(m);
            }
            Err(e) => {
                slot.error = code_of(&e);
                slot.message = Some(e.to_string());
            }
        }
    }
    if acks == 0 {
        return None;
    }
    let mut topics: Vec<TopicProduceResponse> =
        req.topic_data.iter().map(|t| TopicProduceResponse::default().with_name(t.name.clone())).collect();
    for slot in slots {
        let mut p = PartitionProduceResponse::default()
            .with_index(slot.index)
            .with_error_code(slot.error)
            .with_base_offset(slot.base_offset)
            .with_log_append_time_ms(-1);
        if version >= 8 {
            p.error_message = slot.message.map(StrBytes::from_string);
        }
        topics[slot.topic].partition_responses.push(p);
    }
    Some(ProduceResponse::default().with_responses(topics))
}

/// Kafka creates topics on Metadata only; a client that produces without
/// asking first still gets its topic when auto-create is on, as long as the
/// partition is one a new topic would have.
async fn retry_with_create(
    ctx: &Ctx,
    (topic, index, records, txn_id, version): (String, i32, bytes::Bytes, Option<String>, i16),
) -> Result<ProduceOutcome, baton_core::CoreError> {
    if !ctx.cfg.auto_create || index as u32 >= ctx.cfg.default_partitions.max(1) {
        return Ok(ProduceOutcome::UnknownTopicOrPartition);
    }
    match queue_view(ctx, &topic).await {
        Ok(Some(q)) if !kafka_partitions(&q).is_empty() => return Ok(ProduceOutcome::UnknownTopicOrPartition),
        Err(e) => return Err(e),
        _ => {}
    }
    match ensure_topic(ctx, &topic, true).await {
        Ok(Some(_)) => {
            let batches = split_batches(&records, ctx.cfg.max_uncompressed_batch_bytes).unwrap_or_default();
            let r = CoreProduce {
                topic,
                partition: index.to_string(),
                batches,
                create: false,
                producer_expiry: ctx.cfg.producer_expiry_micros(),
                txn_id,
                implicit_txn: version >= 12,
            };
            ctx.engine.produce(r).await
        }
        Ok(None) => Ok(ProduceOutcome::UnknownTopicOrPartition),
        Err(code) if code == INVALID_TOPIC => Err(baton_core::CoreError::bad("invalid_topic", "invalid topic name")),
        Err(_) => Ok(ProduceOutcome::UnknownTopicOrPartition),
    }
}

/// An id for an idempotent producer (one with a transactional id goes to `txn`).
pub async fn init_producer_id(ctx: &Ctx) -> InitProducerIdResponse {
    let fail = |code| {
        InitProducerIdResponse::default().with_error_code(code).with_producer_id((-1).into()).with_producer_epoch(-1)
    };
    if let Some(ask) = &ctx.cfg.leader_ask {
        if !(ctx.topology().leads() && ctx.engine.is_writable()) {
            return match (ask.producer_id)().await {
                Ok(id) => InitProducerIdResponse::default().with_producer_id(id.into()).with_producer_epoch(0),
                Err(e) => {
                    tracing::debug!(error = %e, "no producer id from the leader");
                    fail(crate::errors::NOT_COORDINATOR)
                }
            };
        }
    }
    match ctx.engine.init_producer().await {
        Ok(id) => InitProducerIdResponse::default().with_producer_id(id.into()).with_producer_epoch(0),
        Err(e) => fail(code_of(&e)),
    }
}
