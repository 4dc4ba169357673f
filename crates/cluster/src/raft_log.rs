//! The planner's log on a cluster member: `baton_log::Log` over Raft (D40).
//!
//! The log owns its index (D22). openraft numbers entries itself, so while this member leads
//! the index of each proposal is predicted (the next after the last one, starting after the
//! log's last entry when leadership was taken) and checked when openraft answers: a frame
//! committed under another index, or not committed, fails, and marks the term lost, which
//! makes the member rebuild its state. Frames are proposed in `append` order by one task and
//! completed in that order by another, so completions (and the answers they release) keep
//! the order of the log.
//! Must never: complete a frame Ok before openraft says it is committed (I3 on a cluster:
//! on a majority's disks), or under an index other than the one `append` returned; accept a
//! frame while not armed (it fails at once instead); number a frame while a membership
//! change is being appended (D44: openraft adds those entries itself, so appends wait on a
//! [`Hold`] and numbering resumes after the change's last entry).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use baton_log::{Log, WalError, WalItem};
use baton_replicate::{Frame, Raft};
use parking_lot::{Condvar, Mutex};
use tokio::sync::mpsc;

struct Proposal {
    index: u64,
    bytes: Vec<u8>,
    item: Box<dyn WalItem>,
}

/// How frames are numbered: from `next` while this member leads (`None`: it does not), and
/// not at all while `held` (a membership change is being appended, D44).
struct Numbering {
    next: Option<u64>,
    held: bool,
}

pub struct RaftLog {
    numbering: Mutex<Numbering>,
    /// Wakes appends waiting on a [`Hold`].
    released: Condvar,
    /// Frames proposed and not yet answered, and a wake-up for a hold waiting for none.
    in_flight: Arc<AtomicU64>,
    settled: Arc<tokio::sync::Notify>,
    /// The last index handed out, so a frame refused while not armed still gets a number
    /// that does not go backwards.
    last: AtomicU64,
    tx: OnceLock<mpsc::UnboundedSender<Proposal>>,
    /// Raft's log storage, to see how far openraft has taken the proposals (D75).
    store: OnceLock<baton_replicate::log_store::LogStore>,
    /// Set when a frame of this term was refused or committed elsewhere: the state that
    /// planned it must be rebuilt.
    lost: Arc<AtomicBool>,
    /// Frames proposed since the last arm, for the member to know whether a step down left
    /// anything uncertain behind.
    pub proposed: AtomicU64,
    /// A proposal not committed within this long is answered "unknown" (and the term taken
    /// as lost): a leader cut off from its majority must not hold requests for ever.
    commit_timeout: Duration,
    /// The index of the engine's last durable checkpoint, and a wake-up for the task that
    /// makes it this member's Raft snapshot (D43).
    checkpoint: AtomicU64,
    pub checkpointed: tokio::sync::Notify,
}

impl RaftLog {
    pub fn new(commit_timeout: Duration) -> RaftLog {
        RaftLog {
            numbering: Mutex::new(Numbering { next: None, held: false }),
            released: Condvar::new(),
            in_flight: Arc::new(AtomicU64::new(0)),
            settled: Arc::new(tokio::sync::Notify::new()),
            last: AtomicU64::new(0),
            tx: OnceLock::new(),
            store: OnceLock::new(),
            lost: Arc::new(AtomicBool::new(false)),
            proposed: AtomicU64::new(0),
            commit_timeout,
            checkpoint: AtomicU64::new(0),
            checkpointed: tokio::sync::Notify::new(),
        }
    }

    /// The index of the engine's last durable checkpoint this run.
    pub fn checkpoint_index(&self) -> u64 {
        self.checkpoint.load(Ordering::Acquire)
    }

