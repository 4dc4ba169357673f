//! Unit tests of the produce-side batch checks (records.rs).

use super::*;
use baton_wire::{encode_batch, NewRecord};
use bytes::{Bytes, BytesMut};
use kafka_protocol::records::{Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType};

const BIG: u64 = 64 << 20;

fn batch(n: usize) -> Vec<u8> {
    let recs: Vec<NewRecord> = (0..n).map(|_| NewRecord { key: None, value: b"v", txid: None, trace: None }).collect();
    encode_batch(&recs, 1).unwrap()
}

fn compressed(values: &[&[u8]], compression: Compression) -> Vec<u8> {
    let recs: Vec<Record> = values
        .iter()
        .enumerate()
        .map(|(i, v)| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: i as i32 - 1,
            timestamp: 1_700_000_000_000,
            key: None,
            value: Some(Bytes::copy_from_slice(v)),
            headers: Default::default(),
        })
        .collect();
    let mut b = BytesMut::new();
    RecordBatchEncoder::encode(&mut b, &recs, &RecordEncodeOptions { version: 2, compression }).unwrap();
    b.to_vec()
}

/// Claim `count` records in the header (count and last offset delta agree).
fn claim(b: &mut [u8], count: i32) {
    b[57..61].copy_from_slice(&count.to_be_bytes());
    b[23..27].copy_from_slice(&(count - 1).to_be_bytes());
}

#[test]
fn splits_concatenated_batches() {
    let mut data = batch(2);
    data.extend(batch(3));
    let v = split_batches(&data, BIG).unwrap();
    assert_eq!(v.len(), 2);
    assert_eq!(v[0], batch(2));
}

#[test]
fn refuses_broken_framing() {
    let b = batch(2);
    assert!(matches!(split_batches(&b[..b.len() - 1], BIG), Err(BatchError::Corrupt(_))));
    assert!(matches!(split_batches(&b[..5], BIG), Err(BatchError::Corrupt(_))));
    assert!(matches!(split_batches(&[], BIG), Err(BatchError::Invalid(_))));
    let mut lie = b.clone();
    claim(&mut lie, 5);
    assert!(matches!(split_batches(&lie, BIG), Err(BatchError::Invalid(_))));
    let mut txn = b.clone();
    txn[22] |= 0x10;
    assert!(matches!(split_batches(&txn, BIG), Err(BatchError::Invalid(_))));
    let mut magic = b;
    magic[16] = 1;
    assert!(matches!(split_batches(&magic, BIG), Err(BatchError::Corrupt(_))));
}

#[test]
fn every_compression_is_counted_and_a_lie_is_refused() {
    for c in [Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd] {
        let b = compressed(&[b"one", b"two", b"three"], c);
        assert_eq!(split_batches(&b, BIG).unwrap().len(), 1, "{c:?}");
        for lie in [1, 2, 4, 5_000_000, i32::MAX] {
            let mut l = b.clone();
            claim(&mut l, lie);
            match split_batches(&l, BIG) {
                Err(BatchError::Invalid(m)) => assert!(m.contains(&format!("{lie} records")), "{c:?}: {m}"),
                other => panic!("{c:?} claiming {lie}: {other:?}"),
            }
        }
    }
}

#[test]
fn a_record_whose_offset_delta_is_not_its_index_is_refused() {
    let mut b = batch(2);
    // The second record starts after the first: its length varint, then
    // attributes, timestamp delta (0) and the offset delta.
    let first_len = (b[BATCH_HEADER_LEN] >> 1) as usize;
    let second = BATCH_HEADER_LEN + 1 + first_len;
    assert_eq!(b[second + 3], 2, "zigzag 1");
    b[second + 3] = 4;
    match split_batches(&b, BIG) {
        Err(BatchError::Invalid(m)) => assert!(m.contains("offset delta 2"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn decompression_stops_at_the_bound() {
    let big = vec![0u8; 200_000];
    for c in [Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd] {
        let b = compressed(&[&big], c);
        assert!(b.len() < 20_000, "{c:?} compresses zeros: {}", b.len());
        assert!(split_batches(&b, 300_000).is_ok(), "{c:?}");
        match split_batches(&b, 100_000) {
            Err(BatchError::TooLarge(m)) => assert!(m.contains("100000"), "{c:?}: {m}"),
            other => panic!("{c:?}: {other:?}"),
        }
    }
}

#[test]
fn garbage_inside_a_compressed_batch_is_corrupt() {
    for codec in 1..=4u8 {
        let mut b = batch(1);
        b[22] |= codec;
        assert!(matches!(split_batches(&b, BIG), Err(BatchError::Corrupt(_))), "codec {codec}");
    }
}
