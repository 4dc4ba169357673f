//! The per-segment index files' records and one segment's view of them (D29).
//!
//! Owns the bytes of `<base>.idx` (one [`BatchRec`] per stored batch, 32 bytes,
//! little-endian) and `<base>.txid` (one 16-byte transaction-id key per message,
//! at position `offset - base`, flagged when deduplicated), and the unflushed tail of both for the
//! segment being written. What a partition used to keep on the heap for every
//! stored message (its batch's place and time, its transaction-id hash) lives
//! here, so memory is O(partitions + cached blocks), not O(stored messages).
//!
//! Must never hand out a record that is not in the file or the tail: reads
//! below `*_flushed` go to the file through the block cache, the rest to the
//! tail, and a flush invalidates the blocks it rewrites.

use crate::files::{FileKey, Kind, Store, BLOCK};
use crate::model::{Micros, TxKey};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

pub const REC: u64 = 32;
/// Bytes per `.txid` record: the two words of the message's key, the second with
/// [`crate::model::DEDUP_FLAG`] when the dedup window holds it.
pub const TXID: u64 = 16;
/// Records (and hashes) kept in memory before they are written to their file.
pub const TAIL_RECS: usize = 128;
pub const TAIL_TXIDS: usize = 256;

/// One stored batch: its first offset, entry time, place in the `.seg` file and message count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchRec {
    pub base: u64,
    pub ts: Micros,
    pub pos: u64,
    pub len: u32,
    pub count: u32,
}

impl BatchRec {
    pub fn end(&self) -> u64 {
        self.base + self.count as u64
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.base.to_le_bytes());
        out.extend_from_slice(&self.ts.to_le_bytes());
        out.extend_from_slice(&self.pos.to_le_bytes());
        out.extend_from_slice(&self.len.to_le_bytes());
        out.extend_from_slice(&self.count.to_le_bytes());
    }

    pub fn decode(b: &[u8]) -> BatchRec {
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        BatchRec { base: u64_at(0), ts: u64_at(8), pos: u64_at(16), len: u32_at(24), count: u32_at(28) }
    }
}

/// One segment's index: counts, time range, and what is not yet in the files.
#[derive(Debug, Default)]
pub struct SegIndex {
    pub batches: u64,
    pub msgs: u64,
    pub first_ts: Micros,
    pub last_ts: Micros,
    pub idx_flushed: u64,
    pub txid_flushed: u64,
    /// Counts already handed out in a [`TailBytes`] by the writeback sweep, so it does not
    /// send the same records twice; a checkpoint sends from `*_flushed` regardless.
    idx_sent: u64,
    txid_sent: u64,
    tail: Vec<BatchRec>,
    tail_txids: Vec<TxKey>,
}

/// A segment's unwritten index records, encoded on the planner, for another thread to
/// write (D31): the planner never waits on these writes, and keeps the records in its tail
/// (lookups read them there) until [`SegIndex::confirm`] says the files hold them.
#[derive(Debug, Clone)]
pub struct TailBytes {
    pub idx_at: u64,
    pub idx: Vec<u8>,
    pub txid_at: u64,
    pub txid: Vec<u8>,
    /// The segment's counts once both are written.
    pub batches: u64,
    pub msgs: u64,
}

impl SegIndex {
    /// The index of a segment restored from a checkpoint: all of it is in the files.
    pub fn restored(batches: u64, msgs: u64, first_ts: Micros, last_ts: Micros) -> SegIndex {
        SegIndex { batches, msgs, first_ts, last_ts, idx_flushed: batches, txid_flushed: msgs, ..Default::default() }
    }

    pub fn push(&mut self, rec: BatchRec, txids: &[TxKey]) {
        if self.batches == 0 {
            self.first_ts = rec.ts;
        }
        self.last_ts = rec.ts;
        self.batches += 1;
        self.msgs += txids.len() as u64;
        self.tail.push(rec);
        self.tail_txids.extend_from_slice(txids);
    }

    /// Undo the last push (its bytes could not be written).
    pub fn pop(&mut self, txids: usize) {
        if self.tail.pop().is_some() {
            self.batches -= 1;
            self.msgs -= txids as u64;
            let keep = self.tail_txids.len().saturating_sub(txids);
            self.tail_txids.truncate(keep);
            self.last_ts = self.tail.last().map_or(self.first_ts, |r| r.ts);
        }
    }

