//! The typed Kafka calls of [`KafkaConn`] and v2 record batches.
//!
//! Each call sends one request for one topic (and one partition where the API
//! has partitions) and turns a nonzero error code anywhere in the answer into
//! [`KafkaError::Code`]. Must never hide an answer's error code, and never
//! build a batch whose producer fields differ from what the caller asked for:
//! the recorder writes those fields into the history.

use super::{KResult, KafkaConn, KafkaError};
use bytes::Bytes;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::RecordBatchDecoder;

/// The most a Fetch asks for (whole answer and partition): well under [`super::MAX_FRAME`].
pub const FETCH_MAX_BYTES: i32 = 4 << 20;

/// An idempotent producer's identity and the sequence of a batch's first record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerSeq {
    pub id: i64,
    pub epoch: i16,
    pub seq: i32,
}

/// One partition as Metadata describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionMeta {
    pub index: i32,
    pub leader: i32,
    pub error: i16,
}

/// A topic as Metadata describes it, with the brokers (node, host, port).
#[derive(Debug, Clone)]
pub struct TopicMeta {
    pub error: i16,
    pub partitions: Vec<PartitionMeta>,
    pub brokers: Vec<(i32, String, i32)>,
    /// The controller's node id (where CreateTopics goes), -1 when none is known.
    pub controller: i32,
}

/// What a Fetch read from one partition: the records at or past the asked offset.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub high_watermark: i64,
    pub log_start: i64,
    /// (offset, value) in offset order.
    pub records: Vec<(i64, Option<Bytes>)>,
}

