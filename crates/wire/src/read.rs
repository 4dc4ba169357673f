//! Reading stored batches back into records, decoding only the records asked for.
//!
//! Why by hand: a pop of one message from a batch of a hundred used to
//! decode all hundred through kafka-protocol (a header map and several
//! allocations per record) and throw 99 away; that was the largest share of
//! a one-message transaction's CPU. An uncompressed v2 batch can be walked
//! by record length prefixes, so records that are not wanted cost a few
//! varint reads, and only wanted keys and values are copied out (the caller
//! can reuse one read buffer for every batch). Compressed or control batches (only Kafka producers write
//! them) still go through kafka-protocol. A batch whose CRC does not match
//! is an error, never records (what a reader gets was what was written).

use crate::records::{BatchHeader, StoredRecord, WireError, BATCH_HEADER_LEN, TRACE_HEADER, TXID_HEADER};
use bytes::Bytes;
use kafka_protocol::records::RecordBatchDecoder;

/// Attribute bits that send a batch to the general decoder: compression
/// codec (bits 0..2), log-append time (bit 3: timestamps come from the
/// header) and the control flag (bit 5).
const SLOW_PATH_ATTRS: i16 = 0b0010_1111;

fn bad(m: impl Into<String>) -> WireError {
    WireError::BadBatch(m.into())
}

/// A bounds-checked cursor over one record.
pub(crate) struct Cur<'a> {
    pub(crate) b: &'a [u8],
    pub(crate) at: usize,
}

impl Cur<'_> {
    pub(crate) fn varint(&mut self) -> Result<i64, WireError> {
        let mut z: u64 = 0;
        for shift in (0..70).step_by(7) {
            let byte = *self.b.get(self.at).ok_or_else(|| bad("record truncated in a varint"))?;
            self.at += 1;
            z |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(((z >> 1) as i64) ^ -((z & 1) as i64));
            }
        }
        Err(bad("varint longer than 10 bytes"))
    }

    /// A length-prefixed field: `None` for length -1.
    pub(crate) fn field(&mut self) -> Result<Option<(usize, usize)>, WireError> {
        let n = self.varint()?;
        if n < 0 {
            return Ok(None);
        }
        let start = self.at;
        let end =
            start.checked_add(n as usize).filter(|e| *e <= self.b.len()).ok_or_else(|| bad("field past record end"))?;
        self.at = end;
        Ok(Some((start, end)))
    }
}

/// Decode the records of every batch in `buf` whose offset `want` accepts.
pub fn decode_batches_where(buf: &[u8], want: impl Fn(u64) -> bool) -> Result<Vec<StoredRecord>, WireError> {
    decode(buf, want, BatchHeader::parse)
}

/// Whole batches whose CRCs were checked once, when they were read: decoding them again
/// skips the check. A consumer popping one message at a time from a batch of a hundred
/// otherwise checksums the whole batch a hundred times (3 % of the server's CPU in a
/// one-message transaction). Only [`Checked::new`] makes one, so unchecked bytes cannot
/// pass for checked.
#[derive(Debug)]
pub struct Checked<T>(T);

impl<T: AsRef<[u8]>> Checked<T> {
    /// Checks every batch in `buf` (header and CRC); an error names the first bad one.
    pub fn new(buf: T) -> Result<Checked<T>, WireError> {
        let b = buf.as_ref();
        let mut at = 0;
        while at < b.len() {
            at += BatchHeader::parse(&b[at..])?.length;
        }
        Ok(Checked(buf))
    }

    pub fn bytes(&self) -> &[u8] {
        self.0.as_ref()
    }

    /// [`decode_batches_where`] without checking the CRCs again.
    pub fn decode_where(&self, want: impl Fn(u64) -> bool) -> Result<Vec<StoredRecord>, WireError> {
        decode(self.0.as_ref(), want, BatchHeader::parse_unchecked_crc)
    }
}

