//! The node's open partition files and its cache of index blocks (D29).
//!
//! Owns every file descriptor a partition file holds while the engine runs:
//! a least-recently-used set of open files bounded by `--max-open-files`, so
//! 100,000 idle partitions hold no descriptors, and a cache of 4 KiB blocks
//! of `.idx`/`.txid` files bounded by `--index-cache-mb`, so the planner's
//! lookups by offset stay in memory for the partitions being read.
//!
//! Must never make a push or pop fail because the budget is full: an evicted
//! file is only dropped from the set (a reader or writer holding its `Arc`
//! keeps it open until done) and reopened by path on its next use. Must never
//! serve a block older than the file: [`Store::invalidate`] is called for the
//! blocks a flush rewrites. Files not yet under their final name (D17) are
//! never looked up here by path; their segment holds them (pinned) until the
//! provisioner has renamed them.

use lru::LruCache;
use parking_lot::Mutex;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// Bytes per cached index block.
pub const BLOCK: u64 = 4096;

/// The three files of one segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `<base>.seg`: the record batches.
    Seg,
    /// `<base>.idx`: one 32-byte record per batch ([`crate::index::BatchRec`]).
    Idx,
    /// `<base>.txid`: one u64 transaction-id hash per message.
    Txid,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Seg, Kind::Idx, Kind::Txid];

    pub fn ext(self) -> &'static str {
        match self {
            Kind::Seg => "seg",
            Kind::Idx => "idx",
            Kind::Txid => "txid",
        }
    }
}

/// One file of one segment of one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileKey {
    pub part: u32,
    pub base: u64,
    /// The segment's generation: 0 as written, one more each time compaction rewrites it
    /// (D50). A rewrite is other bytes under another name, so nothing cached of an older
    /// generation (open file, index block) can answer for a newer one.
    pub gen: u32,
    pub kind: Kind,
}

/// A block of one file: the file and the block number.
type BlockKey = (FileKey, u64);

/// The caches' hasher: their keys are small integers we make, never a client's, so a fast
/// hash is safe, and SipHash was a visible share of every index read.
type Fast = foldhash::fast::RandomState;

/// `<base:020>.<ext>` as written, `<base:020>.g<gen>.<ext>` once compaction rewrote it (D50).
pub fn file_path(dir: &Path, base: u64, gen: u32, kind: Kind) -> PathBuf {
    match gen {
        0 => dir.join(format!("{base:020}.{}", kind.ext())),
        g => dir.join(format!("{base:020}.g{g}.{}", kind.ext())),
    }
}

/// Counters for /metrics.
#[derive(Debug, Default)]
pub struct FileStats {
    pub opens: AtomicU64,
    pub evictions: AtomicU64,
    pub open_failures: AtomicU64,
    pub block_hits: AtomicU64,
    pub block_misses: AtomicU64,
    /// Transaction-id hashes read back from `.txid` records (tail or file): what an ack by
    /// transactionId costs the planner.
    pub txid_reads: AtomicU64,
    /// New partitions whose directory was a spare one renamed into place (D81), and those
    /// that found none ready (their files came from spare files or were made on the planner).
    pub spare_dirs_taken: AtomicU64,
    pub spare_dirs_missed: AtomicU64,
}

pub struct Store {
    /// Segments holding files from the provisioner not yet placed (D17): their handles are
    /// open files outside the set, so they are bounded too (`max_pinned`, the pool size).
    pinned: std::sync::atomic::AtomicUsize,
    max_pinned: usize,
    open: Mutex<LruCache<FileKey, Arc<File>, Fast>>,
    blocks: Mutex<LruCache<BlockKey, Arc<Vec<u8>>, Fast>>,
    pub stats: FileStats,
    max_open: usize,
    /// Partitions with file work waiting (see [`Waiting`]).
    pub waiting: Waiting,
    /// What compaction did (D50), for /metrics.
    pub compaction: crate::compact::CompactStats,
}

/// Partitions with file work waiting, so the planner's periodic passes visit only those:
/// a pass over every partition (the writeback sweep each second, the checkpoint's marks)
/// was a pause of its own with 100,000 partitions (issue 18). A partition is listed once
/// while its flag ([`crate::store::PartitionFiles`] keeps it) is set; only the pass that
/// drains a list clears the flags of what it drained.
/// (partition, segment base, generation, batches, messages) an index write put in the files.
pub type Confirmed = (u32, u64, u32, u64, u64);

#[derive(Debug, Default)]
pub struct Waiting {
    /// Appended to, or holding files not yet placed, since the last writeback sweep.
    pub sweep: Mutex<Vec<u32>>,
    /// Changed since the last checkpoint took its marks: written, or a segment made or retired.
    pub checkpoint: Mutex<Vec<u32>>,
    /// Index tails written off the planner: (partition, segment base, generation, batches,
    /// messages) the files now hold, for the planner to drop from its tails (D31).
    pub confirmed: Mutex<Vec<Confirmed>>,
    /// Segments the compactor rewrote, for the planner to swap in (D50).
    pub compacted: Mutex<Vec<crate::compact::Rewritten>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Store({} open of {})", self.open.lock().len(), self.max_open)
    }
}

