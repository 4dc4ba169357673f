//! The transactional calls of [`KafkaConn`] (FindCoordinator, InitProducerId
//! with a transactional id, AddPartitionsToTxn, AddOffsetsToTxn,
//! TxnOffsetCommit, EndTxn, a stable OffsetFetch), record batches with keys,
//! headers and the transactional bit, and a read_committed Fetch that drops
//! what a Kafka consumer drops (aborted transactions' records, control records).
//!
//! Like `ops`, each call turns a nonzero error code anywhere in the answer into
//! [`KafkaError::Code`]. Must never retry (CONCURRENT_TRANSACTIONS and the like
//! are the caller's to wait out), and never panic on what the broker sends.

use super::ops::{code, name, shape};
use super::{KResult, KafkaConn, KafkaError, ProducerSeq};
use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::*;
use kafka_protocol::records::TimestampType;
use kafka_protocol::records::{Compression, Record, RecordBatchEncoder, RecordEncodeOptions};

/// FindCoordinator's key types.
pub const COORDINATOR_GROUP: i8 = 0;
pub const COORDINATOR_TRANSACTION: i8 = 1;

/// One record to send: key, value and headers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutRecord {
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<(String, Bytes)>,
}

/// One record a read_committed Fetch kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InRecord {
    pub offset: i64,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<(String, Option<Bytes>)>,
}

/// What a read_committed Fetch of one partition came to.
#[derive(Debug, Clone)]
pub struct FetchedCommitted {
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    /// The offset to ask for next (past every record and marker read).
    pub next_offset: i64,
    pub records: Vec<InRecord>,
}

/// A transactional producer's identity on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnId {
    pub transactional_id: String,
    pub producer_id: i64,
    pub epoch: i16,
}

/// One uncompressed v2 batch of `records`; `transactional` sets the batch's
/// transactional bit (the producer must then be given).
pub fn record_batch_keyed(records: &[OutRecord], producer: Option<ProducerSeq>, transactional: bool) -> KResult<Bytes> {
    if transactional && producer.is_none() {
        return Err(KafkaError::Protocol("a transactional batch needs a producer".into()));
    }
    let (pid, epoch, seq) = producer.map_or((-1, -1, -1), |p| (p.id, p.epoch, p.seq));
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
    let recs: Vec<Record> = records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut headers = kafka_protocol::indexmap::IndexMap::new();
            for (k, v) in &r.headers {
                headers.insert(name(k), Some(v.clone()));
            }
            Record {
                transactional,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: -1,
                producer_id: pid,
                producer_epoch: epoch,
                timestamp_type: TimestampType::Creation,
                offset: i as i64,
                // The encoder keeps one batch while offset - sequence is constant; with
                // no producer that makes the base sequence -1, as Kafka wants.
                sequence: if seq < 0 { i as i32 - 1 } else { seq.wrapping_add(i as i32) },
                timestamp: now,
                key: r.key.clone(),
                value: r.value.clone(),
                headers,
            }
        })
        .collect();
    let mut b = BytesMut::new();
    RecordBatchEncoder::encode(&mut b, &recs, &RecordEncodeOptions { version: 2, compression: Compression::None })
        .map_err(|e| KafkaError::Protocol(format!("encode a batch: {e}")))?;
    Ok(b.freeze())
}

/// The records a read_committed consumer keeps from fetched bytes, given the
/// answer's aborted transactions (producer id, first offset): a producer's
/// transactional records from an aborted transaction's first offset up to its
/// abort marker are dropped, and control records are never records. Also
/// answers the offset past the last record or marker read.
pub fn committed_records(bytes: &Bytes, aborted: &[(i64, i64)], from: i64) -> KResult<(Vec<InRecord>, i64)> {
    let mut aborted: Vec<(i64, i64)> = aborted.to_vec();
    aborted.sort_by_key(|a| a.1);
    let mut next_aborted = 0;
    let mut dropping = std::collections::HashSet::new();
    let mut out = Vec::new();
    let mut next = from;
    for r in super::ops::fetched_records(bytes)? {
        while next_aborted < aborted.len() && aborted[next_aborted].1 <= r.offset {
            dropping.insert(aborted[next_aborted].0);
            next_aborted += 1;
        }
        next = next.max(r.offset.saturating_add(1));
        if r.offset < from {
            continue;
        }
        if r.control {
            // Key: version (i16), type (i16): 0 abort, 1 commit. Either ends the transaction.
            dropping.remove(&r.producer_id);
            continue;
        }
        if r.transactional && dropping.contains(&r.producer_id) {
            continue;
        }
        let headers = r.headers.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        out.push(InRecord { offset: r.offset, key: r.key, value: r.value, headers });
    }
    Ok((out, next))
}

