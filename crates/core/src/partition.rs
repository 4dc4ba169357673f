//! One partition's state: its cursors and leases, and the stored messages as its
//! files index them (D29). Owns the lookups by offset and by transaction id; must never
//! keep per-message data on the heap beyond what is unsettled (the dedup window aside).

use crate::chunked::Chunked;
use crate::model::*;
use crate::state::ProducerState;
use crate::store::{Found, PartitionFiles, ReadSpan, SegmentMark};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

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
    pub(crate) fn settle(&mut self, offset: u64) {
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

/// What a checkpoint keeps of a partition. Shared with a checkpoint's copy of the table
/// until the partition next changes ([`Partition`]'s `DerefMut` copies it then), so taking
/// the copy costs the planner a pointer per partition, not a deep copy of each (D32).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PartMeta {
    pub id: PartId,
    pub queue: QueueId,
    pub name: String,
    pub created: Micros,
    /// First offset still stored (retention moves it).
    pub start: u64,
    /// Next offset to assign (planned, not necessarily durable).
    pub end: u64,
    pub cursors: HashMap<GroupId, Cursor>,
    pub marks: Vec<SegmentMark>,
    /// Idempotent Kafka producers: epoch and their last few batches.
    pub producers: HashMap<i64, ProducerState>,
    /// Kafka transactions open or aborted here (D48).
    pub txns: crate::ktxn::PartTxns,
}

/// A partition: its checkpointed fields ([`PartMeta`], reached through `Deref`) and what
/// only the live node has. Serialized as its `PartMeta` alone.
#[derive(Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Partition {
    meta: Arc<PartMeta>,
    /// Index of `dedup_order` (hash -> expiry of its latest push).
    #[serde(skip)]
    pub dedup: crate::model::TxKeyMap<Micros>,
    /// The dedup window, oldest first. Neither is in checkpoints or their copies: recovery
    /// rebuilds both from the flagged keys in the `.txid` files (D29), so a checkpoint's
    /// size does not grow with the messages pushed within the window.
    #[serde(skip)]
    pub dedup_order: Chunked<(Micros, TxKey)>,
    #[serde(skip)]
    pub files: Option<PartitionFiles>,
    /// Offsets below are durable: readers that do not write (fetch) stop here.
    #[serde(skip)]
    pub durable: Arc<AtomicU64>,
    /// The last stable offset as of the durable state (D48): a committed read stops here.
    /// Set with `durable`, from the planned state of the same frame, so a commit that could
    /// still vanish never makes its records visible.
    #[serde(skip)]
    pub stable: Arc<AtomicU64>,
}

impl std::ops::Deref for Partition {
    type Target = PartMeta;
    fn deref(&self) -> &PartMeta {
        &self.meta
    }
}

/// Every change to a checkpointed field comes through here: while a checkpoint's copy
/// shares the fields, the first change copies them (copy on write), so the copy being
/// written out never sees a later change. No list of changed partitions to keep right.
impl std::ops::DerefMut for Partition {
    fn deref_mut(&mut self) -> &mut PartMeta {
        Arc::make_mut(&mut self.meta)
    }
}

/// A copy for tests and tools that compare states: the file handles and the dedup index
/// are not copied, the checkpointed fields are shared until either side changes them.
impl Clone for Partition {
    fn clone(&self) -> Self {
        Partition {
            meta: self.meta.clone(),
            dedup: Default::default(),
            dedup_order: Chunked::new(),
            files: None,
            durable: self.durable.clone(),
            stable: self.stable.clone(),
        }
    }
}

impl Partition {
    /// Whether its first write makes its directory: it has files but none yet (D81).
    pub fn never_written(&self) -> bool {
        self.files.as_ref().is_some_and(|f| f.is_new())
    }

    pub fn new(meta: PartMeta, files: Option<PartitionFiles>) -> Partition {
        Partition {
            meta: Arc::new(meta),
            dedup: Default::default(),
            dedup_order: Chunked::new(),
            files,
            durable: Arc::new(AtomicU64::new(0)),
            stable: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The checkpointed fields as they are now, shared (see [`PartMeta`]).
    pub fn meta(&self) -> Arc<PartMeta> {
        self.meta.clone()
    }

    /// Rebuild the dedup window after a restart: the flagged keys of batches written in the
    /// last `window_secs` before `now` (the last applied entry), as apply made them.
    pub fn rebuild_dedup(&mut self, window_secs: u64, now: Micros) -> std::io::Result<()> {
        let span = window_secs.saturating_mul(1_000_000);
        let Some(files) = &self.files else { return Ok(()) };
        if span == 0 {
            return Ok(());
        }
        self.dedup_order = Chunked::new();
        self.dedup = Default::default();
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
    /// What a search of the newest `limit` messages for a transaction id reads, to run off
    /// the planner; None for a partition without files.
    pub fn txid_scan(&self, limit: u64) -> Option<crate::store::TxidScan> {
        Some(self.files.as_ref()?.txid_scan(self.start, limit))
    }

    /// `offset` is a message (not a control record) of this partition whose transaction id
    /// hashes to `h`: what a scan found, checked again on the planner.
    pub fn is_message_with(&self, offset: u64, h: u64) -> bool {
        offset < self.end && self.txid_at(offset) == Some(h) && !self.is_marker(offset)
    }

    /// The time of the last batch written here (None before the first).
    pub fn last_write(&self) -> Option<Micros> {
        let f = self.files.as_ref()?;
        f.segments.iter().rev().find(|s| s.index.batches > 0).map(|s| s.index.last_ts)
    }

    pub fn durable_end(&self) -> u64 {
        self.durable.load(Ordering::Acquire)
    }

    /// The last stable offset of the durable state (Kafka's LSO).
    pub fn stable_end(&self) -> u64 {
        self.stable.load(Ordering::Acquire).min(self.durable_end())
    }

    /// The last stable offset as planned.
    pub fn planned_stable(&self) -> u64 {
        self.txns.stable(self.end)
    }

    /// Everything applied is durable (after recovery, or on promotion): publish it.
    pub fn publish_all(&self) {
        self.stable.store(self.planned_stable(), Ordering::Release);
        self.durable.store(self.end, Ordering::Release);
    }

    /// Whether `offset` is a control record (a transaction marker): read from the index
    /// only where markers were ever written.
    pub fn is_marker(&self, offset: u64) -> bool {
        self.txns.first_marker.is_some_and(|m| offset >= m) && self.txid_at(offset) == Some(crate::ktxn::MARKER_TXID)
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
