//! RecordBatch v2 encode/decode for stored messages.
//!
//! Owns: turning HTTP items into a batch (base offset 0, patched by the
//! planner once it knows the offset) and turning stored batches back into
//! records. Must never hand out a batch whose CRC it did not compute or check:
//! the base offset lives outside the CRC'd region, which is why patching it
//! after the fact is safe.

use bytes::Bytes;
use kafka_protocol::records::{NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID};

/// Header that carries Baton's transaction id on records written over HTTP.
pub const TXID_HEADER: &str = "baton-txid";
/// Header that carries the `traceId` a pushed item named (Queen's tracing).
pub const TRACE_HEADER: &str = "baton-trace";

/// Size of the fixed RecordBatch v2 header (up to and including the record count).
pub const BATCH_HEADER_LEN: usize = 61;

#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("bad record batch: {0}")]
    BadBatch(String),
}

/// One record to encode.
#[derive(Default)]
pub struct NewRecord<'a> {
    pub key: Option<&'a [u8]>,
    pub value: &'a [u8],
    pub txid: Option<&'a str>,
    pub trace: Option<&'a str>,
}

/// One decoded record with its absolute offset.
#[derive(Debug, Clone)]
pub struct StoredRecord {
    pub offset: u64,
    pub timestamp_ms: i64,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub txid: Option<String>,
    pub trace: Option<String>,
}

