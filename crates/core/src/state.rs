//! The state machine: queues, partitions, cursors, leases, dead letters, and
//! `apply`, the only code that changes them.
//!
//! Apply is a pure function of (state, entry) (I1): it reads no clock and no
//! random source; every time, offset and id it needs is in the entry. The only
//! way it can fail is the disk under the partition files, which stops the
//! node (fail-stop) rather than letting replicas diverge.

use crate::appender::PendingWrite;
use crate::entry::{Effect, Entry};
use crate::model::*;
use crate::store::{Found, PartitionFiles, ReadSpan, SegmentMark};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::chunked::Chunked;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Lease {
    pub id: LeaseId,
    pub offsets: Vec<u64>,
    pub settled: Vec<bool>,
    pub expires: Micros,
    /// (transaction-id hash, position) of every message, sorted: built on the first ack by
    /// transactionId that is not for the first unsettled message, so acks in any order read
    /// each `.txid` record once. Derived from the files, never checkpointed: memory is
    /// O(unsettled messages), and only for leases acked out of order.
    #[serde(skip)]
    pub by_txid: std::sync::OnceLock<Arc<Vec<(u64, u32)>>>,
    /// Every position below is settled (after a restore, a lower bound that the next
    /// settle raises): finding the first unsettled message stays amortized O(1) per ack in
    /// any order, not a scan from the start each time.
    #[serde(skip)]
    pub low: usize,
}

impl Lease {
    pub fn new(id: LeaseId, offsets: Vec<u64>, expires: Micros) -> Lease {
        let settled = vec![false; offsets.len()];
        Lease { id, offsets, settled, expires, by_txid: Default::default(), low: 0 }
    }

    /// The position of `offset`. A pop leases offsets in ascending order, so this is a binary
    /// search: a reverse-order ack of a whole lease by offset stays O(n log n).
    pub fn position(&self, offset: u64) -> Option<usize> {
        self.offsets.binary_search(&offset).ok()
    }

    /// The first unsettled position, or the length when all are settled.
    pub fn first_unsettled(&self) -> usize {
        (self.low..self.settled.len()).find(|&i| !self.settled[i]).unwrap_or(self.settled.len())
    }

    /// Settle position `i`; true when that settles the whole lease.
    pub fn settle(&mut self, i: usize) -> bool {
        self.settled[i] = true;
        self.low = self.first_unsettled();
        self.low == self.settled.len()
    }
}

/// One group's progress through one partition.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Cursor {
    /// Every offset below is settled.
    pub next: u64,
    /// Settled offsets at or above `next` (acks that arrived out of order).
    pub done: BTreeSet<u64>,
    /// Failures charged per offset (failed acks and expired leases).
    pub attempts: HashMap<u64, u32>,
    /// While a lease lives, no other consumer of the group gets this partition (FIFO).
    pub lease: Option<Lease>,
}

