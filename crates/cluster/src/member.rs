//! One member of a Baton cluster, started as one: its engine, its Raft node, and the task
//! that follows leadership (D40).
//!
//! Owns the transitions. Leading: once everything in the log is applied (the new term's
//! blank entry included), the proposals are armed after the log's last entry and the engine
//! is promoted. Not leading any more, or a proposal lost: the engine is demoted, and if it
//! planned anything in the term, rebuilt from its checkpoint with the committed frames
//! after it replayed while Raft's apply waits. Must never arm proposals while something in
//! the log is unapplied (its index would be predicted wrong), nor leave a demoted engine with
//! a planned state.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use baton_core::{Engine, EngineConfig};
use baton_replicate::node::{Node, NodeConfig};
use baton_replicate::NodeId;
use openraft::EntryPayload;
use tokio::task::JoinHandle;

use crate::applier::EngineApplier;
use crate::raft_log::RaftLog;

pub struct Member {
    pub id: NodeId,
    pub engine: Engine,
    pub node: Arc<Node<EngineApplier>>,
    pub log: Arc<RaftLog>,
    /// Membership changes made here, one at a time (D44).
    pub changes: Arc<crate::membership::Changes>,
    watch: JoinHandle<()>,
    stopping: Arc<std::sync::atomic::AtomicBool>,
    compact: JoinHandle<()>,
}

/// The longest a shutdown waits for a rebuild under way to finish.
const FOLLOW_STOP: Duration = Duration::from_secs(120);

/// Replays are read and handed over this many entries at a time.
const REPLAY_CHUNK: u64 = 256;

impl Member {
    /// Starts the engine (a follower until it leads), then the Raft node whose apply feeds
    /// it. The member with the lowest id initializes a cluster of `peers` (id -> Raft
    /// address) the first time; the others wait to hear from a leader.
    pub async fn start(
        engine_cfg: EngineConfig,
        node_cfg: NodeConfig,
        peers: BTreeMap<NodeId, String>,
        commit_timeout: Duration,
    ) -> Result<Member, String> {
        let id = node_cfg.id;
        let log = Arc::new(RaftLog::new(commit_timeout));
        let data_dir = engine_cfg.data_dir.clone();
        let engine = tokio::task::block_in_place(|| Engine::start_member(engine_cfg, log.clone()))?;
        let links = node_cfg.dir.join("snapshot-files");
        let applier = EngineApplier { engine: engine.clone(), data_dir, links };
        // Raft (openraft's tasks, the Raft listener, proposals and their completions) runs on
        // its own runtime, not behind the client requests (D75).
        let raft_rt = baton_replicate::runtime::dedicated()?;
        let node =
            Arc::new(raft_rt.spawn(Node::start(node_cfg, applier)).await.map_err(|e| format!("starting Raft: {e}"))??);
        log.connect(&raft_rt, node.raft.clone(), node.log.clone());
        if peers.keys().next() == Some(&id) && !node.raft.is_initialized().await.map_err(|e| e.to_string())? {
            node.initialize(&peers).await?;
            tracing::info!(members = peers.len(), "initialized a new cluster");
        }
        let stopping = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let watch =
            tokio::spawn(follow(id, engine.clone(), Arc::clone(&node), Arc::clone(&log), Arc::clone(&stopping)));
        let compact = tokio::spawn(compact(Arc::clone(&node), Arc::clone(&log)));
        Ok(Member { id, engine, node, log, changes: Arc::default(), watch, stopping, compact })
    }

    /// Stops following leadership once the step under way is done (a rebuild cut short
    /// would leave the engine's files behind its committed log for the shutdown checkpoint),
    /// then Raft, then the engine.
    pub async fn shutdown(self) {
        self.stopping.store(true, std::sync::atomic::Ordering::Release);
        let mut watch = self.watch;
        if tokio::time::timeout(FOLLOW_STOP, &mut watch).await.is_err() {
            tracing::warn!("the leadership follower did not stop within {FOLLOW_STOP:?}");
            watch.abort();
        }
        self.compact.abort();
        self.log.disarm();
        match Arc::try_unwrap(self.node) {
            Ok(node) => node.shutdown().await,
            Err(node) => {
                let _ = node.raft.shutdown().await;
            }
        }
        let engine = self.engine.clone();
        let _ = tokio::task::spawn_blocking(move || engine.shutdown()).await;
    }
}

