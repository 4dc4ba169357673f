//! The engine: the planner thread, the hand-off to the WAL writer, and the
//! answers. Owns the threads and the channels between front doors, planner,
//! WAL and checkpointer.
//!
//! I3 is enforced here: a request's answer is sent from the WAL completion of
//! the frame holding its entry, after fdatasync. A request that changed
//! nothing still waits for every frame planned before it, because what it saw
//! (a duplicate, say) may rest on those. Must never answer success from a
//! failed or latched WAL: those answers are 503 with the reason.

use crate::checkpoint;
use crate::command::*;
use crate::entry::{encode_entries, Entry};
use crate::kafka_ops::{ProduceOutcome, ProduceRequest};
use crate::kv::{KvOp, KvResult, KvRollback};
use crate::model::*;
use crate::options::OptionsPatch;
use crate::plan::Planner;
use crate::query;
use crate::state::StorageConfig;
use crate::timers::{TimerOp, TimerResult};
use baton_log::{WalConfig, WalError, WalItem, WalStats, WalWriter};
use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender};
use parking_lot::Mutex;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::{oneshot, Notify};

#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub data_dir: PathBuf,
    pub wal_segment_bytes: u64,
    pub partition_segment_bytes: u64,
    pub checkpoint_interval: Duration,
}

impl EngineConfig {
    pub fn new(data_dir: PathBuf) -> Self {
        EngineConfig {
            data_dir,
            wal_segment_bytes: 64 << 20,
            partition_segment_bytes: 64 << 20,
            checkpoint_interval: Duration::from_secs(30),
        }
    }
}