/// Encode records as one uncompressed RecordBatch v2 with base offset 0.
///
/// Written by hand rather than through kafka-protocol's encoder: this runs
/// for every pushed message, and building its `Record` values costs several
/// allocations per record. The round-trip tests decode the result with
/// kafka-protocol, so the two cannot drift apart.
pub fn encode_batch(records: &[NewRecord<'_>], timestamp_ms: i64) -> Result<Vec<u8>, WireError> {
    if records.is_empty() || records.len() > i32::MAX as usize {
        return Err(WireError::BadBatch("a batch holds 1 to i32::MAX records".into()));
    }
    let cap = BATCH_HEADER_LEN
        + records
            .iter()
            .map(|r| r.value.len() + r.txid.map_or(0, str::len) + r.trace.map_or(0, |t| t.len() + 16) + 32)
            .sum::<usize>();
    let mut b = Vec::with_capacity(cap);
    b.extend_from_slice(&0i64.to_be_bytes()); // base offset, patched by the planner
    b.extend_from_slice(&0i32.to_be_bytes()); // batch length, below
    b.extend_from_slice(&NO_PARTITION_LEADER_EPOCH.to_be_bytes());
    b.push(2); // magic
    b.extend_from_slice(&0u32.to_be_bytes()); // crc, below
                                              // Attributes 0: uncompressed, create-time timestamps (the push time), as kafka-protocol writes them.
    b.extend_from_slice(&0i16.to_be_bytes());
    b.extend_from_slice(&(records.len() as i32 - 1).to_be_bytes()); // last offset delta
    b.extend_from_slice(&timestamp_ms.to_be_bytes()); // base timestamp
    b.extend_from_slice(&timestamp_ms.to_be_bytes()); // max timestamp
    b.extend_from_slice(&NO_PRODUCER_ID.to_be_bytes());
    b.extend_from_slice(&NO_PRODUCER_EPOCH.to_be_bytes());
    b.extend_from_slice(&(-1i32).to_be_bytes()); // base sequence
    b.extend_from_slice(&(records.len() as i32).to_be_bytes());
    let mut rec = Vec::with_capacity(64);
    for (i, r) in records.iter().enumerate() {
        rec.clear();
        rec.push(0); // record attributes
        put_varint(&mut rec, 0); // timestamp delta
        put_varint(&mut rec, i as i64); // offset delta
        match r.key {
            Some(k) => {
                put_varint(&mut rec, k.len() as i64);
                rec.extend_from_slice(k);
            }
            None => put_varint(&mut rec, -1),
        }
        put_varint(&mut rec, r.value.len() as i64);
        rec.extend_from_slice(r.value);
        let headers = [(TXID_HEADER, r.txid), (TRACE_HEADER, r.trace)];
        put_varint(&mut rec, headers.iter().filter(|(_, v)| v.is_some()).count() as i64);
        for (name, v) in headers {
            if let Some(v) = v {
                put_varint(&mut rec, name.len() as i64);
                rec.extend_from_slice(name.as_bytes());
                put_varint(&mut rec, v.len() as i64);
                rec.extend_from_slice(v.as_bytes());
            }
        }
        put_varint(&mut b, rec.len() as i64);
        b.extend_from_slice(&rec);
    }
    let len = i32::try_from(b.len() - 12).map_err(|_| WireError::BadBatch("batch larger than 2 GiB".into()))?;
    b[8..12].copy_from_slice(&len.to_be_bytes());
    let crc = crc32c::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    Ok(b)
}

/// Batch attributes: the batch belongs to a transaction.
pub const ATTR_TRANSACTIONAL: i16 = 0x10;
/// Batch attributes: the batch holds one control record (a transaction marker).
pub const ATTR_CONTROL: i16 = 0x20;

/// Whether a whole v2 batch (header checked) belongs to a transaction.
pub fn is_transactional(batch: &[u8]) -> bool {
    i16::from_be_bytes([batch[21], batch[22]]) & ATTR_TRANSACTIONAL != 0
}

/// The control batch that ends `producer`'s transaction in a partition (a commit or abort
/// marker, as Kafka's transaction coordinator writes them), base offset 0. Its one record's
/// key is (version 0, type 1 commit / 0 abort) and its value (version 0, coordinator
/// epoch 0).
pub fn control_batch(producer: i64, epoch: i16, commit: bool, timestamp_ms: i64) -> Vec<u8> {
    let mut b = Vec::with_capacity(BATCH_HEADER_LEN + 24);
    b.extend_from_slice(&0i64.to_be_bytes());
    b.extend_from_slice(&0i32.to_be_bytes());
    b.extend_from_slice(&NO_PARTITION_LEADER_EPOCH.to_be_bytes());
    b.push(2);
    b.extend_from_slice(&0u32.to_be_bytes());
    b.extend_from_slice(&(ATTR_TRANSACTIONAL | ATTR_CONTROL).to_be_bytes());
    b.extend_from_slice(&0i32.to_be_bytes()); // last offset delta
    b.extend_from_slice(&timestamp_ms.to_be_bytes());
    b.extend_from_slice(&timestamp_ms.to_be_bytes());
    b.extend_from_slice(&producer.to_be_bytes());
    b.extend_from_slice(&epoch.to_be_bytes());
    b.extend_from_slice(&(-1i32).to_be_bytes()); // base sequence
    b.extend_from_slice(&1i32.to_be_bytes());
    let mut rec = vec![0u8]; // record attributes
    put_varint(&mut rec, 0); // timestamp delta
    put_varint(&mut rec, 0); // offset delta
    put_varint(&mut rec, 4);
    rec.extend_from_slice(&0i16.to_be_bytes());
    rec.extend_from_slice(&i16::from(commit).to_be_bytes());
    put_varint(&mut rec, 6);
    rec.extend_from_slice(&0i16.to_be_bytes());
    rec.extend_from_slice(&0i32.to_be_bytes());
    put_varint(&mut rec, 0); // headers
    put_varint(&mut b, rec.len() as i64);
    b.extend_from_slice(&rec);
    let len = (b.len() - 12) as i32;
    b[8..12].copy_from_slice(&len.to_be_bytes());
    let crc = crc32c::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    b
}

/// Kafka's zig-zag varint.
fn put_varint(buf: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        buf.push((z as u8) | 0x80);
        z >>= 7;
    }
    buf.push(z as u8);
}

/// Patch the base offset of a batch (outside the CRC'd region).
pub fn set_base_offset(batch: &mut [u8], base: u64) {
    batch[0..8].copy_from_slice(&(base as i64).to_be_bytes());
}