impl KafkaConn {
    /// The coordinator (node, host, port) of a group (`COORDINATOR_GROUP`) or a
    /// transactional id (`COORDINATOR_TRANSACTION`).
    pub async fn find_coordinator(&mut self, key: &str, key_type: i8) -> KResult<(i32, String, i32)> {
        let req = FindCoordinatorRequest::default().with_key(name(key)).with_key_type(key_type);
        let r: FindCoordinatorResponse = self.request(ApiKey::FindCoordinator, &req).await?;
        code(r.error_code, r.error_message.as_ref())?;
        Ok((r.node_id.0, r.host.to_string(), r.port))
    }

    /// InitProducerId for a transactional id: a new epoch, which fences the
    /// previous one and ends (aborts) its open transaction.
    pub async fn init_transactional(&mut self, transactional_id: &str, txn_timeout_ms: i32) -> KResult<TxnId> {
        let req = InitProducerIdRequest::default()
            .with_transactional_id(Some(TransactionalId(name(transactional_id))))
            .with_transaction_timeout_ms(txn_timeout_ms)
            .with_producer_id((-1).into())
            .with_producer_epoch(-1);
        let r: InitProducerIdResponse = self.request(ApiKey::InitProducerId, &req).await?;
        code(r.error_code, None)?;
        Ok(TxnId {
            transactional_id: transactional_id.to_string(),
            producer_id: r.producer_id.0,
            epoch: r.producer_epoch,
        })
    }

    /// AddPartitionsToTxn (v3 and below) for `(topic, partitions)`.
    pub async fn add_partitions_to_txn(&mut self, t: &TxnId, parts: &[(String, Vec<i32>)]) -> KResult<()> {
        let topics = parts
            .iter()
            .map(|(topic, ps)| {
                add_partitions_to_txn_request::AddPartitionsToTxnTopic::default()
                    .with_name(TopicName(name(topic)))
                    .with_partitions(ps.clone())
            })
            .collect();
        let req = AddPartitionsToTxnRequest::default()
            .with_v3_and_below_transactional_id(TransactionalId(name(&t.transactional_id)))
            .with_v3_and_below_producer_id(t.producer_id.into())
            .with_v3_and_below_producer_epoch(t.epoch)
            .with_v3_and_below_topics(topics);
        let r: AddPartitionsToTxnResponse = self.request(ApiKey::AddPartitionsToTxn, &req).await?;
        code(r.error_code, None)?;
        for topic in &r.results_by_topic_v3_and_below {
            for p in &topic.results_by_partition {
                code(p.partition_error_code, None)?;
            }
        }
        Ok(())
    }

    /// Produce one transactional batch (from [`record_batch_keyed`]) to one
    /// partition with acks=all; the base offset the broker gave it.
    pub async fn produce_txn(&mut self, t: &TxnId, topic: &str, partition: i32, batch: &Bytes) -> KResult<i64> {
        let req = ProduceRequest::default()
            .with_transactional_id(Some(TransactionalId(name(&t.transactional_id))))
            .with_acks(-1)
            .with_timeout_ms(self.timeout_ms_txn())
            .with_topic_data(vec![produce_request::TopicProduceData::default()
                .with_name(TopicName(name(topic)))
                .with_partition_data(vec![produce_request::PartitionProduceData::default()
                    .with_index(partition)
                    .with_records(Some(batch.clone()))])]);
        let r: ProduceResponse = self.request(ApiKey::Produce, &req).await?;
        let p = r
            .responses
            .first()
            .and_then(|t| t.partition_responses.iter().find(|p| p.index == partition))
            .ok_or_else(|| shape("partition"))?;
        code(p.error_code, p.error_message.as_ref())?;
        Ok(p.base_offset)
    }