    pub fn tail_full(&self) -> bool {
        self.tail.len() >= TAIL_RECS || self.tail_txids.len() >= TAIL_TXIDS
    }

    pub fn has_tail(&self) -> bool {
        !self.tail.is_empty() || !self.tail_txids.is_empty()
    }

    /// The records not yet in the files, from what the files are known to hold (`all`) or
    /// from what was last handed out; `None` if there are none.
    pub fn encode_tail(&mut self, all: bool) -> Option<TailBytes> {
        let (b0, m0) = if all {
            (self.idx_flushed, self.txid_flushed)
        } else {
            (self.idx_sent.max(self.idx_flushed), self.txid_sent.max(self.txid_flushed))
        };
        if b0 >= self.batches && m0 >= self.msgs {
            return None;
        }
        let mut idx = Vec::with_capacity(((self.batches - b0) * REC) as usize);
        for r in &self.tail[(b0 - self.idx_flushed) as usize..] {
            r.encode(&mut idx);
        }
        let txid: Vec<u8> = self.tail_txids[(m0 - self.txid_flushed) as usize..]
            .iter()
            .flat_map(|h| [h[0].to_le_bytes(), h[1].to_le_bytes()])
            .flatten()
            .collect();
        self.idx_sent = self.batches;
        self.txid_sent = self.msgs;
        Some(TailBytes { idx_at: b0 * REC, idx, txid_at: m0 * TXID, txid, batches: self.batches, msgs: self.msgs })
    }

    /// The files now hold the records up to these counts (a [`TailBytes`] was written):
    /// drop them from the tail and the blocks they change from the cache. Called on the
    /// planner, the only reader of index blocks, so no block read before the write can
    /// be cached after this.
    pub fn confirm(&mut self, store: &Store, key: FileKey, batches: u64, msgs: u64) {
        if batches > self.idx_flushed {
            let n = (batches - self.idx_flushed) as usize;
            self.tail.drain(..n.min(self.tail.len()));
            store.invalidate(FileKey { kind: Kind::Idx, ..key }, self.idx_flushed * REC / BLOCK, batches * REC / BLOCK);
            self.idx_flushed = batches;
        }
        if msgs > self.txid_flushed {
            let n = (msgs - self.txid_flushed) as usize;
            self.tail_txids.drain(..n.min(self.tail_txids.len()));
            store.invalidate(
                FileKey { kind: Kind::Txid, ..key },
                self.txid_flushed * TXID / BLOCK,
                msgs * TXID / BLOCK,
            );
            self.txid_flushed = msgs;
        }
        // An idle partition keeps no tail memory.
        if self.tail.is_empty() {
            self.tail = Vec::new();
        }
        if self.tail_txids.is_empty() {
            self.tail_txids = Vec::new();
        }
    }

    /// Write the tail to the two files; on failure nothing is marked flushed (a later
    /// flush writes the same bytes again at the same place).
    pub fn flush(&mut self, store: &Store, key: FileKey, idx: &File, txid: &File) -> io::Result<()> {
        if !self.tail.is_empty() {
            let mut buf = Vec::with_capacity(self.tail.len() * REC as usize);
            for r in &self.tail {
                r.encode(&mut buf);
            }
            let at = self.idx_flushed * REC;
            idx.write_all_at(&buf, at)?;
            let k = FileKey { kind: Kind::Idx, ..key };
            store.invalidate(k, at / BLOCK, (at + buf.len() as u64) / BLOCK);
        }
        if !self.tail_txids.is_empty() {
            let buf: Vec<u8> =
                self.tail_txids.iter().flat_map(|h| [h[0].to_le_bytes(), h[1].to_le_bytes()]).flatten().collect();
            let at = self.txid_flushed * TXID;
            txid.write_all_at(&buf, at)?;
            let k = FileKey { kind: Kind::Txid, ..key };
            store.invalidate(k, at / BLOCK, (at + buf.len() as u64) / BLOCK);
        }
        self.idx_flushed = self.batches;
        self.txid_flushed = self.msgs;
        self.idx_sent = self.batches;
        self.txid_sent = self.msgs;
        // An idle partition keeps no tail memory.
        self.tail = Vec::new();
        self.tail_txids = Vec::new();
        Ok(())
    }

