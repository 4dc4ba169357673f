//! Kafka transactions over the raw client (D48): a transactional id's requests, fetches
//! at either isolation level, and the values a client keeps after its aborted filter.
#![allow(dead_code)]

use super::*;
use bytes::Bytes;
use kafka_protocol::messages::*;
use kafka_protocol::records::{Compression, RecordBatchDecoder};

pub const INVALID_TXN_STATE: i16 = 48;
pub const PRODUCER_FENCED: i16 = 90;

pub fn txn_batch(values: &[&[u8]], pid: i64, epoch: i16, seq: i32) -> Bytes {
    let b = batch(values, Compression::None, Some((pid, epoch, seq)));
    let mut v = b.to_vec();
    let attrs = i16::from_be_bytes([v[21], v[22]]) | 0x10;
    v[21..23].copy_from_slice(&attrs.to_be_bytes());
    let crc = crc32c(&v[21..]);
    v[17..21].copy_from_slice(&crc.to_be_bytes());
    Bytes::from(v)
}

pub struct Txn<'a> {
    pub k: &'a mut Kafka,
    pub tid: &'a str,
    pub pid: i64,
    pub epoch: i16,
}

pub fn init(k: &mut Kafka, tid: &str, timeout_ms: i32) -> InitProducerIdResponse {
    let req = InitProducerIdRequest::default()
        .with_transactional_id(Some(TransactionalId(name(tid))))
        .with_transaction_timeout_ms(timeout_ms)
        .with_producer_id((-1).into())
        .with_producer_epoch(-1);
    k.call(ApiKey::InitProducerId, 4, &req)
}

impl Txn<'_> {
    pub fn add(&mut self, t: &str, parts: &[i32]) -> i16 {
        let req = AddPartitionsToTxnRequest::default()
            .with_v3_and_below_transactional_id(TransactionalId(name(self.tid)))
            .with_v3_and_below_producer_id(self.pid.into())
            .with_v3_and_below_producer_epoch(self.epoch)
            .with_v3_and_below_topics(vec![add_partitions_to_txn_request::AddPartitionsToTxnTopic::default()
                .with_name(topic(t))
                .with_partitions(parts.to_vec())]);
        let r: AddPartitionsToTxnResponse = self.k.call(ApiKey::AddPartitionsToTxn, 3, &req);
        r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
    }

    pub fn produce(
        &mut self,
        t: &str,
        p: i32,
        values: &[&[u8]],
        seq: i32,
    ) -> produce_response::PartitionProduceResponse {
        let req = produce_req(t, p, txn_batch(values, self.pid, self.epoch, seq), -1)
            .with_transactional_id(Some(TransactionalId(name(self.tid))));
        let r: ProduceResponse = self.k.call(ApiKey::Produce, 9, &req);
        r.responses[0].partition_responses[0].clone()
    }

    /// AddOffsetsToTxn then TxnOffsetCommit of `offset` on partition 0 of `t`.
    pub fn send_offsets(&mut self, group: &str, t: &str, offset: i64) -> (i16, i16) {
        let add = AddOffsetsToTxnRequest::default()
            .with_transactional_id(TransactionalId(name(self.tid)))
            .with_producer_id(self.pid.into())
            .with_producer_epoch(self.epoch)
            .with_group_id(GroupId(name(group)));
        let a: AddOffsetsToTxnResponse = self.k.call(ApiKey::AddOffsetsToTxn, 3, &add);
        let commit = TxnOffsetCommitRequest::default()
            .with_transactional_id(TransactionalId(name(self.tid)))
            .with_group_id(GroupId(name(group)))
            .with_producer_id(self.pid.into())
            .with_producer_epoch(self.epoch)
            .with_generation_id(-1)
            .with_member_id(name(""))
            .with_topics(vec![txn_offset_commit_request::TxnOffsetCommitRequestTopic::default()
                .with_name(topic(t))
                .with_partitions(vec![txn_offset_commit_request::TxnOffsetCommitRequestPartition::default()
                    .with_partition_index(0)
                    .with_committed_offset(offset)])]);
        let c: TxnOffsetCommitResponse = self.k.call(ApiKey::TxnOffsetCommit, 3, &commit);
        (a.error_code, c.topics[0].partitions[0].error_code)
    }

    pub fn end(&mut self, commit: bool) -> i16 {
        let req = EndTxnRequest::default()
            .with_transactional_id(TransactionalId(name(self.tid)))
            .with_producer_id(self.pid.into())
            .with_producer_epoch(self.epoch)
            .with_committed(commit);
        let r: EndTxnResponse = self.k.call(ApiKey::EndTxn, 3, &req);
        r.error_code
    }
}

/// The offset `group` has committed on partition 0 of `t` (OffsetFetch v7; -1 for none).
pub fn committed_offset(k: &mut Kafka, group: &str, t: &str) -> i64 {
    let req = OffsetFetchRequest::default().with_group_id(GroupId(name(group))).with_topics(Some(vec![
        offset_fetch_request::OffsetFetchRequestTopic::default().with_name(topic(t)).with_partition_indexes(vec![0]),
    ]));
    let r: OffsetFetchResponse = k.call(ApiKey::OffsetFetch, 7, &req);
    r.topics[0].partitions[0].committed_offset
}

/// A Fetch of partition 0 from offset 0 at the given isolation level.
pub fn fetch_at(k: &mut Kafka, t: &str, committed: bool) -> fetch_response::PartitionData {
    let req = fetch_req(t, 0, 0, 0, 0, -1).with_isolation_level(i8::from(committed));
    let r: FetchResponse = k.call(ApiKey::Fetch, 11, &req);
    r.responses[0].partitions[0].clone()
}

/// (offset, value, is_control, producer id) of every record fetched.
pub fn fetched(d: &fetch_response::PartitionData) -> Vec<(i64, Bytes, bool, i64)> {
    let mut b = d.records.clone().unwrap_or_default();
    RecordBatchDecoder::decode_all(&mut b)
        .unwrap()
        .into_iter()
        .flat_map(|s| s.records)
        .map(|r| (r.offset, r.value.unwrap_or_default(), r.control, r.producer_id))
        .collect()
}

/// The values a Kafka client keeps: as every client does with read_committed, a
/// producer's records from an aborted transaction's first offset up to its marker are
/// dropped, and control records are never values.
pub fn data_values(d: &fetch_response::PartitionData) -> Vec<Bytes> {
    let aborted = d.aborted_transactions.clone().unwrap_or_default();
    let mut dropping = std::collections::HashSet::new();
    let mut out = Vec::new();
    for (offset, value, control, pid) in fetched(d) {
        if aborted.iter().any(|a| a.producer_id.0 == pid && a.first_offset == offset) {
            dropping.insert(pid);
        }
        if control {
            dropping.remove(&pid);
        } else if !dropping.contains(&pid) {
            out.push(value);
        }
    }
    out
}