impl Cursor {
    fn settle(&mut self, offset: u64) {
        self.attempts.remove(&offset);
        if offset == self.next {
            self.next += 1;
            while self.done.remove(&self.next) {
                self.next += 1;
            }
        } else if offset > self.next {
            self.done.insert(offset);
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeadLetter {
    pub part: PartId,
    pub offset: u64,
    pub group: GroupId,
    pub error: Option<String>,
    pub ts: Micros,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Partition {
    pub id: PartId,
    pub queue: QueueId,
    pub name: String,
    pub created: Micros,
    /// First offset still stored (retention moves it).
    pub start: u64,
    /// Next offset to assign (planned, not necessarily durable).
    pub end: u64,
    pub cursors: HashMap<GroupId, Cursor>,
    /// Index of `dedup_order` (hash -> expiry of its latest push).
    #[serde(skip)]
    pub dedup: HashMap<TxKey, Micros>,
    /// The dedup window, oldest first. Neither is in checkpoints or their copies: recovery
    /// rebuilds both from the flagged keys in the `.txid` files (D29), so a checkpoint's
    /// size does not grow with the messages pushed within the window.
    #[serde(skip)]
    pub dedup_order: Chunked<(Micros, TxKey)>,
    pub marks: Vec<SegmentMark>,
    /// Idempotent Kafka producers: epoch and their last few batches.
    pub producers: HashMap<i64, ProducerState>,
    #[serde(skip)]
    pub files: Option<PartitionFiles>,
    /// Offsets below are durable: readers that do not write (fetch) stop here.
    #[serde(skip)]
    pub durable: Arc<AtomicU64>,
}

/// A copy for a checkpoint: the file handles and the dedup index are not
/// copied (the copy is only ever serialized, and neither is serialized), the
/// durable watermark is shared. Per-message arrays are chunked, so this is
/// cheap on the planner thread however many messages are stored.
impl Clone for Partition {
    fn clone(&self) -> Self {
        Partition {
            id: self.id,
            queue: self.queue,
            name: self.name.clone(),
            created: self.created,
            start: self.start,
            end: self.end,
            cursors: self.cursors.clone(),
            dedup: HashMap::new(),
            dedup_order: Chunked::new(),
            marks: self.marks.clone(),
            producers: self.producers.clone(),
            files: None,
            durable: self.durable.clone(),
        }
    }
}

impl Partition {
    /// Rebuild the dedup window after a restart: the flagged keys of batches written in the
    /// last `window_secs` before `now` (the last applied entry), as apply made them.
    pub fn rebuild_dedup(&mut self, window_secs: u64, now: Micros) -> std::io::Result<()> {
        let span = window_secs.saturating_mul(1_000_000);
        let Some(files) = &self.files else { return Ok(()) };
        if span == 0 {
            return Ok(());
        }
        self.dedup_order = Chunked::new();
        self.dedup = HashMap::new();
        for (ts, key) in files.dedup_after(now.saturating_sub(span))? {
            let exp = ts.saturating_add(span);
            self.dedup_order.push_back((exp, key));
            self.dedup.insert(key, exp);
        }
        Ok(())
    }

    /// The stored batch holding `offset` (D29: looked up in the partition's index files).
    pub fn find(&self, offset: u64) -> Option<Found> {
        if offset < self.start || offset >= self.end {
            return None;
        }
        read_ok(self.files.as_ref()?.find(offset), self.id)
    }

    pub fn ts_of(&self, offset: u64) -> Option<Micros> {
        self.find(offset).map(|f| f.rec.ts)
    }

    pub fn txid_at(&self, offset: u64) -> Option<u64> {
        if offset < self.start || offset >= self.end {
            return None;
        }
        read_ok(self.files.as_ref()?.txid_at(offset), self.id)
    }

    /// The position in `lease` of the message whose transaction-id hash is `h`: the first
    /// unsettled one with that hash at or after the first unsettled message, else the first
    /// with it. Acks in delivery order cost one index read each (the first unsettled message
    /// is tried first); any other order reads the lease's `.txid` records once into
    /// `Lease::by_txid` and looks up there. A scan per ack was O(lease²) reads on the planner
    /// for one hostile request acking in reverse.
    pub fn lease_position_of(&self, lease: &Lease, h: u64) -> Option<usize> {
        let first = lease.first_unsettled();
        if let Some(&o) = lease.offsets.get(first) {
            if self.txid_at(o) == Some(h) {
                return Some(first);
            }
        }
        let built;
        let index = match lease.by_txid.get() {
            Some(v) => v,
            None => {
                let mut v = Vec::with_capacity(lease.offsets.len());
                let mut whole = true;
                for (i, &o) in lease.offsets.iter().enumerate() {
                    let Some(files) = self.files.as_ref().filter(|_| self.start <= o && o < self.end) else {
                        continue;
                    };
                    match files.txid_at(o) {
                        Ok(Some(t)) => v.push((t, i as u32)),
                        Ok(None) => {}
                        // A read that failed is tried again by the next ack: keep no index
                        // that misses it.
                        e @ Err(_) => whole &= read_ok(e, self.id).is_some(),
                    }
                }
                v.sort_unstable();
                built = Arc::new(v);
                if whole {
                    let _ = lease.by_txid.set(built.clone());
                }
                &built
            }
        };
        let at = index.partition_point(|e| e.0 < h);
        let same = index[at..].iter().take_while(|e| e.0 == h).map(|e| e.1 as usize);
        let mut found = None;
        for i in same {
            if i >= first && !lease.settled[i] {
                return Some(i);
            }
            found = found.or(Some(i));
        }
        found
    }

    /// First offset written at or after `ts`.
    pub fn offset_at_ts(&self, ts: Micros) -> u64 {
        let first = self.files.as_ref().and_then(|f| read_ok(f.first_at_or_after(ts), self.id));
        first.map_or(self.end, |r| r.base.max(self.start)).min(self.end)
    }

    /// Spans holding the given offsets (sorted ascending), one per batch.
    pub fn spans_for(&self, offsets: &[u64]) -> Vec<ReadSpan> {
        let mut out = Vec::new();
        let Some(files) = &self.files else { return out };
        let mut last: Option<Found> = None;
        for &o in offsets {
            if last.is_some_and(|l| l.rec.base <= o && o < l.rec.end()) {
                continue;
            }
            let Some(f) = self.find(o) else { continue };
            last = Some(f);
            if let Some(s) = read_ok(files.span(f.seg, &f.rec).map(Some), self.id) {
                out.push(s);
            }
        }
        out
    }

    /// The newest stored offset with this transaction-id hash, among the last `limit`.
    pub fn scan_txid(&self, h: u64, limit: u64) -> Option<u64> {
        read_ok(self.files.as_ref()?.scan_txid(h, self.start, limit), self.id).filter(|o| *o < self.end)
    }

    pub fn durable_end(&self) -> u64 {
        self.durable.load(Ordering::Acquire)
    }
}

/// A failed index read: damage (reported, as a damaged batch is) unless it is only a
/// missing resource (out of descriptors, say), which is logged; either way not found.
fn read_ok<T>(r: std::io::Result<Option<T>>, part: PartId) -> Option<T> {
    r.unwrap_or_else(|e| {
        use std::io::ErrorKind::*;
        if matches!(e.kind(), NotFound | UnexpectedEof | InvalidData) {
            crate::damage::report(&format!("partition {part} index: {e}"));
        } else {
            tracing::warn!(part, error = %e, "could not read a partition index");
        }
        None
    })
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct KvEntry {
    /// The value as JSON text.
    pub value: String,
    pub version: u64,
    pub expires: Option<Micros>,
}

impl KvEntry {
    pub fn live(&self, now: Micros) -> bool {
        self.expires.is_none_or(|e| e > now)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Timer {
    pub fire_at: Micros,
    /// JSON text pushed into the queue when the timer fires.
    pub payload: String,
    pub partition: String,
    /// Transaction id of the message the timer becomes.
    pub txn: String,
}

/// What Kafka keeps per producer and partition to drop retried batches.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ProducerState {
    pub epoch: i16,
    /// (first sequence, last sequence, base offset) of the last batches, oldest first.
    pub recent: VecDeque<(i32, i32, u64)>,
}

/// Batches per producer remembered for duplicate detection (Kafka keeps 5).
pub const PRODUCER_WINDOW: usize = 5;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Queue {
    pub id: QueueId,
    pub name: String,
    pub options: QueueOptions,
    pub created: Micros,
    pub parts: Vec<PartId>,
    /// Shared with checkpoint copies (copied on the next partition made, D31): a copy of
    /// 100,000 names per checkpoint was most of what remained of its pause.
    pub part_by_name: Arc<HashMap<String, PartId>>,
    pub dlq: VecDeque<DeadLetter>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Group {
    pub name: String,
    pub from_ts: Option<Micros>,
    pub created: Micros,
}

/// Where partition files live; not part of the replicated state.
#[derive(Debug, Clone, Default)]
pub struct StorageConfig {
    pub data_dir: PathBuf,
    pub segment_bytes: u64,
    /// Ready-made segment files (D17); `None` until the engine starts it after
    /// recovery, and in tests: then files are created where they are needed.
    pub provisioner: Option<Arc<crate::provision::Provisioner>>,
    /// Leave batch bytes in `State::pending_writes` for the appender thread (D18)
    /// instead of writing them while applying; false during recovery and in tests.
    pub defer_writes: bool,
    /// The node's open partition files and index blocks (D29), shared by every partition.
    pub store: Arc<crate::files::Store>,
    /// What a failed checkpoint left for the next one.
    pub unsynced: Arc<parking_lot::Mutex<crate::checkpoint::Unsynced>>,
    /// `<data>/partitions`, opened once at start: a checkpoint with many files to sync
    /// syncs their filesystem through it instead (D31). Opened before the first write it
    /// must answer for, so `syncfs` reports every writeback error since (Linux ≥ 5.8).
    /// `None` during recovery and in tests: then every file is synced by name.
    pub fs_sync: Option<Arc<std::fs::File>>,
}

#[derive(Debug, thiserror::Error)]
#[error("apply failed: {0}")]
pub struct ApplyError(pub String);

/// `Clone` exists for checkpoints: cloning is mostly memcpy of plain-data
/// collections and takes the planner a few milliseconds, where serializing
/// the same state took it over a hundred; serialization then runs off-thread.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct State {
    pub queues: HashMap<QueueId, Queue>,
    pub queue_ids: HashMap<String, QueueId>,
    /// Changed only through [`crate::parts::Parts`]'s methods, which list what a checkpoint re-copies (D31).
    pub parts: crate::parts::Parts,
    pub groups: HashMap<GroupId, Group>,
    pub group_ids: HashMap<String, GroupId>,
    pub leases: HashMap<LeaseId, (PartId, GroupId)>,
    pub next_queue: QueueId,
    pub next_part: PartId,
    pub next_group: GroupId,
    pub next_lease: LeaseId,
    pub next_producer: i64,
    /// KV: namespace -> key -> entry, ordered for prefix scans.
    pub kv: BTreeMap<String, BTreeMap<String, KvEntry>>,
    /// Timers: queue -> timer key -> timer; `timer_due` orders them by fire time.
    pub timers: BTreeMap<String, BTreeMap<String, Timer>>,
    pub timer_due: BTreeSet<(Micros, String, String)>,
    /// Time of the last applied entry (I5).
    pub last_ts: Micros,
    /// Index of the last applied log entry.
    pub applied_index: u64,
    /// The secret key of transaction-id hashes (D21), chosen once by the first planner
    /// (`Effect::HashKey`) and replayed from the log; `[0, 0]` until then.
    pub hash_key: [u64; 2],
    #[serde(skip)]
    pub storage: StorageConfig,
    /// Files and directories dropped by retention or queue deletion, deleted
    /// by the next checkpoint (which no longer names them).
    #[serde(skip)]
    pub graveyard: Vec<PathBuf>,
    /// Pop candidates per queue and group (D30), derived: not in checkpoints.
    #[serde(skip)]
    pub ready: crate::ready::ReadyIndex,
    /// Batches applied but not yet written, when `storage.defer_writes` (D18); the
    /// planner hands them to the appender with the frame that holds their entries.
    #[serde(skip)]
    pub pending_writes: Vec<PendingWrite>,
}

impl State {
    pub fn new(storage: StorageConfig) -> State {
        State { next_lease: 1, storage, ..Default::default() }
    }

    /// Drop from the partitions' index tails what other threads have written to the files
    /// since (D31: the writeback sweep and checkpoints write index records off the planner).
    pub fn confirm_index_writes(&mut self) {
        let done = std::mem::take(&mut *self.storage.store.waiting.confirmed.lock());
        for (part, base, batches, msgs) in done {
            if let Some(f) = self.parts.get_mut(&part).and_then(|p| p.files.as_mut()) {
                f.confirm(base, batches, msgs);
            }
        }
    }

    /// [`txid_key`] under this node's key.
    pub fn txid_key(&self, s: &str) -> TxKey {
        txid_key(self.hash_key, s)
    }

    /// [`txid_hash`] under this node's key.
    pub fn txid_hash(&self, s: &str) -> u64 {
        txid_hash(self.hash_key, s)
    }

    pub fn part_dir(&self, id: PartId) -> PathBuf {
        self.storage.data_dir.join("partitions").join(id.to_string())
    }

    pub fn queue(&self, name: &str) -> Option<&Queue> {
        self.queue_ids.get(name).and_then(|id| self.queues.get(id))
    }

    pub fn partition(&self, queue: &str, name: &str) -> Option<&Partition> {
        let q = self.queue(queue)?;
        q.part_by_name.get(name).and_then(|p| self.parts.get(p))
    }

    /// See [`PartitionFiles::prepare`]: a refusal here changes nothing of the state.
    pub fn prepare_append(&mut self, part: PartId) -> Result<(), crate::command::CoreError> {
        let prov = self.storage.provisioner.clone();
        let Some(p) = self.parts.get_mut(&part) else { return Ok(()) };
        let Some(f) = p.files.as_mut() else { return Ok(()) };
        f.prepare(p.end, prov.as_deref()).map_err(|e| {
            crate::command::CoreError::new(
                crate::command::ErrorKind::Unavailable,
                "storage_busy",
                format!("partition {part}: its files cannot be opened now ({e}); nothing was stored, retry"),
            )
        })
    }

    /// D30: keep the pop candidates a superset of the partitions with something deliverable.
    fn note_ready(&mut self, e: &Effect) {
        let queue_of = |part: &PartId| self.parts.get(part).map(|p| p.queue);
        match e {
            Effect::Append { part, .. } => {
                if let Some(q) = queue_of(part) {
                    self.ready.appended(q, *part);
                }
            }
            Effect::Lease { part, group, auto_ack: false, expires, .. }
            | Effect::ExtendLease { part, group, expires, .. } => {
                if let Some(q) = queue_of(part) {
                    self.ready.leased(q, *group, *part, *expires);
                }
            }
            Effect::ExpireLease { part, group, .. }
            | Effect::Ack { part, group, .. }
            | Effect::Seek { part, group, .. }
            | Effect::Commit { part, group, .. } => {
                if let Some(q) = queue_of(part) {
                    self.ready.released(q, *group, *part);
                }
            }
            Effect::DeleteGroup { group } => self.ready.forget_group(*group),
            Effect::DeleteQueue { queue } => self.ready.forget_queue(*queue),
            _ => {}
        }
    }

    /// Apply one log entry (replay and live planning both come through here).
    pub fn apply(&mut self, entry: &Entry) -> Result<(), ApplyError> {
        self.last_ts = self.last_ts.max(entry.ts);
        for e in &entry.effects {
            self.apply_effect(entry.ts, e)?;
        }
        Ok(())
    }

    pub fn apply_effect(&mut self, ts: Micros, e: &Effect) -> Result<(), ApplyError> {
        self.note_ready(e);
        match e {
            Effect::Configure { queue, options } => {
                if let Some(id) = self.queue_ids.get(queue) {
                    if let Some(q) = self.queues.get_mut(id) {
                        q.options = options.clone();
                    }
                } else {
                    let id = self.next_queue;
                    self.next_queue += 1;
                    self.queue_ids.insert(queue.clone(), id);
                    self.queues.insert(
                        id,
                        Queue {
                            id,
                            name: queue.clone(),
                            options: options.clone(),
                            created: ts,
                            parts: Vec::new(),
                            part_by_name: Default::default(),
                            dlq: VecDeque::new(),
                        },
                    );
                }
            }
            Effect::CreatePartition { queue, name } => {
                let id = self.next_part;
                // Before anything changes: a refused apply leaves the state as it was.
                // No system call: the directory comes with the first segment, so this cannot fail.
                let files = PartitionFiles::create(
                    id,
                    self.part_dir(id),
                    self.storage.segment_bytes,
                    self.storage.store.clone(),
                );
                self.next_part += 1;
                if let Some(q) = self.queues.get_mut(queue) {
                    q.parts.push(id);
                    Arc::make_mut(&mut q.part_by_name).insert(name.clone(), id);
                }
                self.parts.insert(
                    id,
                    Partition {
                        id,
                        queue: *queue,
                        name: name.clone(),
                        created: ts,
                        start: 0,
                        end: 0,
                        cursors: HashMap::new(),
                        dedup: HashMap::new(),
                        dedup_order: Chunked::new(),
                        marks: Vec::new(),
                        producers: HashMap::new(),
                        files: Some(files),
                        durable: Arc::new(AtomicU64::new(0)),
                    },
                );
            }
            Effect::CreateGroup { name, from_ts } => {
                let id = self.next_group;
                self.next_group += 1;
                self.group_ids.insert(name.clone(), id);
                self.groups.insert(id, Group { name: name.clone(), from_ts: *from_ts, created: ts });
            }
            Effect::Append { part, count, txids, dedup, batch } => {
                let window = self
                    .parts
                    .get(part)
                    .and_then(|p| self.queues.get(&p.queue))
                    .map(|q| q.options.dedup_window_seconds)
                    .unwrap_or(0);
                let Some(p) = self.parts.get_mut(part) else {
                    return Ok(());
                };
                let files = p.files.as_mut().ok_or_else(|| ApplyError("partition has no files".into()))?;
                let prov = self.storage.provisioner.as_deref();
                // One key per message, whatever the entry carries (I1: the same on replay): the
                // hash of its transaction id, and for the ones the dedup window holds (`dedup`,
                // in message order) the whole key, flagged, so recovery rebuilds the window
                // from the files (D29).
                let mut window_keys = dedup.iter().peekable();
                let hashes: Vec<TxKey> = (0..*count as usize)
                    .map(|k| {
                        let h = txids.get(k).copied().unwrap_or(0);
                        match window_keys.next_if(|d| d[0] == h) {
                            Some(d) => [h, d[1] | DEDUP_FLAG],
                            None => [h, 0],
                        }
                    })
                    .collect();
                let placed = if self.storage.defer_writes {
                    files.reserve(p.end, ts, &hashes, batch.len() as u64, prov).map(|(_, pos, file)| {
                        self.pending_writes.push(PendingWrite { file, pos, bytes: batch.clone() });
                    })
                } else {
                    files.append(p.end, ts, &hashes, batch, prov).map(|_| ())
                };
                placed.map_err(|e| ApplyError(format!("append to partition {part}: {e}")))?;
                p.end += *count as u64;
                while let Some(&(exp, h)) = p.dedup_order.front() {
                    if exp > ts {
                        break;
                    }
                    p.dedup_order.pop_front();
                    if p.dedup.get(&h) == Some(&exp) {
                        p.dedup.remove(&h);
                    }
                }
                let exp = ts.saturating_add(window.saturating_mul(1_000_000));
                for h in dedup {
                    p.dedup.insert(*h, exp);
                    p.dedup_order.push_back((exp, *h));
                }
            }
            Effect::Lease { part, group, lease, offsets, expires, auto_ack } => {
                let from_ts = self.groups.get(group).and_then(|g| g.from_ts);
                let Some(p) = self.parts.get_mut(part) else {
                    return Ok(());
                };
                let init = match from_ts {
                    Some(t) => p.offset_at_ts(t),
                    None => p.start,
                };
                let c = p.cursors.entry(*group).or_insert_with(|| Cursor { next: init, ..Default::default() });
                if *auto_ack {
                    for o in offsets {
                        c.settle(*o);
                    }
                } else {
                    c.lease = Some(Lease::new(*lease, offsets.clone(), *expires));
                    self.leases.insert(*lease, (*part, *group));
                }
                self.next_lease = self.next_lease.max(lease + 1);
            }
            Effect::ExpireLease { part, group, lease } => {
                if let Some(c) = self.parts.get_mut(part).and_then(|p| p.cursors.get_mut(group)) {
                    if c.lease.as_ref().map(|l| l.id) == Some(*lease) {
                        let l = c.lease.take().expect("checked above");
                        for (o, s) in l.offsets.iter().zip(&l.settled) {
                            if !s {
                                *c.attempts.entry(*o).or_insert(0) += 1;
                            }
                        }
                    }
                }
                self.leases.remove(lease);
            }
            Effect::Ack { part, group, lease, offset, status, error } => {
                let queue = self.parts.get(part).map(|p| p.queue);
                let Some(c) = self.parts.get_mut(part).and_then(|p| p.cursors.get_mut(group)) else {
                    return Ok(());
                };
                let mut released = false;
                if let Some(l) = c.lease.as_mut().filter(|l| l.id == *lease) {
                    released = match l.position(*offset) {
                        Some(i) => l.settle(i),
                        None => l.first_unsettled() == l.settled.len(),
                    };
                }
                match status {
                    AckStatus::Completed => c.settle(*offset),
                    AckStatus::Failed => *c.attempts.entry(*offset).or_insert(0) += 1,
                    AckStatus::Retry => {}
                    AckStatus::Dlq => {
                        c.settle(*offset);
                        if let Some(q) = queue.and_then(|q| self.queues.get_mut(&q)) {
                            q.dlq.push_back(DeadLetter {
                                part: *part,
                                offset: *offset,
                                group: *group,
                                error: error.clone(),
                                ts,
                            });
                        }
                    }
                }
                // A nack releases the whole lease: the consumer drops the rest of
                // the batch, and FIFO means redelivery restarts at the failed message.
                if released || matches!(status, AckStatus::Failed | AckStatus::Retry) {
                    c.lease = None;
                    self.leases.remove(lease);
                }
            }
            Effect::ExtendLease { part, group, lease, expires } => {
                if let Some(l) = self
                    .parts
                    .get_mut(part)
                    .and_then(|p| p.cursors.get_mut(group))
                    .and_then(|c| c.lease.as_mut())
                    .filter(|l| l.id == *lease)
                {
                    l.expires = *expires;
                }
            }
            Effect::Seek { part, group, offset } => {
                if let Some(p) = self.parts.get_mut(part) {
                    let c = p.cursors.entry(*group).or_default();
                    if let Some(l) = c.lease.take() {
                        self.leases.remove(&l.id);
                    }
                    *c = Cursor { next: *offset, ..Default::default() };
                }
            }
            Effect::DeleteGroup { group } => {
                for p in self.parts.values_mut() {
                    if let Some(c) = p.cursors.remove(group) {
                        if let Some(l) = c.lease {
                            self.leases.remove(&l.id);
                        }
                    }
                }
                if let Some(g) = self.groups.remove(group) {
                    self.group_ids.remove(&g.name);
                }
            }
            Effect::Trim { part, start } => {
                if let Some(p) = self.parts.get_mut(part) {
                    let start = (*start).min(p.end);
                    p.start = p.start.max(start);
                    if let Some(f) = p.files.as_mut() {
                        self.graveyard.extend(f.retire_below(start));
                    }
                    for c in p.cursors.values_mut() {
                        if c.next < start {
                            c.next = start;
                            c.done = c.done.split_off(&start);
                            while c.done.remove(&c.next) {
                                c.next += 1;
                            }
                        }
                    }
                }
            }
            Effect::KvSet { ns, key, value, version, expires } => {
                let e = KvEntry { value: value.clone(), version: *version, expires: *expires };
                self.kv.entry(ns.clone()).or_default().insert(key.clone(), e);
            }
            Effect::KvDel { ns, key } => {
                if let Some(m) = self.kv.get_mut(ns) {
                    m.remove(key);
                    if m.is_empty() {
                        self.kv.remove(ns);
                    }
                }
            }
            Effect::TimerSet { queue, key, fire_at, payload, partition, txn } => {
                let m = self.timers.entry(queue.clone()).or_default();
                if let Some(old) = m.insert(
                    key.clone(),
                    Timer {
                        fire_at: *fire_at,
                        payload: payload.clone(),
                        partition: partition.clone(),
                        txn: txn.clone(),
                    },
                ) {
                    self.timer_due.remove(&(old.fire_at, queue.clone(), key.clone()));
                }
                self.timer_due.insert((*fire_at, queue.clone(), key.clone()));
            }
            Effect::TimerDel { queue, key } => {
                if let Some(m) = self.timers.get_mut(queue) {
                    if let Some(old) = m.remove(key) {
                        self.timer_due.remove(&(old.fire_at, queue.clone(), key.clone()));
                    }
                    if m.is_empty() {
                        self.timers.remove(queue);
                    }
                }
            }
            Effect::HashKey { key } => self.hash_key = *key,
            Effect::AllocProducer { id } => {
                self.next_producer = self.next_producer.max(id + 1);
            }
            Effect::ProducerSeq { part, producer, epoch, first_seq, last_seq, base_offset } => {
                if let Some(p) = self.parts.get_mut(part) {
                    let st = p.producers.entry(*producer).or_default();
                    if st.epoch != *epoch {
                        st.epoch = *epoch;
                        st.recent.clear();
                    }
                    st.recent.push_back((*first_seq, *last_seq, *base_offset));
                    while st.recent.len() > PRODUCER_WINDOW {
                        st.recent.pop_front();
                    }
                }
            }
            Effect::Commit { part, group, offset } => {
                if let Some(p) = self.parts.get_mut(part) {
                    let c = p.cursors.entry(*group).or_default();
                    if let Some(l) = c.lease.take() {
                        self.leases.remove(&l.id);
                    }
                    c.next = *offset;
                    c.done = c.done.split_off(offset);
                    c.attempts.retain(|o, _| *o >= *offset);
                    while c.done.remove(&c.next) {
                        c.next += 1;
                    }
                }
            }
            Effect::ExpireProducers { part, producers } => {
                if let Some(p) = self.parts.get_mut(part) {
                    for id in producers {
                        p.producers.remove(id);
                    }
                }
            }
            Effect::DeleteQueue { queue } => {
                if let Some(q) = self.queues.remove(queue) {
                    self.queue_ids.remove(&q.name);
                    for pid in q.parts {
                        if let Some(mut p) = self.parts.remove(&pid) {
                            for c in p.cursors.values() {
                                if let Some(l) = &c.lease {
                                    self.leases.remove(&l.id);
                                }
                            }
                            if let Some(f) = p.files.as_mut() {
                                self.graveyard.push(f.retire_all());
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }
}
