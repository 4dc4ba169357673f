//! The state machine: queues, partitions, cursors, leases, dead letters, and
//! `apply`, the only code that changes them.
//!
//! Apply is a pure function of (state, entry) (I1): it reads no clock and no
//! random source; every time, offset and id it needs is in the entry. The only
//! way it can fail is the disk under the partition files, which stops the
//! node (fail-stop) rather than letting replicas diverge.

use crate::appender::PendingWrite;
use crate::entry::{Effect, Entry};
use crate::held;
use crate::model::*;
use crate::store::PartitionFiles;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;

pub use crate::partition::{Cursor, Lease, PartMeta, Partition};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeadLetter {
    pub part: PartId,
    pub offset: u64,
    pub group: GroupId,
    pub error: Option<String>,
    pub ts: Micros,
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
    /// The compactor thread of `cleanup.policy=compact` topics (D50); `None` when
    /// `--compaction-max-keys` is 0, during recovery and in tests.
    pub compactor: Option<Arc<crate::compact::Compactor>>,
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
    /// Kafka topic configs set by clients (only `cleanup.policy` and `retention.ms` act).
    pub topic_configs: BTreeMap<QueueId, BTreeMap<String, String>>,
    /// Kafka transactional ids and their open transactions (D48).
    pub ktxn: crate::ktxn::KafkaTxns,
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
    /// A compacted segment was swapped in since the last checkpoint (D50): the next one is
    /// taken even with no new entry, so the rewrite becomes durable and the old files go.
    #[serde(skip)]
    pub compaction_unsaved: bool,
    /// Pop candidates per queue and group (D30), derived: not in checkpoints.
    #[serde(skip)]
    pub ready: crate::ready::ReadyIndex,
    /// Batches applied but not yet written, when `storage.defer_writes` (D18); the
    /// planner hands them to the appender with the frame that holds their entries.
    #[serde(skip)]
    pub pending_writes: Vec<PendingWrite>,
    /// Bytes of KV entries and timers, derived: not in checkpoints.
    #[serde(skip)]
    pub held: crate::held::Held,
}

impl State {
    /// Bytes of KV entries held (expired ones too, until swept), counted on first use.
    pub fn kv_bytes(&mut self) -> u64 {
        match self.held.kv {
            Some(n) => n,
            None => *self.held.kv.insert(self.count_kv_bytes()),
        }
    }

    /// Bytes of pending timers, counted on first use.
    pub fn timer_bytes(&mut self) -> u64 {
        match self.held.timers {
            Some(n) => n,
            None => *self.held.timers.insert(self.count_timer_bytes()),
        }
    }

    pub(crate) fn count_kv_bytes(&self) -> u64 {
        self.kv.iter().flat_map(|(ns, m)| m.iter().map(move |(k, e)| held::kv_size(ns, k, e))).sum()
    }

    pub(crate) fn count_timer_bytes(&self) -> u64 {
        self.timers.iter().flat_map(|(q, m)| m.iter().map(move |(k, t)| held::timer_size(q, k, t))).sum()
    }

    pub fn new(storage: StorageConfig) -> State {
        State { next_lease: 1, storage, ..Default::default() }
    }