impl Default for Store {
    fn default() -> Self {
        Store::new(DEFAULT_MAX_OPEN, DEFAULT_INDEX_CACHE_BYTES)
    }
}

pub const DEFAULT_MAX_OPEN: usize = 4096;

/// Descriptors kept out of the partition files' share for the log, the checkpoint, the
/// listeners and the first connections.
pub const FD_RESERVE: u64 = 64;

/// The partition-file budget a node may use under a descriptor limit of `fd_limit`: the
/// set (`max_open`) plus the provisioner's spares and the taken files still pinned (each up
/// to `pool_for(max_open)`) fit in half of what is left after [`FD_RESERVE`]; the other
/// half is for connections. Without this the set relies on `EMFILE` to shrink, and the
/// `EMFILE` may hit an accept, a spare or the log instead of the open that caused it.
pub fn budget_for_fd_limit(max_open: usize, fd_limit: u64) -> usize {
    let share = usize::try_from(fd_limit.saturating_sub(FD_RESERVE) / 2).unwrap_or(usize::MAX);
    let fits = |m: usize| m.saturating_add(2 * crate::provision::pool_for(m)) <= share;
    if fits(max_open) {
        return max_open;
    }
    // pool_for(m) ≤ m/16 + 6, so m = (share - 12) * 8/9 fits; step up to the largest that does.
    let mut m = share.saturating_sub(12) / 9 * 8;
    while m < max_open && fits(m + 1) {
        m += 1;
    }
    m.max(8)
}
pub const DEFAULT_INDEX_CACHE_BYTES: u64 = 64 << 20;

impl Store {
    pub fn new(max_open: usize, cache_bytes: u64) -> Store {
        let max_open = max_open.max(8);
        let blocks = ((cache_bytes / BLOCK) as usize).max(16);
        Store {
            pinned: std::sync::atomic::AtomicUsize::new(0),
            max_pinned: crate::provision::pool_for(max_open) / 3,
            open: Mutex::new(LruCache::unbounded_with_hasher(Fast::default())),
            blocks: Mutex::new(LruCache::with_hasher(
                std::num::NonZeroUsize::new(blocks).expect("at least 16"),
                Fast::default(),
            )),
            stats: FileStats::default(),
            max_open,
            waiting: Waiting::default(),
            compaction: Default::default(),
        }
    }

    pub fn max_open(&self) -> usize {
        self.max_open
    }

    /// Whether another segment may hold unplaced files now; if so it is counted until
    /// [`Store::unpinned`].
    pub fn try_pin(&self) -> bool {
        self.pinned.fetch_update(Relaxed, Relaxed, |n| (n < self.max_pinned).then_some(n + 1)).is_ok()
    }

    pub fn unpinned(&self) {
        self.pinned.fetch_sub(1, Relaxed);
    }

    pub fn pinned(&self) -> usize {
        self.pinned.load(Relaxed)
    }

    /// Files open in the set now (not counting pinned ones and readers' copies).
    pub fn open_files(&self) -> usize {
        self.open.lock().len()
    }

    /// The open file for `key`, opened from `path` (read-write, created if `create`)
    /// if it is not in the set. Running out of descriptors evicts half the set and
    /// tries once more before it fails.
    pub fn get(&self, key: FileKey, path: &Path, create: bool) -> io::Result<Arc<File>> {
        self.get_with(key, || path.to_path_buf(), create)
    }

    /// [`Store::get`] with the path made only when the file must be opened: formatting
    /// it on every lookup was an eighth of the server's CPU under a pipeline load.
    pub fn get_with(&self, key: FileKey, path: impl FnOnce() -> PathBuf, create: bool) -> io::Result<Arc<File>> {
        if let Some(f) = self.open.lock().get(&key) {
            return Ok(f.clone());
        }
        let path = path();
        let f = match open_rw(&path, create) {
            Err(e) if out_of_fds(&e) => {
                let half = self.open.lock().len() / 2;
                self.evict_down_to(half);
                open_rw(&path, create)
            }
            r => r,
        }
        .inspect_err(|_| {
            self.stats.open_failures.fetch_add(1, Relaxed);
        })?;
        self.stats.opens.fetch_add(1, Relaxed);
        let f = Arc::new(f);
        self.insert(key, f.clone());
        Ok(f)
    }

    /// The file for `key` if it is open now; never opens one.
    pub fn peek(&self, key: FileKey) -> Option<Arc<File>> {
        self.open.lock().peek(&key).cloned()
    }

    /// Add a file opened elsewhere (a placed spare, a file just created).
    pub fn insert(&self, key: FileKey, f: Arc<File>) {
        let mut open = self.open.lock();
        open.put(key, f);
        let excess = open.len().saturating_sub(self.max_open);
        for _ in 0..excess {
            open.pop_lru();
            self.stats.evictions.fetch_add(1, Relaxed);
        }
    }

    fn evict_down_to(&self, n: usize) {
        let mut open = self.open.lock();
        while open.len() > n {
            open.pop_lru();
            self.stats.evictions.fetch_add(1, Relaxed);
        }
    }

