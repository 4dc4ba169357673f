//! openraft's log storage, over Baton's WAL (D39): the Raft log is the WAL, one frame per
//! entry, one write and one fdatasync per group commit however many entries it holds.
//!
//! Owns the Raft view of the log: which log ids it holds (last, purged), the in-memory tail
//! that makes an entry readable the moment `append` returns, and the order of durability:
//! openraft's flush callback fires from the completion of the last WAL frame of its batch,
//! which the writer completes only after that frame's fdatasync, in index order.
//! Must never: fire a flush callback before its entries are durable; write an entry under
//! any WAL index but its Raft index plus one (`WalWriter::submit_at` refuses otherwise); drop
//! from the tail an entry that is not durable yet; delete a segment before the purge point
//! that explains the gap is durable in `meta`.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton_log::{WalConfig, WalError, WalItem, WalReader, WalWriter};
use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{ErrorSubject, ErrorVerb, RaftLogReader};
use parking_lot::Mutex;

use crate::meta::{Meta, MetaFile};
use crate::{codec, io_error, raft_index, wal_index, Entry, LogId, StorageError, TypeConfig, Vote};

/// The bounds of the log store, each a named setting of the node (`baton serve --raft-*`).
#[derive(Debug, Clone)]
pub struct LogStoreConfig {
    pub wal: WalConfig,
    /// Durable entries kept in memory for followers close behind, beyond the entries not yet
    /// durable (which always stay: they are readable nowhere else).
    pub tail_bytes: usize,
    /// One replication read hands at most this many payload bytes (and always one entry).
    pub read_bytes: usize,
    /// The committed index is written to `raft-meta` at most this often (D39: safety never
    /// rests on it; it only saves a restarted node some re-applying).
    pub committed_every: Duration,
}

impl LogStoreConfig {
    pub const DEFAULT_TAIL_BYTES: usize = 64 << 20;
    pub const DEFAULT_READ_BYTES: usize = 8 << 20;

    pub fn new(dir: impl Into<PathBuf>) -> Self {
        LogStoreConfig {
            wal: WalConfig::new(dir),
            tail_bytes: Self::DEFAULT_TAIL_BYTES,
            read_bytes: Self::DEFAULT_READ_BYTES,
            committed_every: Duration::from_millis(200),
        }
    }
}

struct Tail {
    entries: BTreeMap<u64, Entry>,
    /// Encoded bytes of `entries`.
    bytes: usize,
}

/// What is durable, and the flush callbacks waiting for more. One lock over both, so a
/// callback is never registered just after the completion it waits for went by.
struct Flush {
    /// Raft index through which every entry is durable.
    durable: Option<u64>,
    /// Set once a WAL frame failed: every waiting and later callback hears it.
    failed: Option<String>,
    /// (last index of an append, its callback), in index order.
    waiting: VecDeque<(u64, Callback)>,
}

/// openraft's `LogFlushed`, or a test's probe.
type Callback = Box<dyn FnOnce(Result<(), std::io::Error>) + Send>;

impl Flush {
    /// Fires the callback once everything through `upto` is durable (at once if it is).
    fn wait(&mut self, upto: Option<u64>, cb: Callback) {
        if let Some(reason) = &self.failed {
            cb(Err(std::io::Error::other(reason.clone())));
        } else if upto.is_none_or(|u| self.durable.is_some_and(|d| d >= u)) {
            cb(Ok(()));
        } else {
            // In index order, whoever asks: `done` fires them from the front.
            let upto = upto.expect("checked");
            let at = self.waiting.partition_point(|(u, _)| *u <= upto);
            self.waiting.insert(at, (upto, cb));
        }
    }

    fn done(&mut self, index: u64, result: Result<u64, WalError>) {
        match result {
            Ok(_) => {
                self.durable = Some(index);
                while self.waiting.front().is_some_and(|(u, _)| *u <= index) {
                    let (_, cb) = self.waiting.pop_front().expect("checked");
                    cb(Ok(()));
                }
            }
            Err(e) => {
                let reason = self.failed.get_or_insert_with(|| e.to_string()).clone();
                for (_, cb) in self.waiting.drain(..) {
                    cb(Err(std::io::Error::other(reason.clone())));
                }
            }
        }
    }
}

