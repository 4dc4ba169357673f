//! The engine handle: recovery at start, the typed async API the front doors
//! call, and the state shared with the planner thread (`runner`) and the WAL
//! completions. Owns the channel into the planner; never plans anything.

use crate::checkpoint;
use crate::command::*;
use crate::kafka_ops::{ProduceOutcome, ProduceRequest};
use crate::kv::{KvOp, KvResult, KvRollback};
use crate::model::*;
use crate::options::OptionsPatch;
use crate::plan::Planner;
use crate::state::StorageConfig;
use crate::timers::{TimerOp, TimerResult};
use baton_log::{Log, WalConfig, WalStats, WalWriter};
use crossbeam_channel::{bounded, Sender, TrySendError};
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{oneshot, Notify};

#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub data_dir: PathBuf,
    pub wal_segment_bytes: u64,
    /// Zero-fill WAL segments before use (D16).
    pub wal_preallocate: bool,
    /// Retired WAL segments kept to be zero-filled again as spares (D20).
    pub wal_recycle: usize,
    /// Cut a damaged (whole, checksum failing) last WAL frame at start instead of refusing.
    pub wal_truncate_damaged_tail: bool,
    pub partition_segment_bytes: u64,
    /// Partition files kept open at once (D29); more are closed least recently used first.
    pub max_open_files: usize,
    /// Spare partition directories the provisioner may keep ready (D81).
    pub spare_partition_dirs: usize,
    /// Bytes of partition index blocks kept in memory (D29).
    pub index_cache_bytes: u64,
    pub checkpoint_interval: Duration,
    pub limits: crate::limits::Limits,
    /// Requests waiting for the planner; one more is answered `overloaded` (429) at once
    /// rather than blocking the front door's thread.
    pub max_queued_requests: usize,
    /// Distinct keys one compaction pass tracks (D50); 0 turns compaction off.
    pub compaction_max_keys: usize,
}

impl EngineConfig {
    pub fn new(data_dir: PathBuf) -> Self {
        EngineConfig {
            data_dir,
            wal_segment_bytes: 64 << 20,
            wal_preallocate: true,
            wal_recycle: baton_log::WalConfig::DEFAULT_RECYCLE,
            wal_truncate_damaged_tail: false,
            partition_segment_bytes: 64 << 20,
            max_open_files: crate::files::DEFAULT_MAX_OPEN,
            spare_partition_dirs: crate::provision::DEFAULT_SPARE_DIRS,
            index_cache_bytes: crate::files::DEFAULT_INDEX_CACHE_BYTES,
            checkpoint_interval: Duration::from_secs(30),
            limits: crate::limits::Limits::default(),
            max_queued_requests: 65_536,
            compaction_max_keys: crate::compact::DEFAULT_MAX_KEYS,
        }
    }
}

/// The engine's time (see `clock`): anchored at start, then the boot clock.
pub fn wall_micros() -> Micros {
    crate::clock::now()
}

/// Most pops one frame wakes per consumer group of a queue; more partitions than this in one
/// frame are found by the woken pops themselves, each taking one and waking no one.
const MAX_WAKES: usize = 64;
/// Most queues one [`Engine::pop_any`] looks at in one planner step: each costs O(1) when
/// it has nothing for the group (D30), so a step stays in the tens of microseconds.
pub const MAX_POP_ANY: usize = 1024;

pub(crate) type Reply = Box<dyn FnOnce(Result<(), CoreError>) + Send>;

