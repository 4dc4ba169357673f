//! Compaction's view of one stored batch (issue 15, D50): each record's offset and key,
//! and the same batch with some records left out.
//!
//! Owns the rewrite of one RecordBatch v2. Must never change an offset or a batch's
//! place in the partition: the rewrite keeps the base offset, `lastOffsetDelta`, the
//! timestamps, the producer fields and the attributes, and every kept record's bytes as
//! they were (its offset delta with them), so each kept record keeps its offset and the
//! batch still spans the offsets it was given, even with no record left. A compressed
//! batch is compressed again with its own codec.

use crate::read::Cur;
use crate::records::{BatchHeader, WireError, ATTR_CONTROL, ATTR_TRANSACTIONAL, BATCH_HEADER_LEN};
use bytes::{Bytes, BytesMut};
use kafka_protocol::compression::{Compressor, Decompressor, Gzip, Lz4, Snappy, Zstd};

fn bad(m: impl Into<String>) -> WireError {
    WireError::BadBatch(m.into())
}

/// What compaction must know of a batch besides its records' keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchKind {
    /// A transaction marker: never dropped, holds no key.
    pub control: bool,
    /// Written inside a Kafka transaction (its records count only if it committed).
    pub transactional: bool,
}

/// One record's place in the (decompressed) records section.
struct Rec {
    offset: u64,
    key: Option<(usize, usize)>,
    /// A null value: the record deletes its key.
    tombstone: bool,
    bytes: (usize, usize),
}

struct Parsed {
    header: BatchHeader,
    attrs: i16,
    records: Vec<u8>,
    recs: Vec<Rec>,
}

fn codec(attrs: i16) -> i16 {
    attrs & 0b111
}

fn decompress(attrs: i16, section: &[u8]) -> Result<Vec<u8>, WireError> {
    let mut b = Bytes::copy_from_slice(section);
    let take = |x: &mut Bytes| Ok(x.to_vec());
    let out = match codec(attrs) {
        0 => return Ok(section.to_vec()),
        1 => <Gzip as Decompressor<Bytes>>::decompress(&mut b, take),
        2 => <Snappy as Decompressor<Bytes>>::decompress(&mut b, take),
        3 => <Lz4 as Decompressor<Bytes>>::decompress(&mut b, take),
        4 => <Zstd as Decompressor<Bytes>>::decompress(&mut b, take),
        c => return Err(bad(format!("unknown compression codec {c}"))),
    };
    out.map_err(|e| bad(format!("decompress: {e}")))
}

fn compress(attrs: i16, raw: &[u8]) -> Result<Vec<u8>, WireError> {
    let mut out = BytesMut::new();
    let put = |tmp: &mut BytesMut| {
        tmp.extend_from_slice(raw);
        Ok(())
    };
    let res = match codec(attrs) {
        0 => return Ok(raw.to_vec()),
        1 => <Gzip as Compressor<BytesMut>>::compress(&mut out, put),
        2 => <Snappy as Compressor<BytesMut>>::compress(&mut out, put),
        3 => <Lz4 as Compressor<BytesMut>>::compress(&mut out, put),
        4 => <Zstd as Compressor<BytesMut>>::compress(&mut out, put),
        c => return Err(bad(format!("unknown compression codec {c}"))),
    };
    res.map_err(|e| bad(format!("compress: {e}")))?;
    Ok(out.to_vec())
}