struct Inner {
    cfg: LogStoreConfig,
    meta_file: MetaFile,
    flush: Arc<Mutex<Flush>>,
    state: Mutex<State>,
    tail: Mutex<Tail>,
    stats: LogStats,
}

/// What the log store did, for `/metrics` and for tests that must know a path was taken.
#[derive(Debug, Default)]
pub struct LogStats {
    /// Conflicting tails removed (a follower's uncommitted entries a new leader replaced).
    pub truncations: AtomicU64,
    pub truncated_entries: AtomicU64,
    /// Entries read from the segment files because the tail no longer held them.
    pub disk_reads: AtomicU64,
}

struct State {
    wal: Arc<WalWriter>,
    meta: Meta,
    /// The last entry the log holds, or the purge point when it holds none.
    last: Option<LogId>,
    committed_saved: Option<(Instant, Option<LogId>)>,
}

/// The log storage handed to openraft; cheap to clone (readers share it).
#[derive(Clone)]
pub struct LogStore {
    inner: Arc<Inner>,
}

/// A replication task's reader: the shared tail first, the WAL files for the rest.
pub struct LogReader {
    inner: Arc<Inner>,
    wal: WalReader,
}

fn wal_err(verb: ErrorVerb, e: impl std::fmt::Display) -> StorageError {
    io_error(ErrorSubject::Logs, verb, e)
}

impl LogStore {
    /// Opens the log in `cfg.wal.dir` (recovering a torn tail) and the metadata in `meta_dir`.
    pub fn open(cfg: LogStoreConfig, meta_dir: &Path) -> Result<LogStore, StorageError> {
        let (meta_file, meta) =
            MetaFile::open(meta_dir).map_err(|e| io_error(ErrorSubject::Store, ErrorVerb::Read, e))?;
        let from = meta.purged.map_or(1, |p| wal_index(p.index + 1)).max(meta.start.map_or(1, wal_index));
        let mut last = meta.purged;
        let mut bad = None;
        let info = baton_log::recover(&cfg.wal, from, |index, payload| {
            match codec::decode(index, payload) {
                Ok(e) => last = Some(e.log_id),
                Err(e) => bad = bad.take().or(Some(format!("WAL frame {index}: {e}"))),
            }
            Ok(())
        })
        .map_err(|e| wal_err(ErrorVerb::Read, e))?;
        if let Some(bad) = bad {
            return Err(wal_err(ErrorVerb::Read, bad));
        }
        let next = last.map_or(from, |l| wal_index(l.index + 1));
        if info.next_index != next {
            return Err(wal_err(
                ErrorVerb::Read,
                format!("the WAL goes on to frame {} but its entries end at {next}", info.next_index),
            ));
        }
        let wal = WalWriter::start(cfg.wal.clone(), next).map_err(|e| wal_err(ErrorVerb::Write, e))?;
        let durable = raft_index(next).checked_sub(1);
        let flush = Arc::new(Mutex::new(Flush { durable, failed: None, waiting: VecDeque::new() }));
        Ok(LogStore {
            inner: Arc::new(Inner {
                cfg,
                meta_file,
                flush,
                state: Mutex::new(State { wal: Arc::new(wal), meta, last, committed_saved: None }),
                tail: Mutex::new(Tail { entries: BTreeMap::new(), bytes: 0 }),
                stats: LogStats::default(),
            }),
        })
    }

    /// The entries `start..end` this log holds, read on the caller's thread (a member's
    /// rebuild replays them while Raft's apply waits, D40).
    pub fn read(&self, start: u64, end: u64) -> Result<Vec<Entry>, StorageError> {
        let mut wal = WalReader::new(&self.inner.cfg.wal.dir);
        self.inner.get(start, end, usize::MAX, &mut wal)
    }

    /// The index through which every entry is durable in this log.
    pub fn durable(&self) -> Option<u64> {
        self.inner.flush.lock().durable
    }