/// Counters the server exports.
#[derive(Default)]
pub struct Counters {
    pub pushed: AtomicU64,
    pub popped: AtomicU64,
    pub acked: AtomicU64,
    pub entries: AtomicU64,
    pub checkpoints: AtomicU64,
    /// Checkpoints that failed for a reason that passes and were left to the next one.
    pub checkpoint_failures: AtomicU64,
    /// Bytes of the last checkpoint file written.
    pub checkpoint_bytes: AtomicU64,
    /// Checkpoints that synced their partition files' filesystem at once (D31).
    pub checkpoint_syncfs: AtomicU64,
    /// Microseconds the planner spent on the last checkpoint's copy of the state, and the most.
    pub checkpoint_pause_us: AtomicU64,
    pub checkpoint_pause_max_us: AtomicU64,
    /// Transactions committed (POST /api/v1/transaction answered success).
    pub txns: AtomicU64,
    /// Requests the planner judged (reads included).
    pub commands: AtomicU64,
    /// Requests refused because `max_queued_requests` were already waiting for the planner.
    pub overloaded: AtomicU64,
    /// Frames the planner held back for the log's backlog (D75), and those it let go only
    /// because the hold reached its bound.
    pub frames_held: AtomicU64,
    pub holds_timed_out: AtomicU64,
    /// Frames whose partition writes the planner made itself instead of the appender thread (D78).
    pub frames_written_inline: AtomicU64,
    /// Steps of a push planned after the requests that queued behind it (D80).
    pub push_continuations: AtomicU64,
    /// Kafka produces that waited for a later planner pass to make their files (D80).
    pub produces_deferred: AtomicU64,
    /// Transactions that waited for spare partition directories (D81, D82).
    pub txns_waited: AtomicU64,
    /// Recounts of a waiting transaction's new partitions (D82).
    pub txn_wait_recounts: AtomicU64,
}

pub struct Shared {
    /// Per queue: woken for every waiter when messages may have come (Kafka fetches).
    pub(crate) notifies: Mutex<HashMap<String, Arc<Notify>>>,
    /// Per queue and consumer group: long-poll pops, woken one at a time (D27).
    pub(crate) pops: Mutex<HashMap<String, HashMap<String, Arc<Notify>>>>,
    pub(crate) failed: Mutex<Option<String>>,
    /// Frames up to this index are durable; guarded with the waiters below so
    /// a reply is never parked after its frame completed.
    pub(crate) durable: Mutex<(u64, VecDeque<(u64, Reply)>)>,
    pub durable_index: AtomicU64,
    pub counters: Counters,
    /// Whether this node plans client requests: always on a single node; on a cluster member
    /// only while it leads (D40). A request that finds it off is refused, never planned.
    pub(crate) writable: std::sync::atomic::AtomicBool,
    /// Who leads, for the refusal a follower answers with.
    pub(crate) leader_hint: Mutex<String>,
    /// Bumped by a rebuild (D40): a frame of an earlier epoch that fails later must not latch
    /// the state rebuilt since.
    pub(crate) epoch: AtomicU64,
    /// The partition file cache of the current state (a rebuild makes a new one).
    pub(crate) files: Mutex<Arc<crate::files::Store>>,
}

impl Shared {
    pub(crate) fn notifier(&self, queue: &str) -> Arc<Notify> {
        self.notifies.lock().entry(queue.to_string()).or_insert_with(|| Arc::new(Notify::new())).clone()
    }

    pub(crate) fn pop_notifier(&self, queue: &str, group: &str) -> Arc<Notify> {
        let mut pops = self.pops.lock();
        let groups = pops.entry(queue.to_string()).or_default();
        groups.entry(group.to_string()).or_insert_with(|| Arc::new(Notify::new())).clone()
    }

    /// A durable frame gave `queue` messages in `parts` partitions (or released a lease):
    /// wake every fetch of it, and per consumer group as many pops as there are partitions
    /// a pop could now lease, not every pop waiting (D27: a push into one partition used to
    /// wake a thousand long polls, each of which scanned every partition on the planner).
    pub(crate) fn wake(&self, queue: &str, parts: usize) {
        if let Some(n) = self.notifies.lock().get(queue) {
            n.notify_waiters();
        }
        if let Some(groups) = self.pops.lock().get(queue) {
            for n in groups.values() {
                for _ in 0..parts.min(MAX_WAKES) {
                    n.notify_one();
                }
            }
        }
    }

    /// Leases expired or delayed messages came due: every waiter of the queue looks again.
    pub(crate) fn wake_all(&self, queue: &str) {
        if let Some(n) = self.notifies.lock().get(queue) {
            n.notify_waiters();
        }
        if let Some(groups) = self.pops.lock().get(queue) {
            for n in groups.values() {
                n.notify_waiters();
            }
        }
    }

    /// Drops the notifiers no waiter holds: a client naming ever new queues must not grow
    /// these maps for good (issue 12 item 6). A wake only concerns current waiters, and they
    /// hold their notifier, so nothing waiting is lost.
    pub(crate) fn prune_notifiers(&self) {
        self.notifies.lock().retain(|_, n| Arc::strong_count(n) > 1);
        let mut pops = self.pops.lock();
        for groups in pops.values_mut() {
            groups.retain(|_, n| Arc::strong_count(n) > 1);
        }
        pops.retain(|_, groups| !groups.is_empty());
    }