/// The fixed fields of a batch header that the broker needs without decoding records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    pub base_offset: i64,
    pub length: usize,
    pub record_count: u32,
    /// The offset of the last record minus the base offset, as written. Compaction keeps it
    /// when it drops records, so a batch always spans the offsets it was given.
    pub last_offset_delta: i32,
    pub max_timestamp: i64,
}

impl BatchHeader {
    /// The offsets this batch covers: `lastOffsetDelta + 1`, which is the record count of a
    /// batch as produced (the Kafka door checks it) and stays the same when compaction
    /// drops records from it.
    pub fn span(&self) -> u64 {
        (i64::from(self.last_offset_delta) + 1).max(0) as u64
    }
}

impl BatchHeader {
    /// Parse and check the header at the start of `buf` (which must hold the whole batch),
    /// the CRC of the whole batch included.
    pub fn parse(buf: &[u8]) -> Result<BatchHeader, WireError> {
        let h = Self::parse_unchecked_crc(buf)?;
        let crc = u32::from_be_bytes(buf[17..21].try_into().unwrap());
        if crc32c::crc32c(&buf[21..h.length]) != crc {
            return Err(WireError::BadBatch("crc mismatch".into()));
        }
        Ok(h)
    }

    /// [`Self::parse`] without the CRC: only for bytes already checked (see `read::Checked`).
    pub(crate) fn parse_unchecked_crc(buf: &[u8]) -> Result<BatchHeader, WireError> {
        if buf.len() < BATCH_HEADER_LEN {
            return Err(WireError::BadBatch("batch shorter than its header".into()));
        }
        let base_offset = i64::from_be_bytes(buf[0..8].try_into().unwrap());
        let batch_len = i32::from_be_bytes(buf[8..12].try_into().unwrap());
        if batch_len < (BATCH_HEADER_LEN - 12) as i32 {
            return Err(WireError::BadBatch(format!("batch length {batch_len} too small")));
        }
        let length = batch_len as usize + 12;
        if length > buf.len() {
            return Err(WireError::BadBatch("batch truncated".into()));
        }
        if buf[16] != 2 {
            return Err(WireError::BadBatch(format!("unsupported magic {}", buf[16])));
        }
        let max_timestamp = i64::from_be_bytes(buf[35..43].try_into().unwrap());
        let count = i32::from_be_bytes(buf[57..61].try_into().unwrap());
        if count < 0 {
            return Err(WireError::BadBatch("negative record count".into()));
        }
        let last_offset_delta = i32::from_be_bytes(buf[23..27].try_into().unwrap());
        Ok(BatchHeader { base_offset, length, record_count: count as u32, last_offset_delta, max_timestamp })
    }
}