/// Follows the Raft metrics and moves the engine between leading and following.
async fn follow(
    id: NodeId,
    engine: Engine,
    node: Arc<Node<EngineApplier>>,
    log: Arc<RaftLog>,
    stopping: Arc<std::sync::atomic::AtomicBool>,
) {
    let mut metrics = node.raft.metrics();
    let mut leading = false;
    let mut hint = None;
    loop {
        let m = metrics.borrow_and_update().clone();
        let leads = m.state.is_leader() && m.current_leader == Some(id);
        if leading && !leads {
            // A test widens the window between a lost term and its rebuild, to stop inside it.
            baton_core::failpoint::pause("member.step_down");
        }
        let stop = stopping.load(std::sync::atomic::Ordering::Acquire);
        // Stopping: only a rebuild still owed (a term lost, or a proposal) is done first.
        let owed = log.is_lost() || (leading && !leads);
        if stop && !owed {
            return;
        }
        if leading && (!leads || log.take_lost()) {
            leading = false;
            log.disarm();
            engine.demote(m.current_leader.map(|l| describe(&m, l)).unwrap_or_default());
            hint = m.current_leader;
            tracing::warn!(term = m.current_term, "no longer leading: rebuilding the engine from the committed log");
            if let Err(e) = rebuild(&engine, &node).await {
                tracing::error!(error = %e, "rebuild failed; the engine stays latched");
            }
        } else if !leading {
            // A request that raced a step down failed on an unarmed log and latched the
            // engine: the same rebuild clears it.
            if log.take_lost() {
                if let Err(e) = rebuild(&engine, &node).await {
                    tracing::error!(error = %e, "rebuild failed; the engine stays latched");
                }
            }
            let caught_up = m.last_applied.map(|l| l.index) == m.last_log_index;
            if leads && caught_up && engine.failure().is_none() && !stop {
                let next = m.last_log_index.map_or(0, |i| i + 1);
                let me = describe(&m, id);
                let (engine2, log2) = (engine.clone(), Arc::clone(&log));
                let promoted = tokio::task::spawn_blocking(move || {
                    engine2.barrier()?;
                    log2.arm(next);
                    engine2.promote(me)
                })
                .await;
                match promoted {
                    Ok(Ok(applied)) => {
                        leading = true;
                        tracing::info!(term = m.current_term, next, applied, "leading: the engine plans from here");
                    }
                    other => {
                        log.disarm();
                        tracing::error!(?other, "promotion failed");
                    }
                }
            } else if !leads && hint != m.current_leader {
                hint = m.current_leader;
                engine.demote(m.current_leader.map(|l| describe(&m, l)).unwrap_or_default());
            }
        }
        // Woken by a change of the metrics, and at least every 50 ms to see a lost proposal.
        let _ = tokio::time::timeout(Duration::from_millis(50), metrics.changed()).await;
    }
}

/// Each checkpoint the engine makes becomes this member's Raft snapshot, and the log
/// before it (less what is kept for followers a little behind) goes (D43).
async fn compact(node: Arc<Node<EngineApplier>>, log: Arc<RaftLog>) {
    let mut last = 0;
    loop {
        log.checkpointed.notified().await;
        let at = log.checkpoint_index();
        if at > last {
            last = at;
            if node.raft.trigger().snapshot().await.is_err() {
                return;
            }
        }
    }
}

fn describe(m: &openraft::RaftMetrics<NodeId, openraft::BasicNode>, id: NodeId) -> String {
    let addr = m.membership_config.membership().get_node(&id).map(|n| n.addr.clone()).unwrap_or_default();
    format!("node {id} (raft {addr})")
}

/// The engine's state goes back to its checkpoint, and every committed frame after it that
/// Raft has applied is replayed, while Raft's apply waits (D40).
async fn rebuild(engine: &Engine, node: &Arc<Node<EngineApplier>>) -> Result<(), String> {
    let engine = engine.clone();
    let node = Arc::clone(node);
    tokio::task::spawn_blocking(move || {
        node.machine.with_applied(|_, applied| {
            baton_core::failpoint::pause("member.rebuild");
            let from = engine.rebuild()? + 1;
            let upto = applied.map_or(0, |a| a.index + 1);
            let mut at = from;
            while at < upto {
                let end = (at + REPLAY_CHUNK).min(upto);
                let entries = node.log.read(at, end).map_err(|e| e.to_string())?;
                if entries.first().map(|e| e.log_id.index) != Some(at) {
                    return Err(format!("entries {at}..{end} are not in the log to replay"));
                }
                for e in &entries {
                    if let EntryPayload::Normal(frame) = &e.payload {
                        engine.apply_committed(e.log_id.index, frame.0.clone()).map_err(|e| e.message)?;
                    }
                }
                at = entries.last().map_or(end, |e| e.log_id.index + 1);
            }
            engine.barrier().map_err(|e| e.message)?;
            tracing::info!(from, upto, "engine rebuilt from its checkpoint and the committed log");
            Ok(())
        })
    })
    .await
    .map_err(|e| e.to_string())?
}

/// What a leading member does before it stops (D45): once it has led for longer than a
/// lease, proposals stop (appends wait), the frames in flight are answered, then a
/// caught-up voter is asked to stand. Whatever the
/// outcome, the member then proposes nothing more in its term: it is rebuilt as after a
/// step down, and serves by forwarding to whoever leads.
pub struct Leaving {
    node: Arc<Node<EngineApplier>>,
    log: Arc<RaftLog>,
    engine: Engine,
}

impl Leaving {
    /// The member that leads after the hand-over; an error says why there was none (this
    /// member did not lead, a membership change was under way, no voter caught up).
    pub async fn run(self, within: Duration) -> Result<NodeId, String> {
        if !self.engine.is_writable() {
            return Err("this member does not lead".into());
        }
        let t0 = tokio::time::Instant::now();
        // Waited out while writes still go on; without it the hand-over would wait holding them.
        if !self.node.own_lease_over(within).await {
            return Err(format!("this member does not lead, or has not led for a lease within {within:?}"));
        }
        let Some(hold) = self.log.hold(within.saturating_sub(t0.elapsed())).await else {
            return Err(format!("the frames in flight were not answered within {within:?}"));
        };
        let res = self.node.hand_over(within.saturating_sub(t0.elapsed())).await;
        let m = self.node.raft.metrics().borrow().clone();
        if res.is_err() && m.state.is_leader() && m.current_leader == Some(m.id) {
            // Still leading: the frames that waited are proposed as if nothing happened, so
            // a hand-over that failed leaves nothing planned and unproposed to rebuild.
            hold.release();
        } else {
            // Not resumed: numbering stops and the term counts as lost (the hold's rule).
            drop(hold);
        }
        res
    }
}

impl Member {
    pub fn leaving(&self) -> Leaving {
        Leaving { node: Arc::clone(&self.node), log: Arc::clone(&self.log), engine: self.engine.clone() }
    }

    /// Whether the engine plans (this member leads and has been promoted).
    pub fn is_leading(&self) -> bool {
        self.engine.is_writable()
    }
}