/// Parse one whole batch (`batch` is exactly its bytes; the CRC is checked).
fn parse(batch: &[u8]) -> Result<Parsed, WireError> {
    let header = BatchHeader::parse(batch)?;
    if header.length != batch.len() {
        return Err(bad("not exactly one batch"));
    }
    let attrs = i16::from_be_bytes([batch[21], batch[22]]);
    let records = decompress(attrs, &batch[BATCH_HEADER_LEN..])?;
    let mut recs = Vec::with_capacity(header.record_count as usize);
    let mut at = 0;
    for _ in 0..header.record_count {
        let mut c = Cur { b: &records, at };
        let len = c.varint()?;
        let start = c.at;
        let end = usize::try_from(len)
            .ok()
            .and_then(|l| start.checked_add(l))
            .filter(|e| *e <= records.len())
            .ok_or_else(|| bad("record length past batch end"))?;
        let mut r = Cur { b: &records[..end], at: start + 1 }; // skip record attributes
        r.varint()?; // timestamp delta
        let offset = (header.base_offset as u64).wrapping_add(r.varint()? as u64);
        let key = r.field()?;
        let tombstone = r.field()?.is_none();
        recs.push(Rec { offset, key, tombstone, bytes: (at, end) });
        at = end;
    }
    Ok(Parsed { header, attrs, records, recs })
}

/// Call `f(offset, key, tombstone)` for every record of one whole batch (a tombstone's
/// value is null); says what kind of batch it is.
pub fn keys_of(batch: &[u8], mut f: impl FnMut(u64, Option<&[u8]>, bool)) -> Result<BatchKind, WireError> {
    let p = parse(batch)?;
    let kind = BatchKind { control: p.attrs & ATTR_CONTROL != 0, transactional: p.attrs & ATTR_TRANSACTIONAL != 0 };
    if !kind.control {
        for r in &p.recs {
            f(r.offset, r.key.map(|(s, e)| &p.records[s..e]), r.tombstone);
        }
    }
    Ok(kind)
}