fn decode(
    buf: &[u8],
    want: impl Fn(u64) -> bool,
    header: fn(&[u8]) -> Result<BatchHeader, WireError>,
) -> Result<Vec<StoredRecord>, WireError> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < buf.len() {
        let h = header(&buf[at..])?;
        let batch = &buf[at..at + h.length];
        at += h.length;
        let attrs = i16::from_be_bytes([batch[21], batch[22]]);
        if attrs & SLOW_PATH_ATTRS != 0 {
            let mut b = Bytes::copy_from_slice(batch);
            for set in RecordBatchDecoder::decode_all(&mut b).map_err(|e| bad(e.to_string()))? {
                for r in set.records.into_iter().filter(|r| want(r.offset as u64)) {
                    let header = |name: &str| {
                        r.headers
                            .iter()
                            .find(|(k, _)| k.as_str() == name)
                            .and_then(|(_, v)| std::str::from_utf8(v.as_deref()?).ok())
                            .map(str::to_owned)
                    };
                    let (txid, trace) = (header(TXID_HEADER), header(TRACE_HEADER));
                    out.push(StoredRecord {
                        offset: r.offset as u64,
                        timestamp_ms: r.timestamp,
                        key: r.key,
                        value: r.value,
                        txid,
                        trace,
                    });
                }
            }
            continue;
        }
        let base_ts = i64::from_be_bytes(batch[27..35].try_into().expect("8 bytes"));
        let mut rec_at = BATCH_HEADER_LEN;
        for _ in 0..h.record_count {
            let mut c = Cur { b: batch, at: rec_at };
            let len = c.varint()?;
            let start = c.at;
            let end = usize::try_from(len)
                .ok()
                .and_then(|l| start.checked_add(l))
                .filter(|e| *e <= batch.len())
                .ok_or_else(|| bad("record length past batch end"))?;
            rec_at = end;
            let mut r = Cur { b: &batch[..end], at: start + 1 }; // skip record attributes
            let ts_delta = r.varint()?;
            let offset = (h.base_offset as u64).wrapping_add(r.varint()? as u64);
            if !want(offset) {
                continue;
            }
            let key = r.field()?.map(|(s, e)| Bytes::copy_from_slice(&batch[s..e]));
            let value = r.field()?.map(|(s, e)| Bytes::copy_from_slice(&batch[s..e]));
            let (mut txid, mut trace) = (None, None);
            let headers = r.varint()?;
            for _ in 0..headers.max(0) {
                let k = r.field()?;
                let v = r.field()?;
                if let (Some((ks, ke)), Some((vs, ve))) = (k, v) {
                    let slot = match &batch[ks..ke] {
                        n if n == TXID_HEADER.as_bytes() => &mut txid,
                        n if n == TRACE_HEADER.as_bytes() => &mut trace,
                        _ => continue,
                    };
                    *slot = std::str::from_utf8(&batch[vs..ve]).ok().map(str::to_owned);
                }
            }
            let timestamp_ms = base_ts.wrapping_add(ts_delta);
            out.push(StoredRecord { offset, timestamp_ms, key, value, txid, trace });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{encode_batch, set_base_offset, NewRecord};

    /// (offset, timestamp, key, value, txid, trace)
    type Rec = (u64, i64, Option<Bytes>, Option<Bytes>, Option<String>, Option<String>);

    fn via_kafka_protocol(buf: &[u8]) -> Vec<Rec> {
        let mut b = Bytes::copy_from_slice(buf);
        let mut out = Vec::new();
        for set in RecordBatchDecoder::decode_all(&mut b).unwrap() {
            for r in set.records {
                let header = |name: &str| {
                    r.headers
                        .iter()
                        .find(|(k, _)| k.as_str() == name)
                        .and_then(|(_, v)| v.as_ref())
                        .map(|v| String::from_utf8(v.to_vec()).unwrap())
                };
                let (txid, trace) = (header(TXID_HEADER), header(TRACE_HEADER));
                out.push((r.offset as u64, r.timestamp, r.key, r.value, txid, trace));
            }
        }
        out
    }

    fn ours(buf: &[u8], want: impl Fn(u64) -> bool) -> Vec<Rec> {
        decode_batches_where(buf, want)
            .unwrap()
            .into_iter()
            .map(|r| (r.offset, r.timestamp_ms, r.key, r.value, r.txid, r.trace))
            .collect()
    }

    fn two_batches() -> Vec<u8> {
        let vals: Vec<Vec<u8>> = (0..200).map(|i| vec![b'a' + (i % 26) as u8; i * 7]).collect();
        let ids: Vec<String> = (0..200).map(|i| format!("tx-{i}")).collect();
        let recs: Vec<NewRecord> = (0..200)
            .map(|i| NewRecord {
                key: (i % 3 == 0).then_some(&b"key"[..]),
                value: &vals[i],
                txid: (i % 2 == 0).then_some(ids[i].as_str()),
                trace: (i % 4 == 1).then_some(ids[i].as_str()),
            })
            .collect();
        let mut a = encode_batch(&recs[..120], 1_700_000_000_123).unwrap();
        set_base_offset(&mut a, 1_000);
        let mut b = encode_batch(&recs[120..], 1_700_000_000_999).unwrap();
        set_base_offset(&mut b, 1_120);
        a.extend_from_slice(&b);
        a
    }

    #[test]
    fn equals_kafka_protocol_for_every_record_and_for_a_subset() {
        let buf = two_batches();
        let all = via_kafka_protocol(&buf);
        assert_eq!(all.len(), 200);
        assert_eq!(ours(&buf, |_| true), all);
        let some: Vec<_> = all.iter().filter(|r| r.0 % 7 == 3).cloned().collect();
        assert_eq!(ours(&buf, |o| o % 7 == 3), some);
        assert!(ours(&buf, |_| false).is_empty());
    }

    #[test]
    fn checked_batches_decode_the_same_and_damage_is_refused_when_checked() {
        let buf = two_batches();
        let c = Checked::new(buf.clone()).unwrap();
        assert_eq!(c.bytes(), &buf[..]);
        let got = |c: &Checked<Vec<u8>>, want: fn(u64) -> bool| {
            c.decode_where(want)
                .unwrap()
                .into_iter()
                .map(|r| (r.offset, r.timestamp_ms, r.key, r.value, r.txid, r.trace))
                .collect::<Vec<_>>()
        };
        assert_eq!(got(&c, |_| true), via_kafka_protocol(&buf));
        assert_eq!(got(&c, |o| o == 1_150), ours(&buf, |o| o == 1_150));
        // A flipped byte in either batch's records, or a cut, fails the check itself.
        for at in [BATCH_HEADER_LEN + 5, buf.len() - 3] {
            let mut bad = buf.clone();
            bad[at] ^= 0x55;
            assert!(matches!(Checked::new(bad), Err(WireError::BadBatch(m)) if m.contains("crc")), "byte {at}");
        }
        assert!(Checked::new(&buf[..buf.len() - 10]).is_err());
    }

    #[test]
    fn damage_is_an_error_not_records() {
        let mut buf = two_batches();
        let n = buf.len();
        buf[n - 3] ^= 0x55;
        assert!(decode_batches_where(&buf, |_| true).is_err());
        assert!(decode_batches_where(&buf[..n - 10], |_| true).is_err());
    }

    /// A record whose length prefix points past the batch (CRC recomputed so
    /// only the walker can notice) is refused, not read out of bounds.
    #[test]
    fn lying_lengths_are_refused() {
        let mut b = encode_batch(&[NewRecord { key: None, value: b"hello", txid: Some("t"), trace: None }], 5).unwrap();
        b[BATCH_HEADER_LEN] = 0x7e; // record length 63, more than there is
        let crc = crc32c::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        assert!(decode_batches_where(&b, |_| true).is_err());
    }
}
