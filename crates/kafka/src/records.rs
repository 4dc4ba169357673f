//! Checks on the record batches a producer sends, before the engine sees
//! them: split the partition's bytes into whole v2 batches and refuse what
//! the store must never hold. The engine checks the CRC and assigns offsets;
//! this module checks what the CRC cannot vouch for: that the records a batch
//! carries are exactly the ones its header claims (count, lastOffsetDelta and
//! each record's offsetDelta). A batch whose header claims more records than
//! it carries would get offsets that no record answers to, and the planner
//! does work per claimed record, so the claim is verified here, on the
//! connection task, for compressed batches too.
//!
//! Compressed batches are still stored as they came; they are decompressed
//! here only as a stream, to count, and never held whole in memory. This
//! module must never allocate in proportion to a count or length the client
//! claims, and never expand a batch past `max_uncompressed` bytes.

use baton_wire::{ATTR_CONTROL, ATTR_TRANSACTIONAL};
use std::io::{self, BufRead, BufReader, Read};

/// Fixed v2 batch header, up to and including the record count.
pub const BATCH_HEADER_LEN: usize = 61;
const ATTR_COMPRESSION_MASK: i16 = 0x07;
/// The smallest record body: attributes, timestamp delta, offset delta, key
/// length, value length and header count, one byte each.
const MIN_RECORD_BODY: i64 = 6;

#[derive(Debug, PartialEq, Eq)]
pub enum BatchError {
    /// Framing is broken: CORRUPT_MESSAGE.
    Corrupt(String),
    /// Well framed but not acceptable here: INVALID_RECORD.
    Invalid(String),
    /// Expands past the uncompressed-batch bound: MESSAGE_TOO_LARGE.
    TooLarge(String),
}

/// Split `data` into batches, each checked by `check_batch`. A compressed
/// batch may expand to at most `max_uncompressed` bytes.
pub fn split_batches(data: &[u8], max_uncompressed: u64) -> Result<Vec<Vec<u8>>, BatchError> {
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
        check_batch(&rest[..total], max_uncompressed)?;
        out.push(rest[..total].to_vec());
        pos += total;
    }
    if out.is_empty() {
        return Err(BatchError::Invalid("no record batch".into()));
    }
    Ok(out)
}

/// One whole batch (its length field already matches `b.len()`).
fn check_batch(b: &[u8], max_uncompressed: u64) -> Result<(), BatchError> {
    if b[16] != 2 {
        return Err(BatchError::Corrupt(format!("magic {} (only record batch v2 is accepted)", b[16])));
    }
    let attrs = i16::from_be_bytes([b[21], b[22]]);
    let compression = attrs & ATTR_COMPRESSION_MASK;
    if compression > 4 {
        return Err(BatchError::Corrupt(format!("unknown compression {compression}")));
    }
    // Control records are the coordinator's (D48): a client may not write a marker.
    if attrs & ATTR_CONTROL != 0 {
        return Err(BatchError::Invalid("a client may not write control batches".into()));
    }
    let pid = i64::from_be_bytes(b[43..51].try_into().expect("8 bytes"));
    if attrs & ATTR_TRANSACTIONAL != 0 && pid < 0 {
        return Err(BatchError::Invalid("a transactional batch needs a producer id".into()));
    }
    let last_delta = i32::from_be_bytes(b[23..27].try_into().expect("4 bytes"));
    let count = i32::from_be_bytes(b[57..61].try_into().expect("4 bytes"));
    if count <= 0 {
        return Err(BatchError::Invalid(format!("record count {count}")));
    }
    if last_delta != count - 1 {
        return Err(BatchError::Invalid(format!("last offset delta {last_delta} does not match {count} records")));
    }
    let body = &b[BATCH_HEADER_LEN..];
    let corrupt = |what: &str, e: io::Error| BatchError::Corrupt(format!("{what} records do not decompress: {e}"));
    let claimed = count as u64;
    let n = match compression {
        0 => count_records(body, claimed, u64::MAX)?,
        1 => count_records(BufReader::new(flate2::read::GzDecoder::new(body)), claimed, max_uncompressed)?,
        2 => count_records(BufReader::new(Snappy::new(body, max_uncompressed)?), claimed, max_uncompressed)?,
        3 => {
            let d = lz4::Decoder::new(body).map_err(|e| corrupt("lz4", e))?;
            count_records(BufReader::new(d), claimed, max_uncompressed)?
        }
        _ => {
            let d = zstd::stream::read::Decoder::with_buffer(body).map_err(|e| corrupt("zstd", e))?;
            count_records(BufReader::new(d), claimed, max_uncompressed)?
        }
    };
    if n != claimed {
        return Err(BatchError::Invalid(format!("header says {count} records, batch holds {n}")));
    }
    Ok(())
}