    /// Drop from the partitions' index tails what other threads have written to the files
    /// since (D31: the writeback sweep and checkpoints write index records off the planner).
    pub fn confirm_index_writes(&mut self) {
        let done = std::mem::take(&mut *self.storage.store.waiting.confirmed.lock());
        for (part, base, gen, batches, msgs) in done {
            if let Some(f) = self.parts.get_mut(&part).and_then(|p| p.files.as_mut()) {
                f.confirm(base, gen, batches, msgs);
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

    /// When a partition of `queue` closes its active segment: (bytes, age), D70.
    pub fn roll_for(&self, queue: QueueId) -> (u64, Micros) {
        crate::topic_config::roll_of(self.topic_configs.get(&queue), self.storage.segment_bytes)
    }

    /// Every partition of `queue` closes segments by its current configs.
    pub fn set_rolls(&mut self, queue: QueueId) {
        let (bytes, age) = self.roll_for(queue);
        let parts = self.queues.get(&queue).map(|q| q.parts.clone()).unwrap_or_default();
        for id in parts {
            if let Some(f) = self.parts.get_mut(&id).and_then(|p| p.files.as_mut()) {
                f.set_roll(bytes, age);
            }
        }
    }

    pub fn queue(&self, name: &str) -> Option<&Queue> {
        self.queue_ids.get(name).and_then(|id| self.queues.get(id))
    }

    pub fn partition(&self, queue: &str, name: &str) -> Option<&Partition> {
        let q = self.queue(queue)?;
        q.part_by_name.get(name).and_then(|p| self.parts.get(p))
    }

    /// Whether a write to (queue, part) would make the partition's directory: it does not
    /// exist yet, or has never been written (D81: such writes take spare directories).
    pub fn needs_directory(&self, queue: &str, part: &str) -> bool {
        match self.partition(queue, part) {
            None => true,
            Some(p) => p.never_written(),
        }
    }

    /// Partitions of `tid`'s open Kafka transaction that have never been written: its end
    /// (commit, abort, or a fence by a new producer) writes a marker into each, which makes
    /// their directories (D81).
    pub fn txn_new_directories(&self, tid: &str) -> usize {
        let Some(t) = self.ktxn.ids.get(tid).filter(|t| t.open_since.is_some()) else { return 0 };
        t.parts.iter().filter(|id| self.parts.get(id).is_some_and(|p| p.never_written())).count()
    }

    /// Whether an append to `queue`/`part` at `ts` would make a new segment's files: its
    /// first write (or a partition not made yet) or a roll. The planner's costliest step
    /// for one partition (0.15-2.5 ms here), so its share of a planner pass is bounded (D80).
    pub fn needs_new_segment(&self, queue: &str, part: &str, ts: Micros) -> bool {
        match self.partition(queue, part) {
            None => true,
            Some(p) => p.files.as_ref().is_some_and(|f| f.rolls(ts)),
        }
    }

    /// See [`PartitionFiles::prepare`]: a refusal here changes nothing of the state. `ts` is
    /// the stamp the append will carry.
    pub fn prepare_append(&mut self, part: PartId, ts: Micros) -> Result<(), crate::command::CoreError> {
        let prov = self.storage.provisioner.clone();
        let Some(p) = self.parts.get_mut(&part) else { return Ok(()) };
        let end = p.end;
        let Some(f) = p.files.as_mut() else { return Ok(()) };
        f.prepare(end, ts, prov.as_deref()).map_err(|e| {
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
            Effect::Append { part, .. } | Effect::KafkaTxnMark { part, .. } => {
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
            | Effect::DropCursor { part, group }
            | Effect::Ack { part, group, .. }
            | Effect::Seek { part, group, .. }
            | Effect::Redo { part, group, .. }
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
                let mut files = PartitionFiles::create(
                    id,
                    self.part_dir(id),
                    self.storage.segment_bytes,
                    self.storage.store.clone(),
                );
                let (bytes, age) = self.roll_for(*queue);
                files.set_roll(bytes, age);
                self.next_part += 1;
                if let Some(q) = self.queues.get_mut(queue) {
                    q.parts.push(id);
                    Arc::make_mut(&mut q.part_by_name).insert(name.clone(), id);
                }
                self.parts.insert(
                    id,
                    Partition::new(
                        PartMeta {
                            id,
                            queue: *queue,
                            name: name.clone(),
                            created: ts,
                            start: 0,
                            end: 0,
                            cursors: HashMap::new(),
                            marks: Vec::new(),
                            producers: HashMap::new(),
                            txns: Default::default(),
                        },
                        Some(files),
                    ),
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
                let end = p.end;
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
                    files.reserve(end, ts, &hashes, batch.len() as u64, prov).map(|(_, pos, file)| {
                        self.pending_writes.push(PendingWrite { file, pos, bytes: batch.clone() });
                    })
                } else {
                    files.append(end, ts, &hashes, batch, prov).map(|_| ())
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
                p.dedup.reserve(dedup.len());
                for h in dedup {
                    p.dedup.insert(*h, exp);
                }
                p.dedup_order.extend(dedup.iter().map(|h| (exp, *h)));
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
                    p.txns.trim(start);
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
                let new = held::kv_size(ns, key, &e);
                let old = self.kv.entry(ns.clone()).or_default().insert(key.clone(), e);
                held::moved(&mut self.held.kv, old.map_or(0, |o| held::kv_size(ns, key, &o)), new);
            }
            Effect::KvDel { ns, key } => {
                if let Some(m) = self.kv.get_mut(ns) {
                    if let Some(o) = m.remove(key) {
                        held::moved(&mut self.held.kv, held::kv_size(ns, key, &o), 0);
                    }
                    if m.is_empty() {
                        self.kv.remove(ns);
                    }
                }
            }
            Effect::TimerSet { queue, key, fire_at, payload, partition, txn } => {
                let m = self.timers.entry(queue.clone()).or_default();
                let t = Timer {
                    fire_at: *fire_at,
                    payload: payload.clone(),
                    partition: partition.clone(),
                    txn: txn.clone(),
                };
                let new = held::timer_size(queue, key, &t);
                let old = m.insert(key.clone(), t);
                held::moved(&mut self.held.timers, old.as_ref().map_or(0, |o| held::timer_size(queue, key, o)), new);
                if let Some(old) = old {
                    self.timer_due.remove(&(old.fire_at, queue.clone(), key.clone()));
                }
                self.timer_due.insert((*fire_at, queue.clone(), key.clone()));
            }
            Effect::TimerDel { queue, key } => {
                if let Some(m) = self.timers.get_mut(queue) {
                    if let Some(old) = m.remove(key) {
                        held::moved(&mut self.held.timers, held::timer_size(queue, key, &old), 0);
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
            Effect::TopicConfigs { queue, configs } => {
                if self.queues.contains_key(queue) {
                    if configs.is_empty() {
                        self.topic_configs.remove(queue);
                    } else {
                        self.topic_configs.insert(*queue, configs.clone());
                    }
                    self.set_rolls(*queue);
                }
            }
            Effect::DropCursor { part, group } => {
                if let Some(c) = self.parts.get_mut(part).and_then(|p| p.cursors.remove(group)) {
                    if let Some(l) = c.lease {
                        self.leases.remove(&l.id);
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
            Effect::KafkaTxnInit { .. }
            | Effect::KafkaTxnAdd { .. }
            | Effect::KafkaTxnOffsets { .. }
            | Effect::KafkaTxnWrite { .. }
            | Effect::KafkaTxnMark { .. }
            | Effect::KafkaTxnEnd { .. }
            | Effect::KafkaTxnForget { .. }
            | Effect::SettleHidden { .. }
            | Effect::HideRecord { .. } => crate::ktxn::apply(self, ts, e)?,
            Effect::Redo { part, group, offset } => crate::redo::apply(self, *part, *group, *offset),
            Effect::DeleteQueue { queue } => {
                self.topic_configs.remove(queue);
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
