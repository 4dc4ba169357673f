//! Checks on the record batches a producer sends, before the engine sees
//! them: split the partition's bytes into whole v2 batches and refuse what
//! the store must never hold. The engine checks the CRC and assigns offsets;
//! this module checks the framing the CRC cannot vouch for (a batch whose
//! header claims more records than it carries would get offsets that no
//! record answers to). Compressed batches are stored as they came: their
//! record count is the producer's claim, as in Kafka's own fast path.

/// Fixed v2 batch header, up to and including the record count.
pub const BATCH_HEADER_LEN: usize = 61;
const ATTR_COMPRESSION_MASK: i16 = 0x07;
const ATTR_TRANSACTIONAL: i16 = 0x10;
const ATTR_CONTROL: i16 = 0x20;

#[derive(Debug, PartialEq, Eq)]
pub enum BatchError {
    /// Framing is broken: CORRUPT_MESSAGE.
    Corrupt(String),
    /// Well framed but not acceptable here: INVALID_RECORD.
    Invalid(String),
}

/// Split `data` into batches, each checked by `check_batch`.
pub fn split_batches(data: &[u8]) -> Result<Vec<Vec<u8>>, BatchError> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        let rest = &data[pos..];
        if rest.len() < 12 {
            return Err(BatchError::Corrupt("trailing bytes shorter than a batch header".into()));
        }
        let len = i32::from_be_bytes(rest[8..12].try_into().expect("4 bytes"));
        if len < (BATCH_HEADER_LEN - 12) as i32 {
            return Err(BatchError::Corrupt(format!("batch length {len} is too small")));
        }
        let total = 12 + len as usize;
        if total > rest.len() {
            return Err(BatchError::Corrupt("batch runs past the end of the records".into()));
        }
        check_batch(&rest[..total])?;
        out.push(rest[..total].to_vec());
        pos += total;
    }
    if out.is_empty() {
        return Err(BatchError::Invalid("no record batch".into()));
    }
    Ok(out)
}

/// One whole batch (its length field already matches `b.len()`).
fn check_batch(b: &[u8]) -> Result<(), BatchError> {
    if b[16] != 2 {
        return Err(BatchError::Corrupt(format!("magic {} (only record batch v2 is accepted)", b[16])));
    }
    let attrs = i16::from_be_bytes([b[21], b[22]]);
    if attrs & ATTR_COMPRESSION_MASK > 4 {
        return Err(BatchError::Corrupt(format!("unknown compression {}", attrs & ATTR_COMPRESSION_MASK)));
    }
    if attrs & (ATTR_TRANSACTIONAL | ATTR_CONTROL) != 0 {
        return Err(BatchError::Invalid("transactional and control batches are not supported".into()));
    }
    let last_delta = i32::from_be_bytes(b[23..27].try_into().expect("4 bytes"));
    let count = i32::from_be_bytes(b[57..61].try_into().expect("4 bytes"));
    if count <= 0 {
        return Err(BatchError::Invalid(format!("record count {count}")));
    }
    if last_delta != count - 1 {
        return Err(BatchError::Invalid(format!("last offset delta {last_delta} does not match {count} records")));
    }
    if attrs & ATTR_COMPRESSION_MASK == 0 {
        let n = count_records(&b[BATCH_HEADER_LEN..])
            .ok_or_else(|| BatchError::Corrupt("records do not fill the batch exactly".into()))?;
        if n != count as u64 {
            return Err(BatchError::Invalid(format!("header says {count} records, batch holds {n}")));
        }
    }
    Ok(())
}

/// Count length-prefixed records that exactly fill `body`; None if they do not.
fn count_records(mut body: &[u8]) -> Option<u64> {
    let mut n = 0u64;
    while !body.is_empty() {
        let (len, used) = varint(body)?;
        if len < 1 {
            return None;
        }
        let end = used.checked_add(len as usize)?;
        if end > body.len() {
            return None;
        }
        body = &body[end..];
        n += 1;
    }
    Some(n)
}

/// A zigzag varint (i32) and the bytes it took.
fn varint(b: &[u8]) -> Option<(i64, usize)> {
    let mut v: u64 = 0;
    for (i, byte) in b.iter().take(5).enumerate() {
        v |= ((byte & 0x7f) as u64) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((((v >> 1) as i64) ^ -((v & 1) as i64), i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_wire::{encode_batch, NewRecord};

    fn batch(n: usize) -> Vec<u8> {
        let recs: Vec<NewRecord> = (0..n).map(|_| NewRecord { key: None, value: b"v", txid: None }).collect();
        encode_batch(&recs, 1).unwrap()
    }

    #[test]
    fn splits_concatenated_batches() {
        let mut data = batch(2);
        data.extend(batch(3));
        let v = split_batches(&data).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0], batch(2));
    }

    #[test]
    fn refuses_broken_framing() {
        let b = batch(2);
        assert!(matches!(split_batches(&b[..b.len() - 1]), Err(BatchError::Corrupt(_))));
        assert!(matches!(split_batches(&b[..5]), Err(BatchError::Corrupt(_))));
        assert!(matches!(split_batches(&[]), Err(BatchError::Invalid(_))));
        let mut lie = b.clone();
        lie[57..61].copy_from_slice(&5i32.to_be_bytes());
        lie[23..27].copy_from_slice(&4i32.to_be_bytes());
        assert!(matches!(split_batches(&lie), Err(BatchError::Invalid(_))));
        let mut txn = b.clone();
        txn[22] |= 0x10;
        assert!(matches!(split_batches(&txn), Err(BatchError::Invalid(_))));
        let mut magic = b;
        magic[16] = 1;
        assert!(matches!(split_batches(&magic), Err(BatchError::Corrupt(_))));
    }
}