/// Decode every batch in `buf` into records (any compression the crate supports).
pub fn decode_batches(buf: &[u8]) -> Result<Vec<StoredRecord>, WireError> {
    crate::read::decode_batches_where(buf, |_| true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_with_patched_base() {
        let recs = [
            NewRecord { key: None, value: b"{\"a\":1}", txid: Some("t1"), trace: Some("tr-1") },
            NewRecord { key: Some(b"k"), value: b"two", txid: None, trace: None },
        ];
        let mut b = encode_batch(&recs, 1_700_000_000_000).unwrap();
        set_base_offset(&mut b, 41);
        let h = BatchHeader::parse(&b).unwrap();
        assert_eq!(h.base_offset, 41);
        assert_eq!(h.record_count, 2);
        assert_eq!(h.length, b.len());
        let out = decode_batches(&b).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].offset, 41);
        assert_eq!(out[1].offset, 42);
        assert_eq!(out[0].txid.as_deref(), Some("t1"));
        assert_eq!(out[0].trace.as_deref(), Some("tr-1"));
        assert_eq!(out[1].txid, None);
        assert_eq!(out[1].trace, None);
        assert_eq!(out[1].key.as_deref(), Some(&b"k"[..]));
        assert_eq!(out[0].value.as_deref(), Some(&b"{\"a\":1}"[..]));
        assert_eq!(out[0].timestamp_ms, 1_700_000_000_000);
    }

    #[test]
    fn hand_encoder_matches_kafka_protocol() {
        use indexmap::IndexMap;
        use kafka_protocol::protocol::StrBytes;
        use kafka_protocol::records::{Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType};
        let vals: Vec<Vec<u8>> = (0..300).map(|i| vec![b'a' + (i % 26) as u8; i * 3]).collect();
        let ids: Vec<String> = (0..300).map(|i| format!("tx-{i}")).collect();
        let recs: Vec<NewRecord> = (0..300)
            .map(|i| NewRecord {
                key: (i % 3 == 0).then_some(&b"key"[..]),
                value: &vals[i],
                txid: (i % 2 == 0).then_some(ids[i].as_str()),
                trace: (i % 5 == 0).then_some(ids[i].as_str()),
            })
            .collect();
        let ours = encode_batch(&recs, 1_700_000_000_123).unwrap();
        let theirs: Vec<Record> = recs
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut headers = IndexMap::new();
                if let Some(t) = r.txid {
                    headers.insert(StrBytes::from_static_str(TXID_HEADER), Some(Bytes::copy_from_slice(t.as_bytes())));
                }
                if let Some(t) = r.trace {
                    headers.insert(StrBytes::from_static_str(TRACE_HEADER), Some(Bytes::copy_from_slice(t.as_bytes())));
                }
                Record {
                    transactional: false,
                    control: false,
                    delete_horizon: false,
                    partition_leader_epoch: NO_PARTITION_LEADER_EPOCH,
                    producer_id: NO_PRODUCER_ID,
                    producer_epoch: NO_PRODUCER_EPOCH,
                    timestamp_type: TimestampType::LogAppend,
                    offset: i as i64,
                    sequence: i as i32 - 1,
                    timestamp: 1_700_000_000_123,
                    key: r.key.map(Bytes::copy_from_slice),
                    value: Some(Bytes::copy_from_slice(r.value)),
                    headers,
                }
            })
            .collect();
        let mut buf = bytes::BytesMut::new();
        let opts = RecordEncodeOptions { version: 2, compression: Compression::None };
        RecordBatchEncoder::encode(&mut buf, theirs.iter(), &opts).unwrap();
        let theirs = buf.to_vec();
        let first_diff = ours.iter().zip(&theirs).position(|(a, b)| a != b);
        assert!(
            ours == theirs,
            "differs from kafka-protocol's encoder at byte {first_diff:?} (len {} vs {})",
            ours.len(),
            theirs.len()
        );
        assert_eq!(decode_batches(&ours).unwrap().len(), 300);
    }

    #[test]
    fn control_batch_decodes_as_kafka_marker() {
        use kafka_protocol::records::RecordBatchDecoder;
        for commit in [true, false] {
            let mut b = control_batch(42, 7, commit, 1_700_000_000_000);
            set_base_offset(&mut b, 9);
            assert_eq!(BatchHeader::parse(&b).unwrap().record_count, 1);
            let mut buf = bytes::Bytes::from(b);
            let recs = RecordBatchDecoder::decode(&mut buf).unwrap().records;
            assert_eq!(recs.len(), 1);
            let r = &recs[0];
            assert!(r.control && r.transactional);
            assert_eq!((r.producer_id, r.producer_epoch, r.offset), (42, 7, 9));
            let key = r.key.as_ref().unwrap();
            assert_eq!(&key[..], &[0, 0, 0, u8::from(commit)]);
            assert_eq!(r.value.as_ref().unwrap().len(), 6);
        }
    }

    #[test]
    fn header_rejects_damage() {
        let mut b = encode_batch(&[NewRecord { key: None, value: b"x", txid: None, trace: None }], 1).unwrap();
        assert!(BatchHeader::parse(&b[..20]).is_err());
        let last = b.len() - 1;
        b[last] ^= 0xff;
        assert!(matches!(BatchHeader::parse(&b), Err(WireError::BadBatch(m)) if m.contains("crc")));
    }
}
