//! Finding a message by transaction id off the planner (issue 16's message lookup and
//! delete). The planner only takes a [`TxidScan`]: the names of the `.txid` files to read
//! and a copy of the index records not yet in them (at most `TAIL_TXIDS` a segment). The
//! reading happens on a blocking thread, so a hostile client repeating lookups of an id
//! that does not exist costs disk reads, never the planner's time.
//!
//! Must never hold a file open past one segment's read (the lookup's descriptor is one,
//! borrowed outside the store's budget for a moment), never read more than `limit`
//! records, and never trust what it found: the planner checks the offset's hash again
//! before it answers or hides anything.

use super::*;

/// One segment as the scan reads it: newest records first, `tail` then the file.
#[derive(Debug, Clone)]
struct ScanSeg {
    base: u64,
    path: PathBuf,
    /// Records in the file (the rest are in `tail`).
    flushed: u64,
    tail: Vec<TxKey>,
}

/// A bounded newest-first search for one transaction-id hash, run off the planner.
#[derive(Debug, Clone)]
pub struct TxidScan {
    segs: Vec<ScanSeg>,
    start: u64,
    limit: u64,
}

impl PartitionFiles {
    /// What a search of the newest `limit` records at or above `start` reads.
    pub fn txid_scan(&self, start: u64, limit: u64) -> TxidScan {
        let mut segs = Vec::new();
        let mut covered = 0;
        for s in self.segments.iter().rev() {
            if covered >= limit || s.base + s.index.msgs <= start {
                break;
            }
            covered += s.index.msgs;
            segs.push(ScanSeg {
                base: s.base,
                path: file_path(&self.dir, s.base, s.gen, Kind::Txid),
                flushed: s.index.txid_flushed,
                tail: s.index.tail_txids().to_vec(),
            });
        }
        TxidScan { segs, start, limit }
    }
}

impl TxidScan {
    /// The newest offset whose hash is `h`. A file gone meanwhile (its segment retired or
    /// rewritten by compaction) ends the search as not found: the caller may ask again.
    pub fn find(&self, h: u64) -> io::Result<Option<u64>> {
        let mut left = self.limit;
        let mut hit = None;
        self.walk(&mut |o, k| {
            if o < self.start || left == 0 {
                return false;
            }
            left -= 1;
            if k[0] == h {
                hit = Some(o);
                return false;
            }
            true
        })?;
        Ok(hit)
    }

    fn walk(&self, f: &mut dyn FnMut(u64, TxKey) -> bool) -> io::Result<()> {
        for s in &self.segs {
            for (k, x) in s.tail.iter().enumerate().rev() {
                if !f(s.base + s.flushed + k as u64, *x) {
                    return Ok(());
                }
            }
            if s.flushed == 0 {
                continue;
            }
            let file = match File::open(&s.path) {
                Ok(f) => f,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(e),
            };
            let mut end = s.flushed;
            const CHUNK: u64 = 4096;
            let mut buf = Vec::new();
            while end > 0 {
                let from = end.saturating_sub(CHUNK);
                buf.resize(((end - from) * TXID) as usize, 0);
                file.read_exact_at(&mut buf, from * TXID)?;
                for (k, c) in buf.chunks_exact(TXID as usize).enumerate().rev() {
                    if !f(s.base + from + k as u64, decode_txid(c)) {
                        return Ok(());
                    }
                }
                end = from;
            }
        }
        Ok(())
    }
}