/// Count the length-prefixed records of a batch body read from `r`, which
/// must end exactly after the last one. Each record's offsetDelta must be its
/// index. Reads at most `limit` bytes and at most one record past `claimed`
/// (a mismatch either way is all the caller needs to know).
fn count_records<R: BufRead>(r: R, claimed: u64, limit: u64) -> Result<u64, BatchError> {
    let mut s = Stream { r, used: 0, limit };
    let mut n = 0u64;
    loop {
        if s.at_end()? {
            return Ok(n);
        }
        if n == claimed {
            // One record more than claimed is enough to refuse.
            return Ok(n + 1);
        }
        let len = s.varint(5)?;
        if len < MIN_RECORD_BODY {
            return Err(BatchError::Corrupt(format!("record {n} has length {len}")));
        }
        let start = s.used;
        s.byte()?; // attributes
        s.varint(10)?; // timestamp delta
        let delta = s.varint(5)?;
        if delta != n as i64 {
            return Err(BatchError::Invalid(format!("record {n} has offset delta {delta}")));
        }
        let head = s.used - start;
        if head > len as u64 {
            return Err(BatchError::Corrupt(format!("record {n} is shorter than its header")));
        }
        s.skip(len as u64 - head)?;
        n += 1;
    }
}

/// A body being read: bytes taken so far, against the bound.
struct Stream<R> {
    r: R,
    used: u64,
    limit: u64,
}

impl<R: BufRead> Stream<R> {
    fn err(&self, e: io::Error) -> BatchError {
        if e.kind() == io::ErrorKind::OutOfMemory {
            self.over()
        } else if e.kind() == io::ErrorKind::UnexpectedEof {
            BatchError::Corrupt("records do not fill the batch exactly".into())
        } else {
            BatchError::Corrupt(format!("records do not decompress: {e}"))
        }
    }

    fn over(&self) -> BatchError {
        BatchError::TooLarge(format!(
            "record batch expands past {} bytes (kafka max uncompressed batch bytes)",
            self.limit
        ))
    }

    fn at_end(&mut self) -> Result<bool, BatchError> {
        match self.r.fill_buf() {
            Ok(b) => Ok(b.is_empty()),
            Err(e) => Err(self.err(e)),
        }
    }

    fn byte(&mut self) -> Result<u8, BatchError> {
        if self.used >= self.limit {
            return Err(self.over());
        }
        let mut b = [0u8; 1];
        self.r.read_exact(&mut b).map_err(|e| self.err(e))?;
        self.used += 1;
        Ok(b[0])
    }

    /// A zigzag varint of at most `max` bytes.
    fn varint(&mut self, max: usize) -> Result<i64, BatchError> {
        let mut v: u64 = 0;
        for i in 0..max {
            let byte = self.byte()?;
            v |= ((byte & 0x7f) as u64) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(((v >> 1) as i64) ^ -((v & 1) as i64));
            }
        }
        Err(BatchError::Corrupt("varint too long".into()))
    }

    fn skip(&mut self, n: u64) -> Result<(), BatchError> {
        if n > self.limit - self.used {
            return Err(self.over());
        }
        let got = io::copy(&mut (&mut self.r).take(n), &mut io::sink()).map_err(|e| self.err(e))?;
        if got != n {
            return Err(BatchError::Corrupt("records do not fill the batch exactly".into()));
        }
        self.used += n;
        Ok(())
    }
}

/// Kafka's snappy framing (xerial: a magic header, then length-prefixed
/// blocks), or one raw snappy block without the header, read a block at a
/// time. A block is decompressed only when its length is one its input could
/// really reach and within the bound.
struct Snappy<'a> {
    input: &'a [u8],
    framed: bool,
    block: Vec<u8>,
    pos: usize,
    left: u64,
}

const SNAPPY_MAGIC: &[u8; 16] = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01";

impl<'a> Snappy<'a> {
    fn new(body: &'a [u8], limit: u64) -> Result<Snappy<'a>, BatchError> {
        let framed = body.starts_with(SNAPPY_MAGIC);
        let input = if framed { &body[SNAPPY_MAGIC.len()..] } else { body };
        Ok(Snappy { input, framed, block: Vec::new(), pos: 0, left: limit.saturating_add(1) })
    }

    fn next_block(&mut self) -> io::Result<()> {
        let bad = |m: String| io::Error::new(io::ErrorKind::InvalidData, m);
        let compressed = if self.framed {
            if self.input.len() < 4 {
                return Err(bad("snappy block length cut short".into()));
            }
            let n = u32::from_be_bytes(self.input[..4].try_into().expect("4 bytes")) as usize;
            if n > self.input.len() - 4 {
                return Err(bad("snappy block runs past the batch".into()));
            }
            let (blk, rest) = self.input[4..].split_at(n);
            self.input = rest;
            blk
        } else {
            std::mem::take(&mut self.input)
        };
        let len = snap::raw::decompress_len(compressed).map_err(|e| bad(e.to_string()))?;
        // Snappy expands at most ~21x; a longer claim is a lie, and a block
        // past the bound is refused before its buffer is made.
        if len > compressed.len().saturating_mul(32).saturating_add(64) {
            return Err(bad(format!("snappy length {len} is impossible for its input")));
        }
        if len as u64 > self.left {
            return Err(io::Error::new(io::ErrorKind::OutOfMemory, "snappy block past the bound"));
        }
        self.left -= len as u64;
        self.block.resize(len, 0);
        snap::raw::Decoder::new().decompress(compressed, &mut self.block).map_err(|e| bad(e.to_string()))?;
        self.pos = 0;
        Ok(())
    }
}

impl Read for Snappy<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.block.len() {
            if self.input.is_empty() {
                return Ok(0);
            }
            self.next_block()?;
        }
        let n = buf.len().min(self.block.len() - self.pos);
        buf[..n].copy_from_slice(&self.block[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
#[path = "records_tests.rs"]
mod tests;
