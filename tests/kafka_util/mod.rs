//! A minimal blocking Kafka client for the raw-protocol tests, built on the
//! `kafka-protocol` codec: frame a request, read a response, build batches.
#![allow(dead_code)]

pub mod share;
pub mod txn;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

pub struct Kafka {
    pub s: TcpStream,
    next: i32,
}

pub fn name(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

pub fn topic(s: &str) -> TopicName {
    TopicName(name(s))
}

impl Kafka {
    pub fn connect(port: u16) -> Kafka {
        let s = TcpStream::connect(("127.0.0.1", port)).expect("connect to the Kafka listener");
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s.set_nodelay(true).unwrap();
        Kafka { s, next: 1 }
    }

    /// Frame and send a request; returns its correlation id.
    pub fn send<R: Encodable>(&mut self, api: ApiKey, version: i16, body: &R) -> i32 {
        let cid = self.next;
        self.next += 1;
        let mut b = BytesMut::new();
        b.put_i32(0);
        RequestHeader::default()
            .with_request_api_key(api as i16)
            .with_request_api_version(version)
            .with_correlation_id(cid)
            .with_client_id(Some(name("baton-test")))
            .encode(&mut b, api.request_header_version(version))
            .unwrap();
        body.encode(&mut b, version).unwrap();
        let len = (b.len() - 4) as i32;
        b[0..4].copy_from_slice(&len.to_be_bytes());
        self.s.write_all(&b).unwrap();
        cid
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).unwrap();
    }

    /// One response frame (without its length), or None when the server closed.
    pub fn recv_raw(&mut self) -> Option<Bytes> {
        let mut len = [0u8; 4];
        if self.s.read_exact(&mut len).is_err() {
            return None;
        }
        let mut buf = vec![0u8; i32::from_be_bytes(len) as usize];
        self.s.read_exact(&mut buf).ok()?;
        Some(Bytes::from(buf))
    }

    /// Read and decode one response; returns (correlation id, body).
    pub fn recv<T: Decodable>(&mut self, api: ApiKey, version: i16) -> (i32, T) {
        let mut b = self.recv_raw().expect("a response, not a closed connection");
        let hv = if api == ApiKey::ApiVersions { 0 } else { api.response_header_version(version) };
        let h = ResponseHeader::decode(&mut b, hv).unwrap();
        let body = T::decode(&mut b, version).unwrap();
        assert!(!b.has_remaining(), "{api:?} v{version}: {} bytes left over", b.remaining());
        (h.correlation_id, body)
    }

    pub fn call<Q: Encodable, T: Decodable>(&mut self, api: ApiKey, version: i16, body: &Q) -> T {
        let cid = self.send(api, version, body);
        let (got, r) = self.recv(api, version);
        assert_eq!(got, cid, "answers come back in order");
        r
    }

    /// True when the server closed the connection (EOF or reset).
    pub fn closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(self.s.read(&mut b), Ok(0) | Err(_))
    }

    pub fn metadata(&mut self, topics: &[&str]) -> MetadataResponse {
        let req = MetadataRequest::default()
            .with_topics(Some(
                topics
                    .iter()
                    .map(|t| metadata_request::MetadataRequestTopic::default().with_name(Some(topic(t))))
                    .collect(),
            ))
            .with_allow_auto_topic_creation(true);
        self.call(ApiKey::Metadata, 9, &req)
    }

    pub fn produce(
        &mut self,
        t: &str,
        partition: i32,
        records: Bytes,
        acks: i16,
    ) -> produce_response::PartitionProduceResponse {
        let req = produce_req(t, partition, records, acks);
        let r: ProduceResponse = self.call(ApiKey::Produce, 9, &req);
        r.responses[0].partition_responses[0].clone()
    }

    /// CreateTopics v5 of one topic with `n` partitions; panics unless it was created.
    pub fn create_topic(&mut self, t: &str, n: i32) {
        let req = CreateTopicsRequest::default().with_timeout_ms(30_000).with_topics(vec![
            create_topics_request::CreatableTopic::default()
                .with_name(topic(t))
                .with_num_partitions(n)
                .with_replication_factor(1),
        ]);
        let r: CreateTopicsResponse = self.call(ApiKey::CreateTopics, 5, &req);
        assert_eq!(r.topics[0].error_code, 0, "{r:?}");
    }

    pub fn fetch(&mut self, t: &str, partition: i32, offset: i64, max_wait_ms: i32) -> fetch_response::PartitionData {
        let r: FetchResponse = self.call(ApiKey::Fetch, 11, &fetch_req(t, partition, offset, max_wait_ms, 0, -1));
        r.responses[0].partitions[0].clone()
    }

    pub fn list_offset(
        &mut self,
        t: &str,
        partition: i32,
        ts: i64,
    ) -> list_offsets_response::ListOffsetsPartitionResponse {
        let req = ListOffsetsRequest::default().with_replica_id((-1).into()).with_topics(vec![
            list_offsets_request::ListOffsetsTopic::default().with_name(topic(t)).with_partitions(vec![
                list_offsets_request::ListOffsetsPartition::default()
                    .with_partition_index(partition)
                    .with_timestamp(ts),
            ]),
        ]);
        let r: ListOffsetsResponse = self.call(ApiKey::ListOffsets, 5, &req);
        r.topics[0].partitions[0].clone()
    }
}