    /// Record `i` (0-based within the segment).
    pub fn rec(
        &self,
        i: u64,
        store: &Store,
        key: FileKey,
        idx: impl FnOnce() -> io::Result<std::sync::Arc<File>>,
    ) -> io::Result<BatchRec> {
        if i >= self.idx_flushed {
            return self
                .tail
                .get((i - self.idx_flushed) as usize)
                .copied()
                .ok_or_else(|| io::Error::other(format!("index record {i} past the end ({})", self.batches)));
        }
        read_record(store, key, Kind::Idx, i * REC, REC, idx, BatchRec::decode)
    }

    /// The `.txid` record of message `j` (0-based within the segment).
    pub fn txid(
        &self,
        j: u64,
        store: &Store,
        key: FileKey,
        txid: impl FnOnce() -> io::Result<std::sync::Arc<File>>,
    ) -> io::Result<TxKey> {
        if j >= self.txid_flushed {
            return self
                .tail_txids
                .get((j - self.txid_flushed) as usize)
                .copied()
                .ok_or_else(|| io::Error::other(format!("transaction-id hash {j} past the end ({})", self.msgs)));
        }
        read_record(store, key, Kind::Txid, j * TXID, TXID, txid, decode_txid)
    }

    /// The unflushed hashes, newest last (for scans that must not go through the cache).
    pub fn tail_txids(&self) -> &[TxKey] {
        &self.tail_txids
    }
}

/// One fixed-size record at byte `at` of a segment's `kind` file, through the block cache
/// (records never straddle a block: 4096 is a multiple of both sizes).
fn read_record<T>(
    store: &Store,
    key: FileKey,
    kind: Kind,
    at: u64,
    len: u64,
    file: impl FnOnce() -> io::Result<std::sync::Arc<File>>,
    decode: impl FnOnce(&[u8]) -> T,
) -> io::Result<T> {
    let b = store.block(FileKey { kind, ..key }, at / BLOCK, file)?;
    let o = (at % BLOCK) as usize;
    let bytes = b.get(o..o + len as usize).ok_or_else(|| short(key, kind, at))?;
    Ok(decode(bytes))
}

pub fn decode_txid(b: &[u8]) -> TxKey {
    let w = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    [w(0), w(8)]
}

fn short(key: FileKey, kind: Kind, at: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!("partition {} segment {} .{} ends before byte {at}", key.part, key.base, kind.ext()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::file_path;

    #[test]
    fn records_round_trip_through_the_tail_and_the_files() {
        let d = tempfile::tempdir().unwrap();
        let store = Store::new(16, 1 << 20);
        let key = FileKey { part: 1, base: 100, gen: 0, kind: Kind::Seg };
        let open = |k: Kind| store.get(FileKey { kind: k, ..key }, &file_path(d.path(), 100, 0, k), true).unwrap();
        let (idx, txid) = (open(Kind::Idx), open(Kind::Txid));
        let mut s = SegIndex::default();
        let mut pos = 0;
        // Past a block of records and of hashes, flushed in the middle of both.
        for i in 0..300u64 {
            let rec = BatchRec { base: 100 + i * 2, ts: 1_000 + i, pos, len: 70, count: 2 };
            pos += 70;
            s.push(rec, &[[i * 10, 1], [i * 10 + 1, 2]]);
            if i == 150 || i == 299 {
                s.flush(&store, key, &idx, &txid).unwrap();
            }
            if i == 151 {
                // A block cached while partial must not be served after the next flush.
                s.rec(150, &store, key, || Ok(idx.clone())).unwrap();
            }
        }
        assert_eq!((s.batches, s.msgs, s.first_ts, s.last_ts), (300, 600, 1_000, 1_299));
        for i in [0u64, 127, 128, 150, 151, 152, 299] {
            let r = s.rec(i, &store, key, || Ok(idx.clone())).unwrap();
            assert_eq!((r.base, r.ts, r.pos, r.count), (100 + i * 2, 1_000 + i, i * 70, 2), "record {i}");
            assert_eq!(s.txid(i * 2 + 1, &store, key, || Ok(txid.clone())).unwrap(), [i * 10 + 1, 2]);
        }
        assert!(s.rec(300, &store, key, || Ok(idx.clone())).is_err());
        assert_eq!(idx.metadata().unwrap().len(), 300 * REC);
        assert_eq!(txid.metadata().unwrap().len(), 600 * TXID);
    }
}