/// One whole batch without the records `keep` refuses, or `None` when it keeps them all
/// (and for a control batch, which is always kept whole).
pub fn without(batch: &[u8], keep: impl Fn(u64) -> bool) -> Result<Option<Vec<u8>>, WireError> {
    let p = parse(batch)?;
    if p.attrs & ATTR_CONTROL != 0 || p.recs.iter().all(|r| keep(r.offset)) {
        return Ok(None);
    }
    let mut raw = Vec::with_capacity(p.records.len());
    let mut count: i32 = 0;
    for r in p.recs.iter().filter(|r| keep(r.offset)) {
        raw.extend_from_slice(&p.records[r.bytes.0..r.bytes.1]);
        count += 1;
    }
    let section = compress(p.attrs, &raw)?;
    let mut out = Vec::with_capacity(BATCH_HEADER_LEN + section.len());
    out.extend_from_slice(&batch[..BATCH_HEADER_LEN]);
    out.extend_from_slice(&section);
    let batch_len = i32::try_from(out.len() - 12).map_err(|_| bad("batch too large"))?;
    out[8..12].copy_from_slice(&batch_len.to_be_bytes());
    out[57..61].copy_from_slice(&count.to_be_bytes());
    let crc = crc32c::crc32c(&out[21..]);
    out[17..21].copy_from_slice(&crc.to_be_bytes());
    debug_assert_eq!(p.header.length, batch.len());
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::decode_batches_where;
    use crate::records::{encode_batch, set_base_offset, NewRecord};
    use kafka_protocol::protocol::StrBytes;
    use kafka_protocol::records::{Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType};

    fn keyed(keys: &[&str], base: u64) -> Vec<u8> {
        let recs: Vec<NewRecord> = keys
            .iter()
            .map(|k| NewRecord { key: Some(k.as_bytes()), value: k.as_bytes(), ..Default::default() })
            .collect();
        let mut b = encode_batch(&recs, 1_700_000_000_000).unwrap();
        set_base_offset(&mut b, base);
        b
    }

    fn kafka_batch(compression: Compression, keys: &[Option<&str>], base: i64) -> Vec<u8> {
        let records: Vec<Record> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| Record {
                transactional: false,
                control: false,
                partition_leader_epoch: -1,
                producer_id: 7,
                producer_epoch: 0,
                timestamp_type: TimestampType::Creation,
                offset: base + i as i64,
                delete_horizon: false,
                sequence: i as i32,
                timestamp: 1_700_000_000_000 + i as i64,
                key: k.map(|k| Bytes::copy_from_slice(k.as_bytes())),
                value: Some(Bytes::from(vec![b'v'; 40 + i])),
                headers: [(StrBytes::from_static_str("h"), Some(Bytes::from_static(b"x")))].into_iter().collect(),
            })
            .collect();
        let mut out = BytesMut::new();
        RecordBatchEncoder::encode(&mut out, &records, &RecordEncodeOptions { version: 2, compression }).unwrap();
        out.to_vec()
    }

    fn offsets(b: &[u8]) -> Vec<u64> {
        decode_batches_where(b, |_| true).unwrap().iter().map(|r| r.offset).collect()
    }

    #[test]
    fn kept_records_keep_their_offsets_and_the_batch_its_span() {
        let b = keyed(&["a", "b", "a", "c"], 100);
        let mut seen = Vec::new();
        let kind = keys_of(&b, |o, k, _| seen.push((o, k.map(<[u8]>::to_vec)))).unwrap();
        assert_eq!(kind, BatchKind { control: false, transactional: false });
        assert_eq!(seen[2], (102, Some(b"a".to_vec())));
        let out = without(&b, |o| o != 100 && o != 101).unwrap().expect("two dropped");
        let h = BatchHeader::parse(&out).unwrap();
        assert_eq!((h.base_offset, h.record_count, h.span(), h.length), (100, 2, 4, out.len()));
        let recs = decode_batches_where(&out, |_| true).unwrap();
        assert_eq!(recs.iter().map(|r| r.offset).collect::<Vec<_>>(), [102, 103]);
        assert_eq!(recs[0].value.as_deref(), Some(&b"a"[..]));
        assert!(without(&b, |_| true).unwrap().is_none(), "nothing dropped, nothing written");
    }

    #[test]
    fn a_batch_with_no_record_left_still_spans_its_offsets() {
        let b = keyed(&["a", "b"], 5);
        let out = without(&b, |_| false).unwrap().unwrap();
        let h = BatchHeader::parse(&out).unwrap();
        assert_eq!((h.record_count, h.span(), h.length), (0, 2, BATCH_HEADER_LEN));
        assert!(offsets(&out).is_empty());
        // The Kafka clients' decoder takes it too.
        let mut bytes = Bytes::from(out);
        let sets = kafka_protocol::records::RecordBatchDecoder::decode_all(&mut bytes).unwrap();
        assert_eq!(sets.iter().map(|s| s.records.len()).sum::<usize>(), 0);
    }

    #[test]
    fn compressed_batches_are_compacted_in_their_own_codec() {
        for c in [Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd] {
            let b = kafka_batch(c, &[Some("k1"), None, Some("k2"), Some("k1")], 40);
            let mut keys = Vec::new();
            keys_of(&b, |o, k, _| keys.push((o, k.map(<[u8]>::to_vec)))).unwrap();
            assert_eq!(keys[1], (41, None), "{c:?}");
            let out = without(&b, |o| o != 40).unwrap().unwrap();
            assert_eq!(i16::from_be_bytes([out[21], out[22]]), i16::from_be_bytes([b[21], b[22]]), "{c:?}");
            assert_eq!(offsets(&out), [41, 42, 43], "{c:?}");
            let h = BatchHeader::parse(&out).unwrap();
            assert_eq!((h.record_count, h.span()), (3, 4), "{c:?}");
        }
    }

    #[test]
    fn control_batches_are_never_rewritten_and_bad_bytes_are_refused() {
        let m = crate::records::control_batch(3, 0, true, 1);
        let kind = keys_of(&m, |_, _, _| panic!("a marker has no key")).unwrap();
        assert!(kind.control && kind.transactional);
        assert!(without(&m, |_| false).unwrap().is_none());
        let mut b = keyed(&["a"], 0);
        let n = b.len();
        b[n - 1] ^= 1;
        assert!(keys_of(&b, |_, _, _| {}).is_err(), "crc");
        let two = [keyed(&["a"], 0), keyed(&["b"], 1)].concat();
        assert!(without(&two, |_| false).is_err(), "one batch at a time");
    }
}