    /// AddOffsetsToTxn: this transaction will commit offsets of `group`.
    pub async fn add_offsets_to_txn(&mut self, t: &TxnId, group: &str) -> KResult<()> {
        let req = AddOffsetsToTxnRequest::default()
            .with_transactional_id(TransactionalId(name(&t.transactional_id)))
            .with_producer_id(t.producer_id.into())
            .with_producer_epoch(t.epoch)
            .with_group_id(GroupId(name(group)));
        let r: AddOffsetsToTxnResponse = self.request(ApiKey::AddOffsetsToTxn, &req).await?;
        code(r.error_code, None)
    }

    /// TxnOffsetCommit of one partition's offset and metadata (sent to the group's coordinator).
    pub async fn txn_offset_commit(
        &mut self,
        t: &TxnId,
        group: &str,
        topic: &str,
        partition: i32,
        offset: i64,
        metadata: &str,
    ) -> KResult<()> {
        let req = TxnOffsetCommitRequest::default()
            .with_transactional_id(TransactionalId(name(&t.transactional_id)))
            .with_group_id(GroupId(name(group)))
            .with_producer_id(t.producer_id.into())
            .with_producer_epoch(t.epoch)
            .with_generation_id(-1)
            .with_member_id(name(""))
            .with_topics(vec![txn_offset_commit_request::TxnOffsetCommitRequestTopic::default()
                .with_name(TopicName(name(topic)))
                .with_partitions(vec![txn_offset_commit_request::TxnOffsetCommitRequestPartition::default()
                    .with_partition_index(partition)
                    .with_committed_offset(offset)
                    .with_committed_metadata(Some(name(metadata)))])]);
        let r: TxnOffsetCommitResponse = self.request(ApiKey::TxnOffsetCommit, &req).await?;
        let p = r
            .topics
            .first()
            .and_then(|t| t.partitions.iter().find(|p| p.partition_index == partition))
            .ok_or_else(|| shape("partition"))?;
        code(p.error_code, None)
    }

    /// EndTxn: commit (true) or abort (false).
    pub async fn end_txn(&mut self, t: &TxnId, commit: bool) -> KResult<()> {
        let req = EndTxnRequest::default()
            .with_transactional_id(TransactionalId(name(&t.transactional_id)))
            .with_producer_id(t.producer_id.into())
            .with_producer_epoch(t.epoch)
            .with_committed(commit);
        let r: EndTxnResponse = self.request(ApiKey::EndTxn, &req).await?;
        code(r.error_code, None)
    }

    /// `group`'s committed offset and metadata on one partition ((-1, None): none).
    /// `require_stable` (v7+) makes a broker with a pending transactional commit
    /// answer UNSTABLE_OFFSET_COMMIT instead of the older value.
    pub async fn offset_fetch_stable(
        &mut self,
        group: &str,
        topic: &str,
        partition: i32,
        require_stable: bool,
    ) -> KResult<(i64, Option<String>)> {
        let req = OffsetFetchRequest::default()
            .with_group_id(GroupId(name(group)))
            .with_require_stable(require_stable)
            .with_topics(Some(vec![offset_fetch_request::OffsetFetchRequestTopic::default()
                .with_name(TopicName(name(topic)))
                .with_partition_indexes(vec![partition])]));
        let r: OffsetFetchResponse = self.request(ApiKey::OffsetFetch, &req).await?;
        code(r.error_code, None)?;
        let p = r
            .topics
            .first()
            .and_then(|t| t.partitions.iter().find(|p| p.partition_index == partition))
            .ok_or_else(|| shape("partition"))?;
        code(p.error_code, None)?;
        Ok((p.committed_offset, p.metadata.as_ref().map(|m| m.to_string())))
    }