pub(super) fn name(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

pub(super) fn code(code: i16, message: Option<&StrBytes>) -> KResult<()> {
    match code {
        0 => Ok(()),
        c => Err(KafkaError::Code { code: c, message: message.map(|m| m.to_string()) }),
    }
}

pub(super) fn shape(what: &str) -> KafkaError {
    KafkaError::Protocol(format!("the answer has no {what}"))
}

/// One uncompressed v2 batch of `values` (base offset 0: the broker assigns
/// offsets), from an idempotent producer when `producer` is given.
pub fn record_batch(values: &[&[u8]], producer: Option<ProducerSeq>) -> KResult<Bytes> {
    let records: Vec<super::OutRecord> = values
        .iter()
        .map(|v| super::OutRecord { key: None, value: Some(Bytes::copy_from_slice(v)), headers: Vec::new() })
        .collect();
    super::record_batch_keyed(&records, producer, false)
}

/// The records of fetched bytes. A batch cut short at the end (Kafka lets a
/// broker send part of the last batch) is left out, not an error.
pub fn decode_records(bytes: &Bytes) -> KResult<Vec<(i64, Option<Bytes>)>> {
    Ok(fetched_records(bytes)?.into_iter().map(|r| (r.offset, r.value)).collect())
}

/// Every record of the whole batches in fetched bytes, control records included; a
/// batch cut short at the end is left out, not an error.
pub(super) fn fetched_records(bytes: &Bytes) -> KResult<Vec<kafka_protocol::records::Record>> {
    let mut out = Vec::new();
    let mut rest = bytes.clone();
    // baseOffset (8) + batchLength (4) prefix every batch.
    while rest.len() >= 12 {
        let len = i32::from_be_bytes([rest[8], rest[9], rest[10], rest[11]]);
        if len < 0 {
            return Err(KafkaError::Protocol(format!("a fetched batch of length {len}")));
        }
        let whole = 12 + len as usize;
        if rest.len() < whole {
            break;
        }
        let mut one = rest.split_to(whole);
        let sets = RecordBatchDecoder::decode_all(&mut one)
            .map_err(|e| KafkaError::Protocol(format!("a fetched batch: {e}")))?;
        out.extend(sets.into_iter().flat_map(|s| s.records));
    }
    Ok(out)
}

impl KafkaConn {
    /// Metadata of one topic (created by the broker if it auto-creates).
    pub async fn metadata(&mut self, topic: &str) -> KResult<TopicMeta> {
        let req = MetadataRequest::default()
            .with_topics(Some(vec![
                metadata_request::MetadataRequestTopic::default().with_name(Some(TopicName(name(topic))))
            ]))
            .with_allow_auto_topic_creation(true);
        let r: MetadataResponse = self.request(ApiKey::Metadata, &req).await?;
        let t = r.topics.into_iter().next().ok_or_else(|| shape("topic"))?;
        Ok(TopicMeta {
            error: t.error_code,
            partitions: t
                .partitions
                .iter()
                .map(|p| PartitionMeta { index: p.partition_index, leader: p.leader_id.0, error: p.error_code })
                .collect(),
            brokers: r.brokers.iter().map(|b| (b.node_id.0, b.host.to_string(), b.port)).collect(),
            controller: r.controller_id.0,
        })
    }

    /// The controller's node id (-1 when none) and the brokers, from a Metadata that names
    /// no topic (so nothing is auto-created by asking).
    pub async fn controller(&mut self) -> KResult<(i32, Vec<(i32, String, i32)>)> {
        let req = MetadataRequest::default().with_topics(Some(Vec::new())).with_allow_auto_topic_creation(false);
        let r: MetadataResponse = self.request(ApiKey::Metadata, &req).await?;
        Ok((r.controller_id.0, r.brokers.iter().map(|b| (b.node_id.0, b.host.to_string(), b.port)).collect()))
    }

    /// CreateTopics for one topic of `partitions` partitions (replication 1).
    pub async fn create_topic(&mut self, topic: &str, partitions: i32) -> KResult<()> {
        self.create_topic_with(topic, partitions, &[]).await
    }

    /// Creates a topic with these configs, replicated as the broker's default says
    /// (replication factor -1, KIP-464): 1 would leave it unreplicated on a cluster.
    pub async fn create_topic_with(&mut self, topic: &str, partitions: i32, configs: &[(&str, &str)]) -> KResult<()> {
        let configs = configs
            .iter()
            .map(|(k, v)| {
                create_topics_request::CreatableTopicConfig::default()
                    .with_name(StrBytes::from_string(k.to_string()))
                    .with_value(Some(StrBytes::from_string(v.to_string())))
            })
            .collect();
        let req = CreateTopicsRequest::default().with_timeout_ms(self.timeout_ms()).with_topics(vec![
            create_topics_request::CreatableTopic::default()
                .with_name(TopicName(name(topic)))
                .with_num_partitions(partitions)
                .with_replication_factor(-1)
                .with_configs(configs),
        ]);
        let r: CreateTopicsResponse = self.request(ApiKey::CreateTopics, &req).await?;
        let t = r.topics.first().ok_or_else(|| shape("topic"))?;
        code(t.error_code, t.error_message.as_ref())
    }

    /// An idempotent producer's id and epoch (no transactional id).
    pub async fn init_producer_id(&mut self) -> KResult<(i64, i16)> {
        let req = InitProducerIdRequest::default()
            .with_transactional_id(None)
            .with_transaction_timeout_ms(60_000)
            .with_producer_id((-1).into())
            .with_producer_epoch(-1);
        let r: InitProducerIdResponse = self.request(ApiKey::InitProducerId, &req).await?;
        code(r.error_code, None)?;
        Ok((r.producer_id.0, r.producer_epoch))
    }

    /// Produce `batch` (from [`record_batch`]) to one partition with acks=all;
    /// the base offset the broker gave it (or gave it before, for a retry it
    /// recognised).
    pub async fn produce(&mut self, topic: &str, partition: i32, batch: &Bytes) -> KResult<i64> {
        let req = ProduceRequest::default().with_acks(-1).with_timeout_ms(self.timeout_ms()).with_topic_data(vec![
            produce_request::TopicProduceData::default().with_name(TopicName(name(topic))).with_partition_data(vec![
                produce_request::PartitionProduceData::default()
                    .with_index(partition)
                    .with_records(Some(batch.clone())),
            ]),
        ]);
        let r: ProduceResponse = self.request(ApiKey::Produce, &req).await?;
        let p = r
            .responses
            .first()
            .and_then(|t| t.partition_responses.iter().find(|p| p.index == partition))
            .ok_or_else(|| shape("partition"))?;
        code(p.error_code, p.error_message.as_ref())?;
        Ok(p.base_offset)
    }

    /// Fetch one partition from `offset` (no fetch session), waiting up to
    /// `max_wait_ms` for at least one byte; about `max_bytes` of batches (the
    /// first batch comes whole whatever its size, KIP-74), at most [`FETCH_MAX_BYTES`].
    pub async fn fetch(
        &mut self,
        topic: &str,
        partition: i32,
        offset: i64,
        max_wait_ms: i32,
        max_bytes: i32,
    ) -> KResult<Fetched> {
        let p = self.fetch_one(topic, partition, offset, max_wait_ms, max_bytes, 0).await?;
        let mut records = match &p.records {
            Some(b) => decode_records(b)?,
            None => Vec::new(),
        };
        // The first batch may start before the asked offset.
        records.retain(|(o, _)| *o >= offset);
        if records.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(KafkaError::Protocol("fetched offsets are not increasing".into()));
        }
        Ok(Fetched { high_watermark: p.high_watermark, log_start: p.log_start_offset, records })
    }

    /// One partition's Fetch answer (no fetch session) at `isolation` (0: read_uncommitted,
    /// 1: read_committed), its error codes judged; at most [`FETCH_MAX_BYTES`].
    pub(super) async fn fetch_one(
        &mut self,
        topic: &str,
        partition: i32,
        offset: i64,
        max_wait_ms: i32,
        max_bytes: i32,
        isolation: i8,
    ) -> KResult<fetch_response::PartitionData> {
        let max_bytes = max_bytes.clamp(1, FETCH_MAX_BYTES);
        let req = FetchRequest::default()
            .with_replica_id((-1).into())
            .with_max_wait_ms(max_wait_ms)
            .with_min_bytes(1)
            .with_max_bytes(max_bytes)
            .with_isolation_level(isolation)
            .with_session_id(0)
            .with_session_epoch(-1)
            .with_topics(vec![fetch_request::FetchTopic::default()
                .with_topic(TopicName(name(topic)))
                .with_partitions(vec![fetch_request::FetchPartition::default()
                    .with_partition(partition)
                    .with_fetch_offset(offset)
                    .with_partition_max_bytes(max_bytes)])]);
        let r: FetchResponse = self.request(ApiKey::Fetch, &req).await?;
        code(r.error_code, None)?;
        let p = r
            .responses
            .into_iter()
            .next()
            .and_then(|t| t.partitions.into_iter().find(|p| p.partition_index == partition))
            .ok_or_else(|| shape("partition"))?;
        code(p.error_code, None)?;
        Ok(p)
    }

    /// A standalone commit (generation -1, no member): `group`'s next offset on one partition.
    pub async fn offset_commit(&mut self, group: &str, topic: &str, partition: i32, offset: i64) -> KResult<()> {
        let req = OffsetCommitRequest::default()
            .with_group_id(GroupId(name(group)))
            .with_generation_id_or_member_epoch(-1)
            .with_retention_time_ms(-1)
            .with_topics(vec![offset_commit_request::OffsetCommitRequestTopic::default()
                .with_name(TopicName(name(topic)))
                .with_partitions(vec![offset_commit_request::OffsetCommitRequestPartition::default()
                    .with_partition_index(partition)
                    .with_committed_offset(offset)])]);
        let r: OffsetCommitResponse = self.request(ApiKey::OffsetCommit, &req).await?;
        let p = r
            .topics
            .first()
            .and_then(|t| t.partitions.iter().find(|p| p.partition_index == partition))
            .ok_or_else(|| shape("partition"))?;
        code(p.error_code, None)
    }

    /// `group`'s committed offset on one partition (-1: none).
    pub async fn offset_fetch(&mut self, group: &str, topic: &str, partition: i32) -> KResult<i64> {
        let req = OffsetFetchRequest::default().with_group_id(GroupId(name(group))).with_topics(Some(vec![
            offset_fetch_request::OffsetFetchRequestTopic::default()
                .with_name(TopicName(name(topic)))
                .with_partition_indexes(vec![partition]),
        ]));
        let r: OffsetFetchResponse = self.request(ApiKey::OffsetFetch, &req).await?;
        code(r.error_code, None)?;
        let p = r
            .topics
            .first()
            .and_then(|t| t.partitions.iter().find(|p| p.partition_index == partition))
            .ok_or_else(|| shape("partition"))?;
        code(p.error_code, None)?;
        Ok(p.committed_offset)
    }

    fn timeout_ms(&self) -> i32 {
        i32::try_from(self.timeout.as_millis()).unwrap_or(i32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;

    #[test]
    fn a_batch_carries_the_producer_fields_asked_for_and_decodes_back() {
        let p = ProducerSeq { id: 7, epoch: 2, seq: 40 };
        let b = record_batch(&[b"a", b"bc"], Some(p)).unwrap();
        // The v2 header: producer id at 43, epoch at 51, base sequence at 53, count at 57.
        assert_eq!(i64::from_be_bytes(b[43..51].try_into().unwrap()), 7);
        assert_eq!(i16::from_be_bytes(b[51..53].try_into().unwrap()), 2);
        assert_eq!(i32::from_be_bytes(b[53..57].try_into().unwrap()), 40);
        assert_eq!(i32::from_be_bytes(b[57..61].try_into().unwrap()), 2);
        let plain = record_batch(&[b"x"], None).unwrap();
        assert_eq!(i64::from_be_bytes(plain[43..51].try_into().unwrap()), -1);
        assert_eq!(i32::from_be_bytes(plain[53..57].try_into().unwrap()), -1);
        let mut two = BytesMut::from(&b[..]);
        two.extend_from_slice(&plain);
        let got = decode_records(&two.freeze()).unwrap();
        let values: Vec<&[u8]> = got.iter().map(|(_, v)| v.as_deref().unwrap()).collect();
        assert_eq!(values, vec![&b"a"[..], b"bc", b"x"]);
    }

    #[test]
    fn a_batch_cut_short_is_left_out_and_garbage_is_an_error() {
        let b = record_batch(&[b"a"], None).unwrap();
        let mut v = b.to_vec();
        v.extend_from_slice(&b[..b.len() - 3]);
        assert_eq!(decode_records(&Bytes::from(v)).unwrap().len(), 1);
        let mut bad = b.to_vec();
        bad[8..12].copy_from_slice(&(-4i32).to_be_bytes());
        assert!(decode_records(&Bytes::from(bad)).is_err());
        let mut bad = b.to_vec();
        let n = bad.len();
        bad[n - 1] ^= 0xff;
        bad[20] ^= 0xff;
        let _ = decode_records(&Bytes::from(bad)); // must not panic
        assert!(decode_records(&Bytes::new()).unwrap().is_empty());
    }
}