    /// Waits until every entry through `index` is durable in this log; the reason if the log
    /// failed first.
    pub async fn durable_through(&self, index: u64) -> Result<(), String> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.inner.flush.lock().wait(
            Some(index),
            Box::new(move |r| {
                let _ = tx.send(r.map_err(|e| e.to_string()));
            }),
        );
        rx.await.map_err(|_| "the log stopped before the entry was durable".to_string())?
    }

    pub fn stats(&self) -> &LogStats {
        &self.inner.stats
    }

    /// `Some(reason)` once the WAL is latched failed.
    pub fn failure(&self) -> Option<String> {
        self.inner.state.lock().wal.failure()
    }

    /// Finishes what was appended, then refuses more.
    pub fn shutdown(&self) {
        let wal = Arc::clone(&self.inner.state.lock().wal);
        wal.shutdown();
    }

    async fn save_meta(&self, meta: Meta) -> Result<(), StorageError> {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || inner.meta_file.save(&meta))
            .await
            .map_err(|e| io_error(ErrorSubject::Store, ErrorVerb::Write, e))?
            .map_err(|e| io_error(ErrorSubject::Store, ErrorVerb::Write, e))
    }
}

/// A Raft entry on its way into the WAL.
struct Item {
    entry: Entry,
    flush: Arc<Mutex<Flush>>,
}

impl WalItem for Item {
    fn encode(&self, buf: &mut Vec<u8>) {
        codec::encode(&self.entry, buf);
    }

    fn complete(self: Box<Self>, result: Result<u64, WalError>) {
        self.flush.lock().done(self.entry.log_id.index, result);
    }
}

impl Inner {
    fn get(&self, start: u64, end: u64, budget: usize, wal: &mut WalReader) -> Result<Vec<Entry>, StorageError> {
        let (first, last) = {
            let st = self.state.lock();
            let first = st.meta.purged.map_or(0, |p| p.index + 1).max(st.meta.start.unwrap_or(0));
            (first, st.last.map_or(0, |l| l.index + 1))
        };
        let (start, end) = (start.max(first), end.min(last));
        let mut out = Vec::new();
        let mut bytes = 0usize;
        let mut next = start;
        while next < end && (out.is_empty() || bytes < budget) {
            let cached = self.tail.lock().entries.get(&next).cloned();
            if let Some(e) = cached {
                bytes += codec::encoded_len(&e);
                out.push(e);
                next += 1;
                continue;
            }
            // Not in memory: from disk, up to the first entry the tail holds.
            let upto = self.tail.lock().entries.range(next..end).next().map_or(end, |(i, _)| *i);
            let mut bad = None;
            let got = wal
                .read(wal_index(next), wal_index(upto), budget.saturating_sub(bytes), |index, payload| {
                    match codec::decode(index, payload) {
                        Ok(e) if bad.is_none() => {
                            bytes += payload.len();
                            out.push(e);
                        }
                        Ok(_) => {}
                        Err(e) => bad = bad.take().or(Some(format!("WAL frame {index}: {e}"))),
                    }
                })
                .map_err(|e| wal_err(ErrorVerb::Read, e))?;
            if let Some(bad) = bad {
                return Err(wal_err(ErrorVerb::Read, bad));
            }
            if got == 0 {
                break;
            }
            self.stats.disk_reads.fetch_add(got, Ordering::Relaxed);
            next += got;
        }
        Ok(out)
    }
}

fn range_of(range: &impl RangeBounds<u64>) -> (u64, u64) {
    let start = match range.start_bound() {
        Bound::Included(s) => *s,
        Bound::Excluded(s) => s.saturating_add(1),
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(e) => e.saturating_add(1),
        Bound::Excluded(e) => *e,
        Bound::Unbounded => u64::MAX,
    };
    (start, end)
}