    /// Fail-stop: refuse writes until restart, and answer every reply parked for durability
    /// now (its frame will never be durable in this process, or its answer rests on one that
    /// will not). The flag is set before the waiters are taken, and parking checks it under
    /// the waiters' lock, so no reply can be parked after this and wait forever.
    /// [`Self::latch`] for a failure that belongs to state of `epoch`: ignored once a
    /// rebuild has replaced that state.
    pub(crate) fn latch_epoch(&self, epoch: u64, reason: String) {
        if self.epoch.load(Ordering::Acquire) == epoch {
            self.latch(reason);
        }
    }

    pub(crate) fn latch(&self, reason: String) {
        let reason = {
            let mut f = self.failed.lock();
            if f.is_none() {
                tracing::error!(%reason, "storage failed: refusing writes until restart");
                *f = Some(reason);
            }
            f.clone().unwrap_or_default()
        };
        let parked: Vec<Reply> = self.durable.lock().1.drain(..).map(|(_, r)| r).collect();
        for r in parked {
            r(Err(CoreError::unavailable(format!("not durable: {reason}"))));
        }
    }

    pub(crate) fn on_durable(&self, index: u64) {
        let ready: Vec<Reply> = {
            let mut d = self.durable.lock();
            d.0 = d.0.max(index);
            self.durable_index.store(d.0, Ordering::Release);
            let mut out = Vec::new();
            while d.1.front().is_some_and(|(i, _)| *i <= index) {
                out.push(d.1.pop_front().expect("front checked").1);
            }
            out
        };
        for r in ready {
            r(Ok(()));
        }
    }
}

pub(crate) enum Cmd {
    Push(Vec<PushGroup>, oneshot::Sender<Result<Vec<PushResult>, CoreError>>),
    Pop(PopRequest, oneshot::Sender<Result<Option<PopResult>, CoreError>>),
    /// A pop from the first of these queues that has something (a namespace pop), judged in
    /// one planner step; `PopRequest::queue` is ignored.
    PopAny(PopRequest, Vec<String>, oneshot::Sender<Result<Option<PopResult>, CoreError>>),
    Ack(Option<String>, Vec<AckItem>, oneshot::Sender<Result<Vec<Result<(), CoreError>>, CoreError>>),
    Extend(LeaseId, Option<u64>, oneshot::Sender<Result<Micros, CoreError>>),
    Configure(String, OptionsPatch, ConfigureMode, oneshot::Sender<Result<QueueOptions, CoreError>>),
    Seek {
        group: String,
        queue: String,
        partition: Option<String>,
        to_ts: Option<Micros>,
        to_end: bool,
        reply: oneshot::Sender<Result<u32, CoreError>>,
    },
    DeleteGroup(String, oneshot::Sender<Result<(), CoreError>>),
    DeleteMessage(PartId, String, u64, oneshot::Sender<Result<u64, CoreError>>),
    RetryMessage(PartId, String, u64, oneshot::Sender<Result<Vec<String>, CoreError>>),
    DeleteGroupOnQueue(String, String, oneshot::Sender<Result<u32, CoreError>>),
    DeleteQueue(String, oneshot::Sender<Result<(), CoreError>>),
    Txn(crate::txn::TxnRequest, oneshot::Sender<Result<crate::txn::TxnOutcome, CoreError>>),
    Produce(ProduceRequest, oneshot::Sender<Result<ProduceOutcome, CoreError>>),
    CreateTopic(String, u32, Vec<(String, crate::topic_config::ConfigOp)>, oneshot::Sender<Result<bool, CoreError>>),
    InitProducer(oneshot::Sender<Result<i64, CoreError>>),
    TopicConfigs(
        String,
        Vec<(String, crate::topic_config::ConfigOp)>,
        bool,
        bool,
        oneshot::Sender<Result<(), CoreError>>,
    ),
    DeleteRecords(String, Vec<(String, Option<u64>)>, oneshot::Sender<Result<Vec<Result<u64, CoreError>>, CoreError>>),
    DeleteOffsets(String, String, Vec<String>, oneshot::Sender<Result<Vec<Result<(), CoreError>>, CoreError>>),
    KafkaTxn(
        crate::ktxn_plan::TxnOp,
        oneshot::Sender<Result<Result<crate::ktxn_plan::TxnReply, crate::ktxn_plan::TxnError>, CoreError>>,
    ),
    Commit(String, String, Vec<(String, u64)>, oneshot::Sender<Result<Vec<Result<(), CoreError>>, CoreError>>),
    Kv(Vec<KvOp>, oneshot::Sender<Result<Result<Vec<KvResult>, KvRollback>, CoreError>>),
    Timers(Vec<TimerOp>, oneshot::Sender<Result<Vec<TimerResult>, CoreError>>),
    Query(Query, oneshot::Sender<Result<QueryResult, CoreError>>),
    Fetch(Vec<FetchRequest>, oneshot::Sender<Vec<FetchResult>>),
    /// A committed frame from Raft, to apply as replay does (D40).
    Apply(u64, bytes::Bytes),
    /// Answered once every command before it is handled, with the last index applied.
    Barrier(std::sync::mpsc::Sender<u64>),
    /// This member leads from now on: make everything applied visible, plan again.
    Promote(String, std::sync::mpsc::Sender<u64>),
    /// This member no longer leads: refuse client requests, naming who does.
    Demote(String),
    /// Throw the state away and load the checkpoint again (after installing what is staged,
    /// with `Reload::Install`); answers its index.
    Rebuild(Reload, std::sync::mpsc::Sender<Result<u64, String>>),
    Shutdown(std::sync::mpsc::Sender<()>),
}