    /// Forget the files of a retired or rewritten segment (they are about to be deleted).
    pub fn forget(&self, part: u32, base: u64, gen: u32) {
        let mut open = self.open.lock();
        for kind in Kind::ALL {
            open.pop(&FileKey { part, base, gen, kind });
        }
    }

    /// Block `n` of `key`'s file: at most [`BLOCK`] bytes, fewer at the end of the file.
    /// The file is asked for only on a miss: looking it up in the open set first was a
    /// second LRU lookup and lock per index read, ~8 % of a consumer's server CPU.
    pub fn block(
        &self,
        key: FileKey,
        n: u64,
        file: impl FnOnce() -> io::Result<Arc<File>>,
    ) -> io::Result<Arc<Vec<u8>>> {
        if let Some(b) = self.blocks.lock().get(&(key, n)) {
            self.stats.block_hits.fetch_add(1, Relaxed);
            return Ok(b.clone());
        }
        self.stats.block_misses.fetch_add(1, Relaxed);
        let file = file()?;
        let mut buf = vec![0u8; BLOCK as usize];
        let mut got = 0;
        while got < buf.len() {
            match file.read_at(&mut buf[got..], n * BLOCK + got as u64)? {
                0 => break,
                k => got += k,
            }
        }
        buf.truncate(got);
        // A block at the end of a file is short (one batch's record is 32 bytes): it costs
        // what it holds, not 4 KiB, so a cache full of idle partitions' blocks stays small.
        buf.shrink_to_fit();
        let b = Arc::new(buf);
        self.blocks.lock().put((key, n), b.clone());
        Ok(b)
    }

    /// Drop cached blocks `from..` of `key`: they are being rewritten or cut.
    pub fn invalidate(&self, key: FileKey, from: u64, to: u64) {
        let mut blocks = self.blocks.lock();
        for n in from..=to {
            blocks.pop(&(key, n));
        }
    }
}

fn open_rw(path: &Path, create: bool) -> io::Result<File> {
    OpenOptions::new().read(true).write(true).create(create).truncate(false).open(path)
}

fn out_of_fds(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_fits_half_the_descriptor_limit_with_spares_and_pins() {
        use crate::provision::pool_for;
        // A generous limit leaves the setting alone.
        assert_eq!(budget_for_fd_limit(4096, 1 << 20), 4096);
        for limit in [100u64, 200, 1024, 4096, 9000, 20_000] {
            let m = budget_for_fd_limit(4096, limit);
            let share = (limit - FD_RESERVE) as usize / 2;
            assert!((8..=4096).contains(&m), "{limit}: {m}");
            if share >= 8 + 2 * pool_for(8) {
                assert!(m + 2 * pool_for(m) <= share, "{limit}: {m} does not fit {share}");
                let next = m + 1;
                assert!(m == 4096 || next + 2 * pool_for(next) > share, "{limit}: {m} is not the largest");
            }
        }
    }

    #[test]
    fn the_set_stays_within_its_budget_and_reopens_what_it_evicted() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::new(8, 1 << 20);
        let mut held = Vec::new();
        for i in 0..20u64 {
            let key = FileKey { part: 1, base: i, gen: 0, kind: Kind::Seg };
            let f = s.get(key, &file_path(d.path(), i, 0, Kind::Seg), true).unwrap();
            f.write_all_at(&i.to_le_bytes(), 0).unwrap();
            if i == 0 {
                held.push(f);
            }
            assert!(s.open_files() <= 8);
        }
        assert_eq!(s.stats.evictions.load(Relaxed), 12);
        // An evicted file a caller still holds stays usable.
        let mut b = [0u8; 8];
        held[0].read_exact_at(&mut b, 0).unwrap();
        assert_eq!(u64::from_le_bytes(b), 0);
        let key = FileKey { part: 1, base: 0, gen: 0, kind: Kind::Seg };
        let again = s.get(key, &file_path(d.path(), 0, 0, Kind::Seg), false).unwrap();
        again.read_exact_at(&mut b, 0).unwrap();
        assert_eq!(u64::from_le_bytes(b), 0);
        assert_eq!(s.stats.opens.load(Relaxed), 21);
    }

    #[test]
    fn a_block_is_cached_until_invalidated() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::new(8, 1 << 20);
        let key = FileKey { part: 2, base: 0, gen: 0, kind: Kind::Idx };
        let f = s.get(key, &file_path(d.path(), 0, 0, Kind::Idx), true).unwrap();
        f.write_all_at(b"abc", 0).unwrap();
        let file = || Ok(f.clone());
        assert_eq!(&s.block(key, 0, file).unwrap()[..], b"abc");
        f.write_all_at(b"def", 3).unwrap();
        assert_eq!(&s.block(key, 0, file).unwrap()[..], b"abc", "cached");
        // A cached block needs no file at all.
        assert_eq!(&s.block(key, 0, || Err(io::Error::other("no file"))).unwrap()[..], b"abc");
        s.invalidate(key, 0, 0);
        assert_eq!(&s.block(key, 0, file).unwrap()[..], b"abcdef");
        assert_eq!(s.stats.block_hits.load(Relaxed), 2);
    }
}