pub fn wall_micros() -> Micros {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

type Reply = Box<dyn FnOnce(Result<(), CoreError>) + Send>;

/// Counters the server exports.
#[derive(Default)]
pub struct Counters {
    pub pushed: AtomicU64,
    pub popped: AtomicU64,
    pub acked: AtomicU64,
    pub entries: AtomicU64,
    pub checkpoints: AtomicU64,
}

pub struct Shared {
    notifies: Mutex<HashMap<String, Arc<Notify>>>,
    failed: Mutex<Option<String>>,
    /// Frames up to this index are durable; guarded with the waiters below so
    /// a reply is never parked after its frame completed.
    durable: Mutex<(u64, VecDeque<(u64, Reply)>)>,
    pub durable_index: AtomicU64,
    pub counters: Counters,
}

impl Shared {
    fn notifier(&self, queue: &str) -> Arc<Notify> {
        self.notifies.lock().entry(queue.to_string()).or_insert_with(|| Arc::new(Notify::new())).clone()
    }

    fn latch(&self, reason: String) {
        let mut f = self.failed.lock();
        if f.is_none() {
            tracing::error!(%reason, "storage failed: refusing writes until restart");
            *f = Some(reason);
        }
    }

    fn on_durable(&self, index: u64) {
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

/// One group-commit frame: the entries of one planner batch and who waits on them.
struct Frame {
    index: u64,
    entries: Vec<Entry>,
    replies: Vec<Reply>,
    marks: Vec<(Arc<AtomicU64>, u64)>,
    notify: Vec<Arc<Notify>>,
    shared: Arc<Shared>,
}

impl WalItem for Frame {
    fn encode(&self, buf: &mut Vec<u8>) {
        encode_entries(&self.entries, buf);
    }

    fn complete(self: Box<Self>, result: Result<u64, WalError>) {
        match result {
            Ok(idx) => {
                debug_assert_eq!(idx, self.index, "planner and WAL agree on frame indexes");
                for (m, v) in &self.marks {
                    m.fetch_max(*v, Ordering::AcqRel);
                }
                for r in self.replies {
                    r(Ok(()));
                }
                self.shared.on_durable(idx);
                for n in &self.notify {
                    n.notify_waiters();
                }
            }
            Err(e) => {
                self.shared.latch(e.to_string());
                for r in self.replies {
                    r(Err(CoreError::unavailable(format!("not durable: {e}"))));
                }
            }
        }
    }
}

enum Cmd {
    Push(Vec<PushGroup>, oneshot::Sender<Result<Vec<PushResult>, CoreError>>),
    Pop(PopRequest, oneshot::Sender<Result<Option<PopResult>, CoreError>>),
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
    DeleteQueue(String, oneshot::Sender<Result<(), CoreError>>),
    Txn(crate::txn::TxnRequest, oneshot::Sender<Result<crate::txn::TxnOutcome, CoreError>>),
    Produce(ProduceRequest, oneshot::Sender<Result<ProduceOutcome, CoreError>>),
    CreateTopic(String, u32, oneshot::Sender<Result<bool, CoreError>>),
    InitProducer(oneshot::Sender<Result<i64, CoreError>>),
    Commit(String, String, Vec<(String, u64)>, oneshot::Sender<Result<Vec<Result<(), CoreError>>, CoreError>>),
    Kv(Vec<KvOp>, oneshot::Sender<Result<Result<Vec<KvResult>, KvRollback>, CoreError>>),
    Timers(Vec<TimerOp>, oneshot::Sender<Result<Vec<TimerResult>, CoreError>>),
    Query(Query, oneshot::Sender<QueryResult>),
    Fetch(Vec<FetchRequest>, oneshot::Sender<Vec<FetchResult>>),
    Shutdown(std::sync::mpsc::Sender<()>),
}

#[derive(Clone)]
pub struct Engine {
    tx: Sender<Cmd>,
    shared: Arc<Shared>,
    wal_stats: Arc<WalStats>,
}

fn gone() -> CoreError {
    CoreError::unavailable("the engine is shutting down")
}

impl Engine {
    /// Recover from `data_dir` (checkpoint + WAL replay) and start the threads.
    pub fn start(cfg: EngineConfig) -> Result<Engine, String> {
        let storage = StorageConfig { data_dir: cfg.data_dir.clone(), segment_bytes: cfg.partition_segment_bytes };
        let wal_cfg = WalConfig { dir: cfg.data_dir.join("wal"), segment_bytes: cfg.wal_segment_bytes };
        let (state, next_index) = checkpoint::recover(storage, &wal_cfg)?;
        let wal = WalWriter::start(wal_cfg, next_index).map_err(|e| e.to_string())?;
        let shared = Arc::new(Shared {
            notifies: Mutex::new(HashMap::new()),
            failed: Mutex::new(None),
            durable: Mutex::new((next_index - 1, VecDeque::new())),
            durable_index: AtomicU64::new(next_index - 1),
            counters: Counters::default(),
        });
        let wal_stats = wal.stats();
        let (tx, rx) = bounded(65_536);
        let sh = shared.clone();
        std::thread::Builder::new()
            .name("baton-planner".into())
            .spawn(move || {
                let watch = sh.clone();
                let run = move || PlannerLoop::new(Planner::new(state), Arc::new(wal), sh, cfg, next_index - 1).run(rx);
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
        Ok(Engine { tx, shared, wal_stats })
    }

    async fn call<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Cmd) -> Option<T> {
        let (tx, rx) = oneshot::channel();
        self.tx.send(make(tx)).ok()?;
        rx.await.ok()
    }

    pub async fn push(&self, groups: Vec<PushGroup>) -> Result<Vec<PushResult>, CoreError> {
        self.call(|r| Cmd::Push(groups, r)).await.unwrap_or_else(|| Err(gone()))
    }

    pub async fn pop(&self, req: PopRequest) -> Result<Option<PopResult>, CoreError> {
        self.call(|r| Cmd::Pop(req, r)).await.unwrap_or_else(|| Err(gone()))
    }

    pub async fn ack(
        &self,
        group: Option<String>,
        items: Vec<AckItem>,
    ) -> Result<Vec<Result<(), CoreError>>, CoreError> {
        self.call(|r| Cmd::Ack(group, items, r)).await.unwrap_or_else(|| Err(gone()))
    }

    pub async fn extend(&self, lease: LeaseId, secs: Option<u64>) -> Result<Micros, CoreError> {
        self.call(|r| Cmd::Extend(lease, secs, r)).await.unwrap_or_else(|| Err(gone()))
    }

    pub async fn configure(
        &self,
        queue: String,
        patch: OptionsPatch,
        mode: ConfigureMode,
    ) -> Result<QueueOptions, CoreError> {
        self.call(|r| Cmd::Configure(queue, patch, mode, r)).await.unwrap_or_else(|| Err(gone()))
    }

    pub async fn seek(
        &self,
        group: String,
        queue: String,
        partition: Option<String>,
        to_ts: Option<Micros>,
        to_end: bool,
    ) -> Result<u32, CoreError> {
        self.call(|reply| Cmd::Seek { group, queue, partition, to_ts, to_end, reply })
            .await
            .unwrap_or_else(|| Err(gone()))
    }

    pub async fn delete_group(&self, group: String) -> Result<(), CoreError> {
        self.call(|r| Cmd::DeleteGroup(group, r)).await.unwrap_or_else(|| Err(gone()))
    }

    pub async fn delete_queue(&self, queue: String) -> Result<(), CoreError> {
        self.call(|r| Cmd::DeleteQueue(queue, r)).await.unwrap_or_else(|| Err(gone()))
    }

    /// Acks and pushes as one entry: committed whole or rolled back whole.
    pub async fn transaction(&self, t: crate::txn::TxnRequest) -> Result<crate::txn::TxnOutcome, CoreError> {
        self.call(|r| Cmd::Txn(t, r)).await.unwrap_or_else(|| Err(gone()))
    }

    /// Kafka Produce: the client's batches stored as they came, offsets assigned.
    pub async fn produce(&self, r: ProduceRequest) -> Result<ProduceOutcome, CoreError> {
        self.call(|x| Cmd::Produce(r, x)).await.unwrap_or_else(|| Err(gone()))
    }

    /// Create a topic (queue) with partitions "0".."n-1"; true if anything was created.
    pub async fn create_topic(&self, topic: String, partitions: u32) -> Result<bool, CoreError> {
        self.call(|x| Cmd::CreateTopic(topic, partitions, x)).await.unwrap_or_else(|| Err(gone()))
    }

    pub async fn init_producer(&self) -> Result<i64, CoreError> {
        self.call(Cmd::InitProducer).await.unwrap_or_else(|| Err(gone()))
    }

    /// Kafka OffsetCommit: set the group's next offset on each named partition.
    pub async fn commit_offsets(
        &self,
        group: String,
        topic: String,
        offsets: Vec<(String, u64)>,
    ) -> Result<Vec<Result<(), CoreError>>, CoreError> {
        self.call(|x| Cmd::Commit(group, topic, offsets, x)).await.unwrap_or_else(|| Err(gone()))
    }

    /// KV ops in order; all applied, or none if a required precondition failed.
    pub async fn kv(&self, ops: Vec<KvOp>) -> Result<Result<Vec<KvResult>, KvRollback>, CoreError> {
        crate::kv::validate(&ops)?;
        self.call(|x| Cmd::Kv(ops, x)).await.unwrap_or_else(|| Err(gone()))
    }

    pub async fn timers(&self, ops: Vec<TimerOp>) -> Result<Vec<TimerResult>, CoreError> {
        crate::timers::validate(&ops)?;
        self.call(|x| Cmd::Timers(ops, x)).await.unwrap_or_else(|| Err(gone()))
    }

    pub async fn query(&self, q: Query) -> Result<QueryResult, CoreError> {
        self.call(|r| Cmd::Query(q, r)).await.ok_or_else(gone)
    }

    pub async fn fetch(&self, reqs: Vec<FetchRequest>) -> Result<Vec<FetchResult>, CoreError> {
        self.call(|r| Cmd::Fetch(reqs, r)).await.ok_or_else(gone)
    }

    /// Long-poll support: wakes when a durable push (or a released lease) may
    /// have made messages of `queue` available.
    pub fn notifier(&self, queue: &str) -> Arc<Notify> {
        self.shared.notifier(queue)
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

    /// Finish the group commit in flight, checkpoint, stop. Blocks the calling thread.
    pub fn shutdown(&self) {
        let (tx, rx) = std::sync::mpsc::channel();
        if self.tx.send(Cmd::Shutdown(tx)).is_ok() {
            let _ = rx.recv_timeout(Duration::from_secs(60));
        }
    }
}

struct PlannerLoop {
    p: Planner,
    wal: Arc<WalWriter>,
    shared: Arc<Shared>,
    cfg: EngineConfig,
    /// Index of the last frame handed to the WAL.
    submitted: u64,
    last_checkpoint: Instant,
    checkpointed_index: u64,
    /// (time, queue) at which long polls of the queue should look again: lease expiries, delayed messages.
    lease_expiries: BinaryHeap<Reverse<(Micros, QueueId)>>,
    frame_entries: Vec<Entry>,
    frame_replies: Vec<Reply>,
    /// Replies of requests that changed nothing; they wait for `submitted` at the time.
    parked: Vec<Reply>,
}

impl PlannerLoop {
    fn new(p: Planner, wal: Arc<WalWriter>, shared: Arc<Shared>, cfg: EngineConfig, submitted: u64) -> Self {
        PlannerLoop {
            checkpointed_index: p.state.applied_index,
            p,
            wal,
            shared,
            cfg,
            submitted,
            last_checkpoint: Instant::now(),
            lease_expiries: BinaryHeap::new(),
            frame_entries: Vec::new(),
            frame_replies: Vec::new(),
            parked: Vec::new(),
        }
    }

    fn run(mut self, rx: Receiver<Cmd>) {
        let tick = Duration::from_millis(100);
        let mut next_tick = Instant::now() + tick;
        loop {
            let timeout = next_tick.saturating_duration_since(Instant::now());
            let first = match rx.recv_timeout(timeout) {
                Ok(c) => Some(c),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => break,
            };
            let mut stop = None;
            if let Some(c) = first {
                let mut cmd = Some(c);
                let mut n = 0;
                while let Some(c) = cmd.take() {
                    if let Cmd::Shutdown(done) = c {
                        stop = Some(done);
                        break;
                    }
                    self.handle(c);
                    n += 1;
                    if n >= 4096 {
                        break;
                    }
                    cmd = rx.try_recv().ok();
                }
            }
            if Instant::now() >= next_tick {
                self.on_tick();
                next_tick = Instant::now() + tick;
            }
            self.flush();
            if let Some(done) = stop {
                self.wal.shutdown();
                if let Err(e) = self.checkpoint(true) {
                    tracing::error!(error = %e, "final checkpoint failed");
                }
                let _ = done.send(());
                return;
            }
        }
        self.wal.shutdown();
    }

    /// Hand the planned entries to the WAL as one frame; park answers that need no entry.
    fn flush(&mut self) {
        let parked = std::mem::take(&mut self.parked);
        if !self.frame_entries.is_empty() {
            self.submitted += 1;
            self.p.state.applied_index = self.submitted;
            let mut marks = Vec::new();
            let mut notify = Vec::new();
            for q in self.p.pushed_queues.drain() {
                if let Some(queue) = self.p.state.queues.get(&q) {
                    notify.push(self.shared.notifier(&queue.name));
                    for pid in &queue.parts {
                        let part = &self.p.state.parts[pid];
                        if part.durable_end() < part.end {
                            marks.push((part.durable.clone(), part.end));
                        }
                    }
                }
            }
            let frame = Frame {
                index: self.submitted,
                entries: std::mem::take(&mut self.frame_entries),
                replies: std::mem::take(&mut self.frame_replies),
                marks,
                notify,
                shared: self.shared.clone(),
            };
            self.shared.counters.entries.fetch_add(frame.entries.len() as u64, Ordering::Relaxed);
            self.wal.submit(Box::new(frame));
        }
        if parked.is_empty() {
            return;
        }
        let mut d = self.shared.durable.lock();
        if d.0 >= self.submitted {
            drop(d);
            for r in parked {
                r(Ok(()));
            }
        } else {
            for r in parked {
                d.1.push_back((self.submitted, r));
            }
        }
    }

    /// Record the result of planning one request: its entry joins the frame and
    /// its answer waits for that frame; no entry means it waits for what came before.
    fn settle(&mut self, reply: Reply) {
        for (t, q) in self.p.wakeups.drain(..) {
            self.lease_expiries.push(Reverse((t, q)));
        }
        match self.p.finish() {
            Some(e) => {
                self.frame_entries.push(e);
                self.frame_replies.push(reply);
            }
            None => self.parked.push(reply),
        }
    }

    fn failed(&self) -> Option<CoreError> {
        self.shared
            .failed
            .lock()
            .as_ref()
            .map(|r| CoreError::unavailable(format!("storage failed, refusing writes: {r}")))
    }

    fn handle(&mut self, cmd: Cmd) {
        let writes = !matches!(cmd, Cmd::Query(..) | Cmd::Fetch(..));
        if writes {
            if let Some(e) = self.failed() {
                return fail_cmd(cmd, e);
            }
        }
        self.p.begin(wall_micros());
        match cmd {
            Cmd::Push(groups, reply) => {
                let res = self.p.push(groups);
                let n = res.iter().filter(|r| matches!(r.status, PushStatus::Queued { .. })).count();
                self.shared.counters.pushed.fetch_add(n as u64, Ordering::Relaxed);
                self.settle(deferred(reply, Ok(res)));
            }
            Cmd::Pop(req, reply) => {
                let res = self.p.pop(&req);
                if let Ok(Some(r)) = &res {
                    self.shared.counters.popped.fetch_add(r.messages.len() as u64, Ordering::Relaxed);
                    if let (Some(_), Some(q)) = (r.lease, self.p.state.queue_ids.get(&r.queue)) {
                        self.lease_expiries.push(Reverse((r.lease_expires, *q)));
                    }
                }
                self.settle(deferred(reply, res));
            }
            Cmd::Ack(group, items, reply) => {
                let res = self.p.ack(group.as_deref(), &items);
                let n = res.iter().filter(|r| r.is_ok()).count();
                self.shared.counters.acked.fetch_add(n as u64, Ordering::Relaxed);
                self.settle(deferred(reply, Ok(res)));
            }
            Cmd::Extend(lease, secs, reply) => {
                let res = self.p.extend(lease, secs);
                if let (Ok(exp), Some((part, _))) = (&res, self.p.state.leases.get(&lease)) {
                    if let Some(p) = self.p.state.parts.get(part) {
                        self.lease_expiries.push(Reverse((*exp, p.queue)));
                    }
                }
                self.settle(deferred(reply, res));
            }
            Cmd::Configure(queue, patch, mode, reply) => {
                let current = self.p.state.queue(&queue).map(|q| q.options.clone());
                let base = match (mode, current) {
                    (ConfigureMode::Merge, Some(c)) => c,
                    _ => QueueOptions::default(),
                };
                let opts = patch.apply_to(base);
                let res = self.p.configure(&queue, opts.clone()).map(|_| opts);
                self.settle(deferred(reply, res));
            }
            Cmd::Seek { group, queue, partition, to_ts, to_end, reply } => {
                let res = self.p.seek(&group, &queue, partition.as_deref(), to_ts, to_end);
                self.settle(deferred(reply, res));
            }
            Cmd::DeleteGroup(g, reply) => {
                let res = self.p.delete_group(&g);
                self.settle(deferred(reply, res));
            }
            Cmd::DeleteQueue(q, reply) => {
                let res = self.p.delete_queue(&q);
                self.settle(deferred(reply, res));
            }
            Cmd::Txn(t, reply) => {
                let res = self.p.transaction(t);
                self.settle(deferred(reply, res));
            }
            Cmd::Produce(r, reply) => {
                let res = self.p.produce(r);
                self.settle(deferred(reply, res));
            }
            Cmd::CreateTopic(t, n, reply) => {
                let res = self.p.create_topic(&t, n);
                self.settle(deferred(reply, res));
            }
            Cmd::InitProducer(reply) => {
                let res = self.p.init_producer();
                self.settle(deferred(reply, res));
            }
            Cmd::Commit(g, t, offs, reply) => {
                let res = self.p.commit_offsets(&g, &t, &offs);
                self.settle(deferred(reply, Ok(res)));
            }
            Cmd::Kv(ops, reply) => {
                let res = self.p.kv(&ops);
                self.settle(deferred(reply, res));
            }
            Cmd::Timers(ops, reply) => {
                let res = self.p.timers(&ops);
                self.settle(deferred(reply, res));
            }
            Cmd::Query(q, reply) => {
                let _ = reply.send(query::run(&self.p.state, q));
            }
            Cmd::Fetch(reqs, reply) => {
                let _ = reply.send(query::fetch(&self.p.state, reqs));
            }
            Cmd::Shutdown(_) => unreachable!("handled by the loop"),
        }
    }

    fn on_tick(&mut self) {
        let now = wall_micros();
        let mut due = Vec::new();
        while self.lease_expiries.peek().is_some_and(|Reverse((t, _))| *t <= now) {
            let Reverse((_, q)) = self.lease_expiries.pop().expect("peeked");
            due.push(q);
        }
        if self.failed().is_some() {
            return;
        }
        self.p.begin(now);
        due.sort_unstable();
        due.dedup();
        for q in due {
            if let Err(e) = self.p.expire_leases(q) {
                tracing::error!(error = %e, "expiring leases failed");
            }
            if let Some(queue) = self.p.state.queues.get(&q) {
                self.shared.notifier(&queue.name).notify_waiters();
            }
        }
        if let Err(e) = self.p.retention() {
            tracing::error!(error = %e, "retention planning failed");
        }
        if let Err(e) = self.p.fire_timers() {
            tracing::error!(error = %e, "firing timers failed");
        }
        self.settle(Box::new(|_| {}));
        if self.last_checkpoint.elapsed() >= self.cfg.checkpoint_interval {
            if let Err(e) = self.checkpoint(false) {
                self.shared.latch(format!("checkpoint failed: {e}"));
            }
        }
    }

    /// Snapshot the state as of the last submitted frame. The file work runs on
    /// its own thread unless `sync_now` (shutdown); either way the snapshot is
    /// only written once its frame is durable.
    fn checkpoint(&mut self, sync_now: bool) -> Result<(), String> {
        self.flush();
        self.last_checkpoint = Instant::now();
        if self.p.state.applied_index == self.checkpointed_index {
            return Ok(());
        }
        let snap = checkpoint::Snapshot::take(&mut self.p.state)?;
        self.checkpointed_index = snap.index;
        let shared = self.shared.clone();
        let dir = self.cfg.data_dir.clone();
        let wal = self.wal.clone();
        let job = move || -> Result<(), String> {
            let deadline = Instant::now() + Duration::from_secs(60);
            while shared.durable_index.load(Ordering::Acquire) < snap.index {
                if shared.failed.lock().is_some() || Instant::now() > deadline {
                    return Err("the checkpoint's frame never became durable".into());
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            let index = snap.index;
            snap.write(&dir)?;
            wal.truncate_before(index + 1);
            shared.counters.checkpoints.fetch_add(1, Ordering::Relaxed);
            Ok(())
        };
        if sync_now {
            job()
        } else {
            let shared = self.shared.clone();
            std::thread::spawn(move || {
                if let Err(e) = job() {
                    shared.latch(format!("checkpoint failed: {e}"));
                }
            });
            Ok(())
        }
    }
}

fn deferred<T: Send + 'static>(tx: oneshot::Sender<Result<T, CoreError>>, value: Result<T, CoreError>) -> Reply {
    Box::new(move |durable| {
        let _ = tx.send(durable.and(value));
    })
}

fn fail_cmd(cmd: Cmd, e: CoreError) {
    match cmd {
        Cmd::Push(_, r) => drop(r.send(Err(e))),
        Cmd::Pop(_, r) => drop(r.send(Err(e))),
        Cmd::Ack(_, _, r) => drop(r.send(Err(e))),
        Cmd::Extend(_, _, r) => drop(r.send(Err(e))),
        Cmd::Configure(_, _, _, r) => drop(r.send(Err(e))),
        Cmd::Seek { reply, .. } => drop(reply.send(Err(e))),
        Cmd::DeleteGroup(_, r) => drop(r.send(Err(e))),
        Cmd::DeleteQueue(_, r) => drop(r.send(Err(e))),
        Cmd::Txn(_, r) => drop(r.send(Err(e))),
        Cmd::Produce(_, r) => drop(r.send(Err(e))),
        Cmd::CreateTopic(_, _, r) => drop(r.send(Err(e))),
        Cmd::InitProducer(r) => drop(r.send(Err(e))),
        Cmd::Commit(_, _, _, r) => drop(r.send(Err(e))),
        Cmd::Kv(_, r) => drop(r.send(Err(e))),
        Cmd::Timers(_, r) => drop(r.send(Err(e))),
        Cmd::Query(..) | Cmd::Fetch(..) | Cmd::Shutdown(_) => {}
    }
}