/// Where a rebuilt state comes from.
pub(crate) enum Reload {
    /// The member's own checkpoint (after a lost term, D40).
    Checkpoint,
    /// A snapshot's state staged by [`crate::install`] (D43), committed first.
    Install,
}

#[derive(Clone)]
pub struct Engine {
    tx: Sender<Cmd>,
    /// Held for the engine's life: no second process may open this data directory.
    _lock: Arc<crate::dirlock::DirLock>,
    shared: Arc<Shared>,
    wal_stats: Arc<WalStats>,
}

fn gone() -> CoreError {
    CoreError::unavailable("the engine is shutting down")
}

impl Engine {
    /// Recover from `data_dir` (checkpoint + WAL replay) and start the threads.
    pub fn start(cfg: EngineConfig) -> Result<Engine, String> {
        Self::launch(cfg, None)
    }

    /// A cluster member's engine (D40): the state is the checkpoint's, committed frames come
    /// through [`Engine::apply_committed`], and, while it leads, the frames it plans go to
    /// `log` (Raft), which numbers them. It starts as a follower: it refuses client requests
    /// until [`Engine::promote`].
    pub fn start_member(cfg: EngineConfig, log: Arc<dyn Log>) -> Result<Engine, String> {
        Self::launch(cfg, Some(log))
    }