    /// Fetch one partition from `offset` at read_committed (isolation level 1)
    /// and keep what a Kafka consumer keeps; at most [`super::FETCH_MAX_BYTES`].
    pub async fn fetch_committed(
        &mut self,
        topic: &str,
        partition: i32,
        offset: i64,
        max_wait_ms: i32,
        max_bytes: i32,
    ) -> KResult<FetchedCommitted> {
        let p = self.fetch_one(topic, partition, offset, max_wait_ms, max_bytes, 1).await?;
        let aborted: Vec<(i64, i64)> = p
            .aborted_transactions
            .as_ref()
            .map(|a| a.iter().map(|t| (t.producer_id.0, t.first_offset)).collect())
            .unwrap_or_default();
        let (records, next) = match &p.records {
            Some(b) => committed_records(b, &aborted, offset)?,
            None => (Vec::new(), offset),
        };
        Ok(FetchedCommitted {
            high_watermark: p.high_watermark,
            last_stable_offset: p.last_stable_offset,
            next_offset: next,
            records,
        })
    }

    fn timeout_ms_txn(&self) -> i32 {
        i32::try_from(self.timeout.as_millis()).unwrap_or(i32::MAX)
    }
}

/// Kafka's default partitioner: murmur2 of the key, positive, modulo the
/// partition count, so that Java producers and consumers agree on where a key lives.
pub fn murmur2_partition(key: &[u8], partitions: i32) -> i32 {
    if partitions <= 0 {
        return 0;
    }
    ((murmur2(key) & 0x7fff_ffff) % partitions as u32) as i32
}

/// Kafka's murmur2 (seed 0x9747b28c), as its `Utils.murmur2`.
pub fn murmur2(data: &[u8]) -> u32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    let len = data.len();
    let mut h: u32 = SEED ^ (len as u32);
    let chunks = data.chunks_exact(4);
    let tail = chunks.remainder();
    for c in chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    if tail.len() == 3 {
        h ^= (tail[2] as u32) << 16;
    }
    if tail.len() >= 2 {
        h ^= (tail[1] as u32) << 8;
    }
    if !tail.is_empty() {
        h ^= tail[0] as u32;
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur2_matches_kafkas_default_partitioner() {
        // Values Kafka's own partitioner tests pin (Utils.murmur2 of these strings).
        assert_eq!(murmur2(b"21") as i32, -973932308);
        assert_eq!(murmur2(b"foobar") as i32, -790332482);
        assert_eq!(murmur2(b"a-little-bit-long-string") as i32, -985981536);
        assert_eq!(murmur2(b"a-little-bit-longer-string") as i32, -1486304829);
        assert_eq!(murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8") as i32, -58897971);
        assert_eq!(murmur2(b"abc") as i32, 479470107);
        assert!((0..8).contains(&murmur2_partition(b"agg-1", 8)));
    }

    #[test]
    fn keyed_transactional_batches_decode_back_and_aborted_ones_are_dropped() {
        let p = ProducerSeq { id: 9, epoch: 1, seq: 0 };
        let recs = vec![
            OutRecord {
                key: Some(Bytes::from("k")),
                value: Some(Bytes::from("v")),
                headers: vec![("h".into(), Bytes::from("x"))],
            },
            OutRecord { key: None, value: Some(Bytes::from("w")), headers: vec![] },
        ];
        let b = record_batch_keyed(&recs, Some(p), true).unwrap();
        // The transactional bit (attributes at 21..23, bit 4).
        assert_ne!(i16::from_be_bytes([b[21], b[22]]) & 0x10, 0);
        let (got, next) = committed_records(&b, &[], 0).unwrap();
        assert_eq!(next, 2);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].key.as_deref(), Some(&b"k"[..]));
        assert_eq!(got[0].headers, vec![("h".to_string(), Some(Bytes::from("x")))]);
        let (got, _) = committed_records(&b, &[(9, 0)], 0).unwrap();
        assert!(got.is_empty(), "an aborted transaction's records are dropped");
        let (got, _) = committed_records(&b, &[(8, 0)], 1).unwrap();
        assert_eq!(got.len(), 1, "another producer's abort does not drop them; offsets before `from` are left out");
        assert!(record_batch_keyed(&recs, None, true).is_err());
    }
}