    /// Starts the proposing and completing tasks on this runtime, for `raft`. Once.
    pub fn connect(&self, rt: &tokio::runtime::Handle, raft: Raft, store: baton_replicate::log_store::LogStore) {
        if self.store.set(store).is_err() {
            tracing::error!("RaftLog::connect called twice");
        }
        let (tx, mut rx) = mpsc::unbounded_channel::<Proposal>();
        let (done_tx, mut done_rx) = mpsc::unbounded_channel();
        let lost = Arc::clone(&self.lost);
        let (in_flight, settled) = (Arc::clone(&self.in_flight), Arc::clone(&self.settled));
        let timeout = self.commit_timeout;
        rt.spawn(async move {
            while let Some(p) = rx.recv().await {
                let answer = raft.client_write_ff(Frame(p.bytes.into())).await.ok();
                if done_tx.send((p.index, p.item, answer)).is_err() {
                    return;
                }
            }
        });
        rt.spawn(async move {
            while let Some((index, item, answer)) = done_rx.recv().await {
                let result = match answer {
                    None => Err("raft is stopping: the outcome is unknown".to_string()),
                    Some(rx) => match tokio::time::timeout(timeout, rx).await {
                        Ok(Ok(Ok(r))) if r.log_id.index == index => Ok(index),
                        Ok(Ok(Ok(r))) => {
                            Err(format!("proposed as entry {index} but committed as entry {}", r.log_id.index))
                        }
                        Ok(Ok(Err(e))) => Err(format!("not committed: {e}")),
                        Ok(Err(_)) => Err("raft dropped the proposal: the outcome is unknown".to_string()),
                        Err(_) => Err(format!(
                            "not committed within {timeout:?}: no majority answered; the outcome is unknown"
                        )),
                    },
                };
                if result.is_err() {
                    lost.store(true, Ordering::Release);
                }
                item.complete(result.map_err(WalError::Failed));
                if in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
                    settled.notify_waiters();
                }
            }
        });
        if self.tx.set(tx).is_err() {
            tracing::error!("RaftLog::connect called twice");
        }
    }

    /// This member leads: frames are numbered from `next` on.
    pub fn arm(&self, next: u64) {
        self.lost.store(false, Ordering::Release);
        self.proposed.store(0, Ordering::Release);
        self.numbering.lock().next = Some(next);
    }

    pub fn disarm(&self) {
        self.numbering.lock().next = None;
    }

    /// Stops numbering frames (appends wait) and waits, at most `within`, until every frame
    /// proposed so far was answered: from then until the hold ends, only openraft's own
    /// entries (a membership change) enter the log (D44). `None` when this member does not
    /// lead, or the frames in flight were not answered in time.
    pub async fn hold(&self, within: Duration) -> Option<Hold<'_>> {
        {
            let mut n = self.numbering.lock();
            if n.next.is_none() || n.held {
                return None;
            }
            n.held = true;
        }
        let mut hold = Hold { log: self, resumed: false };
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let settled = self.settled.notified();
            if self.in_flight.load(Ordering::Acquire) == 0 {
                return Some(hold);
            }
            if tokio::time::timeout_at(deadline, settled).await.is_err() {
                // Nothing was changed: numbering goes on where it was.
                hold.resumed = true;
                return None;
            }
        }
    }

    /// Whether a frame failed that no [`RaftLog::take_lost`] has seen yet.
    pub fn is_lost(&self) -> bool {
        self.lost.load(Ordering::Acquire)
    }

    /// Whether a frame of the current or a past term failed since the last check.
    pub fn take_lost(&self) -> bool {
        self.lost.swap(false, Ordering::AcqRel)
    }
}

impl Log for RaftLog {
    fn append(&self, item: Box<dyn WalItem>) -> u64 {
        let mut n = self.numbering.lock();
        // Bounded: a hold ends when its membership change does, or when it is dropped.
        while n.held {
            self.released.wait(&mut n);
        }
        let (Some(index), Some(tx)) = (n.next, self.tx.get()) else {
            drop(n);
            self.lost.store(true, Ordering::Release);
            item.complete(Err(WalError::Failed("this member does not lead: the frame was not proposed".into())));
            return self.last.load(Ordering::Acquire) + 1;
        };
        // Encoded here, on the planner thread: openraft takes the bytes, and the order of
        // proposals must be the order of the indexes handed out (both under this lock).
        let mut bytes = Vec::new();
        item.encode(&mut bytes);
        n.next = Some(index + 1);
        self.last.store(index, Ordering::Release);
        self.proposed.fetch_add(1, Ordering::AcqRel);
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        if let Err(e) = tx.send(Proposal { index, bytes, item }) {
            e.0.item.complete(Err(WalError::Closed));
        }
        index
    }

    /// The engine's checkpoint through `index - 1` is durable: Raft's log is compacted by
    /// a snapshot of it (D43), which the member's compaction task asks openraft for.
    /// While this leader's own copy of a proposal is not yet durable, a frame proposed now
    /// could not be answered before that sync ends either (an entry is applied, and
    /// answered, only once this member holds it durably, D76): the planner may as well add
    /// to its next frame, which then costs the followers one entry instead of several (D75).
    fn backlog(&self) -> bool {
        let Some(store) = self.store.get() else { return false };
        self.numbering.lock().next.is_some() && store.durable().is_none_or(|d| self.last.load(Ordering::Acquire) > d)
    }

    fn truncate_before(&self, index: u64) {
        self.checkpoint.fetch_max(index.saturating_sub(1), Ordering::AcqRel);
        self.checkpointed.notify_one();
    }

    fn failure(&self) -> Option<String> {
        None
    }

    fn shutdown(&self) {
        self.disarm();
    }
}

/// Frames wait while this lives (D44). Ended by [`Hold::resume_after`] with the last entry
/// the change appended; dropped without it (the change failed, or its outcome is unknown),
/// numbering stops (the member does not lead as far as its log knows) and the term counts
/// as lost, so the member rebuilds from the committed log before it plans again.
pub struct Hold<'a> {
    log: &'a RaftLog,
    resumed: bool,
}

impl Hold<'_> {
    /// Nothing was appended under the hold: numbering goes on where it was, and the frames
    /// that waited are proposed (a hand-over that did not happen, D45).
    pub fn release(mut self) {
        self.resumed = true;
    }

    /// The change is committed and `last` is its last entry: frames are numbered after it.
    pub fn resume_after(mut self, last: u64) {
        self.resumed = true;
        let mut n = self.log.numbering.lock();
        if n.next.is_some() {
            n.next = Some(last + 1);
            self.log.last.fetch_max(last, Ordering::AcqRel);
        }
    }
}

impl Drop for Hold<'_> {
    fn drop(&mut self) {
        let mut n = self.log.numbering.lock();
        if !self.resumed {
            n.next = None;
            self.log.lost.store(true, Ordering::Release);
        }
        n.held = false;
        self.log.released.notify_all();
    }
}