    fn launch(cfg: EngineConfig, member: Option<Arc<dyn Log>>) -> Result<Engine, String> {
        let wal_cfg = wal_config(&cfg);
        cfg.limits.validate()?;
        // Before recovery reads or cuts anything.
        let lock = Arc::new(crate::dirlock::DirLock::acquire(&cfg.data_dir)?);
        // A snapshot's install that a crash interrupted is finished (or thrown away) first.
        crate::install::roll_forward(&cfg.data_dir)?;
        checkpoint::sync_left_behind(&cfg.data_dir)?;
        let (state, next_index) = open_state(&cfg, member.is_none().then_some(&wal_cfg))?;
        let standalone = member.is_none();
        let appender =
            crate::appender::Appender::start().map_err(|e| format!("start the partition appender thread: {e}"))?;
        let (log, wal_stats): (Arc<dyn Log>, Arc<WalStats>) = match member {
            Some(log) => (log, Arc::new(WalStats::new())),
            None => {
                let wal = WalWriter::start(wal_cfg, next_index).map_err(|e| e.to_string())?;
                let stats = wal.stats();
                (Arc::new(wal), stats)
            }
        };
        let shared = Arc::new(Shared {
            notifies: Mutex::new(HashMap::new()),
            pops: Mutex::new(HashMap::new()),
            failed: Mutex::new(None),
            durable: Mutex::new((next_index - 1, VecDeque::new())),
            durable_index: AtomicU64::new(next_index - 1),
            counters: Counters::default(),
            writable: std::sync::atomic::AtomicBool::new(standalone),
            leader_hint: Mutex::new(String::new()),
            epoch: AtomicU64::new(0),
            files: Mutex::new(state.storage.store.clone()),
        });
        let (tx, rx) = bounded(cfg.max_queued_requests.max(1));
        let sh = shared.clone();
        std::thread::Builder::new()
            .name("baton-planner".into())
            .spawn(move || {
                let watch = sh.clone();
                let run = move || {
                    let limits = cfg.limits.clone();
                    crate::runner::PlannerLoop::new(
                        Planner::with_limits(state, limits),
                        log,
                        appender,
                        sh,
                        cfg,
                        next_index - 1,
                    )
                    .run(rx)
                };
                // A planner bug must not leave a node that looks healthy but answers nothing.
                if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
                    let msg = p
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    watch.latch(format!("planner thread panicked: {msg}"));
                }
            })
            .map_err(|e| e.to_string())?;
        Ok(Engine { tx, _lock: lock, shared, wal_stats })
    }

    /// Hands a committed frame to the planner, in log order; frames at or below what the
    /// state already holds (planned here, or in the checkpoint) are skipped there. Blocks
    /// while the planner's queue is full: Raft's apply waits, and so does replication.
    pub fn apply_committed(&self, index: u64, frame: bytes::Bytes) -> Result<(), CoreError> {
        self.tx.send(Cmd::Apply(index, frame)).map_err(|_| gone())
    }

    /// Blocks until every command sent before it is handled; the last index applied.
    pub fn barrier(&self) -> Result<u64, CoreError> {
        let (tx, rx) = std::sync::mpsc::channel();
        self.tx.send(Cmd::Barrier(tx)).map_err(|_| gone())?;
        rx.recv().map_err(|_| gone())
    }

    /// This member leads from now on (D40); answers the last index applied, after which
    /// the frames it plans are numbered.
    pub fn promote(&self, me: String) -> Result<u64, CoreError> {
        let (tx, rx) = std::sync::mpsc::channel();
        self.tx.send(Cmd::Promote(me, tx)).map_err(|_| gone())?;
        rx.recv().map_err(|_| gone())
    }

    /// This member no longer leads; `leader` names who does, for the refusals.
    pub fn demote(&self, leader: String) {
        self.shared.writable.store(false, Ordering::Release);
        let _ = self.tx.send(Cmd::Demote(leader));
    }

    pub fn is_writable(&self) -> bool {
        self.shared.writable.load(Ordering::Acquire)
    }

    /// Throws away the state (and whatever it planned that Raft did not commit), loads the
    /// checkpoint again and answers its index: the caller then replays the committed frames
    /// after it through [`Engine::apply_committed`] (D40). Blocks for the reload.
    pub fn rebuild(&self) -> Result<u64, String> {
        self.reload(Reload::Checkpoint)
    }

    /// Throws the state away and puts the snapshot staged under the data directory
    /// ([`crate::install::begin_staging`]) in its place (D43): committed, moved in, loaded.
    /// Answers the installed state's index. A member only, while it does not lead.
    pub fn install(&self) -> Result<u64, String> {
        self.reload(Reload::Install)
    }

    fn reload(&self, from: Reload) -> Result<u64, String> {
        let (tx, rx) = std::sync::mpsc::channel();
        self.tx.send(Cmd::Rebuild(from, tx)).map_err(|_| "the engine is shutting down".to_string())?;
        rx.recv().map_err(|_| "the engine is shutting down".to_string())?
    }

    async fn call<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Cmd) -> Result<T, CoreError> {
        let (tx, rx) = oneshot::channel();
        // Never block the caller's (tokio) thread on a full queue: answer it instead.
        match self.tx.try_send(make(tx)) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                self.shared.counters.overloaded.fetch_add(1, Ordering::Relaxed);
                return Err(CoreError::new(
                    ErrorKind::Overloaded,
                    "overloaded",
                    "too many requests are waiting for the planner (max queued requests); retry shortly",
                ));
            }
            Err(TrySendError::Disconnected(_)) => return Err(gone()),
        }
        rx.await.map_err(|_| gone())
    }

    pub async fn push(&self, groups: Vec<PushGroup>) -> Result<Vec<PushResult>, CoreError> {
        self.call(|r| Cmd::Push(groups, r)).await?
    }

    pub async fn pop(&self, req: PopRequest) -> Result<Option<PopResult>, CoreError> {
        self.call(|r| Cmd::Pop(req, r)).await?
    }

    /// One pop from the first of `queues` (in their order) that has something for the group,
    /// in ONE planner step: a namespace pop over thousands of queues costs one trip to the
    /// planner per [`MAX_POP_ANY`] queues, not one per queue. Queues that do not exist are
    /// skipped; more than [`MAX_POP_ANY`] names is refused.
    pub async fn pop_any(&self, req: PopRequest, queues: Vec<String>) -> Result<Option<PopResult>, CoreError> {
        if queues.len() > MAX_POP_ANY {
            return Err(CoreError::bad(
                "too_many_queues",
                format!("one pop looks at most at {MAX_POP_ANY} queues, not {}", queues.len()),
            ));
        }
        self.call(|r| Cmd::PopAny(req, queues, r)).await?
    }

    pub async fn ack(
        &self,
        group: Option<String>,
        items: Vec<AckItem>,
    ) -> Result<Vec<Result<(), CoreError>>, CoreError> {
        self.call(|r| Cmd::Ack(group, items, r)).await?
    }

    pub async fn extend(&self, lease: LeaseId, secs: Option<u64>) -> Result<Micros, CoreError> {
        self.call(|r| Cmd::Extend(lease, secs, r)).await?
    }

    pub async fn configure(
        &self,
        queue: String,
        patch: OptionsPatch,
        mode: ConfigureMode,
    ) -> Result<QueueOptions, CoreError> {
        self.call(|r| Cmd::Configure(queue, patch, mode, r)).await?
    }

    pub async fn seek(
        &self,
        group: String,
        queue: String,
        partition: Option<String>,
        to_ts: Option<Micros>,
        to_end: bool,
    ) -> Result<u32, CoreError> {
        self.call(|reply| Cmd::Seek { group, queue, partition, to_ts, to_end, reply }).await?
    }

    /// Delete one message by partition and transaction id (no consumer over HTTP is given
    /// it afterwards) at the offset a [`Query::MessageScan`] found; its offset.
    pub async fn delete_message(&self, part: PartId, txid: String, offset: u64) -> Result<u64, CoreError> {
        self.call(|r| Cmd::DeleteMessage(part, txid, offset, r)).await?
    }

    /// Give a dead-lettered message (at the offset a [`Query::MessageScan`] found) back to
    /// every group that dead-lettered it; their names.
    pub async fn retry_message(&self, part: PartId, txid: String, offset: u64) -> Result<Vec<String>, CoreError> {
        self.call(|r| Cmd::RetryMessage(part, txid, offset, r)).await?
    }

    /// Forget `group`'s place on `queue` only; the partitions it had a cursor on.
    pub async fn delete_group_on_queue(&self, group: String, queue: String) -> Result<u32, CoreError> {
        self.call(|r| Cmd::DeleteGroupOnQueue(group, queue, r)).await?
    }

    pub async fn delete_group(&self, group: String) -> Result<(), CoreError> {
        self.call(|r| Cmd::DeleteGroup(group, r)).await?
    }

    pub async fn delete_queue(&self, queue: String) -> Result<(), CoreError> {
        self.call(|r| Cmd::DeleteQueue(queue, r)).await?
    }

    /// Acks and pushes as one entry: committed whole or rolled back whole.
    pub async fn transaction(&self, t: crate::txn::TxnRequest) -> Result<crate::txn::TxnOutcome, CoreError> {
        self.call(|r| Cmd::Txn(t, r)).await?
    }

    /// Kafka Produce: the client's batches stored as they came, offsets assigned.
    pub async fn produce(&self, r: ProduceRequest) -> Result<ProduceOutcome, CoreError> {
        self.call(|x| Cmd::Produce(r, x)).await?
    }

    /// Create a topic (queue) with partitions "0".."n-1"; true if anything was created.
    pub async fn create_topic(&self, topic: String, partitions: u32) -> Result<bool, CoreError> {
        self.call(|x| Cmd::CreateTopic(topic, partitions, Vec::new(), x)).await?
    }

    /// Create a topic with Kafka topic configs, in one entry: there is never a moment the
    /// topic exists without them.
    pub async fn create_topic_configured(
        &self,
        topic: String,
        partitions: u32,
        configs: Vec<(String, crate::topic_config::ConfigOp)>,
    ) -> Result<bool, CoreError> {
        self.call(|x| Cmd::CreateTopic(topic, partitions, configs, x)).await?
    }

    pub async fn init_producer(&self) -> Result<i64, CoreError> {
        self.call(Cmd::InitProducer).await?
    }

    /// Kafka AlterConfigs (`replace`) or IncrementalAlterConfigs of one topic.
    pub async fn topic_configs(
        &self,
        topic: String,
        ops: Vec<(String, crate::topic_config::ConfigOp)>,
        replace: bool,
        validate_only: bool,
    ) -> Result<(), CoreError> {
        self.call(|x| Cmd::TopicConfigs(topic, ops, replace, validate_only, x)).await?
    }

    /// Kafka DeleteRecords: per partition, the new log start.
    pub async fn delete_records(
        &self,
        topic: String,
        parts: Vec<(String, Option<u64>)>,
    ) -> Result<Vec<Result<u64, CoreError>>, CoreError> {
        self.call(|x| Cmd::DeleteRecords(topic, parts, x)).await?
    }

    /// Kafka OffsetDelete: the group's positions on these partitions are forgotten.
    pub async fn delete_offsets(
        &self,
        group: String,
        topic: String,
        parts: Vec<String>,
    ) -> Result<Vec<Result<(), CoreError>>, CoreError> {
        self.call(|x| Cmd::DeleteOffsets(group, topic, parts, x)).await?
    }

    /// A Kafka transaction request (D48), answered once its entry is durable.
    pub async fn kafka_txn(
        &self,
        op: crate::ktxn_plan::TxnOp,
    ) -> Result<Result<crate::ktxn_plan::TxnReply, crate::ktxn_plan::TxnError>, CoreError> {
        self.call(|x| Cmd::KafkaTxn(op, x)).await?
    }

    /// Kafka OffsetCommit: set the group's next offset on each named partition.
    pub async fn commit_offsets(
        &self,
        group: String,
        topic: String,
        offsets: Vec<(String, u64)>,
    ) -> Result<Vec<Result<(), CoreError>>, CoreError> {
        self.call(|x| Cmd::Commit(group, topic, offsets, x)).await?
    }

    /// KV ops in order; all applied, or none if a required precondition failed.
    pub async fn kv(&self, ops: Vec<KvOp>) -> Result<Result<Vec<KvResult>, KvRollback>, CoreError> {
        crate::kv::validate(&ops)?;
        self.call(|x| Cmd::Kv(ops, x)).await?
    }

    pub async fn timers(&self, ops: Vec<TimerOp>) -> Result<Vec<TimerResult>, CoreError> {
        crate::timers::validate(&ops)?;
        self.call(|x| Cmd::Timers(ops, x)).await?
    }

    pub async fn query(&self, q: Query) -> Result<QueryResult, CoreError> {
        self.call(|r| Cmd::Query(q, r)).await?
    }

    /// Every queue (or the one named: at most one view) with its partitions' views and depth
    /// as `group` sees it (`None`: queue mode's), put together from planner steps of at most
    /// [`crate::query::VIEW_CHUNK`] partitions, so pushes and pops go on between them. A
    /// partition made meanwhile is not in the view; one removed meanwhile is left out.
    pub async fn queue_views(&self, name: Option<&str>, group: Option<&str>) -> Result<Vec<QueueView>, CoreError> {
        let QueryResult::QueueHeads(heads) = self.query(Query::QueueHeads(name.map(str::to_string))).await? else {
            return Err(CoreError::unavailable("unexpected answer to a queue listing"));
        };
        let ids: Vec<PartId> = heads.iter().flat_map(|h| h.parts.iter().copied()).collect();
        let mut views: HashMap<PartId, PartitionView> = HashMap::with_capacity(ids.len());
        for chunk in ids.chunks(crate::query::VIEW_CHUNK) {
            let q = Query::PartViews { ids: chunk.to_vec(), group: group.map(str::to_string) };
            let QueryResult::PartViews(v) = self.query(q).await? else {
                return Err(CoreError::unavailable("unexpected answer to a partition listing"));
            };
            views.extend(v.into_iter().map(|pv| (pv.part, pv)));
        }
        Ok(heads
            .into_iter()
            .map(|h| {
                let partitions: Vec<PartitionView> = h.parts.iter().filter_map(|id| views.remove(id)).collect();
                QueueView {
                    name: h.name,
                    options: h.options,
                    depth: partitions.iter().map(|p| p.depth).sum(),
                    total: partitions.iter().map(|p| p.end - p.start).sum(),
                    partitions,
                    dead_letters: h.dead_letters,
                    created_at: h.created_at,
                }
            })
            .collect())
    }

    /// One queue's view ([`Engine::queue_views`]), `None` for an unknown queue.
    pub async fn queue_view(&self, name: &str, group: Option<&str>) -> Result<Option<QueueView>, CoreError> {
        Ok(self.queue_views(Some(name), group).await?.pop())
    }

    pub async fn fetch(&self, reqs: Vec<FetchRequest>) -> Result<Vec<FetchResult>, CoreError> {
        self.call(|r| Cmd::Fetch(reqs, r)).await
    }

    /// Long-poll support: wakes when a durable push (or a released lease) may
    /// have made messages of `queue` available.
    pub fn notifier(&self, queue: &str) -> Arc<Notify> {
        self.shared.notifier(queue)
    }

    /// Long-poll support for pops: woken one waiter per partition a durable push (or a
    /// released lease) opened for `group` (D27), and every waiter when leases expire.
    /// A woken pop that finds nothing simply waits again.
    pub fn pop_notifier(&self, queue: &str, group: &str) -> Arc<Notify> {
        self.shared.pop_notifier(queue, group)
    }

    pub fn failure(&self) -> Option<String> {
        self.shared.failed.lock().clone()
    }

    pub fn counters(&self) -> &Counters {
        &self.shared.counters
    }

    pub fn wal_stats(&self) -> Arc<WalStats> {
        self.wal_stats.clone()
    }

    /// The open partition files and the index cache (D29), for /metrics.
    pub fn files(&self) -> Arc<crate::files::Store> {
        self.shared.files.lock().clone()
    }

    /// Finish the group commit in flight, checkpoint, stop. Blocks the calling thread.
    pub fn shutdown(&self) {
        let (tx, rx) = std::sync::mpsc::channel();
        if self.tx.send(Cmd::Shutdown(tx)).is_ok() {
            let _ = rx.recv_timeout(Duration::from_secs(60));
        }
    }
}