pub fn produce_req(t: &str, partition: i32, records: Bytes, acks: i16) -> ProduceRequest {
    ProduceRequest::default().with_acks(acks).with_timeout_ms(5000).with_topic_data(vec![
        produce_request::TopicProduceData::default().with_name(topic(t)).with_partition_data(vec![
            produce_request::PartitionProduceData::default().with_index(partition).with_records(Some(records)),
        ]),
    ])
}

pub fn fetch_req(t: &str, partition: i32, offset: i64, max_wait_ms: i32, session: i32, epoch: i32) -> FetchRequest {
    FetchRequest::default()
        .with_replica_id((-1).into())
        .with_max_wait_ms(max_wait_ms)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_session_id(session)
        .with_session_epoch(epoch)
        .with_topics(vec![fetch_request::FetchTopic::default().with_topic(topic(t)).with_partitions(vec![
            fetch_request::FetchPartition::default()
                .with_partition(partition)
                .with_fetch_offset(offset)
                .with_partition_max_bytes(1 << 20),
        ])])
}

/// One v2 batch of `values` (base offset 0), optionally as an idempotent producer.
pub fn batch(values: &[&[u8]], compression: Compression, producer: Option<(i64, i16, i32)>) -> Bytes {
    let stamps: Vec<i64> = (0..values.len() as i64).map(|i| 1_700_000_000_000 + i).collect();
    batch_stamped(values, &stamps, compression, producer)
}

/// Like [`batch`], each record with the CreateTime given for it.
pub fn batch_stamped(
    values: &[&[u8]],
    stamps: &[i64],
    compression: Compression,
    producer: Option<(i64, i16, i32)>,
) -> Bytes {
    let recs: Vec<(Option<Bytes>, Option<Bytes>)> =
        values.iter().map(|v| (None, Some(Bytes::copy_from_slice(v)))).collect();
    keyed_batch(&recs, stamps, compression, producer)
}

/// One v2 batch of (key, value) records (a `None` value is a tombstone), each with the
/// CreateTime given for it.
pub fn keyed_batch(
    kvs: &[(Option<Bytes>, Option<Bytes>)],
    stamps: &[i64],
    compression: Compression,
    producer: Option<(i64, i16, i32)>,
) -> Bytes {
    let (pid, epoch, seq) = producer.unwrap_or((-1, -1, -1));
    let recs: Vec<Record> = kvs
        .iter()
        .enumerate()
        .map(|(i, (k, v))| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: pid,
            producer_epoch: epoch,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            // offset - sequence must stay constant for the encoder to keep one
            // batch; without a producer that makes the base sequence -1.
            sequence: if seq < 0 { i as i32 - 1 } else { seq + i as i32 },
            timestamp: stamps[i],
            key: k.clone(),
            value: v.clone(),
            headers: Default::default(),
        })
        .collect();
    let mut b = BytesMut::new();
    RecordBatchEncoder::encode(&mut b, &recs, &RecordEncodeOptions { version: 2, compression }).unwrap();
    b.freeze()
}

/// Decode fetched bytes into (offset, value).
pub fn records(bytes: &Bytes) -> Vec<(i64, Bytes)> {
    let mut b = bytes.clone();
    RecordBatchDecoder::decode_all(&mut b)
        .unwrap()
        .into_iter()
        .flat_map(|s| s.records)
        .map(|r| (r.offset, r.value.unwrap_or_default()))
        .collect()
}

/// The same batch with another base offset (what the broker stores).
pub fn with_base(b: &Bytes, base: i64) -> Vec<u8> {
    let mut v = b.to_vec();
    v[0..8].copy_from_slice(&base.to_be_bytes());
    v
}

/// CRC-32C (Castagnoli), bit by bit: the tests need it to forge batches
/// whose header lies while the checksum still holds.
pub fn crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0x82f6_3b78 } else { crc >> 1 };
        }
    }
    !crc
}

/// Make a v2 batch claim `count` records (record count and last offset
/// delta agree with each other, not with the records) and fix its CRC.
pub fn claim_records(b: &Bytes, count: i32) -> Bytes {
    let mut v = b.to_vec();
    v[57..61].copy_from_slice(&count.to_be_bytes());
    v[23..27].copy_from_slice(&(count - 1).to_be_bytes());
    let crc = crc32c(&v[21..]);
    v[17..21].copy_from_slice(&crc.to_be_bytes());
    Bytes::from(v)
}