impl RaftLogReader<TypeConfig> for LogReader {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        let (start, end) = range_of(&range);
        self.inner.get(start, end, usize::MAX, &mut self.wal)
    }

    async fn limited_get_log_entries(&mut self, start: u64, end: u64) -> Result<Vec<Entry>, StorageError> {
        let got = self.inner.get(start, end, self.inner.cfg.read_bytes, &mut self.wal)?;
        if got.is_empty() && start < end {
            return Err(wal_err(ErrorVerb::Read, format!("entries {start}..{end} are neither in memory nor on disk")));
        }
        Ok(got)
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        let (start, end) = range_of(&range);
        let mut wal = WalReader::new(&self.inner.cfg.wal.dir);
        self.inner.get(start, end, usize::MAX, &mut wal)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogReader;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError> {
        let st = self.inner.state.lock();
        Ok(LogState { last_purged_log_id: st.meta.purged, last_log_id: st.last })
    }

    async fn get_log_reader(&mut self) -> LogReader {
        LogReader { inner: Arc::clone(&self.inner), wal: WalReader::new(&self.inner.cfg.wal.dir) }
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), StorageError> {
        let meta = {
            let mut st = self.inner.state.lock();
            st.meta.vote = Some(*vote);
            st.meta.clone()
        };
        self.save_meta(meta).await
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, StorageError> {
        Ok(self.inner.state.lock().meta.vote)
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), StorageError> {
        let meta = {
            let mut st = self.inner.state.lock();
            st.meta.committed = committed;
            let due = st
                .committed_saved
                .is_none_or(|(at, saved)| saved != committed && at.elapsed() >= self.inner.cfg.committed_every);
            if !due {
                return Ok(());
            }
            st.committed_saved = Some((Instant::now(), committed));
            st.meta.clone()
        };
        self.save_meta(meta).await
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, StorageError> {
        Ok(self.inner.state.lock().meta.committed)
    }

    async fn append<I>(&mut self, entries: I, callback: LogFlushed<TypeConfig>) -> Result<(), StorageError>
    where
        I: IntoIterator<Item = Entry> + Send,
        I::IntoIter: Send,
    {
        let mut entries = entries.into_iter().peekable();
        if let Some(first) = entries.peek().map(|e| e.log_id.index) {
            let (empty, wal_next) = {
                let st = self.inner.state.lock();
                (st.last == st.meta.purged, st.wal.next_index())
            };
            if empty && wal_index(first) > wal_next {
                self.start_at(first).await?;
            }
        }
        let mut st = self.inner.state.lock();
        for entry in entries {
            let index = entry.log_id.index;
            if st.meta.purged.is_some_and(|p| index <= p.index) {
                // Covered by the snapshot the purge point came from: committed and applied
                // already, nothing to keep.
                continue;
            }
            let follows = st.last.map_or(raft_index(st.wal.next_index()), |l| l.index + 1);
            if index != follows {
                return Err(wal_err(
                    ErrorVerb::Write,
                    format!("entry {index} does not follow the log, which ends before {follows}"),
                ));
            }
            {
                let mut tail = self.inner.tail.lock();
                tail.bytes += codec::encoded_len(&entry);
                tail.entries.insert(index, entry.clone());
            }
            st.last = Some(entry.log_id);
            let item = Box::new(Item { entry, flush: Arc::clone(&self.inner.flush) });
            if let Err((_, got)) = st.wal.submit_at(item, wal_index(index)) {
                // Never written: hand the error to openraft, which stops this node.
                return Err(wal_err(
                    ErrorVerb::Write,
                    format!("entry {index} would have been WAL frame {got}, not {}", wal_index(index)),
                ));
            }
        }
        // The callback means "everything appended so far is durable": it waits for the last
        // entry submitted, by this call or an earlier one.
        let upto = raft_index(st.wal.next_index()).checked_sub(1);
        drop(st);
        self.inner.flush.lock().wait(upto, Box::new(move |r| callback.log_io_completed(r)));
        self.evict();
        Ok(())
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError> {
        let index = log_id.index;
        let (wal, gone) = {
            let st = self.inner.state.lock();
            (Arc::clone(&st.wal), st.last.map_or(0, |l| (l.index + 1).saturating_sub(index)))
        };
        self.inner.stats.truncations.fetch_add(1, Ordering::Relaxed);
        self.inner.stats.truncated_entries.fetch_add(gone, Ordering::Relaxed);
        tokio::task::spawn_blocking(move || wal.truncate_from(wal_index(index)))
            .await
            .map_err(|e| wal_err(ErrorVerb::Delete, e))?
            .map_err(|e| wal_err(ErrorVerb::Delete, e))?;
        {
            let mut tail = self.inner.tail.lock();
            let gone = tail.entries.split_off(&index);
            tail.bytes -= gone.values().map(codec::encoded_len).sum::<usize>();
        }
        // The writer committed everything before the cut before it cut: all of it is durable.
        self.inner.flush.lock().durable = index.checked_sub(1);
        let before = if index == 0 {
            None
        } else {
            let mut r = WalReader::new(&self.inner.cfg.wal.dir);
            self.inner.get(index - 1, index, usize::MAX, &mut r)?.pop().map(|e| e.log_id)
        };
        let mut st = self.inner.state.lock();
        st.last = before.or(st.meta.purged);
        Ok(())
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError> {
        let meta = {
            let mut st = self.inner.state.lock();
            if st.meta.purged.is_some_and(|p| p.index >= log_id.index) {
                return Ok(());
            }
            st.meta.purged = Some(log_id);
            st.meta.clone()
        };
        // The purge point is durable before any segment it explains goes.
        self.save_meta(meta).await?;
        {
            let mut tail = self.inner.tail.lock();
            let keep = tail.entries.split_off(&(log_id.index + 1));
            let gone = std::mem::replace(&mut tail.entries, keep);
            tail.bytes -= gone.values().map(codec::encoded_len).sum::<usize>();
        }
        let next = wal_index(log_id.index + 1);
        let behind = {
            let st = self.inner.state.lock();
            st.wal.next_index() < next
        };
        if behind {
            // A snapshot from the leader went past the whole log: it starts again after it.
            self.restart_wal(log_id.index + 1).await?;
            self.inner.flush.lock().durable = Some(log_id.index);
            self.inner.state.lock().last = Some(log_id);
        } else {
            self.inner.state.lock().wal.truncate_before(next);
        }
        Ok(())
    }
}

impl LogStore {
    /// The first entry an empty log is given may have any index (openraft's contract): the
    /// log starts there, and says so durably before it writes there, so a restart does not
    /// take the missing entries below it for a hole.
    async fn start_at(&self, first: u64) -> Result<(), StorageError> {
        let meta = {
            let mut st = self.inner.state.lock();
            st.meta.start = Some(first);
            st.meta.clone()
        };
        self.save_meta(meta).await?;
        self.restart_wal(first).await
    }

    /// Starts the WAL again at Raft index `next`, in a segment of its own; the old segments,
    /// all below it, go.
    async fn restart_wal(&self, next: u64) -> Result<(), StorageError> {
        let old = Arc::clone(&self.inner.state.lock().wal);
        let cfg = self.inner.cfg.wal.clone();
        let next = wal_index(next);
        let wal = tokio::task::spawn_blocking(move || {
            old.shutdown();
            if let Some(reason) = old.failure() {
                return Err(WalError::Failed(reason));
            }
            WalWriter::start(cfg, next)
        })
        .await
        .map_err(|e| wal_err(ErrorVerb::Write, e))?
        .map_err(|e| wal_err(ErrorVerb::Write, e))?;
        wal.truncate_before(next);
        self.inner.state.lock().wal = Arc::new(wal);
        Ok(())
    }

    /// Drops the oldest durable entries from memory while the tail is over its budget.
    fn evict(&self) {
        let Some(durable) = self.inner.flush.lock().durable else { return };
        let mut tail = self.inner.tail.lock();
        while tail.bytes > self.inner.cfg.tail_bytes {
            let Some((&i, _)) = tail.entries.first_key_value() else { break };
            if i > durable {
                break;
            }
            let (_, e) = tail.entries.pop_first().expect("checked");
            tail.bytes -= codec::encoded_len(&e);
        }
    }
}

#[cfg(test)]
#[path = "log_store_tests.rs"]
mod tests;