pub(crate) fn wal_config(cfg: &EngineConfig) -> WalConfig {
    WalConfig {
        dir: cfg.data_dir.join("wal"),
        segment_bytes: cfg.wal_segment_bytes,
        preallocate: cfg.wal_preallocate,
        recycle: cfg.wal_recycle,
        truncate_damaged_tail: cfg.wal_truncate_damaged_tail,
    }
}

/// The state recovery gives (checkpoint, then `wal`'s replay when there is one), made ready
/// to plan on: the clock continued, the provisioner and deferred writes on. At start and at
/// a member's rebuild (D40), which reuses nothing of the state before.
pub(crate) fn open_state(cfg: &EngineConfig, wal: Option<&WalConfig>) -> Result<(crate::state::State, u64), String> {
    let storage = StorageConfig {
        data_dir: cfg.data_dir.clone(),
        segment_bytes: cfg.partition_segment_bytes,
        provisioner: None,
        defer_writes: false,
        store: Arc::new(crate::files::Store::new(cfg.max_open_files, cfg.index_cache_bytes)),
        unsynced: Default::default(),
        fs_sync: None,
        compactor: None,
    };
    let (mut state, next_index) = checkpoint::recover(storage, wal)?;
    // The clock continues the last run's on this boot (D33), never behind the log (I5).
    crate::clock::start(&cfg.data_dir, state.last_ts)?;
    // Only after recovery, which deletes what is not a partition (a crash's spares too).
    state.storage.provisioner = Some(
        crate::provision::Provisioner::start_with(
            &cfg.data_dir.join("partitions"),
            crate::provision::pool_for(cfg.max_open_files),
            cfg.spare_partition_dirs,
        )
        .map_err(|e| format!("start the partition file provisioner: {e}"))?,
    );
    state.storage.defer_writes = true;
    if cfg.compaction_max_keys > 0 {
        let c = crate::compact::Compactor::start(state.storage.store.clone(), cfg.compaction_max_keys)
            .map_err(|e| format!("start the compactor: {e}"))?;
        state.storage.compactor = Some(Arc::new(c));
    }
    let parts_dir = cfg.data_dir.join("partitions");
    state.storage.fs_sync =
        Some(Arc::new(std::fs::File::open(&parts_dir).map_err(|e| format!("open {}: {e}", parts_dir.display()))?));
    Ok((state, next_index))
}
